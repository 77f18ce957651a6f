//! `POST /_sandbox/events`: emit any catalogued event type on demand, as `stripe trigger` does.
//!
//! The event's `data` is built from the current state by the type's own builder, the one its real
//! transition records ([`crate::routes::payloads`]), so a receiver sees exactly what production
//! would send. Everything is checked before anything is recorded: the type, the company, the
//! object (its kind, its company, what the type needs of it) and the optional `data`, whose
//! members either give the builder what it reads (`device_id` of `ad.assigned`) or replace a member
//! of the built `data` (`status` of a device), the result still matching the documented schema. The
//! event is recorded (`via: "sandbox"`, the operator's key as actor) and delivered like any other.

use crate::auth::Action;
use crate::db::{Origin, WriteIntent};
use crate::http::router::Route;
use crate::http::{ApiError, Ctx, Response};
use crate::ids::Kind;
use crate::routes::crud::Time;
use crate::routes::payloads::{self, Payload, Subject};
use crate::validate::OneOf;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub fn routes() -> Vec<Route> {
    vec![Route::post("/_sandbox/events", "emitSandboxEvent", Action::Sandbox, emit)
        .tag("sandbox")
        .summary("Emit any catalogued event type, built from the current state, and deliver it.")
        .describe("Records an event of `type` for `company_id` about `object_id` (default: the company's newest object of the type's kind) and queues its deliveries to the company's enabled webhooks that subscribe to the type, exactly as the real transition would: `data` is built from the current state by the same code. Optional `data` members either feed what the builder reads (`device_id` of `ad.assigned`/`ad.unassigned`, `failing_since` of `webhook.disabled`) or replace a member of the built `data` (`status` of a device); the result must still match the type's documented schema. Everything is checked first (422 naming the field: unknown type, unknown company, an object of another kind or company); nothing is recorded on error. The event's `via` is `sandbox`.")
        .body("SandboxEventTrigger")
        .created("SandboxEvent")
        .not_idempotent()]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    use crate::jsonschema::{named_body, named_response};
    vec![named_body::<Trigger>(), named_response::<Emitted>()]
}

/// The event to emit: its type, company, object and optional data members.
// `type` and `company_id` are required, but optional to serde: the handler answers a missing one
// with a 422 naming it, as it does every other problem.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SandboxEventTrigger", extend("required" = ["type", "company_id"]))]
struct Trigger {
    /// A catalogued event type (`GET /webhook-event-types`).
    #[serde(rename = "type", default, deserialize_with = "crate::routes::present")]
    #[schemars(with = "String", transform = &OneOf(crate::events::EVENT_TYPES))]
    event_type: Option<String>,
    #[serde(default, deserialize_with = "crate::routes::present")]
    #[schemars(with = "String", transform = Kind::Company)]
    company_id: Option<String>,
    /// The object the event is about, of the type's `object_type`, in the company. Default: the
    /// company's newest such object.
    #[serde(default, deserialize_with = "crate::routes::present")]
    #[schemars(with = "String", length(min = 1, max = 100))]
    object_id: Option<String>,
    /// Members given to the builder, or replacing members of the built `data`.
    #[serde(default, deserialize_with = "crate::routes::present")]
    #[schemars(with = "Value", extend("type" = "object"))]
    data: Option<Map<String, Value>>,
}

#[derive(Serialize, JsonSchema)]
struct Queued {
    #[schemars(transform = Kind::WebhookDelivery)]
    id: String,
    #[schemars(transform = Kind::Webhook)]
    webhook_id: String,
}

/// The emitted event, as `GET /events` shows it, with the deliveries queued for it.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "SandboxEvent")]
struct Emitted {
    #[schemars(transform = Kind::Event)]
    id: String,
    #[schemars(extend("const" = "event"))]
    object: &'static str,
    #[serde(rename = "type")]
    event_type: &'static str,
    company_id: String,
    resource_type: &'static str,
    resource_id: String,
    #[schemars(extend("type" = "object"))]
    data: Value,
    actor: Option<String>,
    /// Emitted by the sandbox operator's trigger.
    #[schemars(extend("const" = "sandbox"))]
    via: &'static str,
    created_at: Time,
    /// The deliveries queued (one per subscribed, enabled webhook); their first attempt is sent
    /// at once.
    deliveries: Vec<Queued>,
}

