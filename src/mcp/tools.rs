//! The tools: a static table naming, for each tool, the REST operation it calls (or whose change it
//! prepares), and the catalogue built from it and the route table at first use.
//!
//! Nothing here decides a permission or holds a credential. A tool is listed to a caller when
//! [`crate::auth::authorize`] allows the action of its route; a call becomes an internal REST
//! request through [`crate::http::pipeline::execute`] with the caller's own credential headers, so
//! the same router, scope check and handlers decide what happens. Input schemas take the route's
//! own query parameters, and output schemas are the route's success schema with `$ref`s inlined, so
//! neither can drift from the REST contract.

use super::pending::{self, ChangePlan};
use crate::auth::{authorize, Action, Principal, Target};
use crate::http::pipeline::{self, Request};
use crate::http::response::Response;
use crate::http::router::{RequestBody, Route, Router};
use crate::redact;
use bytes::Bytes;
use hyper::{HeaderMap, Method};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::net::IpAddr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prepare {
    AdChange,
    Activation,
    Deactivation,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// One REST GET; the answer is the tool result.
    Read,
    /// Stores a change and returns its preview; executes nothing.
    Prepare(Prepare),
    Confirm,
    Cancel,
}

pub struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub kind: Kind,
    /// The operation the tool calls (reads), or the operation of the change it prepares.
    pub operation: &'static str,
    /// Reads: the tool argument (and its description) that fills each path parameter, in order.
    pub path_args: &'static [(&'static str, &'static str)],
}

/// The changes that `confirm_change` can execute.
pub const WRITE_OPERATIONS: [&str; 3] = ["updateAd", "activatePromotion", "deactivatePromotion"];

impl ToolSpec {
    /// Every REST operation this tool may run (all must exist in the route table).
    pub fn operations(&'static self) -> &'static [&'static str] {
        match self.kind {
            Kind::Confirm | Kind::Cancel => &WRITE_OPERATIONS,
            _ => std::slice::from_ref(&self.operation),
        }
    }

    /// The GET operation a prepare tool reads the current state with.
    pub fn read_operation(&self) -> Option<&'static str> {
        match self.kind {
            Kind::Prepare(Prepare::AdChange) => Some("getAd"),
            Kind::Prepare(_) => Some("getPromotion"),
            _ => None,
        }
    }
}

const fn read(
    name: &'static str,
    title: &'static str,
    operation: &'static str,
    path_args: &'static [(&'static str, &'static str)],
    description: &'static str,
) -> ToolSpec {
    ToolSpec {
        name,
        title,
        description,
        kind: Kind::Read,
        operation,
        path_args,
    }
}

const COMPANY_ID: &[(&str, &str)] = &[(
    "company_id",
    "The company id (`cmp_…`), as returned by list_companies.",
)];
const DEVICE_ID: &[(&str, &str)] = &[(
    "device_id",
    "The device id (`dev_…`), as returned by list_devices.",
)];
const AD_ID: &[(&str, &str)] = &[("ad_id", "The ad id (`ad_…`), as returned by list_ads.")];
const PROMOTION_ID: &[(&str, &str)] = &[(
    "promotion_id",
    "The promotion id (`promo_…`), as returned by list_promotions.",
)];
const INVOICE_ID: &[(&str, &str)] = &[(
    "invoice_id",
    "The invoice id (`inv_…`), as returned by list_invoices.",
)];

