//! The book's Endpoints page is generated whole from the route table: one row per route, its
//! method, path, operation id and the route's own summary (the text the OpenAPI document shows), so
//! no row can say something the code no longer does. After a change to a route, rewrite the table
//! with `SIGNAGE_WRITE_ENDPOINTS=1 cargo test --test readme`.

const PAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/rest/endpoints.md");
const START: &str = "<!-- routes:start -->\n";
const END: &str = "<!-- routes:end -->";

/// The table as the route table makes it (the MCP endpoint has its own pages).
fn table() -> String {
    let mut out = String::from("| method | path | operation | what it does |\n|---|---|---|---|\n");
    for r in signage::app::routes().iter().filter(|r| r.path != "/mcp") {
        assert!(
            !r.summary.is_empty(),
            "{} {} has no summary to list",
            r.method,
            r.path
        );
        out.push_str(&format!(
            "| {} | `{}` | `{}` | {} |\n",
            r.method,
            r.path,
            r.operation_id,
            r.summary.replace('|', "\\|")
        ));
    }
    out
}

#[test]
fn the_books_endpoints_page_is_the_route_table() {
    let page = std::fs::read_to_string(PAGE).unwrap();
    let (before, rest) = page.split_once(START).expect("routes:start marker");
    let (shown, after) = rest.split_once(END).expect("routes:end marker");
    let made = table();
    if std::env::var_os("SIGNAGE_WRITE_ENDPOINTS").is_some() {
        std::fs::write(PAGE, format!("{before}{START}{made}{END}{after}")).unwrap();
        return;
    }
    let stale: Vec<&str> = made.lines().filter(|l| !shown.contains(l)).collect();
    let extra: Vec<&str> = shown.lines().filter(|l| !made.contains(l)).collect();
    assert!(
        made == shown,
        "docs/src/rest/endpoints.md is not the route table (SIGNAGE_WRITE_ENDPOINTS=1 cargo test --test readme rewrites it)\nthe code says:\n{}\nthe page says:\n{}",
        stale.join("\n"),
        extra.join("\n")
    );
}
