//! A webhook as the API shows it, its schema and its loaders: below the handlers, the deliveries,
//! the rotation and the area's payloads; it imports none of them.

use crate::events::EVENT_TYPES;
use crate::http::{ApiError, Ctx};
use crate::ids::WebhookId;
use crate::routes::crud::{self, Time};
use crate::validate::OneOf;
use rusqlite::Connection;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// An endpoint that receives signed deliveries of the chosen event types; its signing secret
/// is shown whole only in the answer that creates it (`secret`), after that its last four.
// The secret is reduced to its last four characters, and shown whole (`secret`, last) only in the
// creation response. Field order is the order of the JSON members.
#[derive(Serialize, JsonSchema)]
pub struct Webhook {
    #[schemars(transform = crate::ids::Kind::Webhook)]
    pub(super) id: String,
    #[schemars(extend("const" = "webhook"))]
    pub(super) object: &'static str,
    pub(super) company_id: String,
    pub(super) url: String,
    pub(super) description: String,
    #[schemars(transform = crate::jsonschema::Items(&OneOf(EVENT_TYPES)))]
    pub(super) event_types: Vec<String>,
    pub(super) enabled: bool,
    /// The last four characters of the signing secret.
    pub(super) secret_last4: String,
    pub(super) created_at: Time,
    pub(super) updated_at: Time,
    /// The signing secret. Shown only in this response.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", regex(pattern = "^whsec_[0-9A-Za-z]{32}$"))]
    pub(super) secret: Option<String>,
    /// The ETag's version; not a member of the body.
    #[serde(skip)]
    pub(super) version: i64,
}

pub(super) const WEBHOOK_SELECT: &str =
    "SELECT w.id, w.company_id, w.url, w.description, w.event_types,
    w.enabled, w.secret, w.created_at, w.updated_at, w.version FROM webhooks w";

impl Webhook {
    /// Reads a row of [`WEBHOOK_SELECT`] by column name, the secret masked.
    pub(super) fn from_row(r: &crud::Named<'_, '_>) -> rusqlite::Result<Webhook> {
        let types: String = r.get("event_types")?;
        let secret: String = r.get("secret")?;
        let chars: Vec<char> = secret.chars().collect();
        Ok(Webhook {
            id: r.get("id")?,
            object: "webhook",
            company_id: r.get("company_id")?,
            url: r.get("url")?,
            description: r.get("description")?,
            event_types: serde_json::from_str(&types).unwrap_or_default(),
            enabled: r.get::<i64>("enabled")? == 1,
            secret_last4: chars[chars.len().saturating_sub(4)..].iter().collect(),
            created_at: Time(r.get("created_at")?),
            updated_at: Time(r.get("updated_at")?),
            secret: None,
            version: r.get("version")?,
        })
    }
}

impl crate::http::response::Listed for Webhook {
    fn list_key(&self) -> &str {
        &self.id
    }
}

/// A webhook, unauthorized; missing is 404.
pub(crate) fn load(conn: &Connection, id: &WebhookId) -> Result<Webhook, ApiError> {
    crud::load(
        conn,
        &format!("{WEBHOOK_SELECT} WHERE w.id = ?1"),
        id,
        Webhook::from_row,
    )
}

/// Loads a webhook and checks its company against the route's action; missing and invisible are
/// the same 404.
pub(super) fn load_visible(
    ctx: &Ctx<'_>,
    conn: &Connection,
    id: &WebhookId,
) -> Result<Webhook, ApiError> {
    let hook = load(conn, id)?;
    ctx.authorize_company(&hook.company_id, "webhook", id)?;
    Ok(hook)
}

/// The `Webhook` schema: a webhook as [`Webhook`] serializes it (no `secret`). The area's schemas
/// extend it (`WebhookWithSecret`); `webhook.disabled` adds why.
/// The `Webhook` schema (without the secret only a creation shows), and `WebhookWithSecret`.
pub(super) fn schemas() -> (Value, Value) {
    // One description for both: confirm_change's results share a schema a withheld `secret` makes
    // equal.
    let mut with_secret = crate::jsonschema::response::<Webhook>();
    let mut webhook = with_secret.clone();
    if let Some(properties) = webhook["properties"].as_object_mut() {
        properties.remove("secret");
    }
    if let Some(required) = with_secret["required"].as_array_mut() {
        required.push("secret".into());
    }
    (webhook, with_secret)
}
