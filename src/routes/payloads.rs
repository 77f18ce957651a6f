//! The catalogue of event payloads: for every event type a webhook can subscribe to, what it
//! means, what it is about, the JSON Schema of its `data`, and the one function that builds that
//! `data` from the current state.
//!
//! Each area declares its own entries beside its resource (`<area>::payloads()`, of the entry type
//! in [`super::payload`], below every area), with the loader its `GET` uses, so `data` is the
//! object as the REST API shows it unless the entry says otherwise; and, once per kind of object
//! its events are about, a [`super::payload::SubjectKind`]: the kind, its `resource_type`, and the
//! table and company expression by which the sandbox's triggers and the examples find one.
//!
//! The route registry gathers the entries ([`Catalogue`], made by `routes::payloads()` from the
//! `payloads` of every module of [`super::MODULES`]), so an area's module line is all that lists
//! them. The pages that list the catalogue (`GET /webhook-event-types`, the document's `webhooks`)
//! are routes of that registry: they cannot read it without a circle of imports. They read the
//! catalogue from the app they serve instead ([`Catalogue::of`]), where `app::App::build`, above
//! the routes, puts the registry's. Neither this file nor an area imports the registry.
//!
//! Everything that shows or sends a payload reads this table:
//! - the transitions record (with `events::record`, the one way) what the builders return, or
//!   (where the write has the resource in hand already) the same loader's value;
//! - the sandbox's `POST /_sandbox/events` emits any type with them;
//! - the documentation, `GET /webhook-event-types` and the OpenAPI document's `webhooks`, shows each
//!   type's schema and an example made by running its builder on the demo world
//!   ([`Catalogue::examples`]); a test emits every type through real transitions and validates the
//!   delivered bodies against the documented schemas, and the book's examples
//!   (docs/src/webhooks.md) against these.

use crate::config::Settings;
use crate::db::WriteIntent;
use crate::http::ApiError;
use crate::ids::Kind;
use rusqlite::{Connection, OptionalExtension};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::OnceLock;

pub use super::payload::{Payload, Subject};

