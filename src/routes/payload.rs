//! One event type's entry in the payload catalogue ([`crate::routes::payloads`]), what its builder
//! reads, and the helpers the areas' builders share: the types below every area's `payloads()`.
//! This file imports no area and not the catalogue (which gathers the areas' entries above them).

use crate::config::Settings;
use crate::http::ApiError;
use crate::ids::Kind;
use rusqlite::Connection;
use serde_json::{json, Map, Value};

/// Builds an event's `data` from the current state. A closure, so that an entry can carry what it
/// knows itself (a deletion stub its resource).
pub type Build = Box<dyn Fn(&Subject<'_>) -> Result<Value, ApiError> + Send + Sync>;

/// What the events about one kind of object are about, declared once by the area that owns the
/// kind, beside its entries: the kind, the events' `resource_type`, and where such objects are and
/// whose they are, by which the sandbox's triggers and the documentation's examples find one.
#[derive(Debug, PartialEq, Eq)]
pub struct SubjectKind {
    /// The kind of object (`object_id` of a trigger).
    pub kind: Kind,
    /// The event's `resource_type` (`GET /events`), and the `object` of a deletion stub.
    pub resource: &'static str,
    /// Where the objects are: a `FROM` clause naming the row `o`.
    pub table: &'static str,
    /// The SQL expression of an object's company, over the rows of [`SubjectKind::table`].
    pub company: &'static str,
}

/// One event type's entry.
pub struct Payload {
    pub event_type: &'static str,
    pub description: &'static str,
    /// What the event is about: the kind of object, its `resource_type`, its table.
    pub subject: &'static SubjectKind,
    /// The JSON Schema of `data` (`$ref`s point into the OpenAPI document's components).
    pub schema: Value,
    pub build: Build,
    /// A condition on the subject's row (aliased `o`) for this type: a purchase for
    /// `tokens.purchased`. `1` when any object of the kind will do.
    pub pick: &'static str,
    /// Hints the example passes to the builder: what the transition knows that the state does not
    /// show (which screen an ad was removed from).
    pub example_hints: Value,
    /// Which object of the demo world the example shows (SQL on the subject's row `o`), where
    /// the first one would not look like the event (an offline screen for `device.offline`).
    pub example_where: &'static str,
    /// The hints the builder reads (besides the fields of `data` a trigger may set).
    pub takes: &'static [&'static str],
}

impl Payload {
    /// The usual entry: `data` is the object as its `GET` shows it.
    pub fn new(
        event_type: &'static str,
        description: &'static str,
        subject: &'static SubjectKind,
        schema: Value,
        build: impl Fn(&Subject<'_>) -> Result<Value, ApiError> + Send + Sync + 'static,
    ) -> Payload {
        Payload {
            event_type,
            description,
            subject,
            schema,
            build: Box::new(build),
            pick: "1",
            example_hints: json!({}),
            example_where: "1",
            takes: &[],
        }
    }

    /// `<object>.deleted`: the deletion stub `{"id", "object", "deleted": true}`, whose `object`
    /// is the subject's resource.
    pub fn deleted(
        event_type: &'static str,
        description: &'static str,
        subject: &'static SubjectKind,
    ) -> Payload {
        let resource = subject.resource;
        Payload::new(
            event_type,
            description,
            subject,
            deleted_schema(subject.kind, resource),
            move |s| to_data(&Deleted::of(s.id, resource)),
        )
    }

    pub fn pick(mut self, condition: &'static str) -> Payload {
        self.pick = condition;
        self
    }

    pub fn example_where(mut self, condition: &'static str) -> Payload {
        self.example_where = condition;
        self
    }

    pub fn takes(mut self, hints: &'static [&'static str]) -> Payload {
        self.takes = hints;
        self
    }

    pub fn example_hints(mut self, hints: Value) -> Payload {
        self.example_hints = hints;
        self
    }

    /// The schema of a whole delivery body of this type.
    pub fn body_schema(&self) -> Value {
        json!({"type":"object","additionalProperties":false,"required":["id","type","timestamp","data"],
            "properties":{
                "id":{"type":"string","pattern":"^evt_","description":"The event id; also the `webhook-id` header. Deduplicate by it."},
                "type":{"const":self.event_type},
                "timestamp":{"type":"string","format":"date-time","description":"When the event happened (sandbox clock)."},
                "data":self.schema}})
    }
}

/// What a builder reads: the object, its company, and the caller's hints.
pub struct Subject<'a> {
    pub conn: &'a Connection,
    pub settings: &'a Settings,
    pub company: &'a str,
    pub id: &'a str,
    /// The instant the object is judged at (the write's time: a status, a window).
    pub now: i64,
    /// What the transition knows that the state does not show (which device an ad was assigned
    /// to), or a trigger's `data`. Builders read only the hints they document.
    pub hints: &'a Map<String, Value>,
}

impl Subject<'_> {
    pub fn hint_str(&self, name: &str) -> Option<&str> {
        self.hints.get(name).and_then(Value::as_str)
    }
}

// The deletion stub an `<object>.deleted` event carries, and `DELETE` records:
// `{"id", "object", "deleted": true}`. (No doc comment: it would describe every such payload.)
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct Deleted<'a> {
    pub id: &'a str,
    pub object: &'a str,
    #[schemars(extend("const" = true))]
    pub deleted: bool,
}

impl<'a> Deleted<'a> {
    pub fn of(id: &'a str, object: &'a str) -> Deleted<'a> {
        Deleted {
            id,
            object,
            deleted: true,
        }
    }
}

/// The stub's schema for one kind: its id's prefix, and its object.
fn deleted_schema(subject: Kind, object: &'static str) -> Value {
    let mut schema = crate::jsonschema::response::<Deleted<'static>>();
    schema["properties"]["id"]["pattern"] = json!(format!("^{}_", subject.prefix()));
    schema["properties"]["object"] = json!({ "const": object });
    schema
}

/// A `$ref` to a named schema of the OpenAPI document.
pub fn schema_ref(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

/// Serializes a typed value into an event's `data`.
pub fn to_data<T: serde::Serialize>(value: &T) -> Result<Value, ApiError> {
    serde_json::to_value(value).map_err(|e| ApiError::Internal(format!("event payload: {e}")))
}
