//! The catalogue of event payloads: for every event type a webhook can subscribe to, what it
//! means, the kind of object it is about, the JSON Schema of its `data`, and the one function that
//! builds that `data` from the current state.
//!
//! Each area declares its own entries beside its resource (`<area>::payloads()`, of the entry type
//! in [`super::payload`], below every area), with the loader its `GET` uses, so `data` is the
//! object as the REST API shows it unless the entry says otherwise. This file gathers them, above
//! the areas (beside [`super::MODULES`], which gathers their routes): an area's entries never import
//! it, only the pages that list the catalogue do (`GET /webhook-event-types`, the document).
//! Everything that shows or sends a payload reads this table:
//! - the transitions record (with `events::record`, the one way) what the builders return, or
//!   (where the write has the resource in hand already) the same loader's value;
//! - the sandbox's `POST /_sandbox/events` emits any type with them;
//! - the documentation, `GET /webhook-event-types` and the OpenAPI document's `webhooks`, shows each
//!   type's schema and an example made by running its builder on the demo world ([`examples`]);
//!   a test emits every type through real transitions and validates the delivered bodies against
//!   the documented schemas, and the book's examples (docs/src/webhooks.md) against these.

use crate::config::Settings;
use crate::db::WriteIntent;
use crate::http::ApiError;
use crate::ids::Kind;
use rusqlite::{Connection, OptionalExtension};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::OnceLock;

pub use super::payload::{Payload, Subject};

/// The body schema of `p` as documented (`/openapi.json` `webhooks`, `GET /webhook-event-types`):
/// each scalar property shows the value this type's example holds there.
pub fn documented_schema(p: &Payload) -> Value {
    let mut schema = p.body_schema();
    if let Some(example) = examples().get(p.event_type) {
        annotate(&mut schema, example);
    }
    schema
}

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

/// Every entry, in registry order (the order of [`crate::events::EVENT_TYPES`]).
pub fn catalogue() -> &'static [Payload] {
    static CATALOGUE: OnceLock<Vec<Payload>> = OnceLock::new();
    CATALOGUE.get_or_init(|| {
        let mut all: Vec<Payload> = [
            super::companies::payloads(),
            super::devices::payloads(),
            super::ads::payloads(),
            super::promotions::payloads(),
            super::tokens::payloads(),
            super::billing::payloads(),
            super::media::payloads(),
            super::webhooks::payloads(),
        ]
        .into_iter()
        .flatten()
        .collect();
        let order = |t: &str| crate::events::EVENT_TYPES.iter().position(|e| *e == t);
        all.sort_by_key(|p| order(p.event_type));
        all
    })
}

pub fn find(event_type: &str) -> Option<&'static Payload> {
    catalogue().iter().find(|p| p.event_type == event_type)
}

/// Where objects of a subject kind are (a `FROM` clause naming the row `o`), and the expression of
/// their company.
pub fn table_of(kind: Kind) -> Option<(&'static str, &'static str)> {
    Some(match kind {
        Kind::Company => ("companies o", "o.id"),
        Kind::Device => ("devices o", "o.company_id"),
        Kind::Ad => ("ads o", "o.company_id"),
        Kind::Promotion => ("promotions o", "o.company_id"),
        Kind::QrCode => (
            "qr_codes o JOIN promotions p ON p.id = o.promotion_id",
            "p.company_id",
        ),
        Kind::Media => ("media o", "o.company_id"),
        Kind::TokenTransaction => ("token_transactions o", "o.company_id"),
        Kind::Invoice => ("invoices o", "o.company_id"),
        Kind::Webhook => ("webhooks o", "o.company_id"),
        Kind::Playback => ("playbacks o", "o.company_id"),
        _ => return None,
    })
}

/// The company of object `id` of the payload's subject kind that meets its `pick`, if there is one.
pub fn company_of(conn: &Connection, p: &Payload, id: &str) -> Result<Option<String>, ApiError> {
    let Some((table, company)) = table_of(p.subject) else {
        return Ok(None);
    };
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
    let Some((table, column)) = table_of(p.subject) else {
        return Ok(None);
    };
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

/// Each type's example delivery body, made once per process by running its builder on a demo
/// world of its own (in a throw-away database, frozen at [`EXAMPLE_AT`], seeded): the same bytes
/// on every server. A type whose builder fails there gets the failure as its example's `data`
/// (`{"example_error": …}`), which the documentation tests refuse.
pub fn examples() -> &'static BTreeMap<&'static str, Value> {
    static EXAMPLES: OnceLock<BTreeMap<&'static str, Value>> = OnceLock::new();
    EXAMPLES.get_or_init(make_examples)
}

fn make_examples() -> BTreeMap<&'static str, Value> {
    let clock = std::sync::Arc::new(crate::time::Clock::frozen_at(EXAMPLE_AT));
    let seeded = std::sync::Arc::new(crate::random::Seeded::new(1));
    let settings = Settings {
        public_base_url: Some("http://127.0.0.1:8080".into()),
        ..Settings::default()
    };
    let mut out = BTreeMap::new();
    let world =
        crate::db::Db::open(":memory:", true, clock, Some(seeded)).map_err(|e| e.to_string());
    for p in catalogue() {
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
        if p.subject == Kind::Playback {
            tx.execute(
                "INSERT INTO playbacks (id, company_id, device_id, ad_id, source, started_at,
                     duration_seconds, plays, created_at)
                 SELECT 'pb_0mm8a1b2c3d4e5f6g7h8', d.company_id, d.id, x.ad_id, 'player', ?1 - 15, 15, 1, ?1
                 FROM ad_assignments x JOIN devices d ON d.id = x.device_id ORDER BY d.id LIMIT 1",
                [EXAMPLE_AT],
            )?;
        }
        let (table, column) = table_of(p.subject)
            .ok_or_else(|| ApiError::Internal("no table for the subject".into()))?;
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

#[cfg(test)]
mod tests {
    /// A deletion stub names its own entry's resource ([`super::Payload::deleted`]): the one the
    /// catalogue gives every object of that kind, since all entries of a subject kind name one.
    #[test]
    fn every_entry_of_a_kind_names_one_resource() {
        let all = super::catalogue();
        for p in all {
            let first = all.iter().find(|q| q.subject == p.subject);
            assert_eq!(
                first.map(|q| q.resource),
                Some(p.resource),
                "{}",
                p.event_type
            );
        }
    }
}
