//! Tests: QR codes as a resource of a promotion (create, list, get, delete), with the
//! authorization of each demo key and the checks that keep the public redirect closed.

use crate::helpers::TestApp;
use serde_json::{json, Value};

const SUMMER_FRUIT: &str = "promo_0m5d4rupd28t6txsgbdb"; // Grocers (given a real landing page below)
const SUN_CARE: &str = "promo_0m5d4ruph555gp9x0h0h"; // Pharmacy
const ROOFTOP: &str = "promo_0m5d4rupj321exmngzev"; // Harborview Hotels
const LANDING: &str = "https://www.northwind-grocers.example/promotions/fresh-fruit-week";

/// A sandbox whose Fresh Fruit Week has a real landing page of its own (the fixtures' promotions land
/// on the sandbox's page): the rules of targets on a company's own host.
async fn with_landing() -> TestApp {
    let app = TestApp::spawn().await;
    app.patch(&format!("/promotions/{SUMMER_FRUIT}"))
        .key("northwind-readwrite")
        .json(&json!({"landing_url": LANDING}))
        .send()
        .await
        .ok();
    app
}

fn events(app: &TestApp, kind: &str, id: &str) -> Vec<Value> {
    let (kind, id) = (kind.to_string(), id.to_string());
    app.sql(move |c| {
        c.prepare("SELECT payload FROM events WHERE type = ?1 AND resource_id = ?2 ORDER BY id")?
            .query_map([&kind, &id], |r| r.get::<_, String>(0))?
            .map(|p| p.map(|p| serde_json::from_str(&p).unwrap()))
            .collect()
    })
}

async fn create(
    app: &TestApp,
    key: &str,
    promo: &str,
    body: Value,
) -> crate::helpers::TestResponse {
    app.post(&format!("/promotions/{promo}/qr-codes"))
        .key(key)
        .json(&body)
        .send()
        .await
}

