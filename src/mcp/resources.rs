//! Resources: `resources/list` (paged), `resources/templates/list` and `resources/read`.
//!
//! Every `signage://` URI names one GET route of the REST API; reading it is that request, run
//! through the pipeline with the caller's own credential ([`Caller::rest`]), so the router, the
//! scope check and [`crate::auth::authorize`] decide exactly as they do for REST. Another
//! company's object is "Resource not found" (-32002 on 2025-11-25; -32602 with the URI in `data`
//! on 2026-07-28, per SEP-2164), like an id that does not exist; JSON is
//! redacted and marked as data like a tool result (`text/plain`: a note, then the JSON between
//! the `<<<signage-data` lines). The `ui://` resources are the MCP App views ([`super::apps`]).

use super::call::{fill_path, Caller};
use super::fence;
use super::protocol::{self, RpcError};
use super::reply::{ok, rpc_err, Out};
use super::state::state;
use crate::http::App;
use base64::Engine;
use hyper::Method;
use serde_json::{json, Map, Value};

/// JSON-RPC error of a resource that does not exist (or that the key may not see).
pub const RESOURCE_NOT_FOUND: i64 = -32002;
/// Resources per `resources/list` page (one REST page of one kind).
const PAGE: u32 = 50;
/// How long a 2026-07-28 client may cache a list (it depends on the key).
const TTL_MS: u64 = 60_000;

/// How a route's answer becomes resource contents.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// A JSON object: redacted, as fenced text ([`super::fence`]), like a tool result's.
    Json,
    /// Text of its own type (SVG).
    Text,
    /// Bytes: base64 `blob`.
    Blob,
}

/// One resource template: a URI pattern with one `{id}`, and the REST routes behind it.
pub struct Template {
    pub prefix: &'static str,
    pub suffix: &'static str,
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub mime: Option<&'static str>,
    /// The GET route a read runs; `query` is its query string.
    pub read: &'static str,
    pub query: &'static str,
    pub body: Body,
    /// The list route `resources/list` and completion page through, if any.
    pub list: Option<&'static str>,
}

impl Template {
    pub fn uri_template(&self) -> String {
        format!("{}{{id}}{}", self.prefix, self.suffix)
    }

    pub fn uri(&self, id: &str) -> String {
        format!("{}{id}{}", self.prefix, self.suffix)
    }

    /// The id in a URI of this template.
    fn id_of<'u>(&self, uri: &'u str) -> Option<&'u str> {
        let id = uri.strip_prefix(self.prefix)?.strip_suffix(self.suffix)?;
        let valid = !id.is_empty()
            && id.len() <= 100
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        valid.then_some(id)
    }
}

pub const TEMPLATES: &[Template] = &[
    Template {
        prefix: "signage://companies/",
        suffix: "",
        name: "company",
        title: "Company",
        description: "A company (`cmp_…`): name, industry, country, timezone, opening hours, plan and allowed landing domains, as GET /companies/{id} returns it (the token balance is `get_token_balance`), marked as data: the JSON sits between the lines `<<<signage-data` and `signage-data>>>`.",
        mime: Some("text/plain"),
        read: "getCompany",
        query: "",
        body: Body::Json,
        list: Some("listCompanies"),
    },
    Template {
        prefix: "signage://devices/",
        suffix: "",
        name: "device",
        title: "Screen (device)",
        description: "A screen (`dev_…`): status, last heartbeat, current ad, as GET /devices/{id} returns it, marked as data: the JSON sits between the lines `<<<signage-data` and `signage-data>>>`.",
        mime: Some("text/plain"),
        read: "getDevice",
        query: "",
        body: Body::Json,
        list: Some("listDevices"),
    },
    Template {
        prefix: "signage://promotions/",
        suffix: "",
        name: "promotion",
        title: "Promotion",
        description: "A promotion (`promo_…`): dates, state, discount, landing URL, as GET /promotions/{id} returns it, marked as data: the JSON sits between the lines `<<<signage-data` and `signage-data>>>`.",
        mime: Some("text/plain"),
        read: "getPromotion",
        query: "",
        body: Body::Json,
        list: Some("listPromotions"),
    },
    Template {
        prefix: "signage://events/",
        suffix: "",
        name: "event",
        title: "Event",
        description: "A domain event (`evt_…`) in full, `data` as recorded (list_events cuts it), as GET /events/{id} returns it, marked as data: the JSON sits between the lines `<<<signage-data` and `signage-data>>>`.",
        mime: Some("text/plain"),
        read: "getEvent",
        query: "",
        body: Body::Json,
        list: None,
    },
    Template {
        prefix: "signage://qr-codes/",
        suffix: "/image",
        name: "qr-code-image",
        title: "QR code image",
        description: "A QR code (`qr_…`) as an SVG image; it encodes the code's short link.",
        mime: Some("image/svg+xml"),
        read: "getQrCodeImage",
        query: "format=svg",
        body: Body::Text,
        list: None,
    },
    Template {
        prefix: "signage://media/",
        suffix: "/content",
        name: "media-content",
        title: "Media file",
        description: "The bytes of a media item (`med_…`): an image or video, base64 in `blob`.",
        mime: None,
        read: "downloadMedia",
        query: "",
        body: Body::Blob,
        list: Some("listMedia"),
    },
];

