//! Lists: `pagination_walked` (walks that follow cursors to the end) and `polling_reasonable`
//! (the same first page asked again and again).
//!
//! A walk is a page with more (`has_more`, so a `next_cursor`) and the pages that followed its
//! cursor: a page follows another when the same sender (the API client, else the key) sends the
//! `next_cursor` it was given, as `cursor` (REST) or the `cursor` argument (an MCP tool). A page
//! read on its own, never followed (a "latest 5" view, an assistant's one look), is not a walk and
//! shows nothing either way.

use super::finding::{Finding, Texts};
use super::inputs::Inputs;
use super::retries::sender;
use crate::sandbox::journal::store::Entry;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// First pages of one query, by one sender, within a minute, beyond which it is polling.
pub const POLLS_PER_MINUTE: usize = 30;
/// How soon after a page with more a larger first page counts as asking for everything at once.
pub const BIGGER_PAGE_MS: i64 = 60_000;
/// The problem code of a cursor sent with other filters than its page's.
pub const CURSOR_MISMATCH: &str = "cursor_mismatch";

/// The `cursor` a list request sent: its query parameter, or an MCP tool's argument.
fn cursor_of(e: &Entry) -> Option<&str> {
    fn from(v: &Option<Value>) -> Option<&str> {
        v.as_ref()
            .and_then(|q| q.get("cursor"))
            .and_then(Value::as_str)
    }
    from(&e.query).or_else(|| (e.via == "mcp").then(|| from(&e.body)).flatten())
}

/// The query parameters other than `cursor` and `limit`, and the limit (20 when not given).
fn filters_and_limit(e: &Entry) -> (Vec<(&str, &Value)>, i64) {
    let mut filters = Vec::new();
    let mut limit = 20;
    let params = e.query.as_ref().and_then(Value::as_object);
    for (k, v) in params.into_iter().flatten() {
        match k.as_str() {
            "limit" => limit = v.as_str().and_then(|l| l.parse().ok()).unwrap_or(20),
            "cursor" => {}
            _ => filters.push((k.as_str(), v)),
        }
    }
    (filters, limit)
}

pub fn pagination_walked(x: &Inputs) -> Finding {
    let mut f = Finding::new();
    let pages: Vec<(usize, &Entry)> = x
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.list && e.status == 200)
        .collect();
    // Which page gave each cursor (to whom), and which page followed each page.
    let mut given: HashMap<(Option<&str>, &str), usize> = HashMap::new();
    let mut followed_by: HashMap<usize, usize> = HashMap::new();
    let mut follows: HashMap<usize, usize> = HashMap::new();
    for &(i, e) in &pages {
        if let Some(c) = cursor_of(e) {
            if let Some(&from) = given.get(&(sender(e), c)) {
                followed_by.entry(from).or_insert(i);
                follows.insert(i, from);
            }
        }
        if let Some(n) = e.next_cursor.as_deref() {
            given.insert((sender(e), n), i);
        }
    }
    // The walks: from each page that follows none, along the pages that followed.
    let mut started = 0;
    for &(i, _) in &pages {
        if follows.contains_key(&i) || !followed_by.contains_key(&i) {
            continue;
        }
        started += 1;
        let mut walk = vec![&x.entries[i]];
        let mut at = i;
        while let Some(&next) = followed_by.get(&at) {
            walk.push(&x.entries[next]);
            at = next;
        }
        if x.entries[at].next_cursor.is_some() {
            // Stopped with more to read.
            f.fail_entries(&walk);
        } else {
            f.pass_entries(&walk);
        }
    }
    // A cursor sent with other filters than its page's: refused by the API (400).
    for e in x
        .entries
        .iter()
        .filter(|e| e.list && e.problem_code.as_deref() == Some(CURSOR_MISMATCH))
    {
        f.fail_entries(&[e]);
    }
    // Asking the same list again for a bigger first page instead of following the cursor.
    let firsts = FirstPages::of(&pages, &followed_by);
    for (n, &(i, e)) in pages.iter().enumerate() {
        if e.next_cursor.is_none() || followed_by.contains_key(&i) || cursor_of(e).is_some() {
            continue;
        }
        if let Some(r) = firsts.bigger_after(n, e) {
            f.fail_entries(&[e, pages[r].1]);
        }
    }
    let unwalked = pages.iter().any(|(_, e)| e.next_cursor.is_some());
    f.unobserved_because(match (started, unwalked) {
        (0, true) => "pages with more were read but no cursor was followed; a page read on its own (a \"latest N\" view) is not a walk. Walk a list with more than one page to its end.",
        _ => "no list answered a page with more (`has_more: true`). Walk a list with a small `limit`.",
    });
    f
}

/// The first pages never followed (no `cursor`, no page followed them), by the same list asked
/// again (sender, operation, path and filters) and then by `limit`: each list the pages' indices
/// in order, with their wall times and the earliest wall time from each one on. A page's larger
/// first page is found without reading every later page (a journal of many lists read once each
/// made that quadratic).
struct FirstPages<'a> {
    by_list: HashMap<ListKey<'a>, BTreeMap<i64, Vec<FirstPage>>>,
}

