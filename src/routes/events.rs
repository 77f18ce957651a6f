//! `GET /events`: the domain events of the visible companies, newest first, by cursor: what
//! changed, which key or user changed it and through which door (`rest`, `mcp`, or `sandbox` for
//! what the clock and the simulated fleet did). The same events webhooks deliver; reading them needs
//! `webhooks:read` (or `read`), as subscribing to them does.

use crate::auth::{Action, Area, Level};
use crate::events::EVENT_TYPES;
use crate::http::response::Listed;
use crate::http::router::{param, Route, Tool};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{EventId, Kind, TypedId};
use crate::routes::crud::{self, Time};
use crate::routes::page_rows::{written_page, PageQuery};
use crate::routes::queries::Owner;
use crate::validate::OneOf;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

const READ: Action = Action::Use(Area::Webhooks, Level::Read);

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/events", "listEvents", READ, list)
         .describe("The domain events of the visible companies, newest first by cursor: the same events webhooks deliver, each with the object it concerns, the key or user that caused it (`actor`, and `actor_name` for people) and through which door (`via`: rest, mcp, sandbox). Filters `company_id` and `type`. Needs `webhooks:read`.")
        .tool(Tool::read(
            "list_events",
            "List recent events",
            &[],
            "What changed: event type, the object, the key or user who caused it, and through REST, MCP or the sandbox.",
        ))
        .tag("webhooks")
        .summary("List the domain events of the visible companies, newest first: what changed, by whom, via REST, MCP or the sandbox.")
        .paged_by(Kind::Event)
        .query(&[
            param(
                "company_id",
                Kind::Company.schema(),
                "Only events of this company.",
            ),
            crate::http::router::one_of_param(
                "type",
                OneOf(EVENT_TYPES),
                "Only events of this type.",
            ),
        ])
        .ok("EventList"),
        Route::get("/events/{id}", "getEvent", READ, get)
            .describe("One domain event (`evt_…`) of a visible company, with `data` as the event recorded it. Needs `webhooks:read`.")
            .no_tool("an event in full is the MCP resource signage://events/{id}, which list_events' brief results point to")
            .tag("webhooks")
            .summary("Read one domain event in full: what changed, the object as recorded, by whom, via REST, MCP or the sandbox.")
            .ok("Event"),
    ]
}

/// A domain event: what changed, the object it concerns, who caused it and through which door.
#[derive(Serialize, JsonSchema)]
struct Event {
    #[schemars(transform = Kind::Event)]
    id: String,
    #[schemars(extend("const" = "event"))]
    object: &'static str,
    #[serde(rename = "type")]
    #[schemars(transform = &crate::validate::OneOf(EVENT_TYPES))]
    event_type: String,
    company_id: String,
    resource_type: String,
    resource_id: String,
    /// The object's name as it is now (a device's or ad's name, a QR code's promotion and label, a
    /// media file name, a play's ad and screen, a token transaction's description); null once it
    /// is deleted.
    resource_name: Option<String>,
    /// The object as the event recorded it.
    data: Value,
    /// The key or user id that caused it (`key_…`, `usr_…`); null for the sandbox itself and for
    /// events older than this field.
    actor: Option<String>,
    /// Who did it, for people: the key's or user's name; `simulated fleet` (screens coming and
    /// going), `simulated scans` or `sandbox clock` (what else time brought) for the sandbox
    /// itself; `a phone (short link)` for a scan of a QR code's short link; `unknown` for old
    /// events.
    actor_name: String,
    /// `rest`, `mcp`, `sandbox` (the clock's transitions, the simulated fleet), or `unknown` for
    /// events recorded before this field existed.
    #[schemars(transform = &crate::validate::OneOf(&["rest", "mcp", "sandbox", "unknown"]))]
    via: String,
    created_at: Time,
}

impl Listed for Event {
    fn list_key(&self) -> &str {
        &self.id
    }
}

