//! The route table: method + path pattern -> handler, with what each route needs and documents.
//!
//! REST and `/mcp` share this one table. It also carries the named JSON Schemas its routes refer
//! to ([`Router::with_schemas`]) and the MCP tools declared on its routes ([`Route::tool`]), so the
//! OpenAPI document and the MCP catalogue are both built from the table alone.

use super::ctx::Ctx;
use super::error::ApiError;
use super::response::Response;
use crate::auth::Action;
use crate::ids::Kind;
use hyper::Method;
use serde_json::Value;
use std::collections::HashMap;

pub type HandlerFn = fn(&mut Ctx<'_>) -> Result<Response, ApiError>;

/// Where a handler runs: inline on the async worker (short indexed queries) or on the blocking
/// pool (argon2, reset, bulk work), so that slow work never stalls other requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exec {
    Inline,
    Blocking,
}

/// A documented query parameter, as declared. `schema` is a JSON Schema snippet; [`Route::query`]
/// parses and checks it ([`crate::jsonschema::check_schema`]) when the table is built, so a typo
/// stops the server at start-up (and every test) instead of documenting or checking nothing.
#[derive(Clone, Copy, Debug)]
pub struct Param {
    pub name: &'static str,
    pub schema: &'static str,
    pub description: &'static str,
    pub required: bool,
}

pub const fn param(name: &'static str, schema: &'static str, description: &'static str) -> Param {
    Param {
        name,
        schema,
        description,
        required: false,
    }
}

/// The page size every list route takes.
pub const LIMIT_PARAM: Param = param(
    "limit",
    r#"{"type":"integer","minimum":1,"maximum":100,"default":20}"#,
    "Page size, 1–100.",
);

/// The cursor of a list of `kind`: an id of that kind, and nothing else (see [`Route::paged_by`]).
pub const fn cursor_param(kind: Kind) -> Param {
    param(
        "cursor",
        kind.schema(),
        "The `next_cursor` of the previous page (the id of its last item): the page continues after it.",
    )
}

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
    fn parse(operation_id: &str, p: &Param) -> Result<QueryParam, String> {
        let at = format!("{operation_id}: query parameter `{}`", p.name);
        let schema: Value = serde_json::from_str(p.schema).map_err(|e| format!("{at}: {e}"))?;
        crate::jsonschema::check_schema(&schema, &at)?;
        Ok(QueryParam {
            name: p.name,
            schema: Schema(schema),
            description: p.description,
            required: p.required,
        })
    }
}

/// An MCP tool, declared on the route it reads or whose change it prepares. The MCP layer builds
/// its catalogue, input and output schemas from the route (the `mcp` module).
#[derive(Clone, Copy, Debug)]
pub struct Tool {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// The tool argument (and its description) that fills each path parameter, in order.
    pub path_args: &'static [(&'static str, &'static str)],
    /// `None`: a read, answered by the route. `Some`: a two-step write of this change, confirmed
    /// later with `confirm_change`; the target is read first with the GET route at the path up to
    /// the last path parameter.
    pub change: Option<Change>,
}

/// What a prepare tool changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// The caller gives new values for some of these fields of the route's JSON body (`changes`).
    Fields(&'static [&'static str]),
    /// The route sets this boolean field of the target (it takes no body).
    Sets(&'static str, bool),
}

impl Tool {
    pub const fn read(
        name: &'static str,
        title: &'static str,
        path_args: &'static [(&'static str, &'static str)],
        description: &'static str,
    ) -> Tool {
        Tool {
            name,
            title,
            description,
            path_args,
            change: None,
        }
    }