/// `schema` with every `$ref` into `#/components/schemas/` replaced by the named schema.
pub fn resolved(schema: &Value, named: &[(&'static str, Value)], depth: usize) -> Value {
    match schema {
        Value::Object(m) if depth < 16 => {
            if let Some(target) = m
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/components/schemas/"))
            {
                let found = named.iter().find(|(n, _)| *n == target).map(|(_, s)| s);
                return found.map_or(json!({}), |s| resolved(s, named, depth + 1));
            }
            Value::Object(
                m.iter()
                    .map(|(k, v)| (k.clone(), resolved(v, named, depth + 1)))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

/// The catalogue: every entry, in registry order (the order of [`crate::events::EVENT_TYPES`]),
/// and the examples made from them.
pub struct Catalogue {
    entries: Vec<Payload>,
    examples: OnceLock<BTreeMap<&'static str, Value>>,
}

impl Catalogue {
    /// The catalogue of `entries` (the areas' `payloads()`, in any order).
    pub fn new(entries: impl IntoIterator<Item = Payload>) -> Catalogue {
        let mut entries: Vec<Payload> = entries.into_iter().collect();
        let order = |t: &str| crate::events::EVENT_TYPES.iter().position(|e| *e == t);
        entries.sort_by_key(|p| order(p.event_type));
        Catalogue {
            entries,
            examples: OnceLock::new(),
        }
    }

    /// The catalogue a request's handler reads: the one `app::App::build` puts in the app's
    /// extensions (from the route registry, `routes::payloads()`). An app built without it has
    /// none to show.
    pub fn of(app: &crate::http::App) -> Result<&'static Catalogue, ApiError> {
        app.extensions
            .get::<&'static Catalogue>()
            .copied()
            .ok_or_else(|| ApiError::Internal("no payload catalogue in this app".into()))
    }

    /// Every entry, in registry order.
    pub fn entries(&self) -> &[Payload] {
        &self.entries
    }

    pub fn find(&self, event_type: &str) -> Option<&Payload> {
        self.entries.iter().find(|p| p.event_type == event_type)
    }

    /// Each type's example delivery body, made once per catalogue by running its builder on a
    /// demo world of its own (in a throw-away database, frozen at [`EXAMPLE_AT`], seeded): the
    /// same bytes on every server. A type whose builder fails there gets the failure as its
    /// example's `data` (`{"example_error": …}`), which the documentation tests refuse.
    pub fn examples(&self) -> &BTreeMap<&'static str, Value> {
        self.examples.get_or_init(|| make_examples(&self.entries))
    }

    /// The body schema of `p` as documented (`/openapi.json` `webhooks`, `GET
    /// /webhook-event-types`): each scalar property shows the value this type's example holds
    /// there.
    pub fn documented_schema(&self, p: &Payload) -> Value {
        let mut schema = p.body_schema();
        if let Some(example) = self.examples().get(p.event_type) {
            annotate(&mut schema, example);
        }
        schema
    }
}

/// The company of object `id` of the payload's subject kind that meets its `pick`, if there is one.
pub fn company_of(conn: &Connection, p: &Payload, id: &str) -> Result<Option<String>, ApiError> {
    let (table, company) = (p.subject.table, p.subject.company);
    let sql = format!(
        "SELECT {company} FROM {table} WHERE o.id = ?1 AND ({})",
        p.pick
    );
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([id], |r| r.get(0))
        .optional()?)
}

/// The newest object of the payload's subject kind in `company` that meets its `pick`.
pub fn newest_of(
    conn: &Connection,
    p: &Payload,
    company: &str,
) -> Result<Option<String>, ApiError> {
    let (table, column) = (p.subject.table, p.subject.company);
    let sql = format!(
        "SELECT o.id FROM {table} WHERE {column} = ?1 AND ({}) ORDER BY o.id DESC LIMIT 1",
        p.pick
    );
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([company], |r| r.get(0))
        .optional()?)
}

/// The instant the documentation's examples are made at.
pub const EXAMPLE_AT: i64 = 1_772_442_000; // 2026-03-02T09:00:00Z

fn make_examples(entries: &[Payload]) -> BTreeMap<&'static str, Value> {
    let clock = std::sync::Arc::new(crate::time::Clock::frozen_at(EXAMPLE_AT));
    let seeded = std::sync::Arc::new(crate::random::Seeded::new(1));
    let settings = Settings {
        public_base_url: Some("http://127.0.0.1:8080".into()),
        ..Settings::default()
    };
    let mut out = BTreeMap::new();
    let world =
        crate::db::Db::open(":memory:", true, clock, Some(seeded)).map_err(|e| e.to_string());
    for p in entries {
        let data = match &world {
            Ok((db, _)) => {
                example_data(db, &settings, p).unwrap_or_else(|e| json!({"example_error": e}))
            }
            Err(e) => json!({"example_error": e}),
        };
        out.insert(
            p.event_type,
            json!({"id": "evt_0mm8a1b2c3d4e5f6g7h8", "type": p.event_type,
                "timestamp": crate::time::rfc3339(EXAMPLE_AT), "data": data}),
        );
    }
    out
}

fn example_data(db: &crate::db::Db, settings: &Settings, p: &Payload) -> Result<Value, String> {
    let hints = p.example_hints.as_object().cloned().unwrap_or_default();
    // Built inside a transaction that is rolled back: the demo world has no plays, so the example
    // of a recorded play records one first.
    let result = db.write(&WriteIntent::sandbox(), |tx| {
        if p.subject.kind == Kind::Playback {
            tx.execute(
                "INSERT INTO playbacks (id, company_id, device_id, ad_id, source, started_at,
                     duration_seconds, plays, created_at)
                 SELECT 'pb_0mm8a1b2c3d4e5f6g7h8', d.company_id, d.id, x.ad_id, 'player', ?1 - 15, 15, 1, ?1
                 FROM ad_assignments x JOIN devices d ON d.id = x.device_id ORDER BY d.id LIMIT 1",
                [EXAMPLE_AT],
            )?;
        }
        let (table, column) = (p.subject.table, p.subject.company);
        let (id, company): (String, String) = tx
            .query_row(
                &format!(
                    "SELECT o.id, {column} FROM {table} WHERE ({}) AND ({}) ORDER BY o.id LIMIT 1",
                    p.pick, p.example_where
                ),
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(ApiError::from)?;
        let data = (p.build)(&Subject {
            conn: tx,
            now: tx.now(),
            settings,
            company: &company,
            id: &id,
            hints: &hints,
        })?;
        Err::<(), _>(ExampleOr::Done(data))
    });
    match result {
        Err(ExampleOr::Done(data)) => Ok(data),
        Err(ExampleOr::Api(e)) => Err(format!("{e}")),
        Ok(()) => Err("no example".into()),
    }
}

/// The example's value, carried out of its transaction as an error so that the transaction rolls
/// back, or why it could not be made.
enum ExampleOr {
    Done(Value),
    Api(ApiError),
}

impl From<ApiError> for ExampleOr {
    fn from(e: ApiError) -> Self {
        ExampleOr::Api(e)
    }
}

impl From<rusqlite::Error> for ExampleOr {
    fn from(e: rusqlite::Error) -> Self {
        ExampleOr::Api(e.into())
    }
}

impl From<crate::db::DbError> for ExampleOr {
    fn from(e: crate::db::DbError) -> Self {
        ExampleOr::Api(e.into())
    }
}

/// Gives each scalar property of a payload schema the value the type's example holds there (a
/// reader of one field sees a real value, as for every other schema of the document); a field
/// the example leaves out takes its enum's first value, or null when it may be null.
fn annotate(schema: &mut Value, example: &Value) {
    let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for (name, prop) in props.iter_mut() {
        let value = example.get(name).unwrap_or(&Value::Null);
        if prop.get("properties").is_some() {
            annotate(prop, value);
        }
        if let Some(items) = prop.get_mut("items") {
            annotate(items, value.get(0).unwrap_or(&Value::Null));
        }
        if prop.get("example").is_some() || !crate::routes::openapi::examples::is_scalar(prop) {
            continue;
        }
        let nullable = prop["type"]
            .as_array()
            .is_some_and(|ts| ts.iter().any(|t| t == "null"));
        let chosen = match example.get(name) {
            Some(v) if !v.is_null() || nullable => Some(v.clone()),
            _ => prop
                .get("const")
                .or_else(|| prop["enum"].get(0))
                .cloned()
                .or_else(|| nullable.then_some(Value::Null)),
        };
        if let Some(v) = chosen {
            prop["example"] = v;
        }
    }
}