type ListKey<'a> = (Option<&'a str>, Option<&'a str>, Option<&'a str>, String);

struct FirstPage {
    /// Its index in `pages`.
    n: usize,
    wall_ms: i64,
    /// The earliest wall time of this page and every later one of its list and limit.
    earliest_from: i64,
}

impl<'a> FirstPages<'a> {
    fn of(pages: &[(usize, &'a Entry)], followed_by: &HashMap<usize, usize>) -> FirstPages<'a> {
        let mut by_list: HashMap<ListKey<'a>, BTreeMap<i64, Vec<FirstPage>>> = HashMap::new();
        for (n, &(j, r)) in pages.iter().enumerate() {
            // A bigger first page that is then walked is a walk, not a way around one.
            if followed_by.contains_key(&j) || cursor_of(r).is_some() {
                continue;
            }
            let (key, limit) = list_key(r);
            by_list
                .entry(key)
                .or_default()
                .entry(limit)
                .or_default()
                .push(FirstPage {
                    n,
                    wall_ms: r.wall_ms,
                    earliest_from: r.wall_ms,
                });
        }
        for list in by_list.values_mut().flat_map(|l| l.values_mut()) {
            let mut earliest = i64::MAX;
            for p in list.iter_mut().rev() {
                earliest = earliest.min(p.wall_ms);
                p.earliest_from = earliest;
            }
        }
        FirstPages { by_list }
    }

    /// The index in `pages` of the first page after the `n`th (`e`, a first page never followed)
    /// that asks its list again for a larger `limit` within [`BIGGER_PAGE_MS`] of it.
    fn bigger_after(&self, n: usize, e: &'a Entry) -> Option<usize> {
        let (key, limit) = list_key(e);
        let until = e.wall_ms.saturating_add(BIGGER_PAGE_MS);
        let lists = self.by_list.get(&key)?;
        let mut found: Option<usize> = None;
        for list in lists.range(limit.saturating_add(1)..).map(|(_, l)| l) {
            let mut at = list.partition_point(|p| p.n <= n);
            // Past a page from which every later one is too late, none is in time.
            while let Some(p) = list.get(at).filter(|p| p.earliest_from <= until) {
                if found.is_some_and(|m| p.n > m) {
                    break;
                }
                if p.wall_ms <= until {
                    found = Some(p.n);
                    break;
                }
                at += 1;
            }
        }
        found
    }
}

/// Which list a first page asks (sender, operation, path and the filters, as text), and its limit.
fn list_key(e: &Entry) -> (ListKey<'_>, i64) {
    let (filters, limit) = filters_and_limit(e);
    // The filters' values are the query's strings: equal texts exactly when equal filters.
    let filters = serde_json::to_string(&filters).unwrap_or_default();
    (
        (
            sender(e),
            e.operation_id.as_deref(),
            e.path.as_deref(),
            filters,
        ),
        limit,
    )
}

pub const PAGINATION: Texts = Texts {
    id: "pagination_walked",
    title: "Walks lists by cursor",
    required: true,
    rule: "A walk is a page with `has_more: true` and the pages that followed its `next_cursor` (sent back as `cursor` by the same API client, else the same key; an MCP tool's `cursor` argument too). Fails when a walk stopped at a page with `has_more: true`; when a request was refused 400 `cursor_mismatch` (a cursor sent with other filters than its page's); or when a page with more, never followed, was followed within 60 seconds by a first page of the same list (same path and filters) with a larger `limit` that was not walked either (asking for everything at once instead of walking). Passes when a walk reached `has_more: false`. A page read on its own, never followed, shows nothing either way. Not observed until a walk was made.",
    advice: "Walk a list by passing each page's `next_cursor` as `cursor`, with the same filters, until `has_more` is false; never raise `limit` to get everything at once.",
};

pub fn polling_reasonable(x: &Inputs) -> Finding {
    let mut f = Finding::new();
    let mut polls: BTreeMap<(Option<&str>, &str), Vec<&Entry>> = BTreeMap::new();
    let mut lists: Vec<&Entry> = Vec::new();
    for e in x.entries.iter().filter(|e| e.list && e.method == "GET") {
        lists.push(e);
        let watched = e
            .route
            .as_deref()
            .and_then(|r| r.trim_start_matches('/').split('/').next())
            .and_then(crate::areas::Area::of_path_segment)
            .is_some_and(|a| !a.spec().events.is_empty());
        if let (true, None, Some(shape)) = (watched, cursor_of(e), e.shape.as_deref()) {
            polls.entry((sender(e), shape)).or_default().push(e);
        }
    }
    for list in polls.values() {
        for (i, first) in list.iter().enumerate() {
            let window: Vec<&Entry> = list[i..]
                .iter()
                .take_while(|e| e.wall_ms < first.wall_ms + 60_000)
                .copied()
                .collect();
            if window.len() > POLLS_PER_MINUTE {
                f.fail_entries(&window);
                break;
            }
        }
    }
    if !lists.is_empty() && !f.failed() {
        // What shows it: the lists read (the first of them).
        f.pass_entries(&lists);
    }
    f.unobserved_because("no list was read.");
    f
}

pub const POLLING: Texts = Texts {
    id: "polling_reasonable",
    title: "Polls reasonably",
    required: true,
    rule: "No sender (an API client, else a key) asks the same first page (the same request: method, path and query, timestamps set aside, no `cursor`) of a list whose changes a webhook event announces (devices, ads, promotions, companies, media, billing, tokens, webhooks) more than 30 times within any 60 seconds. Different pages (one device's ads, then another's) are not polling. Not observed until a list was read.",
    advice: "Subscribe a webhook to the events of what you watch instead of polling its list; poll at most every few seconds if you must.",
};

#[cfg(test)]
mod tests {
    use super::*;

    fn page(n: u64, wall_ms: i64) -> Entry {
        // A small deterministic mix: two senders, two lists, three limits, a filter or none, a
        // cursor or none, pages with more or not, wall times that sometimes step back.
        let pick = |salt: u64, of: u64| {
            (n.wrapping_mul(2_654_435_761).rotate_left(salt as u32) ^ salt) % of
        };
        let mut query = serde_json::Map::new();
        query.insert(
            "limit".into(),
            Value::String(["5", "10", "20"][pick(3, 3) as usize].into()),
        );
        if pick(7, 3) == 0 {
            query.insert("status".into(), Value::String("online".into()));
        }
        if pick(11, 5) == 0 {
            query.insert("cursor".into(), Value::String(format!("c{}", pick(13, 40))));
        }
        Entry {
            id: n.to_string(),
            object: "request",
            request_id: format!("req_{n}"),
            at: String::new(),
            account_id: Some("acct_1".into()),
            company_id: None,
            key_id: Some("key_1".into()),
            client_id: Some(["cli_a", "cli_b"][pick(17, 2) as usize].into()),
            via: "rest".into(),
            tool: None,
            method: "GET".into(),
            route: Some("/devices".into()),
            operation_id: Some(["listDevices", "listAds"][pick(19, 2) as usize].into()),
            status: 200,
            problem_code: None,
            duration_ms: None,
            credentials: "api_key".into(),
            idempotency_key: None,
            idempotent_replayed: false,
            if_match: false,
            if_match_wildcard: false,
            path: Some("/devices".into()),
            test_name: None,
            fault: None,
            client_closed: false,
            retry_after: None,
            query: Some(Value::Object(query)),
            body: None,
            body_truncated: false,
            body_bytes: 0,
            next_cursor: (pick(23, 3) != 0).then(|| format!("c{}", pick(29, 40))),
            problem: None,
            seq: n as i64,
            wall_ms,
            at_ms: wall_ms,
            creates: false,
            list: true,
            shape: None,
        }
    }

    /// The search as first written: every later page read for each page (the oracle).
    fn bigger_by_reading_all(
        pages: &[(usize, &Entry)],
        followed_by: &HashMap<usize, usize>,
    ) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for (n, &(i, e)) in pages.iter().enumerate() {
            if e.next_cursor.is_none() || followed_by.contains_key(&i) || cursor_of(e).is_some() {
                continue;
            }
            let (filters, limit) = filters_and_limit(e);
            let bigger = pages[n + 1..].iter().position(|&(j, r)| {
                !followed_by.contains_key(&j)
                    && sender(r) == sender(e)
                    && r.operation_id == e.operation_id
                    && r.path == e.path
                    && cursor_of(r).is_none()
                    && r.wall_ms - e.wall_ms <= BIGGER_PAGE_MS
                    && {
                        let (rf, rl) = filters_and_limit(r);
                        rf == filters && rl > limit
                    }
            });
            if let Some(r) = bigger {
                out.push((n, n + 1 + r));
            }
        }
        out
    }

    #[test]
    fn a_bigger_first_page_is_the_one_reading_every_later_page_finds() {
        let mut wall = 0i64;
        let entries: Vec<Entry> = (0..3_000u64)
            .map(|n| {
                // Mostly forward, in steps of up to 7 s; now and then 20 s back.
                wall += if n % 37 == 0 {
                    -20_000
                } else {
                    (n as i64 * 7_919) % 7_000
                };
                page(n, wall)
            })
            .collect();
        let pages: Vec<(usize, &Entry)> = entries.iter().enumerate().collect();
        let mut followed_by = HashMap::new();
        for (i, _) in entries.iter().enumerate().filter(|(i, _)| i % 13 == 0) {
            followed_by.insert(i, i + 1);
        }
        let want = bigger_by_reading_all(&pages, &followed_by);
        assert!(
            want.len() > 20,
            "the mix finds bigger pages: {}",
            want.len()
        );
        let firsts = FirstPages::of(&pages, &followed_by);
        let have: Vec<(usize, usize)> = pages
            .iter()
            .enumerate()
            .filter(|(_, (i, e))| {
                e.next_cursor.is_some() && !followed_by.contains_key(i) && cursor_of(e).is_none()
            })
            .filter_map(|(n, (_, e))| firsts.bigger_after(n, e).map(|r| (n, r)))
            .collect();
        assert_eq!(have, want);
    }
}