/// Every tool, in the order `tools/list` returns them.
pub static TOOLS: &[ToolSpec] = &[
    read("service_health_check", "Service health check", "getHealth", &[],
        "Check that the signage service is up. Also reports the MCP backend auth mode (`passthrough`: every tool acts with your own API key, the server holds no credential of its own). Use it first when other tools fail unexpectedly. Takes no arguments."),
    read("get_api_key_permissions", "API key permissions", "getCredential", &[],
        "Describe the API key this connection uses: its scopes (`read`, `write`, `<area>:read|write`, `admin`), its company scope, the companies it can see, its client id and its expiry. Use it to explain why something is not visible or not allowed. Never returns the secret."),
    read("list_companies", "List companies", "listCompanies", &[],
        "List the companies the API key can see, newest first. Use it to find company ids for the other tools. Paged: pass the returned `next_cursor` as `cursor` for the next page."),
    read("get_company", "Get company", "getCompany", COMPANY_ID,
        "Get one company: name, slug, industry, country, timezone and plan."),
    read("get_company_branding", "Get company branding", "getCompanyBranding", COMPANY_ID,
        "Get a company's branding: logos and brand tokens (colours, fonts, corner radius, tagline). Use it for questions about a company's look on screen."),
    read("list_devices", "List devices", "listDevices", &[],
        "List screens (devices), newest first, optionally filtered by company and connection status (online, offline, never seen). Paged with `cursor`."),
    read("get_device", "Get device", "getDevice", DEVICE_ID,
        "Get one screen: name, location, platform, orientation, resolution, connection status and the ad it is playing."),
    read("get_device_diagnostics", "Get device diagnostics", "getDeviceDiagnostics", DEVICE_ID,
        "Get playback diagnostics of one screen: last heartbeat, app version, storage, uptime and recent playback errors. Use it when a screen is offline or not showing the right content."),
    read("list_device_ads", "List ads on a device", "listDeviceAds", DEVICE_ID,
        "List the ads assigned to one screen."),
    read("list_ads", "List ads", "listAds", &[],
        "List ads, newest first, optionally filtered by company, device, status (draft, active, paused, archived) or promotion. Paged with `cursor`."),
    read("get_ad", "Get ad", "getAd", AD_ID,
        "Get one ad: name, headline, status, media, linked promotion and duration. Use it before preparing a change to an ad."),
    read("list_promotions", "List promotions", "listPromotions", &[],
        "List promotions, newest first, optionally filtered by company, whether they are active, or their state. Paged with `cursor`."),
    read("get_promotion", "Get promotion", "getPromotion", PROMOTION_ID,
        "Get one promotion: dates, discount, landing page, whether it is active and what activating it costs in tokens."),
    read("get_promotion_qr_codes", "Get promotion QR codes", "listPromotionQrCodes", PROMOTION_ID,
        "List the QR codes of a promotion, with their target URLs and scan counts."),
    read("list_plans", "List plans", "listPlans", &[],
        "List the subscription plans visible to the API key: price, device limit, included monthly tokens and features."),
    read("list_token_packs", "List token packs", "listTokenPacks", &[],
        "List the token packs that can be bought (tokens pay for promotion activations): how many tokens and the price."),
    read("get_token_balance", "Get token balance", "getTokenBalance", &[],
        "Get a company's current token balance. Use it before activating a promotion, which costs tokens."),
    read("list_token_transactions", "List token transactions", "listTokenTransactions", &[],
        "List a company's token ledger (grants, purchases, spending, refunds), newest first, optionally filtered by kind. Paged with `cursor`."),
    read("list_invoices", "List invoices", "listInvoices", &[],
        "List invoices of the companies the API key can see, newest first, optionally filtered by company and status (draft, open, paid, void)."),
    read("get_invoice", "Get invoice", "getInvoice", INVOICE_ID,
        "Get one invoice with its period, status, due date and totals."),
    read("list_recent_charges", "List recent charges", "listCharges", &[],
        "List recent charges (subscription, token packs, overage, credits), newest first, optionally filtered by company or invoice."),
    read("list_media", "List media", "listMedia", &[],
        "List media items (images and videos used by ads), newest first, optionally filtered by company."),
    read("list_webhooks", "List webhooks", "listWebhooks", &[],
        "List the configured webhook integrations (target URL, event types, enabled), optionally filtered by company. Signing secrets are never shown."),
    ToolSpec {
        name: "prepare_ad_change",
        title: "Prepare an ad change",
        description: "Prepare a change to an ad (name, headline, status, media, linked promotion or duration). This executes NOTHING: it returns a preview (current state, proposed state, the differences) and a `confirmation_id`. Show the preview to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id. The id is single-use, bound to this API key and expires.",
        kind: Kind::Prepare(Prepare::AdChange),
        operation: "updateAd",
        path_args: &[],
    },
    ToolSpec {
        name: "prepare_promotion_activation",
        title: "Prepare a promotion activation",
        description: "Prepare the activation of a promotion. This executes NOTHING: it returns a preview with the token cost of the activation and the company's current balance, and a `confirmation_id`. Show the preview (including the cost) to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id.",
        kind: Kind::Prepare(Prepare::Activation),
        operation: "activatePromotion",
        path_args: &[],
    },
    ToolSpec {
        name: "prepare_promotion_deactivation",
        title: "Prepare a promotion deactivation",
        description: "Prepare the deactivation of an active promotion. This executes NOTHING: it returns a preview and a `confirmation_id`. Show the preview to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id.",
        kind: Kind::Prepare(Prepare::Deactivation),
        operation: "deactivatePromotion",
        path_args: &[],
    },
    ToolSpec {
        name: "confirm_change",
        title: "Confirm a prepared change",
        description: "Execute a change prepared by a prepare_* tool, with the user's explicit consent. Call it ONLY after you have shown the preview to the user and the user has confirmed; never on your own initiative. The change runs with this API key's permissions as they are now, and only if the target has not changed since the preview; otherwise nothing is applied and you must prepare again.",
        kind: Kind::Confirm,
        operation: "",
        path_args: &[],
    },
    ToolSpec {
        name: "cancel_change",
        title: "Cancel a prepared change",
        description: "Discard a change prepared by a prepare_* tool (for example when the user declines). Nothing is executed; the confirmation id can no longer be used.",
        kind: Kind::Cancel,
        operation: "",
        path_args: &[],
    },
];

