//! Issue 22 items 5 (media quota per company) and 7 (allowed landing domains per company).

use crate::helpers::*;
use serde_json::json;

fn png(width: u32, height: u32, seed: u32) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, width, height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header().unwrap();
        // Noise: it does not compress, so each file costs about its pixels.
        let mut x = seed.wrapping_mul(2_654_435_761).max(1);
        let pixels: Vec<u8> = (0..width * height * 3)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        w.write_image_data(&pixels).unwrap();
    }
    out
}

fn stored(app: &TestApp, company: &str) -> i64 {
    app.sql(|c| {
        c.query_row(
            "SELECT coalesce(sum(size_bytes), 0) FROM media WHERE company_id = ?1",
            [company],
            |r| r.get(0),
        )
    })
}

async fn upload(app: &TestApp, key_name: &str, company: &str, bytes: Vec<u8>) -> TestResponse {
    app.post(&format!("/media?company_id={company}&filename=noise.png"))
        .key(key_name)
        .raw("image/png", bytes)
        .send()
        .await
}

#[tokio::test]
async fn uploads_past_the_company_media_quota_are_refused_with_the_numbers() {
    // Above Northwind Grocers' library (its 1080p photo and 720p video included), below it plus a few uploads.
    let quota: u64 = 800_000;
    let app = TestApp::spawn_with(|l| l.media_quota_bytes_per_company = Some(quota)).await;
    let grocers = company_id("Northwind Grocers");
    let mut accepted = Vec::new();
    let refusal = loop {
        let file = png(100, 100, accepted.len() as u32 + 1);
        let size = file.len() as i64;
        let before = stored(&app, &grocers);
        let r = upload(&app, "northwind-readwrite", &grocers, file).await;
        if r.status == 201 {
            accepted.push(r.json()["id"].as_str().unwrap().to_string());
            assert!(accepted.len() < 20, "the quota never applied");
            continue;
        }
        break (r, size, before);
    };
    let (r, size, before) = refusal;
    let p = r.problem(422);
    assert_eq!(p["code"], "media_quota_exceeded");
    assert_eq!(p["limit"], quota);
    assert_eq!(p["used"], before);
    assert_eq!(p["requested"], size);
    assert_eq!(p["available"], quota as i64 - before);
    assert!(before + size > quota as i64);
    assert!(
        stored(&app, &grocers) <= quota as i64,
        "nothing past the quota is stored"
    );
    assert_eq!(
        stored(&app, &grocers),
        before,
        "the refused upload stored nothing"
    );
    // Another company has its own quota.
    let hotels = company_id("Harborview Hotels");
    let r = upload(&app, "harborview-readwrite", &hotels, png(100, 100, 99)).await;
    assert_eq!(r.status, 201, "{}", r.text());
    // Deleting media gives its bytes back.
    let last = accepted.pop().unwrap();
    let r = app
        .delete(&format!("/media/{last}"))
        .key("northwind-readwrite")
        .send()
        .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let r = upload(&app, "northwind-readwrite", &grocers, png(100, 100, 7)).await;
    assert_eq!(r.status, 201, "{}", r.text());
}

async fn create_promotion(app: &TestApp, company: &str, landing: &str) -> TestResponse {
    app.post("/promotions")
        .key("northwind-readwrite")
        .json(
            &json!({"company_id": company, "name": "Landing check", "description": "",
            "landing_url": landing, "activation_cost_tokens": 0,
            "starts_at": "2030-01-01T00:00:00Z", "ends_at": "2030-02-01T00:00:00Z"}),
        )
        .send()
        .await
}

#[tokio::test]
async fn landing_pages_stay_on_the_company_allowed_domains() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    // The fixtures allow the company's own website domain.
    let company = app
        .get(&format!("/companies/{grocers}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(
        company["allowed_landing_domains"],
        json!(["northwind-grocers.example"])
    );
    let r = create_promotion(&app, &grocers, "https://www.northwind-grocers.example/deal").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let promo = r.json()["id"].as_str().unwrap().to_string();
    for bad in [
        "https://evil.example/phish",
        "https://northwind-grocers.example.evil.example/",
        "https://evilnorthwind-grocers.example/",
    ] {
        let before = app.dump_tables(&["promotions"]);
        let p = create_promotion(&app, &grocers, bad).await.problem(422);
        assert_eq!(p["errors"][0]["field"], "/landing_url", "{bad}");
        assert_eq!(
            p["errors"][0]["code"], "landing_domain_not_allowed",
            "{bad}"
        );
        assert_eq!(app.dump_tables(&["promotions"]), before, "nothing stored");
    }
    // A change of landing page is checked the same way.
    let p = app
        .patch(&format!("/promotions/{promo}"))
        .key("northwind-readwrite")
        .json(&json!({"landing_url": "https://evil.example/"}))
        .send()
        .await
        .problem(422);
    assert_eq!(p["errors"][0]["code"], "landing_domain_not_allowed");

    // The list is the company's admin's to set: bad domains are refused, an empty list allows any
    // public URL.
    let p = app
        .patch(&format!("/companies/{grocers}"))
        .key("northwind-admin")
        .json(&json!({"allowed_landing_domains": ["https://shop.example/"]}))
        .send()
        .await
        .problem(422);
    assert_eq!(p["errors"][0]["field"], "/allowed_landing_domains/0");
    app.patch(&format!("/companies/{grocers}"))
        .key("northwind-readonly")
        .json(&json!({"allowed_landing_domains": []}))
        .send()
        .await
        .problem(403);
    let updated = app
        .patch(&format!("/companies/{grocers}"))
        .key("northwind-admin")
        .json(&json!({"allowed_landing_domains": []}))
        .send()
        .await
        .ok();
    assert_eq!(updated["allowed_landing_domains"], json!([]));
    let r = create_promotion(&app, &grocers, "https://anything.example/").await;
    assert_eq!(r.status, 201, "{}", r.text());
    // Another account's company is invisible: 404, not 403.
    app.patch(&format!("/companies/{}", company_id("Harborview Hotels")))
        .key("northwind-admin")
        .json(&json!({"allowed_landing_domains": []}))
        .send()
        .await
        .problem(404);
}

