//! Issue 48: the operator builds a big world (companies added to an account, a plan's screen cap
//! lifted), an account's lists answer the same rows however many companies it has, and long work
//! (a proof-of-play report, a clock advance) never holds up a request sent while it runs.

use crate::helpers::{company_id, key, mcp, TestApp, TestResponse};
use serde_json::{json, Value};
use std::future::Future;

const OPERATOR: &str = "sandbox-operator";

/// The account's lists besides its screens: the same rows at 100 companies (each reads an index
/// by account, V42 and V46).
const OTHER_LISTS: [&str; 6] = [
    "/ads",
    "/media",
    "/promotions",
    "/webhooks",
    "/invoices",
    "/charges",
];

fn ids(rows: &[Value]) -> Vec<String> {
    rows.iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

async fn add_companies(app: &TestApp, account: &str, body: Value) -> Value {
    let resp = app
        .post(&format!("/_sandbox/accounts/{account}/companies"))
        .key(OPERATOR)
        .json(&body)
        .send()
        .await;
    assert_eq!(resp.status.as_u16(), 201, "{}", resp.text());
    resp.json()
}

async fn business_plan(app: &TestApp) -> String {
    let plans = app.collect_all("/plans", "northwind-readonly", 100).await;
    plans
        .iter()
        .find(|p| p["code"] == "business")
        .map(|p| p["id"].as_str().unwrap().to_string())
        .expect("the catalogue has a business plan")
}

#[tokio::test]
async fn an_account_with_a_hundred_companies_lists_the_same_screens() {
    let app = TestApp::spawn().await;
    let account = key("northwind-readonly").account_id;
    let before = ids(&app.collect_all("/devices", "northwind-readonly", 7).await);
    assert!(!before.is_empty());
    let mut others = Vec::new();
    for list in OTHER_LISTS {
        let rows = ids(&app.collect_all(list, "northwind-readonly", 3).await);
        assert!(!rows.is_empty(), "{list}");
        others.push(rows);
    }

    let added = add_companies(&app, &account, json!({ "count": 98 })).await;
    assert_eq!(added["object"], "sandbox_companies_added");
    assert_eq!(added["account_id"], account.as_str());
    assert_eq!(added["companies"], 100);
    let new: Vec<String> = added["company_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    assert_eq!(new.len(), 98);

    // The key sees the new companies from its next request, and its pages hold the same screens.
    let me = app.get("/me").key("northwind-readonly").send().await.ok();
    let visible = me["visible_company_ids"].as_array().unwrap();
    assert_eq!(visible.len(), 100);
    assert!(visible.iter().any(|c| c == new[0].as_str()));
    assert_eq!(
        ids(&app.collect_all("/devices", "northwind-readonly", 7).await),
        before
    );
    for (list, rows) in OTHER_LISTS.iter().zip(&others) {
        assert_eq!(
            &ids(&app.collect_all(list, "northwind-readonly", 3).await),
            rows,
            "{list}"
        );
        // A key limited to one company still sees that company's rows only.
        let pharmacy = company_id("Northwind Pharmacy");
        let scoped = app.collect_all(list, "northwind-pharmacy-read", 100).await;
        assert!(
            scoped.iter().all(|r| r["company_id"] == pharmacy.as_str()),
            "{list}"
        );
    }
    let listed = app
        .get("/companies?limit=100")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(listed["data"].as_array().unwrap().len(), 100);

    // A screen registered in a new company is on the account's pages, first (the newest), and on
    // no other account's; a key limited to another company does not see it.
    let created = app
        .post("/devices")
        .key("northwind-readwrite")
        .json(&json!({ "company_id": new[5], "name": "Scale test screen", "platform": "linux" }))
        .send()
        .await
        .ok();
    let device = created["id"].as_str().unwrap().to_string();
    let first = app
        .get("/devices?limit=1")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(first["data"][0]["id"], device.as_str());
    let all = ids(&app.collect_all("/devices", "northwind-readonly", 7).await);
    assert_eq!(all.len(), before.len() + 1);
    assert!(!ids(&app
        .collect_all("/devices", "harborview-readwrite", 100)
        .await)
    .contains(&device));
    let pharmacy = ids(&app
        .collect_all("/devices", "northwind-pharmacy-read", 100)
        .await);
    assert!(!pharmacy.is_empty());
    assert!(!pharmacy.contains(&device));
    // Filtered to the new company: that screen alone.
    let only = app
        .get(&format!("/devices?company_id={}", new[5]))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(ids(only["data"].as_array().unwrap()), vec![device]);
}

/// The ids of `table`'s rows in the companies of `account`, newest first: what an account-wide
/// list must answer, page after page.
fn account_rows(app: &TestApp, table: &str, account: &str) -> Vec<String> {
    let sql = format!(
        "SELECT id FROM {table} WHERE company_id IN (SELECT id FROM companies WHERE account_id = ?1)
         ORDER BY id DESC"
    );
    app.sql(|c| {
        let mut stmt = c.prepare(&sql)?;
        let rows = stmt.query_map([account], |r| r.get(0))?;
        rows.collect()
    })
}

#[tokio::test]
async fn an_account_with_a_hundred_companies_pages_its_events_media_and_billing_across_them() {
    let app = TestApp::spawn().await;
    let account = key("northwind-readonly").account_id;
    let added = add_companies(&app, &account, json!({ "count": 98 })).await;
    let new: Vec<String> = added["company_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    // Rows in two of the new companies, far apart in the account's list of companies, and in
    // the demo's two: a screen (an event), an upload (media, an event), a token purchase (a
    // charge on the invoice it opens, an event).
    let pharmacy = company_id("Northwind Pharmacy");
    let mut made: Vec<(String, String)> = Vec::new();
    for company in [
        &new[5],
        &new[60],
        &company_id("Northwind Grocers"),
        &pharmacy,
    ] {
        app.post("/devices")
            .key("northwind-readwrite")
            .json(&json!({ "company_id": company, "name": "Paged screen", "platform": "linux" }))
            .send()
            .await
            .ok();
        let media = app
            .post(&format!("/media?company_id={company}&filename=paged.png"))
            .key("northwind-readwrite")
            .raw("image/png", crate::media::png(4, 3))
            .send()
            .await;
        assert_eq!(media.status, 201, "{}", media.text());
        made.push((
            "media".into(),
            media.json()["id"].as_str().unwrap().to_string(),
        ));
        let bought = app
            .post("/token-packs/tpk_0m5d4rusj5xe4we40hu5/purchase")
            .key("northwind-readwrite")
            .json(&json!({ "company_id": company }))
            .send()
            .await;
        assert_eq!(bought.status, 201, "{}", bought.text());
        let charge = &bought.json()["charge"];
        made.push(("charges".into(), charge["id"].as_str().unwrap().to_string()));
        made.push((
            "invoices".into(),
            charge["invoice_id"].as_str().unwrap().to_string(),
        ));
    }
    for (list, table) in [
        ("/events", "events"),
        ("/media", "media"),
        ("/invoices", "invoices"),
        ("/charges", "charges"),
    ] {
        // Page after page of 3, newest first, exactly the account's rows across its companies.
        let expected = account_rows(&app, table, &account);
        let listed = app.collect_all(list, "northwind-readonly", 3).await;
        assert_eq!(ids(&listed), expected, "{list}");
        for company in [&new[5], &new[60]] {
            assert!(
                listed.iter().any(|r| r["company_id"] == company.as_str()),
                "{list} lists nothing of {company}"
            );
        }
        // Filtered to one new company: its rows alone, in order.
        let only = ids(&app
            .collect_all(
                &format!("{list}?company_id={}", new[60]),
                "northwind-readonly",
                2,
            )
            .await);
        let of_company: Vec<String> = listed
            .iter()
            .filter(|r| r["company_id"] == new[60].as_str())
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect();
        assert!(!only.is_empty(), "{list}");
        assert_eq!(only, of_company, "{list}");
        // A key limited to one company sees that company's rows only; another account's key
        // none of these.
        let scoped = app.collect_all(list, "northwind-pharmacy-read", 100).await;
        assert!(!scoped.is_empty(), "{list}");
        assert!(
            scoped.iter().all(|r| r["company_id"] == pharmacy.as_str()),
            "{list}"
        );
        let theirs = ids(&app.collect_all(list, "harborview-readwrite", 100).await);
        assert!(expected.iter().all(|id| !theirs.contains(id)), "{list}");
    }
    // Another account's object is a 404, as one that does not exist.
    // (No route reads one charge.)
    for (table, id) in made.iter().filter(|(table, _)| table != "charges") {
        let path = format!("/{table}/{id}");
        app.get(&path).key("northwind-readonly").send().await.ok();
        app.get(&path)
            .key("harborview-readwrite")
            .send()
            .await
            .problem(404);
    }
}

#[tokio::test]
async fn adding_companies_takes_a_plan_and_refuses_bad_input() {
    let app = TestApp::spawn().await;
    let account = key("harborview-readwrite").account_id;
    let plan = business_plan(&app).await;
    let added = add_companies(&app, &account, json!({ "count": 2, "plan_id": plan })).await;
    assert_eq!(added["plan_id"], plan.as_str());
    assert_eq!(added["companies"], 4);
    let id = added["company_ids"][1].as_str().unwrap().to_string();
    let company = app
        .get(&format!("/companies/{id}"))
        .key("harborview-readwrite")
        .send()
        .await
        .ok();
    assert_eq!(company["plan_id"], plan.as_str());

    let path = format!("/_sandbox/accounts/{account}/companies");
    for (body, field) in [
        (json!({ "count": 0 }), "/count"),
        (json!({ "count": 1001 }), "/count"),
        (json!({}), "/count"),
        (
            json!({ "count": 1, "plan_id": "plan_nosuchplan" }),
            "/plan_id",
        ),
        (json!({ "count": 1, "plan_id": "not-a-plan" }), "/plan_id"),
    ] {
        let resp = app.post(&path).key(OPERATOR).json(&body).send().await;
        let problem = resp.problem(422);
        assert!(problem.to_string().contains(field), "{body}: {problem}");
    }
    let resp = app
        .post(&path)
        .key(OPERATOR)
        .json(&json!({ "count": 1, "extra": true }))
        .send()
        .await;
    assert_eq!(resp.status.as_u16() / 100, 4, "{}", resp.text());
    resp.problem(resp.status.as_u16());
    app.post("/_sandbox/accounts/acct_nosuchaccount/companies")
        .key(OPERATOR)
        .json(&json!({ "count": 1 }))
        .send()
        .await
        .problem(404);
    // An account's own admin is not the operator.
    app.post(&path)
        .key("harborview-admin")
        .json(&json!({ "count": 1 }))
        .send()
        .await
        .problem(403);
    // Nothing was added by the refused calls.
    let me = app.get("/me").key("harborview-readwrite").send().await.ok();
    assert_eq!(me["visible_company_ids"].as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn a_plans_screen_cap_is_lifted_by_the_operator() {
    let app = TestApp::spawn().await;
    let account = key("northwind-readonly").account_id;
    let plan = business_plan(&app).await;
    let added = add_companies(&app, &account, json!({ "count": 1, "plan_id": plan })).await;
    let company = added["company_ids"][0].as_str().unwrap().to_string();
    let limits = |max: i64| {
        app.post(&format!("/_sandbox/plans/{plan}/limits"))
            .key(OPERATOR)
            .json(&json!({ "max_devices": max }))
    };
    let set = limits(1).send().await.ok();
    assert_eq!(set["object"], "sandbox_plan_limits");
    assert_eq!(set["max_devices"], 1);
    assert_eq!(set["previous_max_devices"], 50);
    let screen = |n: u32| {
        app.post("/devices").key("northwind-readwrite").json(
            &json!({ "company_id": company, "name": format!("Screen {n}"), "platform": "linux" }),
        )
    };
    screen(1).send().await.ok();
    let refused = screen(2).send().await.problem(409);
    assert!(refused["detail"]
        .as_str()
        .unwrap()
        .contains("upgrade the plan"));
    let set = limits(3000).send().await.ok();
    assert_eq!(set["previous_max_devices"], 1);
    screen(2).send().await.ok();
    let shown = app
        .get(&format!("/plans/{plan}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(shown["max_devices"], 3000);

    limits(0).send().await.problem(422);
    limits(1_000_001).send().await.problem(422);
    app.post(&format!("/_sandbox/plans/{plan}/limits"))
        .key(OPERATOR)
        .json(&json!({}))
        .send()
        .await
        .problem(422);
    app.post("/_sandbox/plans/plan_nosuchplan/limits")
        .key(OPERATOR)
        .json(&json!({ "max_devices": 10 }))
        .send()
        .await
        .problem(404);
    app.post(&format!("/_sandbox/plans/{plan}/limits"))
        .key("northwind-admin")
        .json(&json!({ "max_devices": 10 }))
        .send()
        .await
        .problem(403);
}

/// At least `rows` plays reported yesterday afternoon (UTC), a second apart, on every screen's
/// assigned ads: a world whose proof-of-play report reads many play rows (the demo history's own
/// are today's, few just after midnight). Plain SQL: what is measured is the report, not how the
/// plays arrived; so their sums are added to the daily roll-up the report reads, as a writer adds
/// them (schema V43). Returns the plays written.
fn more_plays(app: &TestApp, rows: i64) -> i64 {
    let noon = yesterday() + 43_200;
    app.sql(|c| {
        let pairs: i64 = c.query_row("SELECT count(*) FROM ad_assignments", [], |r| r.get(0))?;
        let copies = (rows + pairs - 1) / pairs.max(1);
        // A written play's id holds an upper-case X, which no drawn id does.
        c.execute(
            "WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < ?1)
             INSERT INTO playbacks (id, company_id, device_id, ad_id, source, started_at,
                                    duration_seconds, plays, created_at)
             SELECT 'pb_X' || x.device_id || x.ad_id || 'X' || k.n, d.company_id, x.device_id,
                    x.ad_id, 'player', ?2 + k.n, 15, 1, ?2 + k.n
             FROM ad_assignments x JOIN devices d ON d.id = x.device_id, k",
            [copies, noon],
        )?;
        c.execute(
            "INSERT INTO playback_days (company_id, day, device_id, ad_id, plays, seconds, rows)
             SELECT company_id, started_at / 86400, device_id, ad_id, sum(plays),
                    sum(duration_seconds), count(*)
             FROM playbacks WHERE id GLOB '*X*' GROUP BY 1, 2, 3, 4
             ON CONFLICT DO UPDATE SET plays = plays + excluded.plays,
                 seconds = seconds + excluded.seconds, rows = rows + excluded.rows",
            [],
        )?;
        c.query_row(
            "SELECT count(*) FROM playbacks WHERE id GLOB '*X*'",
            [],
            |r| r.get(0),
        )
    })
}

/// The start of yesterday (UTC) on the system clock these sandboxes run on.
fn yesterday() -> i64 {
    (signage::time::wall_now().div_euclid(86_400) - 1) * 86_400
}

/// Reads answered while `long` (a request that works for a while) runs, sent one after another
/// from its start; and `long`'s answer. The runtime has a single async worker: work left on it
/// would hold every read until `long` is answered (one read may slip in before its handler
/// starts), where work off it leaves the worker to answer them all along.
async fn reads_answered_during<F: Future<Output = TestResponse>>(
    app: &TestApp,
    read: &str,
    long: F,
) -> (usize, TestResponse) {
    let mut long = Box::pin(long);
    let mut answered = 0;
    loop {
        tokio::select! {
            biased;
            resp = &mut long => return (answered, resp),
            resp = app.get(read).key("northwind-readonly").send() => {
                assert_eq!(resp.status.as_u16(), 200, "{}", resp.text());
                answered += 1;
            }
        }
    }
}

/// A server whose reads are never throttled: a test sends as many as it can.
async fn unthrottled() -> TestApp {
    TestApp::spawn_with(|l| l.rate_limit_per_second = Some(0.0)).await
}

/// A second after yesterday's start: a report from then on reads yesterday's play rows one by one
/// (a whole day, or the day `to` falls in, is read from its roll-up rows).
fn after_yesterdays_start() -> String {
    signage::time::rfc3339(yesterday() + 1)
}

/// Reads answered during a long request: far more than the one or two that could slip in before
/// (or after) its handler held a worker.
const ANSWERED_DURING: usize = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_read_is_answered_while_a_proof_of_play_report_runs() {
    let app = unthrottled().await;
    assert!(more_plays(&app, 20_000) >= 20_000);
    let report = app
        .get(&format!(
            "/reports/proof-of-play?from={}",
            after_yesterdays_start()
        ))
        .key("northwind-readonly")
        .send();
    let (answered, resp) = reads_answered_during(&app, "/devices?limit=5", report).await;
    assert!(
        answered >= ANSWERED_DURING,
        "{answered} reads answered during the report"
    );
    let body = resp.ok();
    assert!(body["plays"].as_i64().unwrap() > 0, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_read_is_answered_while_the_report_tool_runs() {
    let app = unthrottled().await;
    more_plays(&app, 20_000);
    let message = mcp::request(
        1,
        "tools/call",
        json!({ "name": "get_proof_of_play_report", "arguments": { "from": after_yesterdays_start() } }),
    );
    let call = mcp::send(&app, "northwind-readonly", &message);
    let (answered, resp) = reads_answered_during(&app, "/devices?limit=5", call).await;
    assert!(
        answered >= ANSWERED_DURING,
        "{answered} reads answered during the tool call"
    );
    let v = resp.json();
    assert_eq!(v["result"]["isError"], false, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_read_is_answered_while_the_clock_advances() {
    let app = unthrottled().await;
    let advance = app
        .post("/_sandbox/clock/advance")
        .key(OPERATOR)
        .json(&json!({ "seconds": 7 * 86_400 }))
        .send();
    let (answered, resp) = reads_answered_during(&app, "/devices?limit=5", advance).await;
    assert!(
        answered >= ANSWERED_DURING,
        "{answered} reads answered during the advance"
    );
    assert_eq!(resp.ok()["object"], "sandbox_clock_advance");
}

/// The `updated_at` of each write answered while `long` runs, sent one after another from its
/// start (each renames a screen), and `long`'s answer. An advance commits in slices and lets a
/// waiting write in between two of them (`Scoped::slice`): in one transaction every write would
/// wait for the whole run.
async fn writes_answered_during<F: Future<Output = TestResponse>>(
    app: &TestApp,
    device: &str,
    long: F,
) -> (Vec<String>, TestResponse) {
    let mut long = Box::pin(long);
    let mut stamps = Vec::new();
    loop {
        let name = format!("Renamed during the advance {}", stamps.len());
        tokio::select! {
            biased;
            resp = &mut long => return (stamps, resp),
            resp = app.patch(&format!("/devices/{device}"))
                .key("northwind-readwrite")
                .json(&json!({ "name": name }))
                .send() => {
                assert_eq!(resp.status.as_u16(), 200, "{}", resp.text());
                let body = resp.json();
                stamps.push(body["updated_at"].as_str().unwrap_or_default().to_owned());
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_write_is_answered_while_the_clock_advances() {
    let app = unthrottled().await;
    let device = ids(&app.collect_all("/devices", "northwind-readonly", 5).await)[0].clone();
    let advance = app
        .post("/_sandbox/clock/advance")
        .key(OPERATOR)
        .json(&json!({ "seconds": 7 * 86_400 }))
        .send();
    let (stamps, resp) = writes_answered_during(&app, &device, advance).await;
    let answered = stamps.len();
    assert!(
        answered >= ANSWERED_DURING,
        "{answered} writes answered during the advance"
    );
    let body = resp.ok();
    assert_eq!(body["object"], "sandbox_clock_advance");
    assert!(
        body["transitions"]["fleet.plays"].as_u64() > Some(0),
        "{body}"
    );
    // The last rename is the screen's name (the one in flight as the advance answered may have
    // landed too): no write was lost to the advance's slices.
    let shown = app
        .get(&format!("/devices/{device}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    let last = [answered - 1, answered].map(|n| format!("Renamed during the advance {n}"));
    assert!(
        last.iter().any(|name| shown["name"] == name.as_str()),
        "{}",
        shown["name"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_write_waits_for_an_advance_in_one_transaction() {
    // An advance with slices off: the writes sent during it wait for its run's end (but one that
    // slips in where the run commits before a webhook attempt), which is what slices are for. On
    // a frozen clock a write is stamped with the instant the run is at: those that go in after
    // it (between retention's batches, say) have the end, and are not counted. Three days:
    // every write waits well within SQLite's busy timeout.
    let app = TestApp::spawn_with(|l| {
        l.rate_limit_per_second = Some(0.0);
        l.sandbox_clock = Some(Some(crate::sandbox_clock::FROZEN_AT));
        l.sandbox_advance_slice_rows = Some(0);
    })
    .await;
    let device = ids(&app.collect_all("/devices", "northwind-readonly", 5).await)[0].clone();
    let advance = app
        .post("/_sandbox/clock/advance")
        .key(OPERATOR)
        .json(&json!({ "seconds": 3 * 86_400 }))
        .send();
    let (stamps, resp) = writes_answered_during(&app, &device, advance).await;
    assert_eq!(resp.ok()["object"], "sandbox_clock_advance");
    let end = "2026-03-05T09:00:00Z";
    let in_the_run = stamps.iter().filter(|s| s.as_str() < end).count();
    assert!(
        in_the_run < ANSWERED_DURING,
        "writes answered during an advance in one transaction: {stamps:?}"
    );
}

/// What an advance writes and keeps, compared between two sandboxes.
const ADVANCED: [&str; 10] = [
    "playbacks",
    "playback_days",
    "qr_scans",
    "qr_scan_counts",
    "events",
    "devices",
    "device_simulations",
    "fleet_simulation",
    "playback_errors",
    "webhook_deliveries",
];

/// A seeded sandbox on a frozen clock that commits an advance every `slice_rows` new play rows
/// (1: at every step; 0: never before its end).
async fn sliced_every(slice_rows: u64) -> TestApp {
    TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(crate::sandbox_clock::FROZEN_AT));
        l.sandbox_seed = Some(48);
        l.sandbox_advance_slice_rows = Some(slice_rows);
    })
    .await
}

#[tokio::test]
async fn an_advance_in_slices_writes_what_one_transaction_writes() {
    let (sliced, whole) = (sliced_every(1).await, sliced_every(0).await);
    assert_eq!(sliced.dump_tables(&ADVANCED), whole.dump_tables(&ADVANCED));
    // A day, then nine more in one go: plays, beats, errors, drop-outs, scans, deliveries, and
    // plays retention rolls up.
    for seconds in [86_400, 9 * 86_400] {
        let mut answers = Vec::new();
        for app in [&sliced, &whole] {
            let resp = app
                .post("/_sandbox/clock/advance")
                .key(OPERATOR)
                .json(&json!({ "seconds": seconds }))
                .send()
                .await;
            answers.push(resp.ok());
        }
        assert_eq!(answers[0], answers[1]);
        assert!(answers[0]["steps"].as_u64() > Some(10), "{}", answers[0]);
        assert!(
            answers[0]["transitions"]["fleet.plays"].as_u64() > Some(0),
            "{}",
            answers[0]
        );
        let (a, b) = (sliced.dump_tables(&ADVANCED), whole.dump_tables(&ADVANCED));
        assert!(a == b, "the rows differ after an advance of {seconds} s");
    }
    // Days of the run whose roll-up rows stand for more play rows than are left: plays rolled up.
    let rolled: i64 = whole.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM playback_days d
             WHERE d.day >= ?1 / 86400 AND d.rows > (SELECT count(*) FROM playbacks p
                 WHERE p.device_id = d.device_id AND p.ad_id = d.ad_id
                   AND p.started_at >= d.day * 86400 AND p.started_at < (d.day + 1) * 86400)",
            [crate::sandbox_clock::FROZEN_AT],
            |r| r.get(0),
        )
    });
    assert!(rolled > 0, "retention rolled no play up");
}