/// `^[0-9A-Za-z_]+$`, checked by hand (no regex engine on the request path).
const ID_PATTERN: &str = "^[0-9A-Za-z_]+$";

fn id_schema(description: &str) -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 100, "pattern": ID_PATTERN, "description": description})
}

/// The fields `prepare_ad_change` may change, and their shape when the REST schema is not known.
const AD_CHANGE_FIELDS: [&str; 6] = [
    "name",
    "headline",
    "status",
    "media_id",
    "promotion_id",
    "duration_seconds",
];

fn ad_changes_fallback() -> Value {
    json!({"type":"object","additionalProperties":false,"minProperties":1,
        "properties":{
            "name":{"type":"string","minLength":1,"maxLength":120},
            "headline":{"type":"string","minLength":1,"maxLength":200},
            "status":{"type":"string","enum":["draft","active","paused","archived"]},
            "media_id":{"type":["string","null"],"maxLength":100},
            "promotion_id":{"type":["string","null"],"maxLength":100},
            "duration_seconds":{"type":"integer","minimum":1,"maximum":3600}}})
}

/// A tool as served: its definition for `tools/list` and what a call needs.
pub struct Tool {
    pub spec: &'static ToolSpec,
    /// The route the tool calls (reads) or whose change it prepares; `None` when the route table
    /// lacks it, and then the tool is never listed nor callable.
    pub route: Option<Route>,
    /// The GET route a prepare tool reads the target with.
    pub read_route: Option<Route>,
    /// The tool is listed to a principal allowed any of these actions.
    pub actions: Vec<Action>,
    pub input_schema: Value,
    /// The entry of `tools/list`.
    pub definition: Value,
}

impl Tool {
    pub fn available(&self) -> bool {
        !self.actions.is_empty()
    }

    /// The single permission question: may this principal use the route(s) behind the tool?
    pub fn allowed(&self, p: &Principal) -> bool {
        self.actions
            .iter()
            .any(|a| authorize(p, *a, Target::Service).is_ok())
    }

    /// The scope a caller lacks, for the refusal message.
    pub fn required_scope(&self) -> String {
        let mut scopes: Vec<String> = Vec::new();
        for scope in self.actions.iter().map(|a| a.required_scope()) {
            if !scope.is_empty() && !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        scopes.join("` or `")
    }
}

pub struct Catalog {
    pub tools: Vec<Tool>,
    by_name: HashMap<&'static str, usize>,
}

impl Catalog {
    pub fn build(router: &Router) -> Catalog {
        let schemas: HashMap<&'static str, Value> = crate::routes::schemas().into_iter().collect();
        let tools: Vec<Tool> = TOOLS
            .iter()
            .map(|spec| build_tool(spec, router, &schemas))
            .collect();
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.spec.name, i))
            .collect();
        Catalog { tools, by_name }
    }

    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    /// The tools this principal may use, in table order.
    pub fn visible<'a>(&'a self, p: &'a Principal) -> impl Iterator<Item = &'a Tool> + 'a {
        self.tools.iter().filter(move |t| t.allowed(p))
    }
}

fn build_tool(
    spec: &'static ToolSpec,
    router: &Router,
    schemas: &HashMap<&'static str, Value>,
) -> Tool {
    let route = match spec.kind {
        Kind::Confirm | Kind::Cancel => None,
        _ => router.by_operation(spec.operation).cloned(),
    };
    let read_route = spec
        .read_operation()
        .and_then(|op| router.by_operation(op).cloned());
    let actions: Vec<Action> = match spec.kind {
        Kind::Read => route.iter().map(|r| r.action).collect(),
        Kind::Prepare(_) => match (&route, &read_route) {
            (Some(w), Some(_)) => vec![w.action],
            _ => Vec::new(),
        },
        Kind::Confirm | Kind::Cancel => WRITE_OPERATIONS
            .iter()
            .filter_map(|op| router.by_operation(op))
            .map(|r| r.action)
            .collect(),
    };
    let input_schema = input_schema(spec, route.as_ref(), schemas);
    let output_schema = output_schema(spec, route.as_ref(), read_route.as_ref(), router, schemas);
    let (read_only, destructive, idempotent) = match spec.kind {
        Kind::Read => (true, false, true),
        Kind::Prepare(_) => (false, false, false),
        Kind::Confirm => (false, true, false),
        Kind::Cancel => (false, false, true),
    };
    let mut annotations =
        json!({"title": spec.title, "readOnlyHint": read_only, "openWorldHint": false});
    if !read_only {
        annotations["destructiveHint"] = json!(destructive);
        annotations["idempotentHint"] = json!(idempotent);
    }
    let mut definition = json!({
        "name": spec.name,
        "title": spec.title,
        "description": spec.description,
        "inputSchema": input_schema,
    });
    if let Some(out) = output_schema {
        definition["outputSchema"] = out;
    }
    definition["annotations"] = annotations;
    Tool {
        spec,
        route,
        read_route,
        actions,
        input_schema,
        definition,
    }
}

