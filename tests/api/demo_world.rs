//! Tests: the demo world stays believable whenever it is started (issue 15, item 3): no name
//! states a season or a year, invoices carry VAT at the company's country rate with totals that
//! add up, and every media item's bytes are what its size, hash, type and dimensions say.

use crate::helpers::TestApp;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const KEYS: [&str; 2] = ["northwind-readonly", "harborview-readwrite"];

#[tokio::test]
async fn no_promotion_ad_or_media_name_states_a_season_or_a_year() {
    let app = TestApp::spawn().await;
    let seasonal = [
        "summer",
        "winter",
        "spring",
        "autumn",
        "fall ",
        "christmas",
        "new year",
        "easter",
        "pumpkin",
    ];
    for key in KEYS {
        for (path, field) in [
            ("/promotions", "name"),
            ("/ads", "name"),
            ("/ads", "headline"),
            ("/media", "filename"),
        ] {
            for item in app.collect_all(path, key, 100).await {
                let text = item[field].as_str().unwrap().to_lowercase();
                for word in seasonal {
                    assert!(
                        !text.contains(word),
                        "{path} {field} {text:?} names a season"
                    );
                }
                let has_year = text.as_bytes().windows(4).any(|w| {
                    (w.starts_with(b"19") || w.starts_with(b"20"))
                        && w.iter().all(u8::is_ascii_digit)
                });
                assert!(!has_year, "{path} {field} {text:?} names a year");
            }
        }
    }
}

fn rate_of(country: &str) -> i64 {
    match country {
        "NL" | "BE" => 21,
        "PT" | "IE" => 23,
        other => panic!("no demo company in {other}"),
    }
}

fn check_invoice(inv: &Value, country: &str) {
    let lines = inv["lines"].as_array().unwrap();
    let net: i64 = lines
        .iter()
        .map(|l| l["amount_cents"].as_i64().unwrap())
        .sum();
    let rate = rate_of(country);
    // Half away from zero on whole cents, in integers.
    let vat = (net * rate * 2 + 100 * net.signum()) / 200;
    assert_eq!(inv["net_cents"], net, "{}", inv["number"]);
    assert_eq!(inv["vat_rate_percent"], rate);
    assert_eq!(inv["vat_cents"], vat, "{}", inv["number"]);
    assert_eq!(inv["total_cents"], net + vat);
    assert_eq!(
        inv["vat_lines"],
        json!([{"description": format!("VAT {rate}% ({country})"), "country": country,
                "rate_percent": rate, "net_cents": net, "vat_cents": vat}])
    );
}