fn emit(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let input: Trigger = ctx.json()?;
    let (Some(event_type), Some(company_id)) = (&input.event_type, &input.company_id) else {
        let field = if input.event_type.is_none() {
            "/type"
        } else {
            "/company_id"
        };
        return Err(ApiError::invalid(
            field,
            "required",
            "This member is required.",
        ));
    };
    let p = crate::routes::payloads().find(event_type).ok_or_else(|| {
        ApiError::invalid(
            "/type",
            "unknown_event_type",
            "Not a catalogued event type; see GET /webhook-event-types.",
        )
    })?;
    if !crate::ids::is_valid(Kind::Company, company_id) {
        return Err(ApiError::invalid(
            "/company_id",
            "invalid_id",
            "Must be a company id (`cmp_…`).",
        ));
    }
    let hints = input.data.unwrap_or_default();
    let actor = ctx.principal().ok().map(|p| p.actor_id().to_string());
    let app = ctx.app;
    // The caller triggers it, through the sandbox's door: the event says so.
    let intent = WriteIntent {
        origin: Origin {
            actor: actor.clone(),
            via: "sandbox",
        },
        ..ctx.intent.clone()
    };
    let emitted = ctx.db.write(&intent, |tx| {
        let exists: bool = tx
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM companies WHERE id = ?1)")?
            .query_row([company_id], |r| r.get(0))?;
        if !exists {
            return Err(ApiError::invalid(
                "/company_id",
                "not_found",
                format!("No company `{company_id}`."),
            ));
        }
        let company = company_id.as_str();
        let object = object_of(tx, p, company, input.object_id.as_deref())?;
        let built = (p.build)(&Subject {
            conn: tx,
            now: tx.now(),
            settings: &app.settings,
            company,
            id: &object,
            hints: &hints,
        })?;
        let data = overlay(&app.router, p, built, &hints)?;
        let id = crate::events::record(
            tx,
            company,
            p.event_type,
            p.subject.resource,
            &object,
            &data,
        )?;
        let deliveries = tx
            .prepare_cached(
                "SELECT id, webhook_id FROM webhook_deliveries WHERE event_id = ?1 ORDER BY id",
            )?
            .query_map([&id], |r| {
                Ok(Queued {
                    id: r.get(0)?,
                    webhook_id: r.get(1)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(Emitted {
            id,
            object: "event",
            event_type: p.event_type,
            company_id: company.to_string(),
            resource_type: p.subject.resource,
            resource_id: object,
            data,
            actor: actor.clone(),
            via: "sandbox",
            created_at: Time(ctx.now()),
            deliveries,
        })
    })?;
    Ok(Response::created(&emitted))
}

/// The object the event is about: `object_id`, checked (its kind, that it exists in `company` and
/// is what the type needs), or the company's newest fitting object.
fn object_of(
    conn: &rusqlite::Connection,
    p: &Payload,
    company: &str,
    given: Option<&str>,
) -> Result<String, ApiError> {
    let kind = p.subject.kind;
    let Some(id) = given else {
        if kind == crate::ids::Kind::Company {
            return Ok(company.to_string());
        }
        return payloads::newest_of(conn, p, company)?.ok_or_else(|| {
            ApiError::invalid(
                "/object_id",
                "no_object",
                format!(
                    "Company `{company}` has no {} to build `{}` from; create one or give `object_id`.",
                    kind.what(),
                    p.event_type
                ),
            )
        });
    };
    if !crate::ids::is_valid(kind, id) {
        return Err(ApiError::invalid(
            "/object_id",
            "wrong_object_type",
            format!(
                "`{}` is about a {} (`{}_…`).",
                p.event_type,
                kind.what(),
                kind.prefix()
            ),
        ));
    }
    match payloads::company_of(conn, p, id)? {
        Some(owner) if owner == company => Ok(id.to_string()),
        Some(_) => Err(ApiError::invalid(
            "/object_id",
            "wrong_company",
            format!("The {} `{id}` belongs to another company.", kind.what()),
        )),
        None => Err(ApiError::invalid(
            "/object_id",
            "not_found",
            format!(
                "No {} `{id}` that `{}` can be about.",
                kind.what(),
                p.event_type
            ),
        )),
    }
}

/// The built `data` with the members of the trigger's `data` that are members of the type's
/// `data` put over it; every member must be one of those or a hint the builder reads, and the
/// result must match the documented schema.
fn overlay(
    router: &crate::http::router::Router,
    p: &Payload,
    mut built: Value,
    given: &Map<String, Value>,
) -> Result<Value, ApiError> {
    let schema = payloads::resolved(&p.schema, router.schemas(), 0);
    let members = schema["properties"].as_object();
    for (name, value) in given {
        let member = members.is_some_and(|m| m.contains_key(name));
        if member {
            if let Some(o) = built.as_object_mut() {
                o.insert(name.clone(), value.clone());
            }
        } else if !p.takes.contains(&name.as_str()) {
            return Err(ApiError::invalid(
                &format!("/data/{name}"),
                "unknown_field",
                format!("`{}` has no member `{name}`.", p.event_type),
            ));
        }
    }
    crate::jsonschema::validate(&built, &schema, "data").map_err(|message| {
        ApiError::invalid(
            "/data",
            "schema_mismatch",
            format!("The event's data would not match its documented schema: {message}"),
        )
    })?;
    Ok(built)
}