/// Issue 31 item 5: a write key turned `/q/{code}` into `302 https://evil.example/…` by widening
/// its company's list, and `127.0.0.1`, `169.254.169.254` and `[]` were accepted.
#[tokio::test]
async fn only_an_admin_redirects_a_qr_code_and_never_inside_a_machine_or_network() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let list = |app: &TestApp| -> String {
        app.sql(|c| {
            c.query_row(
                "SELECT allowed_landing_domains FROM companies WHERE id = ?1",
                [&grocers],
                |r| r.get(0),
            )
        })
    };
    let before = list(&app);
    // A write key (any write scope short of admin) cannot change where the codes lead.
    for key_name in [
        "northwind-readwrite",
        "northwind-grocers-write",
        "northwind-ads-editor",
    ] {
        let p = app
            .patch(&format!("/companies/{grocers}"))
            .key(key_name)
            .json(&json!({"allowed_landing_domains": ["evil.example"]}))
            .send()
            .await
            .problem(403);
        assert_eq!(p["missing_scope"], "admin", "{key_name}");
    }
    assert_eq!(list(&app), before, "nothing changed");
    let r = create_promotion(&app, &grocers, "https://evil.example/phish").await;
    assert_eq!(
        r.problem(422)["errors"][0]["code"],
        "landing_domain_not_allowed"
    );
    // An admin may not name a host inside a machine or a network, however it is written.
    for inside in [
        "127.0.0.1",
        "169.254.169.254",
        "10.0.0.5",
        "192.168.1.20",
        "localhost",
        "api.localhost",
        "2130706433",
        "0x7f.1",
        "0.0.0.0",
        // The names of the scanner's own network, metadata and address-in-name services.
        "internal",
        "router.lan",
        "host.docker.internal",
        "metadata.google.internal",
        "192.168.1.1.nip.io",
    ] {
        let p = app
            .patch(&format!("/companies/{grocers}"))
            .key("northwind-admin")
            .json(&json!({"allowed_landing_domains": ["northwind-grocers.example", inside]}))
            .send()
            .await
            .problem(422);
        assert_eq!(
            p["errors"][0]["field"], "/allowed_landing_domains/1",
            "{inside}"
        );
        assert_eq!(p["errors"][0]["code"], "domain_not_public", "{inside}");
    }
    // A suffix anyone may register under would allow every site under it.
    for suffix in ["com", "co.uk", "nip.io", "github.io"] {
        let p = app
            .patch(&format!("/companies/{grocers}"))
            .key("northwind-admin")
            .json(&json!({"allowed_landing_domains": [suffix]}))
            .send()
            .await
            .problem(422);
        let code = p["errors"][0]["code"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            code == "public_suffix" || code == "domain_not_public",
            "{suffix}: {p}"
        );
    }
    for bracketed in ["[]", "[::1]", ""] {
        let p = app
            .patch(&format!("/companies/{grocers}"))
            .key("northwind-admin")
            .json(&json!({"allowed_landing_domains": [bracketed]}))
            .send()
            .await
            .problem(422);
        assert_eq!(p["errors"][0]["code"], "invalid_domain", "{bracketed}");
    }
    assert_eq!(list(&app), before, "nothing changed");
    // Even with an empty list (any public host), a landing page or QR target inside is refused.
    app.patch(&format!("/companies/{grocers}"))
        .key("northwind-admin")
        .json(&json!({"allowed_landing_domains": []}))
        .send()
        .await
        .ok();
    for url in [
        "http://127.0.0.1/admin",
        "http://169.254.169.254/latest/meta-data/",
        "http://localhost:8080/",
        "http://2130706433/",
        "http://192.168.0.1/",
        "http://[::1]/",
        "http://[]/",
        "https://metadata.google.internal/computeMetadata/v1/",
        "https://router.lan/",
        "https://host.docker.internal:8080/",
        "https://192.168.1.1.nip.io/",
        "https://intranet/",
    ] {
        let p = create_promotion(&app, &grocers, url).await.problem(422);
        let code = p["errors"][0]["code"].as_str().unwrap_or("").to_string();
        assert!(
            code == "landing_host_not_public" || code == "invalid_url",
            "{url}: {p}"
        );
    }
    let r = create_promotion(&app, &grocers, "https://shop.example/deal").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let promo = r.json()["id"].as_str().unwrap().to_string();
    let p = app
        .patch(&format!("/promotions/{promo}"))
        .key("northwind-readwrite")
        .json(&json!({"landing_url": "http://10.1.2.3/"}))
        .send()
        .await
        .problem(422);
    assert_eq!(p["errors"][0]["code"], "landing_host_not_public");
}