/// The template a list or read operation belongs to.
pub fn template_named(name: &str) -> Option<&'static Template> {
    TEMPLATES.iter().find(|t| t.name == name)
}

/// The template of a `uriTemplate` string (what `completion/complete` refers to).
pub fn template_of_uri_template(uri_template: &str) -> Option<&'static Template> {
    TEMPLATES.iter().find(|t| t.uri_template() == uri_template)
}

pub fn templates_list(id: &Value, modern: bool) -> Out {
    let templates: Vec<Value> = TEMPLATES
        .iter()
        .map(|t| {
            let mut v = json!({"uriTemplate": t.uri_template(), "name": t.name, "title": t.title,
                "description": t.description});
            if let Some(m) = t.mime {
                v["mimeType"] = json!(m);
            }
            v
        })
        .collect();
    let mut result = json!({"resourceTemplates": templates});
    cache_hints(&mut result, modern);
    ok(id, result, modern)
}

fn cache_hints(result: &mut Value, modern: bool) {
    if modern {
        result["ttlMs"] = json!(TTL_MS);
        result["cacheScope"] = json!("private");
    }
}

/// Where a `resources/list` page starts: the kind (index in the listed kinds) and its REST cursor.
fn decode_cursor(c: &str) -> Option<(usize, Option<String>)> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(c)
        .ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let rest = text.strip_prefix("resources:")?;
    let (kind, cursor) = rest.split_once(':')?;
    Some((
        kind.parse().ok()?,
        (!cursor.is_empty()).then(|| cursor.to_string()),
    ))
}

fn encode_cursor(kind: usize, cursor: Option<&str>) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(format!("resources:{kind}:{}", cursor.unwrap_or("")))
}

/// The kinds `resources/list` walks, in order (the app views come first, on the first page).
fn listed() -> Vec<&'static Template> {
    TEMPLATES.iter().filter(|t| t.list.is_some()).collect()
}

/// One page of the caller's objects of one kind, as resources; `None` when the key may not list
/// that kind (it is skipped) or the page cannot be read.
fn list_page(
    app: &App,
    caller: &Caller,
    t: &Template,
    cursor: Option<&str>,
) -> Option<(Vec<Value>, Option<String>)> {
    let route = app.router.by_operation(t.list?)?;
    let mut query = format!("limit={PAGE}");
    if let Some(c) = cursor {
        query.push_str("&cursor=");
        super::call::encode(c, &mut query);
    }
    let resp = caller.rest(app, Method::GET, route.path.to_string(), query, None, None);
    if !resp.status.is_success() {
        return None;
    }
    let mut page = resp.body_json()?;
    crate::redact::redact_value(&mut page);
    let items = page["data"]
        .as_array()?
        .iter()
        .filter_map(|item| {
            let id = item["id"].as_str()?;
            let name = item["name"]
                .as_str()
                .or_else(|| item["filename"].as_str())
                .unwrap_or(id);
            let mut r = json!({"uri": t.uri(id), "name": format!("{} {id}", t.name),
                "title": format!("{}: {}", t.title, fence::one_line(name))});
            let mime = item["content_type"].as_str().or(t.mime);
            if let Some(m) = mime {
                r["mimeType"] = json!(m);
            }
            if let Some(size) = item["size_bytes"].as_u64() {
                r["size"] = json!(size);
            }
            Some(r)
        })
        .collect();
    let next = page["next_cursor"].as_str().map(String::from);
    Some((items, next))
}

pub fn list(app: &App, caller: &Caller, id: &Value, params: Option<&Value>, modern: bool) -> Out {
    let start = match params.and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => Some((0, None)),
        Some(Value::String(c)) => decode_cursor(c),
        Some(_) => None,
    };
    let kinds = listed();
    let Some((mut kind, mut cursor)) = start.filter(|(k, _)| *k <= kinds.len()) else {
        return rpc_err(
            id,
            RpcError::invalid_params("Invalid cursor: pass a `nextCursor` from resources/list."),
            modern,
        );
    };
    let mut resources: Vec<Value> = Vec::new();
    if kind == 0 && cursor.is_none() {
        resources.extend(super::apps::listed());
    }
    // The first kind with something to show (a kind the key may not list is skipped).
    let mut next = None;
    while kind < kinds.len() {
        match list_page(app, caller, kinds[kind], cursor.as_deref()) {
            Some((items, more)) => {
                let empty = items.is_empty();
                resources.extend(items);
                next = match more {
                    Some(c) => Some(encode_cursor(kind, Some(&c))),
                    None if kind + 1 < kinds.len() => Some(encode_cursor(kind + 1, None)),
                    None => None,
                };
                if !empty {
                    break;
                }
            }
            None => {
                next = (kind + 1 < kinds.len()).then(|| encode_cursor(kind + 1, None));
            }
        }
        kind += 1;
        cursor = None;
    }
    let mut result = json!({"resources": resources});
    if let Some(n) = next {
        result["nextCursor"] = json!(n);
    }
    cache_hints(&mut result, modern);
    ok(id, result, modern)
}