#[tokio::test]
async fn invoices_carry_vat_at_the_country_rate_and_add_up() {
    // Frozen: which month's invoice holds a fixture charge depends on the date.
    let app = crate::sandbox_clock::frozen().await;
    let mut seen = 0;
    for key in KEYS {
        let countries: Vec<(String, String)> = app
            .collect_all("/companies", key, 100)
            .await
            .iter()
            .map(|c| {
                (
                    c["id"].as_str().unwrap().to_string(),
                    c["country"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        for listed in app.collect_all("/invoices", key, 100).await {
            let country = &countries
                .iter()
                .find(|(id, _)| *id == listed["company_id"])
                .unwrap()
                .1;
            let inv = app
                .get(&format!("/invoices/{}", listed["id"].as_str().unwrap()))
                .key(key)
                .send()
                .await
                .ok();
            check_invoice(&inv, country);
            for field in ["net_cents", "vat_cents", "total_cents", "vat_rate_percent"] {
                assert_eq!(listed[field], inv[field], "the list agrees on {field}");
            }
            seen += 1;
        }
    }
    assert_eq!(seen, 12);

    // A purchase adds a line to the open invoice; its VAT follows.
    let grocers = crate::helpers::company_id("Northwind Grocers");
    let pack: String = app.sql(|c| {
        c.query_row(
            "SELECT id FROM token_packs ORDER BY price_cents LIMIT 1",
            [],
            |r| r.get(0),
        )
    });
    let bought = app
        .post(&format!("/token-packs/{pack}/purchase"))
        .key("northwind-readwrite")
        .json(&json!({"company_id": grocers}))
        .send()
        .await;
    assert!(bought.status.is_success(), "{}", bought.text());
    let open: String = app.sql(move |c| {
        c.query_row(
            "SELECT id FROM invoices WHERE company_id = ?1 AND status = 'open'",
            [&grocers],
            |r| r.get(0),
        )
    });
    let inv = app
        .get(&format!("/invoices/{open}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(inv["lines"].as_array().unwrap().len(), 3);
    check_invoice(&inv, "NL");
}

/// `(width, height)` of a PNG (IHDR), a baseline or progressive JPEG (SOFn) or an MP4 (`tkhd`).
fn dimensions(content_type: &str, b: &[u8]) -> Option<(i64, i64)> {
    let be32 = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]) as i64;
    let be16 = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]) as i64;
    match content_type {
        "image/png" => (b.starts_with(b"\x89PNG\r\n\x1a\n") && &b[12..16] == b"IHDR")
            .then(|| (be32(16), be32(20))),
        "image/jpeg" => {
            if !b.starts_with(&[0xFF, 0xD8]) || !b.ends_with(&[0xFF, 0xD9]) {
                return None;
            }
            let mut i = 2;
            while i + 9 < b.len() {
                let marker = b[i + 1];
                if (0xC0..=0xCF).contains(&marker) && ![0xC4, 0xC8, 0xCC].contains(&marker) {
                    return Some((be16(i + 7), be16(i + 5)));
                }
                i += 2 + be16(i + 2) as usize;
            }
            None
        }
        "video/mp4" => {
            if &b[4..8] != b"ftyp" {
                return None;
            }
            let at = b.windows(4).position(|w| w == b"tkhd")?;
            // version 0: 4 flags, 5×4 times/ids/duration, 8 reserved, 8 layer etc., 36 matrix.
            let dims = at + 4 + 4 + 20 + 8 + 8 + 36;
            Some((be32(dims) >> 16, be32(dims + 4) >> 16))
        }
        _ => None,
    }
}

#[tokio::test]
async fn every_media_item_is_what_its_metadata_says() {
    let app = TestApp::spawn().await;
    let mut kinds = std::collections::HashMap::<String, usize>::new();
    for key in KEYS {
        for m in app.collect_all("/media", key, 100).await {
            let r = app
                .get(m["download_url"].as_str().unwrap())
                .key(key)
                .send()
                .await;
            assert_eq!(r.status, 200);
            let ct = m["content_type"].as_str().unwrap();
            assert_eq!(r.header("content-type"), Some(ct));
            assert_eq!(
                r.body.len() as i64,
                m["size_bytes"].as_i64().unwrap(),
                "{m}"
            );
            assert_eq!(
                format!("{:x}", Sha256::digest(&r.body)),
                m["sha256"].as_str().unwrap()
            );
            if ct == "image/svg+xml" {
                let text = std::str::from_utf8(&r.body).unwrap();
                assert!(text.contains("<svg"), "{m}");
            } else {
                let dims = dimensions(ct, &r.body).unwrap_or_else(|| panic!("not a {ct}: {m}"));
                assert_eq!(
                    (json!(dims.0), json!(dims.1)),
                    (m["width"].clone(), m["height"].clone()),
                    "{m}"
                );
            }
            if ct == "video/mp4" {
                // Made for a 1080p screen: at least 1280x720 and 10 s, within a megabyte.
                let ms = m["duration_ms"].as_i64().unwrap();
                assert!((10_000..=60_000).contains(&ms), "seconds long: {m}");
                assert!(
                    r.body.len() < 1024 * 1024,
                    "small enough for the repository: {m}"
                );
                assert!(
                    m["width"].as_i64().unwrap() >= 1280 && m["height"].as_i64().unwrap() >= 720,
                    "{m}"
                );
                // The movie header's duration (timescale 1000) is the row's.
                let at = r.body.windows(4).position(|w| w == b"mvhd").unwrap();
                let b = &r.body;
                let timescale =
                    u32::from_be_bytes([b[at + 16], b[at + 17], b[at + 18], b[at + 19]]) as i64;
                let duration =
                    u32::from_be_bytes([b[at + 20], b[at + 21], b[at + 22], b[at + 23]]) as i64;
                assert_eq!(duration * 1000 / timescale, ms);
                assert!(r.body.windows(4).any(|w| w == b"avcC"), "H.264: {m}");
            }
            if ct == "image/jpeg" {
                // Photos at screen size (a portrait one for a portrait menu board).
                let (w, h) = (m["width"].as_i64().unwrap(), m["height"].as_i64().unwrap());
                assert!(w.max(h) >= 1920 && w.min(h) >= 1080, "{m}");
            }
            *kinds.entry(ct.to_string()).or_default() += 1;
        }
    }
    assert!(kinds["video/mp4"] >= 2, "{kinds:?}");
    assert!(kinds["image/jpeg"] >= 3, "{kinds:?}");
    assert!(kinds["image/png"] >= 4, "{kinds:?}");
}
