//! Tests: a QR code lands on a page a phone can open. The demo world's promotions have no landing
//! URL, so their codes land on the sandbox's own page of the promotion (`GET /l/{code}`, public,
//! branded, under a strict policy); a promotion with a real landing URL still redirects there.

use crate::helpers::TestApp;
use crate::sandbox_clock::frozen;
use serde_json::{json, Value};

const FRESH_FRUIT: &str = "promo_0m5d4rupd28t6txsgbdb";
const IPHONE: &str =
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148";

async fn codes(app: &TestApp, promotion: &str) -> Vec<Value> {
    let r = app
        .get(&format!("/promotions/{promotion}/qr-codes"))
        .key("northwind-readwrite")
        .send()
        .await;
    r.ok()["data"].as_array().unwrap().clone()
}

/// Follows the short link as a phone: (Location, the page it leads to).
async fn scan(app: &TestApp, code: &str) -> (String, crate::helpers::TestResponse) {
    let r = app
        .get(&format!("/q/{code}"))
        .header("user-agent", IPHONE)
        .send()
        .await;
    assert_eq!(r.status, 302, "{}", r.text());
    let location = r.header("location").unwrap().to_string();
    let path = location
        .strip_prefix(&app.base_url)
        .unwrap_or(&location)
        .to_string();
    let page = app.get(&path).header("user-agent", IPHONE).send().await;
    (location, page)
}