fn object_schema(properties: Map<String, Value>, required: Vec<String>) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

fn input_schema(
    spec: &ToolSpec,
    route: Option<&Route>,
    schemas: &HashMap<&'static str, Value>,
) -> Value {
    let mut props = Map::new();
    let mut required = Vec::new();
    match spec.kind {
        Kind::Read => {
            for (name, description) in spec.path_args {
                props.insert(name.to_string(), id_schema(description));
                required.push(name.to_string());
            }
            for q in route.map(|r| r.query.as_slice()).unwrap_or(&[]) {
                let mut s: Value =
                    serde_json::from_str(q.schema).unwrap_or_else(|_| json!({"type": "string"}));
                if !q.description.is_empty() {
                    s["description"] = json!(q.description);
                }
                props.insert(q.name.to_string(), s);
                if q.required {
                    required.push(q.name.to_string());
                }
            }
        }
        Kind::Prepare(Prepare::AdChange) => {
            props.insert(
                "ad_id".into(),
                id_schema("The ad to change (`ad_…`), as returned by list_ads."),
            );
            let mut changes = ad_changes_schema(route, schemas);
            changes["description"] = json!("The fields to change and their new values; at least one. `null` clears `media_id` or `promotion_id`.");
            props.insert("changes".into(), changes);
            required = vec!["ad_id".into(), "changes".into()];
        }
        Kind::Prepare(_) => {
            props.insert(
                "promotion_id".into(),
                id_schema("The promotion (`promo_…`), as returned by list_promotions."),
            );
            required.push("promotion_id".into());
        }
        Kind::Confirm | Kind::Cancel => {
            props.insert(
                "confirmation_id".into(),
                json!({"type": "string", "minLength": 1, "maxLength": 100,
                    "description": "The `confirmation_id` returned by the prepare_* tool."}),
            );
            required.push("confirmation_id".into());
        }
    }
    object_schema(props, required)
}

/// The ad fields of the REST update schema (so constraints stay the REST ones), or a fallback.
fn ad_changes_schema(route: Option<&Route>, schemas: &HashMap<&'static str, Value>) -> Value {
    let rest = route.and_then(|r| match r.request {
        RequestBody::Json(name) => schemas.get(name),
        _ => None,
    });
    let Some(rest) = rest else {
        return ad_changes_fallback();
    };
    let rest = inline(rest, schemas, 0);
    let mut props = Map::new();
    for field in AD_CHANGE_FIELDS {
        if let Some(s) = rest["properties"].get(field) {
            props.insert(field.into(), s.clone());
        }
    }
    if props.is_empty() {
        return ad_changes_fallback();
    }
    json!({"type": "object", "additionalProperties": false, "minProperties": 1, "properties": props})
}

/// Replaces `#/components/schemas/X` references with the schemas themselves, and makes properties
/// whose values the redactor replaces accept the replacement.
pub fn inline(schema: &Value, schemas: &HashMap<&'static str, Value>, depth: usize) -> Value {
    match schema {
        Value::Object(m) => {
            if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                return match r.strip_prefix("#/components/schemas/") {
                    Some(name) if depth < 16 => schemas
                        .get(name)
                        .map(|s| inline(s, schemas, depth + 1))
                        .unwrap_or_else(|| json!({})),
                    _ => json!({}),
                };
            }
            let mut out = Map::new();
            for (k, v) in m {
                if k == "properties" {
                    if let Value::Object(props) = v {
                        let props = props
                            .iter()
                            .map(|(name, s)| {
                                let s = if redact::is_secret_field(name) {
                                    json!({"type": ["string", "null"], "description": "Always redacted by the MCP server."})
                                } else {
                                    inline(s, schemas, depth)
                                };
                                (name.clone(), s)
                            })
                            .collect();
                        out.insert(k.clone(), Value::Object(props));
                        continue;
                    }
                }
                out.insert(k.clone(), inline(v, schemas, depth));
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| inline(v, schemas, depth)).collect())
        }
        other => other.clone(),
    }
}

