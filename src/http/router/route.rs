//! One route: method, path pattern, handler, and what it needs and documents (a builder).

use super::param::{cursor_param, Param, QueryParam, LIMIT_PARAM};
use super::tool::Tool;
use crate::auth::Action;
use crate::http::ctx::Ctx;
use crate::http::error::ApiError;
use crate::http::faults::Operation;
use crate::http::response::Response;
use crate::ids::Kind;
use hyper::Method;

pub type HandlerFn = fn(&mut Ctx<'_>) -> Result<Response, ApiError>;

/// Where a handler runs: inline on the async worker (short indexed queries) or on the blocking
/// pool (argon2, reset, bulk work), so that slow work never stalls other requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exec {
    Inline,
    Blocking,
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
    /// What the operation does for someone integrating ([`Route::describe`]); the OpenAPI
    /// document adds who may call it and its errors. A test names every route without one.
    pub description: &'static str,
    /// Every success response carries an `ETag` ([`Route::etag`]).
    pub etag: bool,
    /// A raw upload ([`Route::raw_body`]) also taken as the `file` part of a
    /// `multipart/form-data` body ([`Route::multipart`]).
    pub multipart: bool,
    /// Left out of the OpenAPI document (the reference pages themselves: `/docs`, `/problems/…`).
    pub hidden: bool,
    pub action: Action,
    /// A public route that checks a credential itself (`/mcp`): the server still verifies the
    /// credential from the headers before reading the body ([`Route::authenticates_itself`]).
    pub authenticates_itself: bool,
    /// Its body is streamed to a temporary file, not memory ([`Route::spooled`]).
    pub spooled: bool,
    pub exec: Exec,
    pub handler: HandlerFn,
    pub query: Vec<QueryParam>,
    pub request: RequestBody,
    /// The JSON body may be left out (every member is optional and an empty body means the
    /// defaults, as Stripe takes a POST without parameters) ([`Route::optional_body`]).
    pub body_optional: bool,
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
    /// Why a GET route has no MCP tool ([`Route::no_tool`]); every GET route has a tool or this.
    pub no_tool: Option<&'static str>,
    /// Why a route answering 201 is not a create a retry could repeat ([`Route::once_only`]):
    /// the readiness report asks no `Idempotency-Key` of it.
    pub once_only: Option<&'static str>,
    segments: Vec<Segment>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    Literal(&'static str),
    Param(&'static str),
}

impl Route {
    /// What fault rules match of this route.
    pub fn operation(&self) -> Operation<'_> {
        Operation {
            method: &self.method,
            pattern: self.path,
            operation_id: self.operation_id,
            action: self.action,
        }
    }

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
            description: "",
            etag: false,
            hidden: false,
            multipart: false,
            action,
            authenticates_itself: false,
            spooled: false,
            exec: Exec::Inline,
            handler,
            query: Vec::new(),
            request: RequestBody::None,
            body_optional: false,
            success: (200, None),
            produces: Vec::new(),
            may_return: Vec::new(),
            idempotent,
            conditional: false,
            audited,
            cursor: None,
            tool: None,
            no_tool: None,
            once_only: None,
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
    /// The operation's description in the OpenAPI document: what it does and when to use it,
    /// written for someone integrating (Markdown). Who may call it and its errors are added.
    pub fn describe(mut self, text: &'static str) -> Route {
        self.description = text;
        self
    }
    /// Its success responses carry the resource's `ETag` (documented as a response header).
    pub fn etag(mut self) -> Route {
        self.etag = true;
        self
    }
    /// The raw upload is also accepted as the `file` part of a `multipart/form-data` body
    /// (documented beside the raw types; the handler reads it with [`crate::http::multipart`]).
    pub fn multipart(mut self) -> Route {
        self.multipart = true;
        self
    }
    /// Served, but not an operation of the OpenAPI document (the human-readable reference).
    pub fn hidden(mut self) -> Route {
        self.hidden = true;
        self
    }
    /// A public route whose handler checks the credential itself (`/mcp`): the server verifies
    /// it from the headers before reading the body, as for every authenticated route, and hands
    /// the principal to the handler ([`Ctx::credential`]).
    pub fn authenticates_itself(mut self) -> Route {
        self.authenticates_itself = true;
        self
    }
    /// An upload: the server streams an authenticated request's body to a temporary file
    /// ([`crate::http::spool`]) and the handler reads it from [`Ctx::spool`]; `Ctx::body` is empty.
    pub fn spooled(mut self) -> Route {
        self.spooled = true;
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
    /// [`Route::body`], which may be left out: the handler takes an empty body as the defaults.
    pub fn optional_body(mut self, schema: &'static str) -> Route {
        self.request = RequestBody::Json(schema);
        self.body_optional = true;
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
    /// [`Route::produces`] for each of `media_types` (a download under its stored type).
    pub fn produces_each(mut self, media_types: &[&'static str]) -> Route {
        self.produces.extend_from_slice(media_types);
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
    /// Audits this route's calls, reads included (the sandbox operator's controls).
    pub fn audited(mut self) -> Route {
        self.audited = true;
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
    /// Says why this GET route is deliberately not an MCP tool (a page for people, bytes, the
    /// operator's controls, what another tool already answers). A GET route with neither this nor
    /// a tool fails `mcp_catalogue::every_get_route_has_a_tool_or_a_reason_not_to`.
    pub fn no_tool(mut self, why: &'static str) -> Route {
        self.no_tool = Some(why);
        self
    }

    /// Says why this 201 route cannot happen twice whatever the client does (a key rotates once:
    /// a second rotation is 409), so its retry needs no `Idempotency-Key` and the journal does not
    /// count it as a create.
    pub fn once_only(mut self, why: &'static str) -> Route {
        self.once_only = Some(why);
        self
    }

    /// Path parameter names in order.
    pub fn path_params(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.segments.iter().filter_map(|s| match s {
            Segment::Param(p) => Some(*p),
            Segment::Literal(_) => None,
        })
    }

    /// The number of segments of the path pattern.
    pub(super) fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// True when every segment of the pattern is a literal (`/devices/health`, `/`).
    pub(super) fn is_literal(&self) -> bool {
        self.segments
            .iter()
            .all(|s| matches!(s, Segment::Literal(_)))
    }

    /// The pattern's first segment when it is a literal (`devices` of `/devices/{id}`); `""` for
    /// the root.
    pub(super) fn first_literal(&self) -> Option<&'static str> {
        match self.segments.first() {
            Some(Segment::Literal(l)) => Some(l),
            Some(Segment::Param(_)) => None,
            None => Some(""),
        }
    }

    pub(super) fn matches(&self, parts: &[&str]) -> Option<Vec<(&'static str, String)>> {
        if parts.len() != self.segments.len() {
            return None;
        }
        let mut params = Vec::new();
        for (seg, part) in self.segments.iter().zip(parts) {
            match seg {
                Segment::Literal(l) if l == part => {}
                Segment::Literal(_) => return None,
                Segment::Param(name) => {
                    let decoded = crate::http::query::percent_decode(part, false)?;
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
