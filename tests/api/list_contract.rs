//! The contract every list route keeps, asserted in one place: pages walk with no duplicates,
//! newest first, only visible rows.

use crate::helpers::*;
use serde_json::Value;
use std::collections::HashSet;

/// Walks `path` (filters allowed) as demo key `key`, `limit` rows a page, following `next_cursor`,
/// and asserts the list contract:
/// - every page is a list envelope with at most `limit` rows; a page with `has_more` holds exactly
///   `limit` rows and a `next_cursor`, the last page has neither;
/// - the walk yields exactly the rows of the same list read in pages of 100, in the same order:
///   nothing lost or repeated at a page boundary;
/// - no id appears twice;
/// - newest first: ids (which sort by creation time) descend;
/// - every row is one the key may see: `visible(row)`.
///
/// Returns the rows, for the caller's own checks.
pub async fn assert_list_contract(
    app: &TestApp,
    path: &str,
    key: &str,
    limit: u32,
    visible: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let walked = walk(app, path, key, limit).await;
    let reference = if limit < 100 {
        walk(app, path, key, 100).await
    } else {
        walked.clone()
    };
    if let Err(broken) = check(&walked, &reference, &visible) {
        panic!("GET {path} as {key}, {limit} a page: {broken}");
    }
    walked
}

/// The row-level half of the contract, on rows already fetched.
fn check(
    walked: &[Value],
    reference: &[Value],
    visible: &impl Fn(&Value) -> bool,
) -> Result<(), String> {
    let (got, expected) = (ids(walked), ids(reference));
    if got != expected {
        return Err(format!(
            "the walk {got:?} differs from pages of 100 {expected:?}"
        ));
    }
    let unique: HashSet<&str> = got.iter().copied().collect();
    if unique.len() != got.len() {
        return Err(format!("duplicate ids in {got:?}"));
    }
    let mut newest_first = got.clone();
    newest_first.sort_unstable_by(|a, b| b.cmp(a));
    if got != newest_first {
        return Err(format!("not newest first: {got:?}"));
    }
    match walked.iter().find(|row| !visible(row)) {
        Some(row) => Err(format!("a row the key may not see: {row}")),
        None => Ok(()),
    }
}

/// A visibility rule for [`assert_list_contract`]: the row's `company_id` is one of these demo
/// companies (by name).
pub fn in_companies(names: &[&str]) -> impl Fn(&Value) -> bool {
    let ids: HashSet<String> = names.iter().map(|n| company_id(n)).collect();
    move |row| row["company_id"].as_str().is_some_and(|c| ids.contains(c))
}

fn ids(rows: &[Value]) -> Vec<&str> {
    rows.iter()
        .map(|r| {
            r["id"]
                .as_str()
                .unwrap_or_else(|| panic!("row without an id: {r}"))
        })
        .collect()
}

async fn walk(app: &TestApp, path: &str, key: &str, limit: u32) -> Vec<Value> {
    let sep = if path.contains('?') { '&' } else { '?' };
    let first = format!("{path}{sep}limit={limit}");
    let mut url = first.clone();
    let mut rows = Vec::new();
    loop {
        let page = app.get(&url).key(key).send().await.ok();
        assert_eq!(page["object"], "list", "GET {url}");
        let data = page["data"].as_array().unwrap();
        assert!(
            data.len() <= limit as usize,
            "GET {url}: {} rows",
            data.len()
        );
        rows.extend(data.iter().cloned());
        match (&page["has_more"], page["next_cursor"].as_str()) {
            (Value::Bool(true), Some(cursor)) => {
                assert_eq!(
                    data.len(),
                    limit as usize,
                    "GET {url}: a short page with more"
                );
                url = format!("{first}&cursor={cursor}");
            }
            (Value::Bool(false), None) => {
                assert!(page["next_cursor"].is_null(), "GET {url}");
                return rows;
            }
            (more, cursor) => panic!("GET {url}: has_more {more} with next_cursor {cursor:?}"),
        }
    }
}

/// The contract check is not vacuous: each way a list can break it is caught.
#[test]
fn the_contract_catches_every_kind_of_broken_list() {
    use serde_json::json;
    let row = |id: &str, company: &str| json!({"id": id, "company_id": company});
    let mine = |r: &Value| r["company_id"] == "cmp_a";
    let good = vec![
        row("dev_3", "cmp_a"),
        row("dev_2", "cmp_a"),
        row("dev_1", "cmp_a"),
    ];
    assert_eq!(check(&good, &good, &mine), Ok(()));

    let lost = vec![good[0].clone(), good[2].clone()];
    let repeated = vec![
        good[0].clone(),
        good[1].clone(),
        good[1].clone(),
        good[2].clone(),
    ];
    let oldest_first: Vec<Value> = good.iter().rev().cloned().collect();
    let foreign = vec![good[0].clone(), row("dev_2", "cmp_b"), good[2].clone()];
    for (what, walked, reference) in [
        ("a row lost between pages", &lost, &good),
        ("a row repeated on two pages", &repeated, &good),
        ("a duplicate in the list itself", &repeated, &repeated),
        ("oldest first", &oldest_first, &oldest_first),
        ("another company's row", &foreign, &foreign),
    ] {
        assert!(check(walked, reference, &mine).is_err(), "{what} passed");
    }
}

/// Every list of a company-owned area, found by walking the route table (a list is a GET route
/// paged by an id kind), shows a company-scoped key only its own company's rows, on every page.
/// A new area's list is held to it the day it is added: no list needs a line here.
#[tokio::test]
async fn every_company_owned_list_shows_a_scoped_key_only_its_company() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let lists: Vec<String> = app
        .app
        .router
        .routes()
        .iter()
        .filter(|r| r.method == hyper::Method::GET && r.cursor.is_some() && !r.path.contains('{'))
        .filter(|r| {
            let first = r
                .path
                .trim_start_matches('/')
                .split('/')
                .next()
                .unwrap_or("");
            signage::areas::Area::of_path_segment(first).is_some_and(|a| a.spec().company_owned)
        })
        .map(|r| r.path.to_string())
        .collect();
    assert!(lists.len() >= 6, "the walk finds the lists: {lists:?}");
    for path in &lists {
        let rows = walk(&app, path, "northwind-grocers-write", 25).await;
        for row in &rows {
            // A company's own row names it by `id`; every other row by `company_id`.
            let company = row["company_id"].as_str().or_else(|| {
                (row["object"] == "company")
                    .then(|| row["id"].as_str())
                    .flatten()
            });
            assert_eq!(
                company,
                Some(grocers.as_str()),
                "{path} showed a row of another company (or one naming none) to a key scoped to Northwind Grocers: {row}"
            );
        }
    }
}
