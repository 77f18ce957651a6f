//! Tests: `GET /` is a small index of the server, not a 404: links as JSON for a client, a page
//! of the same links for a browser, each link answering.

use crate::helpers::TestApp;
use serde_json::Value;

const BROWSER: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

fn hrefs(index: &Value) -> Vec<String> {
    index["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["href"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn the_root_lists_where_to_start_and_every_link_answers() {
    let app = TestApp::spawn().await;
    let r = app.get("/").send().await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("vary"), Some("Accept"));
    let index = r.json();
    assert_eq!(index["name"], "signage");
    assert_eq!(index["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        hrefs(&index),
        ["/console", "/docs", "/openapi.json", "/mcp", "/health"]
    );
    for href in hrefs(&index) {
        // The MCP endpoint takes POSTs only (GET is 405, the transport's rule); the rest are pages.
        let status = app.get(&href).send().await.status;
        let expected = if href == "/mcp" { 405 } else { 200 };
        assert_eq!(status, expected, "{href}");
    }
    // The document lists the index like any public operation.
    let doc = app.get("/openapi.json").send().await.ok();
    assert_eq!(doc["paths"]["/"]["get"]["operationId"], "getIndex");
}

#[tokio::test]
async fn a_browser_gets_a_page_of_the_same_links() {
    let app = TestApp::spawn().await;
    let r = app.get("/").header("accept", BROWSER).send().await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    let csp = r.header("content-security-policy").unwrap();
    assert!(
        csp.contains("default-src 'none'") && !csp.contains("script-src"),
        "{csp}"
    );
    let page = r.text();
    for href in ["/console", "/docs", "/openapi.json", "/mcp", "/health"] {
        assert!(
            page.contains(&format!("<a href=\"{href}\">")),
            "{href}: {page}"
        );
    }
    // A client that asks for JSON, or anything, gets JSON.
    let r = app
        .get("/")
        .header("accept", "application/json")
        .send()
        .await;
    assert_eq!(r.json()["name"], "signage");
}

#[tokio::test]
async fn without_the_console_the_index_does_not_point_at_it() {
    let app = TestApp::spawn_with(|l| l.console_enabled = Some(false)).await;
    let index = app.get("/").send().await.ok();
    assert_eq!(hrefs(&index), ["/docs", "/openapi.json", "/mcp", "/health"]);
    assert_eq!(app.get("/console").send().await.status, 404);
}
