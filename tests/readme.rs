//! The book's Endpoints page documents every route of the route table (documentation that cannot
//! quietly rot).

#[test]
fn every_route_is_in_the_books_endpoints_page() {
    let readme = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/src/rest/endpoints.md"
    ))
    .unwrap();
    let missing: Vec<String> = signage::routes::all()
        .iter()
        .filter(|r| r.path != "/mcp")
        .map(|r| format!("| {} | `{}` | `{}` |", r.method, r.path, r.operation_id))
        .filter(|row| !readme.contains(row.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/src/rest/endpoints.md lacks:\n{}",
        missing.join("\n")
    );
}