#[tokio::test]
async fn create_get_list_delete_with_each_demo_key() {
    let app = with_landing().await;
    let r = create(
        &app,
        "northwind-readwrite",
        SUMMER_FRUIT,
        json!({"label": "Entrance screen", "target_url": format!("{LANDING}?lang=nl"),
               "utm": {"source": "signage", "medium": "qr", "campaign": "fruit week"}}),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(r.header("etag").is_some());
    let qr = r.json();
    let id = qr["id"].as_str().unwrap().to_string();
    let code = qr["code"].as_str().unwrap();
    assert_eq!(code.len(), 10);
    assert!(code.bytes().all(|b| b.is_ascii_alphanumeric()));
    assert_eq!(qr["object"], "qr_code");
    assert_eq!(qr["promotion_id"], SUMMER_FRUIT);
    assert_eq!(qr["label"], "Entrance screen");
    assert_eq!(qr["short_url"], format!("{}/q/{code}", app.base_url));
    assert_eq!(
        qr["redirect_url"],
        format!("{LANDING}?lang=nl&utm_source=signage&utm_medium=qr&utm_campaign=fruit%20week")
    );
    assert_eq!(qr["utm"]["term"], Value::Null);
    assert_eq!(qr["scan_count"], 0);
    assert_eq!(qr["last_scanned_at"], Value::Null);
    let created = events(&app, "qr_code.created", &id);
    assert_eq!(created.len(), 1);
    assert_eq!(created[0]["code"], code);
    assert!(
        created[0].get("image_svg").is_none(),
        "events carry no image"
    );

    // Readers of the company see it, by id and in the promotion's list; the count follows.
    for key in [
        "northwind-readonly",
        "northwind-grocers-write",
        "northwind-ads-editor",
        "northwind-admin",
    ] {
        let got = app
            .get(&format!("/qr-codes/{id}"))
            .key(key)
            .send()
            .await
            .ok();
        assert_eq!(got["code"], code, "{key}");
    }
    let list = app
        .collect_all(
            &format!("/promotions/{SUMMER_FRUIT}/qr-codes"),
            "northwind-readonly",
            2,
        )
        .await;
    assert_eq!(list.len(), 4);
    assert_eq!(list[0]["id"], id.as_str(), "newest first");
    let promo = app
        .get(&format!("/promotions/{SUMMER_FRUIT}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(promo["qr_code_count"], 4);

    // Other companies' keys: 404 for everything; keys without promotions:write: 403.
    for key in [
        "harborview-readwrite",
        "harborview-admin",
        "northwind-pharmacy-read",
    ] {
        app.get(&format!("/qr-codes/{id}"))
            .key(key)
            .send()
            .await
            .problem(404);
    }
    for key in ["harborview-readwrite", "harborview-admin"] {
        create(&app, key, SUMMER_FRUIT, json!({}))
            .await
            .problem(404);
        app.delete(&format!("/qr-codes/{id}"))
            .key(key)
            .send()
            .await
            .problem(404);
    }
    for key in [
        "northwind-readonly",
        "northwind-ads-editor",
        "harborview-hotels-billing",
    ] {
        create(&app, key, SUMMER_FRUIT, json!({}))
            .await
            .problem(403);
        app.delete(&format!("/qr-codes/{id}"))
            .key(key)
            .send()
            .await
            .problem(403);
    }
    // A company-scoped writer may not reach the other company's promotion.
    create(&app, "northwind-grocers-write", SUN_CARE, json!({}))
        .await
        .problem(404);
    app.get(&format!("/qr-codes/{id}"))
        .send()
        .await
        .problem(401);

    // Delete honours If-Match; afterwards the code, its image and its short link are gone.
    app.delete(&format!("/qr-codes/{id}"))
        .key("northwind-readwrite")
        .header("if-match", "\"99\"")
        .send()
        .await
        .problem(412);
    let etag = app
        .get(&format!("/qr-codes/{id}"))
        .key("northwind-readonly")
        .send()
        .await
        .header("etag")
        .unwrap()
        .to_string();
    app.assert_deleted(&format!("/qr-codes/{id}"), &etag).await;
    app.get(&format!("/qr-codes/{id}/image"))
        .key("northwind-readonly")
        .send()
        .await
        .problem(404);
    app.get(&format!("/q/{code}")).send().await.problem(404);
    let deleted = events(&app, "qr_code.deleted", &id);
    assert_eq!(
        deleted,
        vec![json!({"id": id, "object": "qr_code", "deleted": true})]
    );
}

#[tokio::test]
async fn the_target_must_stay_on_the_landing_host() {
    let app = with_landing().await;
    // Default target: the landing URL itself, no UTM.
    let plain = create(&app, "northwind-readwrite", SUMMER_FRUIT, json!({})).await;
    assert_eq!(plain.status, 201, "{}", plain.text());
    assert_eq!(plain.json()["target_url"], LANDING);
    assert_eq!(plain.json()["redirect_url"], LANDING);
    assert_eq!(plain.json()["label"], "");
    // Same host, other path and case: fine.
    let other_path = create(
        &app,
        "northwind-readwrite",
        SUMMER_FRUIT,
        json!({"target_url": "https://WWW.Northwind-Grocers.example/stores?near=me#map"}),
    )
    .await;
    assert_eq!(other_path.status, 201, "{}", other_path.text());

    for (target, code) in [
        ("https://evil.example/", "foreign_host"),
        (
            "https://www.northwind-grocers.example.evil.example/",
            "foreign_host",
        ),
        (
            "https://www.northwind-grocers.example:8443/",
            "foreign_host",
        ),
        (
            "https://www.northwind-grocers.example@evil.example/",
            "invalid_url",
        ),
        ("//evil.example/", "invalid_url"),
        ("javascript:alert(1)", "invalid_url"),
        (
            "https://www.northwind-grocers.example\\@evil.example/",
            "invalid_url",
        ),
        (
            "https://www.northwind-grocers.example/\r\nLocation: https://evil.example/",
            "invalid_url",
        ),
    ] {
        let p = create(
            &app,
            "northwind-readwrite",
            SUMMER_FRUIT,
            json!({"target_url": target}),
        )
        .await
        .problem(422);
        assert_eq!(p["errors"][0]["field"], "/target_url", "{target}");
        assert_eq!(p["errors"][0]["code"], code, "{target}");
    }
    // UTM both in the URL and in `utm`; values too long or with controls; unknown members.
    let p = create(
        &app,
        "northwind-readwrite",
        SUMMER_FRUIT,
        json!({"target_url": format!("{LANDING}?utm_source=x"), "utm": {"source": "y"}}),
    )
    .await
    .problem(422);
    assert_eq!(p["errors"][0]["code"], "utm_conflict");
    let p = create(
        &app,
        "northwind-readwrite",
        SUMMER_FRUIT,
        json!({"utm": {"campaign": "x".repeat(101)}}),
    )
    .await
    .problem(422);
    assert_eq!(p["errors"][0]["field"], "/utm/campaign");
    create(
        &app,
        "northwind-readwrite",
        SUMMER_FRUIT,
        json!({"utm": {"medium": "a\u{0}b"}}),
    )
    .await
    .problem(422);
    let r = create(
        &app,
        "northwind-readwrite",
        SUMMER_FRUIT,
        json!({"utm": {"id": "x"}}),
    )
    .await;
    assert!(r.status == 400 || r.status == 422, "{}", r.status);
    let r = create(
        &app,
        "northwind-readwrite",
        SUMMER_FRUIT,
        json!({"label": "x".repeat(101)}),
    )
    .await;
    r.problem(422);
    // Another company's promotion is not found, even with a valid body.
    create(&app, "northwind-readwrite", ROOFTOP, json!({}))
        .await
        .problem(404);
}

#[tokio::test]
async fn a_promotion_holds_at_most_a_hundred_codes() {
    let app = TestApp::spawn().await;
    // Fresh Fruit Week has 3 fixture codes.
    for i in 0..97 {
        let r = create(
            &app,
            "northwind-readwrite",
            SUMMER_FRUIT,
            json!({"label": format!("Screen {i}")}),
        )
        .await;
        assert_eq!(r.status, 201, "{i}: {}", r.text());
    }
    let p = create(&app, "northwind-readwrite", SUMMER_FRUIT, json!({}))
        .await
        .problem(409);
    assert_eq!(p["code"], "qr_code_limit");
}