#[tokio::test]
async fn a_demo_qr_code_lands_on_the_promotions_branded_page_and_counts() {
    let app = frozen().await;
    let promotion = app
        .get(&format!("/promotions/{FRESH_FRUIT}"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    assert_eq!(promotion["landing_url"], Value::Null, "{promotion}");
    let code = codes(&app, FRESH_FRUIT).await.remove(0);
    let short = code["code"].as_str().unwrap();
    // The API shows where it leads, under the public base URL.
    assert_eq!(
        code["target_url"],
        format!("{}/l/{short}", app.base_url),
        "{code}"
    );
    assert!(code["redirect_url"]
        .as_str()
        .unwrap()
        .starts_with(&format!("{}/l/{short}?utm_source=signage", app.base_url)));
    let before = code["scan_count"].as_i64().unwrap();

    let (location, page) = scan(&app, short).await;
    // A path: the phone stays on the host it scanned, whatever the public base URL says.
    assert!(
        location.starts_with(&format!("/l/{short}?utm_source=signage&utm_medium=qr")),
        "{location}"
    );
    assert_eq!(page.status, 200, "{}", page.text());
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    let html = page.text();
    for words in [
        "Northwind Grocers",
        "Fresh Fruit Week",
        "20% off",
        "20% off all berries and stone fruit in every store.",
        "On now, until",
        "Valid from",
        "Fresh every day, around the corner.",
    ] {
        assert!(html.contains(words), "{words} missing: {html}");
    }
    assert!(!html.contains("<script"), "{html}");
    assert!(
        !html.contains("promo_") && !html.contains("qr_"),
        "no ids: {html}"
    );
    // Exactly its own style block, by hash; nothing else may load or run.
    let csp = page.header("content-security-policy").unwrap();
    assert!(
        csp.starts_with("default-src 'none'; style-src 'sha256-"),
        "{csp}"
    );
    assert!(
        !csp.contains("unsafe") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    let after = app
        .get(&format!("/qr-codes/{}", code["id"].as_str().unwrap()))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    assert_eq!(after["scan_count"].as_i64().unwrap(), before + 1);
    // Opening the page itself counts nothing: only the short link does.
    app.get(&format!("/l/{short}")).send().await;
    let again = app
        .get(&format!("/qr-codes/{}", code["id"].as_str().unwrap()))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    assert_eq!(again["scan_count"], after["scan_count"]);
}

#[tokio::test]
async fn a_new_promotion_without_a_landing_url_lands_on_the_sandbox_and_a_real_one_still_redirects()
{
    let app = frozen().await;
    let grocers = crate::helpers::company_id("Northwind Grocers");
    let made = app
        .post("/promotions")
        .key("northwind-readwrite")
        .json(
            &json!({"company_id": grocers, "name": "Cheese <b>night</b>",
            "description": "Taste & \"compare\".", "discount_percent": 10,
            "activation_cost_tokens": 0, "starts_at": "2026-03-01T00:00:00Z",
            "ends_at": "2026-04-01T00:00:00Z"}),
        )
        .send()
        .await;
    let promotion = made.ok();
    assert_eq!(made.status, 201);
    assert_eq!(promotion["landing_url"], Value::Null);
    let id = promotion["id"].as_str().unwrap();
    // A target for the sandbox's page cannot be given: it is the page of the code.
    let r = app
        .post(&format!("/promotions/{id}/qr-codes"))
        .key("northwind-readwrite")
        .json(&json!({"target_url": "https://www.northwind-grocers.example/x"}))
        .send()
        .await;
    assert_eq!(r.problem(422)["errors"][0]["code"], "sandbox_landing_page");
    let qr = app
        .post(&format!("/promotions/{id}/qr-codes"))
        .key("northwind-readwrite")
        .json(&json!({"label": "Deli"}))
        .send()
        .await
        .ok();
    let short = qr["code"].as_str().unwrap();
    assert_eq!(qr["target_url"], format!("{}/l/{short}", app.base_url));
    let (_, page) = scan(&app, short).await;
    let html = page.text();
    // Not switched on yet: the page says so; and the names are text, never markup.
    assert!(html.contains("This offer is paused right now."), "{html}");
    assert!(
        html.contains("Cheese &lt;b&gt;night&lt;/b&gt;")
            && html.contains("Taste &amp; &quot;compare&quot;."),
        "{html}"
    );

    // A real landing page: the short link redirects there, as before.
    let real = app
        .patch(&format!("/promotions/{id}"))
        .key("northwind-readwrite")
        .json(&json!({"landing_url": "https://www.northwind-grocers.example/cheese"}))
        .send()
        .await
        .ok();
    assert_eq!(
        real["landing_url"],
        "https://www.northwind-grocers.example/cheese"
    );
    let qr = app
        .post(&format!("/promotions/{id}/qr-codes"))
        .key("northwind-readwrite")
        .json(&json!({"utm": {"source": "signage"}}))
        .send()
        .await
        .ok();
    let r = app
        .get(&format!("/q/{}", qr["code"].as_str().unwrap()))
        .send()
        .await;
    assert_eq!(r.status, 302);
    assert_eq!(
        r.header("location"),
        Some("https://www.northwind-grocers.example/cheese?utm_source=signage")
    );
    // Outside the company's landing domains it is refused, as before.
    let r = app
        .patch(&format!("/promotions/{id}"))
        .key("northwind-readwrite")
        .json(&json!({"landing_url": "https://evil.example/x"}))
        .send()
        .await;
    assert_eq!(
        r.problem(422)["errors"][0]["code"],
        "landing_domain_not_allowed"
    );
    // `null` puts the sandbox's page back for the codes made from then on.
    let back = app
        .patch(&format!("/promotions/{id}"))
        .key("northwind-readwrite")
        .json(&json!({"landing_url": null}))
        .send()
        .await
        .ok();
    assert_eq!(back["landing_url"], Value::Null);
}

#[tokio::test]
async fn an_ended_or_coming_offer_says_so_and_an_unknown_code_is_a_plain_404() {
    let app = frozen().await;
    // Bakery Days ended 30 days ago; the BBQ bundle starts in 5 days.
    let promotions = app
        .get("/promotions?limit=100")
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    let by_name = |name: &str| {
        promotions["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    for (name, says) in [
        ("Bakery Days", "This offer ended on"),
        ("Weekend BBQ Bundle", "Coming soon: this offer starts on"),
    ] {
        let code = codes(&app, &by_name(name)).await.remove(0);
        let page = app
            .get(&format!("/l/{}", code["code"].as_str().unwrap()))
            .send()
            .await;
        assert_eq!(page.status, 200);
        assert!(page.text().contains(says), "{name}: {}", page.text());
        // An ended offer is not offered: no badge, nothing to show in store.
        let ended = name == "Bakery Days";
        assert_eq!(
            page.text()
                .contains("Show this page in store to get the offer"),
            !ended,
            "{name}"
        );
        assert_eq!(page.text().contains("class=\"discount\""), !ended, "{name}");
    }
    for bad in ["nope1234567", "x", "a%20b", &"a".repeat(40)] {
        let page = app.get(&format!("/l/{bad}")).send().await;
        assert_eq!(page.status, 404, "{bad}");
        assert!(page.text().contains("Offer not found"));
        assert!(page.header("location").is_none());
    }
}