/// The route's success body as a JSON Schema (lists become the list envelope), if it is an object.
pub fn success_schema(route: &Route, schemas: &HashMap<&'static str, Value>) -> Option<Value> {
    let name = route.success.1?;
    let schema = match name.strip_suffix("List") {
        Some(item) => {
            let item = inline(schemas.get(item)?, schemas, 0);
            json!({"type": "object", "additionalProperties": false,
                "required": ["object", "data", "has_more", "next_cursor"],
                "properties": {"object": {"const": "list"}, "data": {"type": "array", "items": item},
                    "has_more": {"type": "boolean"}, "next_cursor": {"type": ["string", "null"]}}})
        }
        _ => inline(schemas.get(name)?, schemas, 0),
    };
    (schema.get("type").and_then(Value::as_str) == Some("object")).then_some(schema)
}

fn output_schema(
    spec: &ToolSpec,
    route: Option<&Route>,
    read_route: Option<&Route>,
    router: &Router,
    schemas: &HashMap<&'static str, Value>,
) -> Option<Value> {
    match spec.kind {
        Kind::Read => success_schema(route?, schemas),
        Kind::Prepare(_) => {
            let current = read_route
                .and_then(|r| success_schema(r, schemas))
                .unwrap_or_else(|| json!({"type": "object"}));
            Some(pending::preview_schema(current))
        }
        Kind::Confirm => {
            let results: Vec<Value> = WRITE_OPERATIONS
                .iter()
                .filter_map(|op| router.by_operation(op))
                .filter_map(|r| success_schema(r, schemas))
                .collect();
            let result = if results.is_empty() {
                json!({"type": "object"})
            } else {
                json!({"anyOf": results})
            };
            Some(pending::confirm_schema(result))
        }
        Kind::Cancel => Some(pending::cancel_schema()),
    }
}

/// Who is calling, and the credential headers every internal request carries.
pub struct Caller {
    pub principal: Principal,
    /// `Authorization` / `X-API-KEY` and `X-Service-Client-Id`, copied from the MCP request.
    pub headers: HeaderMap,
    pub request_id: String,
    pub peer: Option<IpAddr>,
}

impl Caller {
    pub fn new(
        principal: Principal,
        mcp_headers: &HeaderMap,
        request_id: &str,
        peer: Option<IpAddr>,
    ) -> Caller {
        let mut headers = HeaderMap::with_capacity(4);
        for name in [
            hyper::header::AUTHORIZATION.as_str(),
            crate::auth::authenticate::API_KEY_HEADER,
            crate::auth::authenticate::CLIENT_ID_HEADER,
        ] {
            if let Some(v) = mcp_headers.get(name) {
                if let Ok(n) = hyper::header::HeaderName::from_bytes(name.as_bytes()) {
                    headers.insert(n, v.clone());
                }
            }
        }
        Caller {
            principal,
            headers,
            request_id: request_id.to_string(),
            peer,
        }
    }