fn not_found(uri: &str) -> RpcError {
    RpcError::new(
        RESOURCE_NOT_FOUND,
        format!(
            "Resource not found: `{}` does not exist or is not visible to this API key.",
            protocol::shorten(uri)
        ),
    )
    .with_data(json!({"uri": protocol::shorten(uri)}))
}

pub fn read(app: &App, caller: &Caller, id: &Value, params: Option<&Value>, modern: bool) -> Out {
    let Some(uri) = params.and_then(|p| p.get("uri")).and_then(Value::as_str) else {
        return rpc_err(
            id,
            RpcError::invalid_params("resources/read needs `params.uri` (a string)."),
            modern,
        );
    };
    match contents(app, caller, uri) {
        Ok(c) => {
            let mut result = json!({"contents": [c]});
            cache_hints(&mut result, modern);
            ok(id, result, modern)
        }
        // 2026-07-28 (SEP-2164): a resource that is not found is Invalid params, its URI in
        // `data`; 2025-11-25 said -32002, which its sessions keep.
        Err(mut e) if modern && e.code == RESOURCE_NOT_FOUND => {
            e.code = protocol::INVALID_PARAMS;
            rpc_err(id, e, modern)
        }
        Err(e) => rpc_err(id, e, modern),
    }
}

/// The contents of one resource, read as the caller.
pub fn contents(app: &App, caller: &Caller, uri: &str) -> Result<Value, RpcError> {
    if uri.starts_with("ui://") {
        return super::apps::read(uri).ok_or_else(|| not_found(uri));
    }
    let Some((t, object_id)) = TEMPLATES
        .iter()
        .find_map(|t| t.id_of(uri).map(|id| (t, id)))
    else {
        return Err(not_found(uri));
    };
    let route = app
        .router
        .by_operation(t.read)
        .ok_or_else(|| not_found(uri))?;
    let resp = caller.rest(
        app,
        Method::GET,
        fill_path(route.path, &[object_id]),
        t.query.to_string(),
        None,
        None,
    );
    if resp.status.as_u16() == 404 {
        return Err(not_found(uri));
    }
    if !resp.status.is_success() {
        return Err(RpcError::invalid_params(format!(
            "Cannot read `{}`: {}",
            protocol::shorten(uri),
            super::advice::explain(app, caller, &resp)
        )));
    }
    let content_type = resp
        .headers
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|ct| ct.split(';').next().unwrap_or(ct).trim().to_string())
        .or_else(|| t.mime.map(String::from))
        .unwrap_or_else(|| "application/octet-stream".into());
    let mut c = Map::new();
    c.insert("uri".into(), json!(uri));
    c.insert("mimeType".into(), json!(content_type));
    match t.body {
        Body::Json => {
            // Marked as data like a tool result, and redacted by the route's answer type.
            let shape = state(app).catalog(&app.router).shape_of(t.read);
            // Checked to be UTF-8 once, as a tool result's answer is (`tools::tool_ok`).
            let redacted = std::str::from_utf8(&resp.body)
                .ok()
                .and_then(|text| crate::redact::redact_json_text_as(text, shape))
                .map_or_else(|| "{}".to_string(), std::borrow::Cow::into_owned);
            let preamble = format!("Contents of {uri}: JSON data from the signage service.");
            c.insert("mimeType".into(), json!("text/plain"));
            c.insert("text".into(), json!(fence::framed(&preamble, &redacted)));
        }
        Body::Text => {
            c.insert(
                "text".into(),
                json!(String::from_utf8_lossy(&resp.body).into_owned()),
            );
        }
        Body::Blob => {
            c.insert(
                "blob".into(),
                json!(base64::engine::general_purpose::STANDARD.encode(&resp.body)),
            );
        }
    }
    Ok(Value::Object(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_match_their_template_only() {
        let dev = template_named("device").unwrap();
        assert_eq!(dev.uri_template(), "signage://devices/{id}");
        assert_eq!(dev.id_of("signage://devices/dev_1"), Some("dev_1"));
        assert_eq!(dev.id_of("signage://devices/dev_1/x"), None);
        assert_eq!(dev.id_of("signage://devices/"), None);
        assert_eq!(dev.id_of("signage://devices/../admin"), None);
        let qr = template_named("qr-code-image").unwrap();
        assert_eq!(qr.id_of("signage://qr-codes/qr_9/image"), Some("qr_9"));
        assert_eq!(qr.id_of("signage://qr-codes/qr_9"), None);
    }

    #[test]
    fn list_cursors_round_trip() {
        assert_eq!(
            decode_cursor(&encode_cursor(2, Some("dev_x"))),
            Some((2, Some("dev_x".into())))
        );
        assert_eq!(decode_cursor(&encode_cursor(1, None)), Some((1, None)));
        assert_eq!(decode_cursor("dG9vbHM6NTA"), None);
    }
}
