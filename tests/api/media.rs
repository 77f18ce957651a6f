//! Media: listing, raw uploads with content checks, byte-exact downloads with caching headers,
//! and deletes that ads in use block.

use crate::helpers::{company_id, TestApp};
use crate::list_contract::{assert_list_contract, in_companies};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

fn media_count(app: &TestApp) -> i64 {
    app.sql(|c| c.query_row("SELECT count(*) FROM media", [], |r| r.get(0)))
}

pub(crate) fn png(width: u32, height: u32) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, width, height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header().unwrap();
        let pixels: Vec<u8> = (0..width * height * 3).map(|i| (i % 251) as u8).collect();
        w.write_image_data(&pixels).unwrap();
    }
    out
}

fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

fn upload_path(company: &str, filename: &str) -> String {
    format!(
        "/media?company_id={}&filename={filename}",
        company_id(company)
    )
}

async fn upload(app: &TestApp, key: &str, content_type: &str, bytes: Vec<u8>) -> Value {
    let r = app
        .post(&upload_path("Northwind Grocers", "upload.bin"))
        .key(key)
        .raw(content_type, bytes)
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

/// A fixture media item of `company` with `content_type`, and the ads that use it.
fn fixture_media(app: &TestApp, company: &str, content_type: &str) -> (String, Vec<String>) {
    let id: String = app.sql(|c| {
        c.query_row(
            "SELECT m.id FROM media m JOIN companies c ON c.id = m.company_id
             WHERE c.name = ?1 AND m.content_type = ?2 ORDER BY m.id LIMIT 1",
            [company, content_type],
            |r| r.get(0),
        )
    });
    let ads: Vec<String> = app.sql(|c| {
        let mut s = c.prepare("SELECT id FROM ads WHERE media_id = ?1 ORDER BY id")?;
        let rows = s.query_map([&id], |r| r.get(0))?;
        rows.collect()
    });
    (id, ads)
}

#[tokio::test]
async fn list_and_get_media() {
    let app = TestApp::spawn().await;
    let full = app
        .get("/media?limit=100")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    let full: Vec<Value> = full["data"].as_array().unwrap().clone();
    assert_eq!(
        full.len(),
        20,
        "Northwind Grocers 11 + Northwind Pharmacy 9"
    );
    let walked = assert_list_contract(
        &app,
        "/media",
        "northwind-readonly",
        3,
        in_companies(&["Northwind Grocers", "Northwind Pharmacy"]),
    )
    .await;
    assert_eq!(walked, full);
    for m in &walked {
        assert_eq!(m["object"], "media");
        assert_eq!(
            m["download_url"],
            format!("/media/{}/content", m["id"].as_str().unwrap())
        );
        assert_eq!(m["sha256"].as_str().unwrap().len(), 64);
        assert!(m.get("content").is_none(), "metadata only");
    }

    let pngs = app
        .collect_all("/media?content_type=image/png", "northwind-readonly", 3)
        .await;
    assert_eq!(pngs.len(), 2, "an icon and a photo");
    assert!(pngs.iter().all(|p| p["content_type"] == "image/png"));
    assert!(pngs.iter().any(|p| p["width"] == 64 && p["height"] == 64));
    let pharmacy = app
        .collect_all(
            &format!("/media?company_id={}", company_id("Northwind Pharmacy")),
            "northwind-readonly",
            3,
        )
        .await;
    assert_eq!(pharmacy.len(), 9);
    app.get("/media?content_type=text/html")
        .key("northwind-readonly")
        .send()
        .await
        .problem(422);
    app.get(&format!(
        "/media?company_id={}",
        company_id("Bluefin Cafés")
    ))
    .key("northwind-readonly")
    .send()
    .await
    .problem(404);

    let one = &walked[0];
    let id = one["id"].as_str().unwrap();
    let got = app
        .get(&format!("/media/{id}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(&got, one);
    let owner = one["company_id"].as_str().unwrap();
    let other_scoped = if owner == company_id("Northwind Grocers") {
        "northwind-pharmacy-read"
    } else {
        "northwind-grocers-write"
    };
    for key in ["harborview-readwrite", other_scoped] {
        app.get(&format!("/media/{id}"))
            .key(key)
            .send()
            .await
            .problem(404);
        app.get(&format!("/media/{id}/content"))
            .key(key)
            .send()
            .await
            .problem(404);
    }
    app.get("/media/med_doesnotexist")
        .key("northwind-readonly")
        .send()
        .await
        .problem(404);
    app.get("/media/ad_wrongkind/content")
        .key("northwind-readonly")
        .send()
        .await
        .problem(404);
}

#[tokio::test]
async fn png_upload_round_trips_byte_for_byte() {
    let app = TestApp::spawn().await;
    let bytes = png(37, 21);
    let r = app
        .post(&upload_path("Northwind Grocers", "hero%20banner.png"))
        .key("northwind-grocers-write")
        .raw("image/png", bytes.clone())
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let m = r.json();
    let id = m["id"].as_str().unwrap();
    assert!(id.starts_with("med_"));
    assert_eq!(r.header("location"), Some(format!("/media/{id}").as_str()));
    assert_eq!(m["company_id"], company_id("Northwind Grocers"));
    assert_eq!(m["filename"], "hero banner.png");
    assert_eq!(m["content_type"], "image/png");
    assert_eq!(m["size_bytes"], bytes.len());
    assert_eq!(m["sha256"], sha256_hex(&bytes));
    assert_eq!(m["width"], 37);
    assert_eq!(m["height"], 21);
    assert!(m["duration_ms"].is_null());
    assert_eq!(m["download_url"], format!("/media/{id}/content"));
    let got = app
        .get(&format!("/media/{id}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(got, m);
    let events: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM events WHERE type = 'media.created' AND resource_id = ?1",
            [id],
            |r| r.get(0),
        )
    });
    assert_eq!(events, 1);

    let content = format!("/media/{id}/content");
    let d = app.get(&content).key("northwind-readonly").send().await;
    assert_eq!(d.status, 200);
    assert_eq!(d.body.as_ref(), bytes.as_slice(), "byte for byte");
    assert_eq!(d.header("content-type"), Some("image/png"));
    let etag = format!("\"{}\"", sha256_hex(&bytes));
    assert_eq!(d.header("etag"), Some(etag.as_str()));
    assert_eq!(d.header("cache-control"), Some("private, max-age=60"));
    assert_eq!(d.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(d.header("content-security-policy"), None);

    for inm in [
        etag.clone(),
        format!("W/{etag}"),
        format!("\"other\", {etag}"),
        "*".into(),
    ] {
        let nm = app
            .get(&content)
            .key("northwind-readonly")
            .header("if-none-match", &inm)
            .send()
            .await;
        assert_eq!(nm.status, 304, "{inm}");
        assert!(nm.body.is_empty());
        assert_eq!(nm.header("etag"), Some(etag.as_str()));
        assert_eq!(nm.header("cache-control"), Some("private, max-age=60"));
    }
    let changed = app
        .get(&content)
        .key("northwind-readonly")
        .header("if-none-match", "\"0000\"")
        .send()
        .await;
    assert_eq!(changed.status, 200);
    assert_eq!(changed.body.as_ref(), bytes.as_slice());
}

#[tokio::test]
async fn svg_downloads_are_sandboxed() {
    let app = TestApp::spawn().await;
    let (id, _) = fixture_media(&app, "Northwind Pharmacy", "image/svg+xml");
    let (sha, size): (String, i64) = app.sql(|c| {
        c.query_row(
            "SELECT sha256, size_bytes FROM media WHERE id = ?1",
            [&id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    });
    let d = app
        .get(&format!("/media/{id}/content"))
        .key("northwind-pharmacy-read")
        .send()
        .await;
    assert_eq!(d.status, 200);
    assert_eq!(d.header("content-type"), Some("image/svg+xml"));
    assert_eq!(
        d.header("content-security-policy"),
        Some("default-src 'none'; style-src 'unsafe-inline'")
    );
    assert_eq!(d.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(d.body.len() as i64, size);
    assert_eq!(sha256_hex(&d.body), sha);
    assert!(d.text().contains("<svg"));

    // An uploaded SVG round-trips too.
    let svg = br#"<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>"#.to_vec();
    let m = upload(&app, "northwind-readwrite", "image/svg+xml", svg.clone()).await;
    let d = app
        .get(m["download_url"].as_str().unwrap())
        .key("northwind-readonly")
        .send()
        .await;
    assert_eq!(d.body.as_ref(), svg.as_slice());
    assert!(d.header("content-security-policy").is_some());
}

#[tokio::test]
async fn other_formats_are_recognised_by_their_magic_bytes() {
    let app = TestApp::spawn().await;
    let mut gif = b"GIF89a".to_vec();
    gif.extend_from_slice(&[0x40, 0x01, 0xF0, 0x00]); // 320 x 240
    gif.extend_from_slice(&[0; 20]);
    let g = upload(&app, "northwind-readwrite", "image/gif", gif).await;
    assert_eq!(
        (g["width"].clone(), g["height"].clone()),
        (json!(320), json!(240))
    );

    let mut jpeg = vec![0xFF, 0xD8, 0xFF, 0xE0];
    jpeg.extend_from_slice(&[0; 32]);
    let j = upload(&app, "northwind-readwrite", "image/jpeg", jpeg).await;
    assert!(j["width"].is_null());

    let mut webp = b"RIFF\x24\0\0\0WEBPVP8 ".to_vec();
    webp.extend_from_slice(&[0; 24]);
    upload(&app, "northwind-readwrite", "image/webp", webp).await;

    let mp4 = tiny_mp4(Version::Zero, Order::FastStart, (640, 360), (1000, 7500));
    let v = upload(
        &app,
        "northwind-readwrite",
        "video/mp4; codecs=avc1",
        mp4.clone(),
    )
    .await;
    assert_eq!(v["content_type"], "video/mp4");
    let d = app
        .get(v["download_url"].as_str().unwrap())
        .key("northwind-readonly")
        .send()
        .await;
    assert_eq!(d.header("content-type"), Some("video/mp4"));
    assert_eq!(d.body.as_ref(), mp4.as_slice());
}

/// An MP4 box: its size, its type, its body.
fn mp4_box(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
    let mut out = ((8 + body.len()) as u32).to_be_bytes().to_vec();
    out.extend_from_slice(kind);
    out.extend_from_slice(body);
    out
}

#[derive(Clone, Copy)]
enum Version {
    Zero,
    One,
}

#[derive(Clone, Copy)]
enum Order {
    /// `moov` before the media data.
    FastStart,
    /// `moov` after it, as a recorder writes a file.
    MoovLast,
}

/// The smallest file with a movie header: `ftyp`, `moov` holding `mvhd` (timescale, duration) and
/// one video track's `tkhd` (width and height, 16.16 fixed point), and 64 bytes of `mdat`.
fn tiny_mp4(version: Version, order: Order, size: (u32, u32), time: (u32, u64)) -> Vec<u8> {
    let (timescale, duration) = time;
    let mut mvhd = vec![];
    let mut tkhd = vec![];
    match version {
        Version::Zero => {
            mvhd.extend_from_slice(&[0; 12]); // version 0, flags, created, modified
            mvhd.extend_from_slice(&timescale.to_be_bytes());
            mvhd.extend_from_slice(&(duration as u32).to_be_bytes());
            tkhd.extend_from_slice(&[0, 0, 0, 3]); // version 0, flags: enabled, in movie
            tkhd.extend_from_slice(&[0; 20]); // created, modified, track id, reserved, duration
        }
        Version::One => {
            mvhd.extend_from_slice(&[1, 0, 0, 0]);
            mvhd.extend_from_slice(&[0; 16]);
            mvhd.extend_from_slice(&timescale.to_be_bytes());
            mvhd.extend_from_slice(&duration.to_be_bytes());
            tkhd.extend_from_slice(&[1, 0, 0, 3]);
            tkhd.extend_from_slice(&[0; 32]);
        }
    }
    mvhd.extend_from_slice(&[0; 80]); // rate, volume, reserved, matrix, pre-defined, next track
    tkhd.extend_from_slice(&[0; 16 + 36]); // reserved, layer, group, volume, reserved, matrix
    tkhd.extend_from_slice(&(size.0 << 16).to_be_bytes());
    tkhd.extend_from_slice(&(size.1 << 16).to_be_bytes());
    let ftyp = mp4_box(b"ftyp", b"isom\0\0\x02\0isomiso2mp41");
    let moov = mp4_box(
        b"moov",
        &[
            mp4_box(b"mvhd", &mvhd),
            mp4_box(b"trak", &mp4_box(b"tkhd", &tkhd)),
        ]
        .concat(),
    );
    let mdat = mp4_box(b"mdat", &[0x42; 64]);
    match order {
        Order::FastStart => [ftyp, moov, mdat].concat(),
        Order::MoovLast => [ftyp, mdat, moov].concat(),
    }
}

#[tokio::test]
async fn an_uploaded_mp4_is_stored_with_its_size_and_length() {
    let app = TestApp::spawn().await;
    // Version 0 and 1 headers, the movie box before or after the media data, raw or multipart.
    for (version, order, size, time, expected) in [
        (
            Version::Zero,
            Order::FastStart,
            (1920, 1080),
            (1000, 15_000),
            (1920, 1080, 15_000),
        ),
        (
            Version::One,
            Order::MoovLast,
            (1080, 1920),
            (90_000, 2_700_000),
            (1080, 1920, 30_000),
        ),
        (
            Version::Zero,
            Order::MoovLast,
            (640, 360),
            (600, 4_500),
            (640, 360, 7_500),
        ),
    ] {
        let v = upload(
            &app,
            "northwind-readwrite",
            "video/mp4",
            tiny_mp4(version, order, size, time),
        )
        .await;
        assert_eq!(
            (
                v["width"].clone(),
                v["height"].clone(),
                v["duration_ms"].clone()
            ),
            (json!(expected.0), json!(expected.1), json!(expected.2)),
            "{v}"
        );
        let stored = app
            .get(&format!("/media/{}", v["id"].as_str().unwrap()))
            .key("northwind-readonly")
            .send()
            .await
            .json();
        assert_eq!(stored["duration_ms"], json!(expected.2));
    }

    // The fixture video, uploaded again, reads as the fixture row says it is.
    let fixture = app
        .collect_all("/media", "northwind-readonly", 100)
        .await
        .into_iter()
        .find(|m| m["filename"] == "store-loop.mp4")
        .unwrap();
    let bytes = app
        .get(fixture["download_url"].as_str().unwrap())
        .key("northwind-readonly")
        .send()
        .await
        .body
        .to_vec();
    let again = upload(&app, "northwind-readwrite", "video/mp4", bytes).await;
    for field in ["width", "height", "duration_ms"] {
        assert_eq!(again[field], fixture[field], "{field}");
        assert!(again[field].as_i64().is_some_and(|n| n > 0), "{field}");
    }

    // Starts like an MP4, but no movie header, or one cut short: refused, nothing stored.
    let before = media_count(&app);
    let good = tiny_mp4(Version::Zero, Order::FastStart, (640, 360), (1000, 7500));
    let no_moov = [
        mp4_box(b"ftyp", b"isom\0\0\x02\0isom"),
        mp4_box(b"mdat", &[0; 64]),
    ]
    .concat();
    let mut no_mvhd = mp4_box(b"ftyp", b"isom\0\0\x02\0isom");
    no_mvhd.extend(mp4_box(b"moov", &mp4_box(b"free", &[0; 8])));
    for (why, bytes) in [
        ("no moov", no_moov),
        ("no mvhd", no_mvhd),
        ("cut short", good[..good.len() - 80].to_vec()),
        (
            "zero timescale",
            tiny_mp4(Version::Zero, Order::FastStart, (640, 360), (0, 7500)),
        ),
    ] {
        let p = app
            .post(&upload_path("Northwind Grocers", "clip.mp4"))
            .key("northwind-readwrite")
            .raw("video/mp4", bytes)
            .send()
            .await
            .problem(422);
        assert_eq!(p["errors"][0]["code"], "content_mismatch", "{why}: {p}");
        assert!(
            p["errors"][0]["message"]
                .as_str()
                .is_some_and(|d| d.starts_with("The bytes are not a valid video/mp4 file: ")),
            "{why}: {p}"
        );
    }
    assert_eq!(media_count(&app), before);
}

#[tokio::test]
async fn upload_checks() {
    let app = TestApp::spawn().await;
    let before = media_count(&app);
    let path = upload_path("Northwind Grocers", "a.png");
    let good = png(4, 4);

    // Type not allowed, or not stated.
    for ct in ["text/plain", "image/bmp", "application/octet-stream"] {
        app.post(&path)
            .key("northwind-readwrite")
            .raw(ct, good.clone())
            .send()
            .await
            .problem(415);
    }
    // Empty, too large, or not what it claims to be.
    app.post(&path)
        .key("northwind-readwrite")
        .raw("image/png", Vec::new())
        .send()
        .await
        .problem(422);
    let mut big = good.clone();
    big.resize(5 * 1024 * 1024 + 1, 0);
    app.post(&path)
        .key("northwind-readwrite")
        .raw("image/png", big)
        .send()
        .await
        .problem(413);
    let mut jpeg = vec![0xFF, 0xD8, 0xFF, 0xE0];
    jpeg.extend_from_slice(&[0; 32]);
    for (ct, bytes) in [
        ("image/png", jpeg.clone()),
        ("image/jpeg", good.clone()),
        ("image/png", good[..20].to_vec()),
        ("image/svg+xml", b"hello, world".to_vec()),
        (
            "image/svg+xml",
            b"<html><script>alert(1)</script></html>".to_vec(),
        ),
        ("image/gif", b"GIF90a\x01\x00\x01\x00".to_vec()),
        ("video/mp4", b"\0\0\0\x18moovmp42\0\0\0\0".to_vec()),
    ] {
        let p = app
            .post(&path)
            .key("northwind-readwrite")
            .raw(ct, bytes)
            .send()
            .await
            .problem(422);
        assert_eq!(p["errors"][0]["code"], "content_mismatch", "{ct}: {p}");
    }
    // Query parameters.
    let grocers = company_id("Northwind Grocers");
    for (query, field) in [
        (format!("company_id={grocers}"), "filename"),
        ("filename=a.png".to_string(), "company_id"),
        (format!("company_id={grocers}&filename="), "filename"),
        (
            format!("company_id={grocers}&filename=..%2Fetc%2Fpasswd"),
            "filename",
        ),
        (
            format!("company_id={grocers}&filename=a%5Cb.png"),
            "filename",
        ),
        (
            format!("company_id={grocers}&filename=a%0Ab.png"),
            "filename",
        ),
        (
            format!("company_id={grocers}&filename={}", "x".repeat(256)),
            "filename",
        ),
        ("company_id=acme&filename=a.png".to_string(), "company_id"),
        (
            format!("company_id={grocers}&filename=a.png&folder=x"),
            "folder",
        ),
    ] {
        let p = app
            .post(&format!("/media?{query}"))
            .key("northwind-readwrite")
            .raw("image/png", good.clone())
            .send()
            .await
            .problem(422);
        assert_eq!(p["errors"][0]["field"], field, "{query}: {p}");
    }
    // Invisible companies, missing scope.
    app.post(&upload_path("Northwind Pharmacy", "a.png"))
        .key("northwind-grocers-write")
        .raw("image/png", good.clone())
        .send()
        .await
        .problem(404);
    app.post(&path)
        .key("harborview-readwrite")
        .raw("image/png", good.clone())
        .send()
        .await
        .problem(404);
    for key in ["northwind-readonly", "northwind-ads-editor"] {
        let p = app
            .post(&path)
            .key(key)
            .raw("image/png", good.clone())
            .send()
            .await
            .problem(403);
        assert_eq!(p["missing_scope"], "media:write");
    }
    assert_eq!(media_count(&app), before, "nothing written");
}

#[tokio::test]
async fn delete_is_refused_while_ads_use_the_media() {
    let app = TestApp::spawn().await;
    let (id, ads) = fixture_media(&app, "Northwind Grocers", "image/svg+xml");
    assert!(!ads.is_empty(), "fixture media are all in use");
    let path = format!("/media/{id}");
    let p = app
        .delete(&path)
        .key("northwind-readwrite")
        .send()
        .await
        .problem(409);
    let detail = p["detail"].as_str().unwrap();
    for ad in &ads {
        assert!(detail.contains(ad.as_str()), "{detail} names {ad}");
    }
    app.get(&path).key("northwind-readonly").send().await.ok();

    // Once no ad points at it, it can go.
    for ad in &ads {
        app.patch(&format!("/ads/{ad}"))
            .key("northwind-readwrite")
            .json(&json!({"media_id": null}))
            .send()
            .await
            .ok();
    }
    let r = app.delete(&path).key("northwind-readwrite").send().await;
    assert_eq!(r.status, 204, "{}", r.text());
    app.get(&path)
        .key("northwind-readonly")
        .send()
        .await
        .problem(404);
}

#[tokio::test]
async fn delete_uploaded_media() {
    let app = TestApp::spawn().await;
    let m = upload(&app, "northwind-readwrite", "image/png", png(2, 2)).await;
    let id = m["id"].as_str().unwrap();
    let path = format!("/media/{id}");
    app.delete(&path)
        .key("harborview-readwrite")
        .send()
        .await
        .problem(404);
    app.delete(&path)
        .key("northwind-pharmacy-read")
        .send()
        .await
        .problem(403);
    app.delete(&path)
        .key("northwind-readonly")
        .send()
        .await
        .problem(403);
    let p = app
        .delete(&path)
        .key("northwind-readwrite")
        .header("if-match", "\"v1\"")
        .send()
        .await
        .problem(412);
    let etag = format!("\"{}\"", m["sha256"].as_str().unwrap());
    assert_eq!(p["current_etag"], etag);
    app.get(&path).key("northwind-readonly").send().await.ok();

    let r = app
        .delete(&path)
        .key("northwind-readwrite")
        .header("if-match", &etag)
        .send()
        .await;
    assert_eq!(r.status, 204);
    app.get(&path)
        .key("northwind-readonly")
        .send()
        .await
        .problem(404);
    app.get(&format!("{path}/content"))
        .key("northwind-readonly")
        .send()
        .await
        .problem(404);
    let events: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM events WHERE type = 'media.deleted' AND resource_id = ?1",
            [id],
            |r| r.get(0),
        )
    });
    assert_eq!(events, 1);
}

#[tokio::test]
async fn ads_reference_uploaded_media() {
    let app = TestApp::spawn().await;
    let m = upload(&app, "northwind-readwrite", "image/png", png(8, 8)).await;
    let ad = app
        .post("/ads")
        .key("northwind-readwrite")
        .json(
            &json!({"company_id": company_id("Northwind Grocers"), "name": "New", "headline": "New",
            "media_id": m["id"]}),
        )
        .send()
        .await
        .ok();
    let p = app
        .delete(&format!("/media/{}", m["id"].as_str().unwrap()))
        .key("northwind-readwrite")
        .send()
        .await
        .problem(409);
    assert!(p["detail"]
        .as_str()
        .unwrap()
        .contains(ad["id"].as_str().unwrap()));
    assert!(p["detail"].as_str().unwrap().contains("New"));
}