    /// Runs one REST request through the pipeline as this caller.
    pub fn rest(
        &self,
        app: &crate::app::App,
        method: Method,
        path: String,
        query: String,
        body: Option<Vec<u8>>,
        if_match: Option<&str>,
    ) -> Response {
        let mut headers = self.headers.clone();
        if body.is_some() {
            headers.insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("application/json"),
            );
        }
        if let Some(tag) = if_match.and_then(|t| hyper::header::HeaderValue::from_str(t).ok()) {
            headers.insert(hyper::header::IF_MATCH, tag);
        }
        pipeline::execute(
            app,
            &Request {
                method,
                path,
                query,
                headers,
                body: body.map(Bytes::from).unwrap_or_default(),
                peer: self.peer,
                request_id: self.request_id.clone(),
            },
        )
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub fn encode(s: &str, out: &mut String) {
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

/// A scalar argument as a query-string value.
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Some(i.to_string()),
            (_, Some(u), _) => Some(u.to_string()),
            (_, _, Some(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some((f as i64).to_string()),
            (_, _, Some(f)) => Some(f.to_string()),
            _ => None,
        },
        _ => None,
    }
}

/// The REST path with the tool's path arguments substituted.
pub fn fill_path(pattern: &str, values: &[&str]) -> String {
    let mut out = String::with_capacity(pattern.len() + 32);
    let mut next = values.iter();
    for seg in pattern.split('/').filter(|s| !s.is_empty()) {
        out.push('/');
        if seg.starts_with('{') && seg.ends_with('}') {
            encode(next.next().copied().unwrap_or(""), &mut out);
        } else {
            out.push_str(seg);
        }
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// A tool's structured content: a value, or a REST body passed on as it is (a JSON object).
pub enum Content {
    Value(Value),
    Json(Bytes),
}

/// A tool's outcome before framing: structured content, or a message for an `isError` result.
pub type Outcome = Result<Content, String>;

/// Runs a tool call. Arguments have been validated against the input schema.
pub fn call(
    app: &crate::app::App,
    caller: &Caller,
    tool: &Tool,
    args: &Map<String, Value>,
) -> Outcome {
    match tool.spec.kind {
        Kind::Read => {
            let route = tool.route.as_ref().ok_or_else(unavailable)?;
            let ids: Vec<&str> = tool
                .spec
                .path_args
                .iter()
                .map(|(name, _)| args.get(*name).and_then(Value::as_str).unwrap_or(""))
                .collect();
            let path = fill_path(route.path, &ids);
            let mut query = String::new();
            for q in &route.query {
                if let Some(v) = args.get(q.name).and_then(scalar) {
                    if !query.is_empty() {
                        query.push('&');
                    }
                    query.push_str(q.name);
                    query.push('=');
                    encode(&v, &mut query);
                }
            }
            let resp = caller.rest(app, route.method.clone(), path, query, None, None);
            let is_object = resp.body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
            let is_json = resp
                .headers
                .get(hyper::header::CONTENT_TYPE)
                .is_some_and(|ct| ct.as_bytes().starts_with(b"application/json"));
            if resp.status.is_success() && is_object && is_json {
                // Passed on without a parse; the redactor parses only when it must.
                return Ok(Content::Json(resp.body));
            }
            from_rest(&resp).map(Content::Value)
        }
        Kind::Prepare(kind) => {
            let plan = change_plan(tool, kind, args).ok_or_else(unavailable)?;
            pending::prepare(app, caller, &plan).map(Content::Value)
        }
        Kind::Confirm => {
            pending::confirm(app, caller, arg_str(args, "confirmation_id")).map(Content::Value)
        }
        Kind::Cancel => {
            pending::cancel(app, caller, arg_str(args, "confirmation_id")).map(Content::Value)
        }
    }
}

fn unavailable() -> String {
    "This tool is not available on this server.".into()
}

fn arg_str<'a>(args: &'a Map<String, Value>, name: &str) -> &'a str {
    args.get(name).and_then(Value::as_str).unwrap_or("")
}

fn change_plan(tool: &Tool, kind: Prepare, args: &Map<String, Value>) -> Option<ChangePlan> {
    let write = tool.route.as_ref()?;
    let read = tool.read_route.as_ref()?;
    let (target_type, id_arg) = match kind {
        Prepare::AdChange => ("ad", "ad_id"),
        _ => ("promotion", "promotion_id"),
    };
    let id = arg_str(args, id_arg);
    let changes: Map<String, Value> = match kind {
        Prepare::AdChange => args.get("changes")?.as_object()?.clone(),
        Prepare::Activation => [("active".to_string(), Value::Bool(true))]
            .into_iter()
            .collect(),
        Prepare::Deactivation => [("active".to_string(), Value::Bool(false))]
            .into_iter()
            .collect(),
    };
    let body = match write.request {
        RequestBody::Json(_) => Some(Value::Object(changes.clone())),
        _ => None,
    };
    Some(ChangePlan {
        tool: tool.spec.name,
        operation: write.operation_id,
        target_type,
        target_id: id.to_string(),
        read_path: fill_path(read.path, &[id]),
        method: write.method.clone(),
        path: fill_path(write.path, &[id]),
        body,
        changes,
        with_cost: kind == Prepare::Activation,
        arguments: Value::Object(args.clone()),
    })
}

/// A REST answer as a tool outcome: a JSON success body is the structured content; a problem
/// (or any failure) becomes a message naming the status, title and detail.
pub fn from_rest(resp: &Response) -> Result<Value, String> {
    if resp.status.is_success() {
        if resp.body.is_empty() {
            return Ok(json!({"ok": true, "status": resp.status.as_u16()}));
        }
        return serde_json::from_slice::<Value>(&resp.body)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| "The service returned a body that is not a JSON object.".to_string());
    }
    Err(problem_message(resp))
}

pub fn problem_message(resp: &Response) -> String {
    let status = resp.status.as_u16();
    let Some(p) = resp.body_json().filter(Value::is_object) else {
        return format!(
            "HTTP {status} {}",
            resp.status.canonical_reason().unwrap_or("error")
        );
    };
    let title = p["title"].as_str().unwrap_or("Error");
    let mut msg = format!("HTTP {status} {title}");
    if let Some(detail) = p["detail"].as_str() {
        msg.push_str(": ");
        msg.push_str(detail);
    }
    if let Some(errors) = p["errors"].as_array() {
        for e in errors {
            msg.push_str(&format!(
                "\n- {} ({}): {}",
                e["field"].as_str().unwrap_or(""),
                e["code"].as_str().unwrap_or(""),
                e["message"].as_str().unwrap_or("")
            ));
        }
    }
    msg
}