// The actor's name by primary-key lookups per row of the page (not a join), so the page still
// walks the events index alone; none for an event without an actor (most of the sandbox's). The
// object's name the same way: joins, or one lookup per type for the whole page, were measured
// dearer (the contributors' benchmarks page).
const EVENT_SELECT: &str = "SELECT e.id, e.type, e.company_id, e.resource_type, e.resource_id,
    e.payload, e.payload_canonical, e.actor, e.via, e.created_at,
    CASE WHEN e.actor IS NOT NULL THEN
        coalesce((SELECT k.name FROM api_keys k WHERE k.id = e.actor),
                 (SELECT u.username FROM users u WHERE u.id = e.actor))
    END AS actor_known_name,
    CASE e.resource_type
        WHEN 'device' THEN (SELECT x.name FROM devices x WHERE x.id = e.resource_id)
        WHEN 'ad' THEN (SELECT x.name FROM ads x WHERE x.id = e.resource_id)
        WHEN 'promotion' THEN (SELECT x.name FROM promotions x WHERE x.id = e.resource_id)
        WHEN 'qr_code' THEN (SELECT p.name || ' · ' || q.label FROM qr_codes q
                             JOIN promotions p ON p.id = q.promotion_id WHERE q.id = e.resource_id)
        WHEN 'media' THEN (SELECT x.filename FROM media x WHERE x.id = e.resource_id)
        WHEN 'webhook' THEN (SELECT x.url FROM webhooks x WHERE x.id = e.resource_id)
        WHEN 'company' THEN (SELECT x.name FROM companies x WHERE x.id = e.resource_id)
        WHEN 'branding' THEN (SELECT x.name FROM companies x WHERE x.id = e.resource_id)
        WHEN 'invoice' THEN (SELECT x.number FROM invoices x WHERE x.id = e.resource_id)
        WHEN 'api_key' THEN (SELECT x.name FROM api_keys x WHERE x.id = e.resource_id)
        WHEN 'playback' THEN (SELECT a.name FROM ads a WHERE a.id = json_extract(e.payload, '$.ad_id'))
            || ' on ' || (SELECT d.name FROM devices d WHERE d.id = json_extract(e.payload, '$.device_id'))
        WHEN 'token_transaction' THEN (SELECT x.description FROM token_transactions x WHERE x.id = e.resource_id)
    END AS resource_name
    FROM events e";

/// Who did it, for people: the key's or user's name; for the sandbox itself, `simulated fleet`
/// (screens coming and going), `simulated scans` (phones scanning the QR codes) or `sandbox clock`
/// (everything else time brought); a real phone that opened a QR code's short link carries no
/// credential: `a phone (short link)`.
fn actor_name(
    via: &str,
    resource_type: &str,
    actor: Option<&str>,
    known: Option<String>,
) -> String {
    match (via, known, actor) {
        ("sandbox", _, _) if resource_type == "device" => "simulated fleet".into(),
        ("sandbox", _, _) if resource_type == "qr_code" => "simulated scans".into(),
        ("sandbox", _, _) => "sandbox clock".into(),
        (_, Some(name), _) => name,
        (_, None, Some(id)) => format!("{id} (deleted)"),
        ("rest", None, None) if resource_type == "qr_code" => "a phone (short link)".into(),
        (_, None, None) => "unknown".into(),
    }
}

impl Event {
    fn from_row(r: &crud::Named<'_, '_>) -> rusqlite::Result<Event> {
        let payload: String = r.get("payload")?;
        let actor: Option<String> = r.get("actor")?;
        let via = r
            .get::<Option<String>>("via")?
            .unwrap_or_else(|| "unknown".into());
        let resource_type: String = r.get("resource_type")?;
        let actor_name = actor_name(
            &via,
            &resource_type,
            actor.as_deref(),
            r.get("actor_known_name")?,
        );
        Ok(Event {
            id: r.get("id")?,
            object: "event",
            event_type: r.get("type")?,
            company_id: r.get("company_id")?,
            resource_type,
            resource_id: r.get("resource_id")?,
            resource_name: r.get("resource_name")?,
            // Written by the service as JSON; a damaged row shows as null rather than failing the page.
            data: serde_json::from_str(&payload).unwrap_or(Value::Null),
            actor,
            actor_name,
            via,
            created_at: Time(r.get("created_at")?),
        })
    }
}

fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let companies = ctx.list_companies()?;
    let event_type = ctx.query_enum("type", EVENT_TYPES)?;
    let mut filters: Vec<(&str, rusqlite::types::Value)> = Vec::new();
    if let Some(t) = event_type {
        filters.push(("e.type = ?", rusqlite::types::Value::Text(t)));
    }
    let conn = ctx.conn()?;
    written_page(
        &conn,
        PageQuery {
            select: EVENT_SELECT,
            owner: Owner::with_account("e.company_id", "e.account_id"),
            id_col: "e.id",
            companies: &companies,
            filters: &filters,
        },
        &page,
        Event::write_row,
        Event::from_row,
    )
}

