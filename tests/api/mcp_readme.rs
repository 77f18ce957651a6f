//! Tests: mcp_readme. The book's MCP tool table (docs/src/mcp/tools.md) is checked against the catalogue: every tool
//! once, in the row of its route's area (`write flow` for confirm/cancel), and no name that is not
//! a tool. A new tool without a row, or a row left behind, fails here.

use crate::helpers::TestApp;
use std::collections::HashMap;

/// The tool table of the book's `## Tools` section: (area, tool names) per row. A cell lists
/// tools separated by commas; each entry starts with the tool's name in backticks, and may go on
/// with a note in parentheses (whose own backticks are arguments, not tools).
fn readme_table() -> Vec<(String, Vec<String>)> {
    let readme = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/src/mcp/tools.md"
    ))
    .unwrap();
    let section = readme
        .split("\n## Tools\n")
        .nth(1)
        .expect("a ## Tools section");
    let table = section
        .split("| area | tools |\n|---|---|\n")
        .nth(1)
        .expect("the tool table");
    let mut rows = Vec::new();
    for line in table.lines().take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').splitn(2, '|').collect();
        let (area, tools) = (cells[0].trim().to_string(), cells[1]);
        let mut names = Vec::new();
        let mut depth = 0;
        let mut entry = String::new();
        for c in tools.chars().chain(std::iter::once(',')) {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                ',' if depth == 0 => {
                    let name = entry.trim().split('`').nth(1).unwrap_or("").to_string();
                    assert!(!name.is_empty(), "an entry without a tool name: {line}");
                    names.push(name);
                    entry.clear();
                    continue;
                }
                _ => {}
            }
            if depth == 0 && c != ')' {
                entry.push(c);
            }
        }
        rows.push((area, names));
    }
    rows
}

#[tokio::test]
async fn the_readme_tool_table_is_the_catalogue() {
    let app = TestApp::spawn().await;
    let catalog = signage::mcp::state(&app.app).catalog(&app.app.router);
    let mut area_of: HashMap<String, String> = HashMap::new();
    for (area, names) in readme_table() {
        for name in names {
            assert!(
                area_of.insert(name.clone(), area.clone()).is_none(),
                "`{name}` is listed twice"
            );
        }
    }
    for tool in &catalog.tools {
        let expected = tool
            .route
            .as_ref()
            .map_or("write flow", |r| r.tag)
            .to_string();
        assert_eq!(
            area_of.remove(tool.spec.name),
            Some(expected),
            "`{}`: missing from the book's tool table, or in the wrong row",
            tool.spec.name
        );
    }
    assert!(
        area_of.is_empty(),
        "the book lists tools that do not exist: {area_of:?}"
    );
}