    pub const fn prepare(
        name: &'static str,
        title: &'static str,
        path_args: &'static [(&'static str, &'static str)],
        change: Change,
        description: &'static str,
    ) -> Tool {
        Tool {
            name,
            title,
            description,
            path_args,
            change: Some(change),
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub enum RequestBody {
    None,
    /// A JSON body described by the named schema component.
    Json(&'static str),
    /// Raw bytes of the given media types (uploads).
    Raw(&'static [&'static str]),
}

#[derive(Clone, Debug)]
pub struct Route {
    pub method: Method,
    pub path: &'static str,
    pub operation_id: &'static str,
    pub tag: &'static str,
    pub summary: &'static str,
    pub action: Action,
    pub exec: Exec,
    pub handler: HandlerFn,
    pub query: Vec<QueryParam>,
    pub request: RequestBody,
    /// Success status and the schema component of its body (`None`: no body, or not JSON).
    pub success: (u16, Option<&'static str>),
    /// Non-JSON success media types (downloads, images).
    pub produces: Vec<&'static str>,
    /// Statuses beyond the common ones that this route may answer (402, 304, ...), for the document.
    pub may_return: Vec<u16>,
    /// Accepts `Idempotency-Key` (POST that creates or changes something).
    pub idempotent: bool,
    /// Honours `If-Match`.
    pub conditional: bool,
    /// Recorded in the audit log (every write, by default).
    pub audited: bool,
    /// For a list: the kind of id its cursor is ([`Route::paged_by`]). [`Ctx::page`] refuses any
    /// other cursor with 422 `invalid_cursor`.
    pub cursor: Option<Kind>,
    /// The MCP tool that calls this route, if any.
    pub tool: Option<Tool>,
    segments: Vec<Segment>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    Literal(&'static str),
    Param(&'static str),
}

impl Route {
    pub fn new(
        method: Method,
        path: &'static str,
        operation_id: &'static str,
        action: Action,
        handler: HandlerFn,
    ) -> Route {
        let segments = path
            .trim_start_matches('/')
            .split('/')
            .filter(|s| !s.is_empty())
            .map(
                |s| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    Some(name) => Segment::Param(name),
                    None => Segment::Literal(s),
                },
            )
            .collect();
        let idempotent = method == Method::POST;
        let audited = method != Method::GET && method != Method::HEAD;
        Route {
            method,
            path,
            operation_id,
            tag: "",
            summary: "",
            action,
            exec: Exec::Inline,
            handler,
            query: Vec::new(),
            request: RequestBody::None,
            success: (200, None),
            produces: Vec::new(),
            may_return: Vec::new(),
            idempotent,
            conditional: false,
            audited,
            cursor: None,
            tool: None,
            segments,
        }
    }

    pub fn get(path: &'static str, op: &'static str, action: Action, h: HandlerFn) -> Route {
        Route::new(Method::GET, path, op, action, h)
    }
    pub fn post(path: &'static str, op: &'static str, action: Action, h: HandlerFn) -> Route {
        Route::new(Method::POST, path, op, action, h)
    }
    pub fn patch(path: &'static str, op: &'static str, action: Action, h: HandlerFn) -> Route {
        Route::new(Method::PATCH, path, op, action, h).conditional()
    }
    pub fn delete(path: &'static str, op: &'static str, action: Action, h: HandlerFn) -> Route {
        Route::new(Method::DELETE, path, op, action, h)
            .conditional()
            .returns(204, None)
    }

    pub fn tag(mut self, tag: &'static str) -> Route {
        self.tag = tag;
        self
    }
    pub fn summary(mut self, s: &'static str) -> Route {
        self.summary = s;
        self
    }
    pub fn blocking(mut self) -> Route {
        self.exec = Exec::Blocking;
        self
    }
    /// Adds query parameters. Panics (when the route table is built, at start-up) on a schema
    /// that is not JSON or uses a keyword or type our checker does not know.
    pub fn query(mut self, params: &[Param]) -> Route {
        for p in params {
            match QueryParam::parse(self.operation_id, p) {
                Ok(q) => self.query.push(q),
                Err(e) => panic!("route table: {e}"),
            }
        }
        self
    }
    /// A list of objects of `kind`, newest first: takes `limit` and a `cursor` that must be an id
    /// of `kind` (documented with that pattern, checked by [`Ctx::page`]).
    pub fn paged_by(mut self, kind: Kind) -> Route {
        self.cursor = Some(kind);
        self.query(&[LIMIT_PARAM, cursor_param(kind)])
    }
    pub fn body(mut self, schema: &'static str) -> Route {
        self.request = RequestBody::Json(schema);
        self
    }
    pub fn raw_body(mut self, types: &'static [&'static str]) -> Route {
        self.request = RequestBody::Raw(types);
        self
    }
    pub fn returns(mut self, status: u16, schema: Option<&'static str>) -> Route {
        self.success = (status, schema);
        self
    }
    pub fn ok(self, schema: &'static str) -> Route {
        self.returns(200, Some(schema))
    }
    pub fn created(self, schema: &'static str) -> Route {
        self.returns(201, Some(schema))
    }
    /// Adds a non-JSON success media type; call again for alternatives (`?format=png`).
    pub fn produces(mut self, media_type: &'static str) -> Route {
        self.produces.push(media_type);
        self
    }
    pub fn may_return(mut self, statuses: &[u16]) -> Route {
        self.may_return.extend_from_slice(statuses);
        self
    }
    pub fn conditional(mut self) -> Route {
        self.conditional = true;
        self
    }
    pub fn not_idempotent(mut self) -> Route {
        self.idempotent = false;
        self
    }
    pub fn not_audited(mut self) -> Route {
        self.audited = false;
        self
    }
    /// Declares the MCP tool that calls this route (or prepares its change).
    pub fn tool(mut self, tool: Tool) -> Route {
        self.tool = Some(tool);
        self
    }

    /// Path parameter names in order.
    pub fn path_params(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.segments.iter().filter_map(|s| match s {
            Segment::Param(p) => Some(*p),
            Segment::Literal(_) => None,
        })
    }

    fn matches(&self, parts: &[&str]) -> Option<Vec<(&'static str, String)>> {
        if parts.len() != self.segments.len() {
            return None;
        }
        let mut params = Vec::new();
        for (seg, part) in self.segments.iter().zip(parts) {
            match seg {
                Segment::Literal(l) if l == part => {}
                Segment::Literal(_) => return None,
                Segment::Param(name) => {
                    let decoded = super::query::percent_decode(part, false)?;
                    if decoded.is_empty() {
                        return None;
                    }
                    params.push((*name, decoded));
                }
            }
        }
        Some(params)
    }
}

pub enum Match<'a> {
    Found(&'a Route, Vec<(&'static str, String)>),
    MethodNotAllowed(Vec<Method>),
    NotFound,
}

pub struct Router {
    routes: Vec<Route>,
    /// The named JSON Schemas (`#/components/schemas/<name>`) the routes refer to, in order.
    schemas: Vec<(&'static str, Value)>,
    by_name: HashMap<&'static str, usize>,
}

impl Router {
    pub fn new(routes: Vec<Route>) -> Router {
        Router {
            routes,
            schemas: Vec::new(),
            by_name: HashMap::new(),
        }
    }

    /// Registers the named schemas the routes refer to. Panics (at start-up) on a schema our
    /// checker refuses ([`crate::jsonschema::check_schema`]) or a name given twice.
    pub fn with_schemas(mut self, schemas: Vec<(&'static str, Value)>) -> Router {
        for (name, schema) in schemas {
            if let Err(e) = crate::jsonschema::check_schema(&schema, name) {
                panic!("route table: schema {e}");
            }
            if self.by_name.insert(name, self.schemas.len()).is_some() {
                panic!("route table: schema `{name}` is registered twice");
            }
            self.schemas.push((name, schema));
        }
        self
    }

    pub fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// The named schemas, in registration order.
    pub fn schemas(&self) -> &[(&'static str, Value)] {
        &self.schemas
    }

    pub fn schema(&self, name: &str) -> Option<&Value> {
        self.by_name.get(name).map(|&i| &self.schemas[i].1)
    }

    pub fn by_operation(&self, operation_id: &str) -> Option<&Route> {
        self.routes.iter().find(|r| r.operation_id == operation_id)
    }

    pub fn find(&self, method: &Method, path: &str) -> Match<'_> {
        let parts: Vec<&str> = path
            .trim_start_matches('/')
            .split('/')
            .filter(|s| !s.is_empty())
            .collect();
        let mut allow = Vec::new();
        for route in &self.routes {
            if let Some(params) = route.matches(&parts) {
                if route.method == *method {
                    return Match::Found(route, params);
                }
                if !allow.contains(&route.method) {
                    allow.push(route.method.clone());
                }
            }
        }
        if allow.is_empty() {
            Match::NotFound
        } else {
            Match::MethodNotAllowed(allow)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Action;

    fn h(_: &mut Ctx<'_>) -> Result<Response, ApiError> {
        Ok(Response::no_content())
    }

    #[test]
    fn matching() {
        let r = Router::new(vec![
            Route::get("/devices", "a", Action::Public, h),
            Route::get("/devices/{id}", "b", Action::Public, h),
            Route::delete("/devices/{id}", "c", Action::Public, h),
        ]);
        match r.find(&Method::GET, "/devices/dev_1") {
            Match::Found(route, params) => {
                assert_eq!(route.operation_id, "b");
                assert_eq!(params, vec![("id", "dev_1".to_string())]);
            }
            _ => panic!("no match"),
        }
        assert!(
            matches!(r.find(&Method::PUT, "/devices/x"), Match::MethodNotAllowed(a) if a.len() == 2)
        );
        assert!(matches!(r.find(&Method::GET, "/nope"), Match::NotFound));
        assert!(matches!(
            r.find(&Method::GET, "/devices/x/y"),
            Match::NotFound
        ));
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
    #[should_panic(expected = "registered twice")]
    fn a_schema_name_is_registered_once() {
        let s = || ("Thing", serde_json::json!({"type": "object"}));
        let _ = Router::new(Vec::new()).with_schemas(vec![s(), s()]);
    }

    #[test]
    fn the_query_schema_is_a_value() {
        let r = Route::get("/x", "x", Action::Public, h).query(&[LIMIT_PARAM]);
        assert_eq!(r.query[0].schema["maximum"], 100);
        assert_eq!(r.query[0].schema, LIMIT_PARAM.schema);
        assert_ne!(r.query[0].schema, r#"{"type":"integer"}"#);
    }
}
