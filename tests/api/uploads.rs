//! Uploads as client generators send them: the media file as the `file` part of a
//! `multipart/form-data` body, checked exactly like a raw upload.

use crate::helpers::{company_id, TestApp};
use serde_json::Value;

fn png() -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, 3, 2);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header().unwrap();
        w.write_image_data(&[7u8; 18]).unwrap();
    }
    out
}

const BOUNDARY: &str = "----signage-test-7d1f";

fn form(parts: &[(&str, Option<&str>, &[u8])]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, content_type, bytes) in parts {
        body.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
        body.extend_from_slice(
            format!("Content-Disposition: form-data; name=\"{name}\"; filename=\"x.png\"\r\n")
                .as_bytes(),
        );
        if let Some(t) = content_type {
            body.extend_from_slice(format!("Content-Type: {t}\r\n").as_bytes());
        }
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    body
}

fn url() -> String {
    format!(
        "/media?company_id={}&filename=hero.png",
        company_id("Northwind Grocers")
    )
}

async fn send(app: &TestApp, body: Vec<u8>) -> crate::helpers::TestResponse {
    app.post(&url())
        .key("northwind-readwrite")
        .raw(&format!("multipart/form-data; boundary={BOUNDARY}"), body)
        .send()
        .await
}

#[tokio::test]
async fn a_multipart_upload_stores_the_file_part_byte_for_byte() {
    let app = TestApp::spawn().await;
    let bytes = png();
    let r = send(
        &app,
        form(&[
            ("note", Some("text/plain"), b"ignored"),
            ("file", Some("image/png"), &bytes),
        ]),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let media: Value = r.json();
    assert_eq!(media["content_type"], "image/png");
    assert_eq!(media["filename"], "hero.png");
    assert_eq!(media["size_bytes"], bytes.len());
    assert_eq!(media["width"], 3);
    let id = media["id"].as_str().unwrap();
    let got = app
        .get(&format!("/media/{id}/content"))
        .key("northwind-readwrite")
        .send()
        .await;
    assert_eq!(got.status, 200);
    assert_eq!(got.header("content-type"), Some("image/png"));
    assert_eq!(got.body.as_ref(), bytes.as_slice());
}

/// The file part is held to the raw upload's rules; a broken form is a 400, never a 500 or a
/// stored half-file.
#[tokio::test]
async fn a_multipart_upload_is_checked_like_a_raw_one() {
    let app = TestApp::spawn().await;
    let count =
        || app.sql(|c| c.query_row("SELECT count(*) FROM media", [], |r| r.get::<_, i64>(0)));
    let before = count();
    let bytes = png();
    let r = send(&app, form(&[("file", Some("application/zip"), &bytes)])).await;
    r.problem(415);
    let r = send(&app, form(&[("file", None, &bytes)])).await;
    r.problem(415);
    let r = send(&app, form(&[("file", Some("image/gif"), &bytes)])).await;
    assert_eq!(r.problem(422)["errors"][0]["code"], "content_mismatch");
    let r = send(&app, form(&[("file", Some("image/png"), b"")])).await;
    assert_eq!(r.problem(422)["errors"][0]["code"], "empty");
    let r = send(&app, form(&[("upload", Some("image/png"), &bytes)])).await;
    assert_eq!(r.problem(422)["errors"][0]["field"], "file");
    let mut cut = form(&[("file", Some("image/png"), &bytes)]);
    cut.truncate(cut.len() - 12);
    r_400(send(&app, cut).await);
    r_400(send(&app, b"no delimiter at all".to_vec()).await);
    let r = app
        .post(&url())
        .key("northwind-readwrite")
        .raw(
            "multipart/form-data",
            form(&[("file", Some("image/png"), &bytes)]),
        )
        .send()
        .await;
    r.problem(415); // no boundary: not a form we can read, and not a raw image type either
    assert_eq!(count(), before, "nothing stored");
}

fn r_400(r: crate::helpers::TestResponse) {
    let p = r.problem(400);
    assert!(p["detail"].as_str().unwrap().contains("multipart"), "{p}");
}

#[tokio::test]
async fn the_document_offers_multipart_and_typed_downloads() {
    let app = TestApp::spawn().await;
    let doc = app.get("/openapi.json").send().await.ok();
    let upload = &doc["paths"]["/media"]["post"]["requestBody"]["content"];
    let form = &upload["multipart/form-data"];
    assert_eq!(form["schema"]["properties"]["file"]["format"], "binary");
    assert!(form["encoding"]["file"]["contentType"]
        .as_str()
        .unwrap()
        .contains("image/png"));
    assert!(upload["image/png"].is_object());
    let download = doc["paths"]["/media/{id}/content"]["get"]["responses"]["200"]["content"]
        .as_object()
        .unwrap();
    assert!(!download.contains_key("*/*"));
    for (t, media) in download {
        assert!(t.contains('/'), "{t}");
        assert_eq!(media["schema"]["format"], "binary", "{t}");
    }
    assert!(download.contains_key("video/mp4"));
}
