//! Strict JSON parsing of request bodies: RFC 8259 syntax, and no object that names a member twice.
//!
//! RFC 8259 §4 leaves duplicate names to the implementation; `serde_json` keeps the last one, so
//! `{"status":"draft","status":"active"}` would pass whichever check looked at the first. Here a
//! duplicate, at any depth, refuses the whole body. The check is part of the one parsing pass: a
//! [`DeserializeSeed`] builds the [`Value`] as `serde_json` would and stops at the first repeated
//! name (member names are compared after unescaping, so `"a"` and `"\u0061"` are the same name).
//! Nothing is parsed twice and no value is cloned.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::fmt;

/// Why a body is not acceptable JSON.
#[derive(Debug)]
pub enum JsonError {
    /// Not JSON (syntax, trailing characters, nesting deeper than 128).
    Syntax(serde_json::Error),
    /// An object names `name` twice; `pointer` (RFC 6901) is the object.
    DuplicateMember { pointer: String, name: String },
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonError::Syntax(e) => write!(f, "The body is not valid JSON: {e}"),
            JsonError::DuplicateMember { pointer, name } => {
                let at = if pointer.is_empty() {
                    "The body".to_string()
                } else {
                    format!("The object at `{pointer}`")
                };
                write!(f, "{at} names the member `{name}` more than once.")
            }
        }
    }
}

/// Parses one JSON value (surrounding whitespace allowed, nothing else), refusing duplicate
/// member names at any depth. Use it wherever a request body is parsed: REST ([`super::Ctx::json`])
/// and MCP JSON-RPC messages alike.
pub fn from_slice(bytes: &[u8]) -> Result<Value, JsonError> {
    let found: RefCell<Option<Found>> = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = Strict { found: &found }.deserialize(&mut de);
    let value = match parsed {
        Ok(v) => v,
        Err(e) => {
            return Err(match found.into_inner() {
                Some(f) => f.into_error(),
                None => JsonError::Syntax(e),
            })
        }
    };
    de.end().map_err(JsonError::Syntax)?;
    Ok(value)
}

/// A duplicate found during the parse: its name, and the path to its object, innermost first
/// (each enclosing level adds its segment while the error unwinds).
struct Found {
    name: String,
    path: Vec<String>,
}

impl Found {
    fn into_error(self) -> JsonError {
        let mut pointer = String::new();
        for segment in self.path.iter().rev() {
            pointer.push('/');
            pointer.push_str(&segment.replace('~', "~0").replace('/', "~1"));
        }
        JsonError::DuplicateMember {
            pointer,
            name: self.name,
        }
    }
}

#[derive(Clone, Copy)]
struct Strict<'a> {
    found: &'a RefCell<Option<Found>>,
}

impl Strict<'_> {
    /// On the way out of a failed child, records the child's segment if the failure is a duplicate.
    fn unwind(&self, segment: impl FnOnce() -> String) {
        if let Some(found) = self.found.borrow_mut().as_mut() {
            found.path.push(segment());
        }
    }
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        loop {
            match seq.next_element_seed(self) {
                Ok(Some(v)) => items.push(v),
                Ok(None) => return Ok(Value::Array(items)),
                Err(e) => {
                    let index = items.len();
                    self.unwind(|| index.to_string());
                    return Err(e);
                }
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(name) = map.next_key::<String>()? {
            if members.contains_key(&name) {
                *self.found.borrow_mut() = Some(Found {
                    name,
                    path: Vec::new(),
                });
                return Err(de::Error::custom("duplicate member name"));
            }
            match map.next_value_seed(self) {
                Ok(v) => {
                    members.insert(name, v);
                }
                Err(e) => {
                    self.unwind(|| name);
                    return Err(e);
                }
            }
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn duplicate(s: &str) -> Option<(String, String)> {
        match from_slice(s.as_bytes()) {
            Err(JsonError::DuplicateMember { pointer, name }) => Some((pointer, name)),
            _ => None,
        }
    }

    #[test]
    fn parses_like_serde_json() {
        for s in [
            r#"{"a":[1,-2,3.5,1e400,null,true,"x\u00e9"],"b":{"c":{}},"d":18446744073709551615}"#,
            " [] ",
            "0",
            r#""str""#,
            r#"{"a":1,"A":2}"#,
        ] {
            let strict = from_slice(s.as_bytes()).ok();
            let plain: Option<Value> = serde_json::from_str(s).ok();
            assert_eq!(strict, plain, "{s}");
        }
        for bad in ["", "{", "[1,]", "{} {}", "nul", r#"{"a" 1}"#] {
            assert!(
                matches!(from_slice(bad.as_bytes()), Err(JsonError::Syntax(_))),
                "{bad}"
            );
        }
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert!(matches!(
            from_slice(deep.as_bytes()),
            Err(JsonError::Syntax(_))
        ));
    }

    #[test]
    fn refuses_a_repeated_name_at_any_depth() {
        assert_eq!(duplicate(r#"{"a":1,"a":1}"#), Some(("".into(), "a".into())));
        assert_eq!(
            duplicate(r#"{"a":1,"\u0061":2}"#),
            Some(("".into(), "a".into()))
        );
        assert_eq!(
            duplicate(r#"{"x":[0,{"b":{"c":1,"c":2}}]}"#),
            Some(("/x/1/b".into(), "c".into()))
        );
        assert_eq!(
            duplicate(r#"[{"a/b":{"~":1,"~":1}}]"#),
            Some(("/0/a~1b".into(), "~".into()))
        );
        // The same name in sibling objects is fine.
        assert!(from_slice(br#"[{"a":1},{"a":2}]"#).is_ok());
        assert!(from_slice(br#"{"a":{"a":{"a":1}}}"#).is_ok());
    }
}
