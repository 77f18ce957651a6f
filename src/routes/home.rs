//! `GET /`: where a person or a client lands first. A browser gets a small page of links (the
//! console, the API reference, the OpenAPI document, the MCP endpoint, the health check); any other
//! client the same links as JSON. Public, like the pages it points to.

use crate::auth::Action;
use crate::http::router::Route;
use crate::http::{ApiError, Ctx, Response};
use crate::markup::escape;
use hyper::StatusCode;
use schemars::JsonSchema;
use serde::Serialize;

/// The page uses the reference page's stylesheet and nothing else: no script, nothing inline.
const CSP: &str = "default-src 'none'; style-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

pub fn routes() -> Vec<Route> {
    vec![Route::get("/", "getIndex", Action::Public, index)
        .no_tool("the links a person starts from, not sandbox data")
        .tag("service")
        .summary("Where to start: the console, the API reference, the OpenAPI document, the MCP endpoint.")
        .describe("A small index of this server. A browser (an `Accept` that names `text/html`) gets an HTML page of links; any other client the same links as JSON. Needs no credential.")
        .ok("Index")
        .produces("text/html")]
}

pub fn schemas() -> Vec<(&'static str, serde_json::Value)> {
    vec![crate::jsonschema::named_response::<Index>()]
}

/// The server's name and version, and where to go from here.
#[derive(Serialize, JsonSchema)]
struct Index {
    /// Always `signage`.
    name: &'static str,
    /// The version of this server (`signage --version` prints the same).
    version: &'static str,
    /// Where to go from here, in the order a newcomer wants them.
    links: Vec<Link>,
}

/// One place on this server: its path and what it is.
#[derive(Serialize, JsonSchema)]
struct Link {
    /// What the link is: `console`, `api-reference`, `openapi`, `mcp` or `health`.
    rel: &'static str,
    /// Its path on this server.
    href: &'static str,
    /// What is there, in words.
    title: &'static str,
}

/// The links, in the order a newcomer wants them; the console only while it is served.
fn links(console: bool) -> Vec<Link> {
    let all = [
        (
            "console",
            "/console",
            "The demo console (sign in with a demo key or user)",
        ),
        (
            "api-reference",
            "/docs",
            "The API reference: every REST operation, its parameters and answers",
        ),
        (
            "openapi",
            "/openapi.json",
            "The OpenAPI 3.1 document (also /openapi.yaml), for client generators",
        ),
        (
            "mcp",
            "/mcp",
            "The MCP endpoint (POST, Streamable HTTP) for AI assistants",
        ),
        ("health", "/health", "The health check"),
    ];
    all.into_iter()
        .filter(|(rel, _, _)| console || *rel != "console")
        .map(|(rel, href, title)| Link { rel, href, title })
        .collect()
}

/// Whether the client asked for a page: a browser's `Accept` names `text/html`.
fn wants_html(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| {
        a.split(',')
            .filter_map(|m| m.split(';').next())
            .any(|m| m.trim().eq_ignore_ascii_case("text/html"))
    })
}

fn page(index: &Index) -> String {
    let items: String = index
        .links
        .iter()
        .map(|l| {
            format!(
                "<li><a href=\"{href}\"><code>{href}</code></a> {title}</li>\n",
                href = escape(l.href),
                title = escape(l.title)
            )
        })
        .collect();
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>signage</title>\
<link rel=\"stylesheet\" href=\"/docs/app.css\"></head>\n<body><main class=\"problem\">\
<h1>signage {version}</h1><p>A local sandbox of the digital-signage platform: a REST API and an MCP server over the same data.</p>\n\
<ul>\n{items}</ul></main></body></html>\n",
        version = escape(index.version),
    )
}

fn index(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let index = Index {
        name: "signage",
        version: env!("CARGO_PKG_VERSION"),
        links: links(ctx.app.settings.console_enabled),
    };
    let mut resp = if wants_html(ctx.header("accept")) {
        let mut r = Response::new(StatusCode::OK, "text/html; charset=utf-8", page(&index));
        r.set_header("content-security-policy", CSP);
        r
    } else {
        Response::ok(&index)
    };
    resp.set_header("vary", "Accept");
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::wants_html;

    #[test]
    fn a_browser_gets_the_page_and_a_client_json() {
        assert!(wants_html(Some(
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
        )));
        assert!(wants_html(Some("TEXT/HTML")));
        assert!(!wants_html(Some("application/json")));
        assert!(!wants_html(Some("*/*")));
        assert!(!wants_html(None));
    }
}
