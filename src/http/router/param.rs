//! Query parameters as declared on a route, and as parsed and checked when the table is built.

use crate::ids::Kind;
use crate::validate::OneOf;
use serde_json::Value;

/// A documented query parameter, as declared. [`Route::query`] turns its schema into a value and
/// checks it ([`crate::jsonschema::check_schema`]) when the table is built, so a typo stops the
/// server at start-up (and every test) instead of documenting or checking nothing.
///
/// [`Route::query`]: super::Route::query
#[derive(Clone, Copy, Debug)]
pub struct Param {
    pub name: &'static str,
    pub schema: ParamSchema,
    pub description: &'static str,
    pub required: bool,
}

/// The schema of a declared query parameter.
#[derive(Clone, Copy, Debug)]
pub enum ParamSchema {
    /// A JSON Schema written as text.
    Json(&'static str),
    /// One of a fixed list: the very [`OneOf`] the handler checks, with an optional default, so
    /// the document and the check cannot drift.
    OneOf(OneOf, Option<&'static str>),
}

/// A parameter whose schema is JSON text.
pub const fn param(name: &'static str, schema: &'static str, description: &'static str) -> Param {
    Param {
        name,
        schema: ParamSchema::Json(schema),
        description,
        required: false,
    }
}

/// A parameter that takes one of `values` (`{"type":"string","enum":[…]}`).
pub const fn one_of_param(name: &'static str, values: OneOf, description: &'static str) -> Param {
    Param {
        name,
        schema: ParamSchema::OneOf(values, None),
        description,
        required: false,
    }
}

impl Param {
    /// The same parameter, documenting the value used when it is absent (enum parameters).
    pub const fn default(self, value: &'static str) -> Param {
        match self.schema {
            ParamSchema::OneOf(values, _) => Param {
                schema: ParamSchema::OneOf(values, Some(value)),
                ..self
            },
            ParamSchema::Json(_) => panic!("Param::default is for one_of_param"),
        }
    }
}

/// The page size every list route takes.
pub const LIMIT_PARAM: Param = param(
    "limit",
    r#"{"type":"integer","minimum":1,"maximum":100,"default":20}"#,
    "How many items to return in this page, 1–100 (default 20).",
);

/// The cursor of a list of `kind`: a page's `next_cursor`, or an id of that kind (see
/// [`Route::paged_by`](super::Route::paged_by)).
pub const fn cursor_param(kind: Kind) -> Param {
    param(
        "cursor",
        kind.cursor_schema(),
        "The `next_cursor` of the previous page: the page continues after its last item. It holds the page's filters: sent with other filters (other query parameters than `limit`, or another path), it is refused with 400 `cursor_mismatch`. An id of the listed kind is also taken, as a bound without filters.",
    )
}

/// The schema of a numeric list's cursor (the journal's, the audit log's): a page's `next_cursor`
/// (a number, `.` and the tag of the page's filters) or a bare number.
pub const NUMERIC_CURSOR_SCHEMA: &str =
    r#"{"type":"string","pattern":"^[0-9]{1,18}(\\.[0-9A-Za-z]{8})?$"}"#;

/// A parsed JSON Schema. It serializes as the schema, and compares equal to a JSON text of the
/// same value (`schema == kind.schema()`), whatever its spacing or key order.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(transparent)]
pub struct Schema(pub Value);

impl std::ops::Deref for Schema {
    type Target = Value;
    fn deref(&self) -> &Value {
        &self.0
    }
}

impl PartialEq<&str> for Schema {
    fn eq(&self, text: &&str) -> bool {
        serde_json::from_str::<Value>(text).is_ok_and(|v| v == self.0)
    }
}

/// A query parameter of a route, its schema parsed.
#[derive(Clone, Debug)]
pub struct QueryParam {
    pub name: &'static str,
    pub schema: Schema,
    pub description: &'static str,
    pub required: bool,
}

impl QueryParam {
    /// Parses and checks a declared parameter; a malformed schema is a bug in the route table.
    pub(super) fn parse(operation_id: &str, p: &Param) -> Result<QueryParam, String> {
        let at = format!("{operation_id}: query parameter `{}`", p.name);
        let schema: Value = match p.schema {
            ParamSchema::Json(text) => {
                serde_json::from_str(text).map_err(|e| format!("{at}: {e}"))?
            }
            ParamSchema::OneOf(values, None) => values.schema(),
            ParamSchema::OneOf(values, Some(default)) => values.schema_default(default),
        };
        crate::jsonschema::check_schema(&schema, &at)?;
        Ok(QueryParam {
            name: p.name,
            schema: Schema(schema),
            description: p.description,
            required: p.required,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Action;
    use crate::http::router::Route;
    use crate::http::{ApiError, Ctx, Response};

    fn h(_: &mut Ctx<'_>) -> Result<Response, ApiError> {
        Ok(Response::no_content())
    }

    #[test]
    #[should_panic(expected = "`q`: unknown keyword `maxLenght`")]
    fn a_query_schema_typo_fails_when_the_table_is_built() {
        let _ = Route::get("/x", "x", Action::Public, h).query(&[param(
            "q",
            r#"{"type":"string","maxLenght":3}"#,
            "",
        )]);
    }

    #[test]
    #[should_panic(expected = "x: query parameter `q`")]
    fn a_query_schema_that_is_not_json_fails_when_the_table_is_built() {
        let _ = Route::get("/x", "x", Action::Public, h).query(&[param(
            "q",
            r#"{"type":"string",}"#,
            "",
        )]);
    }

    #[test]
    fn the_query_schema_is_a_value() {
        let r = Route::get("/x", "x", Action::Public, h).query(&[LIMIT_PARAM]);
        assert_eq!(r.query[0].schema["maximum"], 100);
        assert_eq!(
            r.query[0].schema,
            r#"{"type":"integer","minimum":1,"maximum":100,"default":20}"#
        );
        assert_ne!(r.query[0].schema, r#"{"type":"integer"}"#);
    }

    #[test]
    fn an_enum_parameter_documents_its_list_and_default() {
        const FORMATS: &[&str] = &["svg", "png"];
        let p = one_of_param("format", OneOf(FORMATS), "").default("svg");
        let r = Route::get("/x", "x", Action::Public, h).query(&[p]);
        assert_eq!(
            r.query[0].schema,
            r#"{"type":"string","enum":["svg","png"],"default":"svg"}"#
        );
    }
}