/// Checks tool arguments against the tool's input schema.
pub fn validate_arguments(args: &Map<String, Value>, schema: &Value) -> Result<(), String> {
    match schema.as_object() {
        Some(s) => validate_object(args, s, ""),
        None => Ok(()),
    }
}

/// Checks a value against a schema (the subset of JSON Schema our schemas use). Patterns other
/// than the id pattern are left to the REST validation behind the tool.
pub fn validate(v: &Value, schema: &Value, at: &str) -> Result<(), String> {
    let Some(s) = schema.as_object() else {
        return Ok(());
    };
    if let Some(t) = s.get("type") {
        let types: Vec<&str> = match t {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !types.is_empty() && !types.iter().any(|t| has_type(v, t)) {
            return Err(format!(
                "`{}` must be of type {}.",
                name(at),
                types.join(" or ")
            ));
        }
    }
    if let Some(allowed) = s.get("enum").and_then(Value::as_array) {
        if !allowed.contains(v) {
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            return Err(format!(
                "`{}` must be one of {}.",
                name(at),
                list.join(", ")
            ));
        }
    }
    if let Some(c) = s.get("const") {
        if c != v {
            return Err(format!("`{}` must be {c}.", name(at)));
        }
    }
    match v {
        Value::String(text) => {
            let len = text.chars().count() as u64;
            if s.get("minLength")
                .and_then(Value::as_u64)
                .is_some_and(|m| len < m)
            {
                return Err(format!("`{}` is too short.", name(at)));
            }
            if s.get("maxLength")
                .and_then(Value::as_u64)
                .is_some_and(|m| len > m)
            {
                return Err(format!("`{}` is too long.", name(at)));
            }
            if s.get("pattern").and_then(Value::as_str) == Some(ID_PATTERN)
                && !text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                return Err(format!(
                    "`{}` is not an id (letters, digits and `_`).",
                    name(at)
                ));
            }
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            if s.get("minimum")
                .and_then(Value::as_f64)
                .is_some_and(|m| x < m)
            {
                return Err(format!("`{}` must be at least {}.", name(at), s["minimum"]));
            }
            if s.get("maximum")
                .and_then(Value::as_f64)
                .is_some_and(|m| x > m)
            {
                return Err(format!("`{}` must be at most {}.", name(at), s["maximum"]));
            }
        }
        Value::Object(obj) => validate_object(obj, s, at)?,
        Value::Array(items) => {
            if let Some(item) = s.get("items") {
                for (i, x) in items.iter().enumerate() {
                    validate(x, item, &format!("{at}/{i}"))?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

fn validate_object(
    obj: &Map<String, Value>,
    s: &Map<String, Value>,
    at: &str,
) -> Result<(), String> {
    let props = s.get("properties").and_then(Value::as_object);
    for req in s
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(r) = req.as_str() {
            if !obj.contains_key(r) {
                return Err(format!("`{}` is required.", name(&format!("{at}/{r}"))));
            }
        }
    }
    if s.get("minProperties")
        .and_then(Value::as_u64)
        .is_some_and(|m| (obj.len() as u64) < m)
    {
        return Err(format!("`{}` needs at least one field.", name(at)));
    }
    for (k, x) in obj {
        let path = format!("{at}/{k}");
        match props.and_then(|p| p.get(k)) {
            Some(ps) => validate(x, ps, &path)?,
            None => match s.get("additionalProperties") {
                Some(Value::Bool(false)) => {
                    let known: Vec<&str> = props
                        .map(|p| p.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    return Err(if known.is_empty() {
                        format!(
                            "Unknown argument `{}`: this tool takes no arguments.",
                            name(&path)
                        )
                    } else {
                        format!(
                            "Unknown argument `{}`; expected: {}.",
                            name(&path),
                            known.join(", ")
                        )
                    });
                }
                Some(extra @ Value::Object(_)) => validate(x, extra, &path)?,
                _ => {}
            },
        }
    }
    Ok(())
}

fn name(pointer: &str) -> &str {
    let p = pointer.trim_start_matches('/');
    if p.is_empty() {
        "arguments"
    } else {
        p
    }
}

fn has_type(v: &Value, t: &str) -> bool {
    match t {
        "string" => v.is_string(),
        "integer" => {
            v.as_i64().is_some()
                || v.as_u64().is_some()
                || v.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "null" => v.is_null(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> (Router, Catalog) {
        let router = Router::new(crate::routes::all());
        let catalog = Catalog::build(&router);
        (router, catalog)
    }

    #[test]
    fn every_tool_names_an_existing_route() {
        // Fails until every REST area is merged; the tool table is written for all of them.
        let router = Router::new(crate::routes::all());
        let mut missing: Vec<&str> = TOOLS
            .iter()
            .flat_map(|t| t.operations().iter().copied().chain(t.read_operation()))
            .filter(|op| router.by_operation(op).is_none())
            .collect();
        missing.sort_unstable();
        missing.dedup();
        assert!(
            missing.is_empty(),
            "operations missing from the route table: {missing:?}"
        );
    }

    #[test]
    fn definitions_are_complete() {
        let (_, catalog) = catalog();
        let mut names = std::collections::HashSet::new();
        for tool in &catalog.tools {
            let d = &tool.definition;
            assert!(names.insert(tool.spec.name), "duplicate {}", tool.spec.name);
            assert!(
                tool.spec.name.len() <= 64
                    && tool
                        .spec
                        .name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b == b'_')
            );
            assert!(!d["title"].as_str().unwrap_or("").is_empty());
            assert!(d["description"].as_str().unwrap_or("").len() > 30);
            assert_eq!(d["inputSchema"]["type"], "object");
            assert_eq!(d["inputSchema"]["additionalProperties"], false);
            assert_eq!(d["annotations"]["openWorldHint"], false);
            let read_only = matches!(tool.spec.kind, Kind::Read);
            assert_eq!(d["annotations"]["readOnlyHint"], read_only);
            if tool.available() {
                assert_eq!(d["outputSchema"]["type"], "object", "{}", tool.spec.name);
            }
            // The catalogue is server-authored: the redactor must have nothing to do in it.
            let mut scrubbed = d.clone();
            crate::redact::redact_value(&mut scrubbed);
            assert_eq!(&scrubbed, d);
        }
        assert_eq!(
            catalog
                .get("confirm_change")
                .map(|t| t.definition["annotations"]["destructiveHint"].clone()),
            Some(json!(true))
        );
    }

    #[test]
    fn list_output_schema_is_the_envelope_of_the_rest_item() {
        let (_, catalog) = catalog();
        let t = catalog.get("list_companies").unwrap();
        let out = &t.definition["outputSchema"];
        assert_eq!(out["properties"]["object"]["const"], "list");
        assert_eq!(
            out["properties"]["data"]["items"]["properties"]["object"]["const"],
            "company"
        );
        assert!(t.definition["inputSchema"]["properties"]
            .get("cursor")
            .is_some());
        assert!(t.definition["inputSchema"]["properties"]
            .get("limit")
            .is_some());
    }

    #[test]
    fn paths_and_query_values_are_encoded() {
        assert_eq!(
            fill_path("/devices/{id}/ads", &["dev_1"]),
            "/devices/dev_1/ads"
        );
        assert_eq!(fill_path("/x/{id}", &["a/b c"]), "/x/a%2Fb%20c");
        let mut q = String::new();
        encode("a&b=ü", &mut q);
        assert_eq!(q, "a%26b%3D%C3%BC");
        assert_eq!(scalar(&json!(5.0)).as_deref(), Some("5"));
        assert_eq!(scalar(&json!(true)).as_deref(), Some("true"));
    }

    #[test]
    fn validation_names_the_argument() {
        let schema = json!({"type":"object","additionalProperties":false,"required":["ad_id"],
            "properties":{"ad_id":{"type":"string","pattern":ID_PATTERN},
                "changes":{"type":"object","minProperties":1,"additionalProperties":false,
                    "properties":{"status":{"type":"string","enum":["draft","active"]},
                        "duration_seconds":{"type":"integer","minimum":1,"maximum":3600}}}}});
        assert!(validate(
            &json!({"ad_id":"ad_1","changes":{"status":"draft"}}),
            &schema,
            ""
        )
        .is_ok());
        let e = validate(&json!({"ad_id":"ad_1","x":1}), &schema, "").unwrap_err();
        assert!(e.contains("Unknown argument `x`"), "{e}");
        let e = validate(&json!({}), &schema, "").unwrap_err();
        assert!(e.contains("`ad_id` is required"), "{e}");
        let e = validate(&json!({"ad_id":"../x"}), &schema, "").unwrap_err();
        assert!(e.contains("not an id"), "{e}");
        let e = validate(
            &json!({"ad_id":"a","changes":{"status":"gone"}}),
            &schema,
            "",
        )
        .unwrap_err();
        assert!(e.contains("changes/status"), "{e}");
        let e = validate(
            &json!({"ad_id":"a","changes":{"duration_seconds":0}}),
            &schema,
            "",
        )
        .unwrap_err();
        assert!(e.contains("at least 1"), "{e}");
        let e = validate(&json!({"ad_id":"a","changes":{}}), &schema, "").unwrap_err();
        assert!(e.contains("at least one"), "{e}");
    }
}
