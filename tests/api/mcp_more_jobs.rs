//! Tests: mcp_more_jobs (issue 21 item 3). Jobs an assistant could not do: proof of play of one
//! ad (zero plays included), plain dates in every date filter, an account-wide QR ranking, a
//! low-balance signal, one-step bulk assignment and webhook management.

use crate::helpers::mcp::{call_err, call_ok};
use crate::helpers::{company_id, TestApp};
use serde_json::{json, Value};

const RO: &str = "northwind-readonly";

fn one(app: &TestApp, sql: &str, args: &[&dyn rusqlite::ToSql]) -> String {
    app.sql(|c| c.query_row(sql, args, |r| r.get(0)))
}

fn count(app: &TestApp, sql: &str, args: &[&dyn rusqlite::ToSql]) -> i64 {
    app.sql(|c| c.query_row(sql, args, |r| r.get(0)))
}

#[tokio::test]
async fn proof_of_play_by_ad_lists_ads_that_never_played() {
    // The simulated fleet off: on the system clock it may play the quiet ad between the query that
    // finds it and the report (seen once in a full run).
    let app = TestApp::spawn_with(|l| l.sandbox_simulate_fleet = Some(false)).await;
    let grocers = company_id("Northwind Grocers");
    let ads = count(
        &app,
        "SELECT count(*) FROM ads WHERE company_id = ?1",
        &[&grocers],
    );
    let report = call_ok(
        &app,
        RO,
        "get_proof_of_play_report",
        json!({"company_id": grocers}),
    )
    .await;
    let lines = report["ads"].as_array().unwrap();
    assert_eq!(lines.len() as i64, ads, "every ad of the company is a line");
    let silent: Vec<&Value> = lines.iter().filter(|l| l["plays"] == 0).collect();
    for l in &silent {
        assert_eq!(
            (l["seconds"].clone(), l["devices"].clone()),
            (json!(0), json!(0))
        );
        assert!(l["status"].is_string());
    }
    // One ad that never played: asked for by id, it is the one line, with zeros.
    let quiet = one(
        &app,
        "SELECT min(a.id) FROM ads a WHERE a.company_id = ?1
           AND NOT EXISTS (SELECT 1 FROM playbacks p WHERE p.ad_id = a.id)",
        &[&grocers],
    );
    let report = call_ok(
        &app,
        RO,
        "get_proof_of_play_report",
        json!({"ad_id": quiet, "from": "2026-01-01"}),
    )
    .await;
    assert_eq!(report["ads"].as_array().unwrap().len(), 1, "{report}");
    assert_eq!(report["ads"][0]["ad_id"], quiet);
    assert_eq!(report["ads"][0]["plays"], 0);
    assert_eq!(report["plays"], 0);
    assert_eq!(report["devices"], json!([]));
    assert_eq!(report["from"], "2026-01-01T00:00:00Z");
    // Another account's ad reads like one that does not exist.
    let foreign = one(
        &app,
        "SELECT min(a.id) FROM ads a JOIN companies c ON c.id = a.company_id
         WHERE c.account_id <> (SELECT account_id FROM companies WHERE id = ?1)",
        &[&grocers],
    );
    let e = call_err(
        &app,
        RO,
        "get_proof_of_play_report",
        json!({"ad_id": foreign}),
    )
    .await;
    assert!(e.starts_with("HTTP 404"), "{e}");
}

#[tokio::test]
async fn every_date_filter_takes_a_plain_date() {
    let app = TestApp::spawn().await;
    let device = one(
        &app,
        "SELECT min(id) FROM devices WHERE company_id = ?1",
        &[&company_id("Northwind Grocers")],
    );
    let today = &signage::time::rfc3339(signage::time::wall_now())[..10];
    // The call: `from` as a date, through MCP and REST alike.
    let page = call_ok(
        &app,
        RO,
        "list_device_playbacks",
        json!({"device_id": device, "from": "2026-02-23", "to": today}),
    )
    .await;
    assert_eq!(page["object"], "list");
    let r = app
        .get(&format!(
            "/devices/{device}/playbacks?from=2026-02-23&to={today}"
        ))
        .key(RO)
        .send()
        .await;
    r.ok();
    // A date in `to` includes that whole day: a report to today ends at tomorrow's start.
    let report = call_ok(
        &app,
        RO,
        "get_proof_of_play_report",
        json!({"from": today, "to": today}),
    )
    .await;
    let start = signage::time::parse_rfc3339(&format!("{today}T00:00:00Z")).unwrap();
    assert_eq!(report["from"], signage::time::rfc3339(start));
    assert_eq!(report["to"], signage::time::rfc3339(start + 86_400));
    // Not a date: refused with the accepted forms named.
    let e = call_err(
        &app,
        RO,
        "list_device_playbacks",
        json!({"device_id": device, "from": "23/02/2026"}),
    )
    .await;
    assert!(e.contains("or a date (`2026-11-01`)"), "{e}");
}