impl Event {
    /// A row of [`EVENT_SELECT`] as its JSON object, byte for byte `Event`'s (a list page's row):
    /// the recorded `data` copied as it is when it is what parsing and writing it again would
    /// give ([`copied_as_stored`]), else parsed and written.
    fn write_row(r: &crud::Named<'_, '_>, out: &mut Vec<u8>) -> rusqlite::Result<()> {
        use crate::json_write as w;
        out.extend_from_slice(br#"{"id":"#);
        w::plain(out, r.str("id")?);
        out.extend_from_slice(br#","object":"event","type":"#);
        w::text(out, r.str("type")?);
        out.extend_from_slice(br#","company_id":"#);
        w::text(out, r.str("company_id")?);
        let resource_type = r.str("resource_type")?;
        out.extend_from_slice(br#","resource_type":"#);
        w::text(out, resource_type);
        out.extend_from_slice(br#","resource_id":"#);
        w::text(out, r.str("resource_id")?);
        let payload = r.str("payload")?;
        let canonical: Option<bool> = r.get("payload_canonical")?;
        let actor = r.opt_str("actor")?;
        let via = r.opt_str("via")?.unwrap_or("unknown");
        let created_at: i64 = r.get("created_at")?;
        let known: Option<String> = r.get("actor_known_name")?;
        out.extend_from_slice(br#","resource_name":"#);
        w::opt_text(out, r.opt_str("resource_name")?);
        out.extend_from_slice(br#","data":"#);
        let as_stored = copied_as_stored(payload, canonical).map_err(|wrong| {
            let at = r.row().as_ref().column_index("payload_canonical");
            rusqlite::Error::FromSqlConversionFailure(
                at.unwrap_or_default(),
                rusqlite::types::Type::Integer,
                wrong.into(),
            )
        })?;
        if as_stored {
            out.extend_from_slice(payload.as_bytes());
        } else {
            // Written by the service as JSON; a damaged row shows as null rather than failing the page.
            let data: Value = serde_json::from_str(payload).unwrap_or(Value::Null);
            serde_json::to_writer(&mut *out, &data)
                .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
        }
        out.extend_from_slice(br#","actor":"#);
        w::opt_text(out, actor);
        out.extend_from_slice(br#","actor_name":"#);
        w::text(out, &actor_name(via, resource_type, actor, known));
        out.extend_from_slice(br#","via":"#);
        w::text(out, via);
        out.extend_from_slice(br#","created_at":"#);
        w::time(out, created_at);
        out.push(b'}');
        Ok(())
    }
}

/// Whether an event's recorded data goes into the page as it is stored: as its writer found it
/// ([`crate::json_write::is_canonical`], asked once when the event was recorded and kept with it,
/// V51), or, for an event recorded before that (`None`), as the check finds it now. The database
/// holds a row said canonical to valid JSON text; a debug build also checks the verdict itself on
/// every read, and refuses the page when it is wrong (a written row would differ from its typed
/// row's JSON).
fn copied_as_stored(payload: &str, canonical: Option<bool>) -> Result<bool, String> {
    let Some(canonical) = canonical else {
        return Ok(crate::json_write::is_canonical(payload));
    };
    if cfg!(debug_assertions) && canonical != crate::json_write::is_canonical(payload) {
        // Its length, not the data: an error is logged.
        return Err(format!(
            "an event's data ({} bytes) is recorded as {}canonical, and the check says otherwise",
            payload.len(),
            if canonical { "" } else { "not " }
        ));
    }
    Ok(canonical)
}

fn get(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: EventId = ctx.path()?;
    let event = {
        let conn = ctx.conn()?;
        crud::load(
            &conn,
            &format!("{EVENT_SELECT} WHERE e.id = ?1"),
            &id,
            Event::from_row,
        )?
    };
    // Another company's event is the same 404 as one that does not exist.
    ctx.authorize_company(&event.company_id, "event", id.as_str())?;
    Ok(Response::ok(&event))
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    vec![crate::jsonschema::named_response::<Event>()]
}