#[tokio::test]
async fn the_runway_says_whether_the_balance_is_low() {
    let app = TestApp::spawn().await;
    let now = signage::time::wall_now();
    for (company, name, _) in crate::helpers::demo()
        .companies
        .iter()
        .filter(|c| c.2 == crate::helpers::key(RO).account_id)
    {
        let r = call_ok(&app, RO, "get_token_runway", json!({"company_id": company})).await;
        let balance = count(
            &app,
            "SELECT coalesce((SELECT balance FROM token_balances WHERE company_id = ?1), 0)",
            &[company],
        );
        let spent = count(
            &app,
            "SELECT coalesce(-sum(amount), 0) FROM token_transactions
             WHERE company_id = ?1 AND kind = 'spend' AND created_at >= ?2",
            &[company, &(now - 30 * 86_400)],
        );
        let burn = (spent as f64 / 30.0 * 100.0).round() / 100.0;
        assert_eq!(r["balance"], balance, "{name}: {r}");
        assert_eq!(r["spent_in_window"], spent, "{name}");
        assert_eq!(r["daily_burn"].as_f64().unwrap(), burn, "{name}");
        if spent > 0 {
            let days = r["days_left"].as_f64().unwrap();
            assert!((days - balance as f64 / burn).abs() < 0.11, "{name}: {r}");
            assert_eq!(r["low"], days < 14.0, "{name}");
            assert_eq!(r["runs_out_on"].as_str().unwrap().len(), 10);
        } else {
            assert_eq!(
                (r["days_left"].clone(), r["runs_out_on"].clone()),
                (Value::Null, Value::Null)
            );
            assert_eq!(r["low"], balance <= 0, "{name}");
        }
    }
    // Nothing left is low, whatever the pace.
    let grocers = company_id("Northwind Grocers");
    app.sql(|c| {
        c.execute(
            "UPDATE token_balances SET balance = 0 WHERE company_id = ?1",
            [&grocers],
        )
    });
    let r = call_ok(&app, RO, "get_token_runway", json!({"company_id": grocers})).await;
    assert_eq!(
        (r["balance"].clone(), r["low"].clone()),
        (json!(0), json!(true))
    );
}

#[tokio::test]
async fn qr_codes_are_ranked_across_the_account() {
    let app = TestApp::spawn().await;
    let account = crate::helpers::key(RO).account_id;
    let expected: Vec<(String, i64)> = app.sql(|c| {
        let mut s = c.prepare(
            "SELECT q.id, q.scan_count FROM qr_codes q JOIN promotions p ON p.id = q.promotion_id
             JOIN companies c ON c.id = p.company_id WHERE c.account_id = ?1
             ORDER BY q.scan_count DESC, q.id LIMIT 3",
        )?;
        let rows = s.query_map([&account], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect()
    });
    assert!(expected.len() == 3 && expected[0].1 > 0, "{expected:?}");
    let r = call_ok(&app, RO, "rank_qr_codes", json!({"limit": 3})).await;
    let got: Vec<(String, i64)> = r["codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["qr_code_id"].as_str().unwrap().to_string(),
                c["scans"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, expected);
    assert_eq!(r["codes"][0]["rank"], 1);
    assert_eq!(r["codes"][2]["rank"], 3);
    assert!(r["codes"][0]["short_url"].as_str().unwrap().contains("/q/"));
    assert_eq!(
        (r["from"].clone(), r["to"].clone()),
        (Value::Null, Value::Null)
    );

    // Within a window: the scans recorded in it.
    let today = &signage::time::rfc3339(signage::time::wall_now())[..10];
    let r = call_ok(
        &app,
        RO,
        "rank_qr_codes",
        json!({"from": today, "limit": 100}),
    )
    .await;
    for c in r["codes"].as_array().unwrap() {
        let in_window = count(
            &app,
            "SELECT count(*) FROM qr_scans WHERE qr_code_id = ?1 AND scanned_at >= ?2",
            &[
                &c["qr_code_id"].as_str().unwrap(),
                &signage::time::parse_rfc3339(&format!("{today}T00:00:00Z")).unwrap(),
            ],
        );
        assert_eq!(c["scans"], in_window);
    }
    // Another account's codes never appear.
    let ours = count(
        &app,
        "SELECT count(*) FROM qr_codes q JOIN promotions p ON p.id = q.promotion_id
         JOIN companies c ON c.id = p.company_id WHERE c.account_id = ?1",
        &[&account],
    );
    assert_eq!(r["codes"].as_array().unwrap().len() as i64, ours.min(100));
}

#[tokio::test]
async fn a_webhook_is_disabled_in_two_steps_and_its_secret_never_shows() {
    let app = TestApp::spawn().await;
    let account = crate::helpers::key("northwind-admin").account_id;
    let webhook = one(
        &app,
        "SELECT min(w.id) FROM webhooks w JOIN companies c ON c.id = w.company_id
         WHERE c.account_id = ?1 AND w.enabled = 1",
        &[&account],
    );
    let preview = call_ok(
        &app,
        "northwind-admin",
        "prepare_webhook_change",
        json!({"webhook_id": webhook, "changes": {"enabled": false}}),
    )
    .await;
    assert_eq!(preview["after"]["enabled"], false);
    let rest = app
        .get(&format!("/webhooks/{webhook}"))
        .key("northwind-admin")
        .send()
        .await
        .ok();
    assert_eq!(rest["enabled"], true, "a preview changes nothing");
    let done = call_ok(
        &app,
        "northwind-admin",
        "confirm_change",
        json!({"confirmation_id": preview["confirmation_id"]}),
    )
    .await;
    assert_eq!(done["result"]["enabled"], false);
    let rest = app
        .get(&format!("/webhooks/{webhook}"))
        .key("northwind-admin")
        .send()
        .await
        .ok();
    assert_eq!(rest["enabled"], false);
    for v in [&preview, &done] {
        assert!(!v.to_string().contains("whsec_"), "{v}");
    }
    // A key without webhooks:write is refused.
    let e = call_err(
        &app,
        RO,
        "prepare_webhook_change",
        json!({"webhook_id": webhook, "changes": {"enabled": true}}),
    )
    .await;
    assert!(e.contains("cannot use prepare_webhook_change"), "{e}");
}
