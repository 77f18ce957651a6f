//! Tests: QR code images (SVG and PNG) decode to exactly the code's short URL
//! (`{public_base_url}/q/{code}`), for every fixture code and for a new one, and the base URL is
//! the configured one when set.

use crate::helpers::TestApp;
use serde_json::json;

const SUMMER_FRUIT: &str = "promo_0m5d4rupd28t6txsgbdb"; // Grocers, active, 3 QR codes
const ROOFTOP: &str = "promo_0m5d4rupj321exmngzev"; // Harborview Hotels
const ROOFTOP_QR: &str = "qr_0m5d4rupy4r7imi8q243";

/// Decodes a greyscale PNG into (width, height, luma).
pub fn decode_png(bytes: &[u8]) -> (usize, usize, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Grayscale);
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    buf.truncate(info.buffer_size());
    (info.width as usize, info.height as usize, buf)
}

pub fn decode_qr(w: usize, h: usize, luma: &[u8]) -> String {
    let mut img = rqrr::PreparedImage::prepare_from_greyscale(w, h, |x, y| luma[y * w + x]);
    let grids = img.detect_grids();
    assert_eq!(grids.len(), 1);
    grids[0].decode().unwrap().1
}

/// A minimal XML well-formedness check: one root, every tag closed in order, attributes quoted.
fn assert_well_formed_svg(svg: &str) {
    let mut stack: Vec<String> = Vec::new();
    let mut roots = 0;
    let mut rest = svg;
    while let Some(start) = rest.find('<') {
        assert!(rest[..start].trim().is_empty(), "text outside elements");
        let end = rest[start..].find('>').expect("unclosed tag") + start;
        let tag = &rest[start + 1..end];
        rest = &rest[end + 1..];
        if tag.starts_with('?') {
            assert!(tag.ends_with('?') && stack.is_empty() && roots == 0);
            continue;
        }
        assert_eq!(
            tag.matches('"').count() % 2,
            0,
            "unbalanced quotes in <{tag}>"
        );
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name.trim()));
            continue;
        }
        let name = tag
            .split(|c: char| c.is_whitespace() || c == '/')
            .next()
            .unwrap()
            .to_string();
        if stack.is_empty() {
            roots += 1;
            assert_eq!(name, "svg");
        }
        if !tag.ends_with('/') {
            stack.push(name);
        }
    }
    assert!(rest.trim().is_empty());
    assert!(stack.is_empty(), "unclosed: {stack:?}");
    assert_eq!(roots, 1);
}

#[tokio::test]
async fn qr_codes_render_and_decode_to_their_short_url() {
    let app = TestApp::spawn().await;
    let list = app
        .get(&format!("/promotions/{SUMMER_FRUIT}/qr-codes"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    let codes = list["data"].as_array().unwrap();
    assert_eq!(codes.len(), 3);
    for code in codes {
        let id = code["id"].as_str().unwrap();
        let short = code["short_url"].as_str().unwrap();
        assert_eq!(
            short,
            format!("{}/q/{}", app.base_url, code["code"].as_str().unwrap())
        );
        assert_eq!(code["object"], "qr_code");
        assert_eq!(code["promotion_id"], SUMMER_FRUIT);
        assert!(code["scan_count"].as_i64().unwrap() >= 0);
        assert_eq!(
            code["image_png_url"],
            format!("/qr-codes/{id}/image?format=png")
        );

        let png = app
            .get(code["image_png_url"].as_str().unwrap())
            .key("northwind-readonly")
            .send()
            .await;
        assert_eq!(png.status, 200);
        assert_eq!(png.header("content-type"), Some("image/png"));
        let (w, h, luma) = decode_png(&png.body);
        assert_eq!(w, h);
        assert_eq!(decode_qr(w, h, &luma), short);

        // The module grid: 8 px per module, 4 modules of quiet zone each side.
        assert_eq!(w % 8, 0);
        let side = w / 8;
        let modules = side - 8;
        let dark_modules = (0..side * side)
            .filter(|i| luma[(i / side * 8 + 4) * w + (i % side * 8 + 4)] < 128)
            .count();

        let svg = code["image_svg"].as_str().unwrap();
        assert_well_formed_svg(svg);
        assert!(svg.contains(&format!(r#"viewBox="0 0 {side} {side}""#)));
        let path = svg.split(" d=\"").nth(1).unwrap();
        assert_eq!(path.matches('M').count(), dark_modules);
        assert!((21..=177).contains(&modules) && (modules - 17) % 4 == 0);

        // The standalone SVG is the same document, and is the default format.
        let r = app
            .get(&format!("/qr-codes/{id}/image"))
            .key("northwind-readonly")
            .send()
            .await;
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-type"), Some("image/svg+xml"));
        assert_eq!(r.text(), svg);
    }

    // Paging the codes one at a time.
    let walked = app
        .collect_all(
            &format!("/promotions/{SUMMER_FRUIT}/qr-codes"),
            "northwind-readonly",
            1,
        )
        .await;
    assert_eq!(&walked, codes);

    // Another account's codes: 404, both the list and the image.
    app.get(&format!("/promotions/{ROOFTOP}/qr-codes"))
        .key("northwind-readonly")
        .send()
        .await
        .problem(404);
    app.get(&format!("/qr-codes/{ROOFTOP_QR}/image?format=png"))
        .key("northwind-readonly")
        .send()
        .await
        .problem(404);
    app.get("/qr-codes/qr_missing/image")
        .key("northwind-readonly")
        .send()
        .await
        .problem(404);
    let p = app
        .get(&format!("/qr-codes/{ROOFTOP_QR}/image?format=gif"))
        .key("harborview-readwrite")
        .send()
        .await
        .problem(422);
    assert_eq!(p["errors"][0]["field"], "format");
    // Its owner can fetch it.
    let ok = app
        .get(&format!("/qr-codes/{ROOFTOP_QR}/image?format=png"))
        .key("harborview-readwrite")
        .send()
        .await;
    assert_eq!(ok.status, 200);
    let (w, h, luma) = decode_png(&ok.body);
    let own = app
        .get(&format!("/qr-codes/{ROOFTOP_QR}"))
        .key("harborview-readwrite")
        .send()
        .await
        .ok();
    assert_eq!(decode_qr(w, h, &luma), own["short_url"].as_str().unwrap());
    // Needs promotions:read.
    app.get(&format!("/qr-codes/{ROOFTOP_QR}/image"))
        .key("harborview-hotels-billing")
        .send()
        .await
        .problem(403);
}

/// Every fixture code, in every company, and a code made now: the PNG decodes to the short URL.
#[tokio::test]
async fn every_fixture_code_and_a_new_one_decode_to_their_short_url() {
    let app = TestApp::spawn().await;
    let mut seen = 0;
    for key in ["northwind-readonly", "harborview-readwrite"] {
        let promos = app.collect_all("/promotions", key, 100).await;
        for p in promos {
            let id = p["id"].as_str().unwrap();
            let codes = app
                .collect_all(&format!("/promotions/{id}/qr-codes"), key, 100)
                .await;
            for c in codes {
                let png = app
                    .get(c["image_png_url"].as_str().unwrap())
                    .key(key)
                    .send()
                    .await;
                assert_eq!(png.status, 200);
                let (w, h, luma) = decode_png(&png.body);
                assert_eq!(decode_qr(w, h, &luma), c["short_url"].as_str().unwrap());
                seen += 1;
            }
        }
    }
    assert_eq!(seen, 19, "the fixtures hold 19 QR codes");
    let made = app
        .post(&format!("/promotions/{SUMMER_FRUIT}/qr-codes"))
        .key("northwind-readwrite")
        .json(&json!({"label": "Bakery screen"}))
        .send()
        .await;
    assert_eq!(made.status, 201, "{}", made.text());
    let made = made.json();
    let png = app
        .get(made["image_png_url"].as_str().unwrap())
        .key("northwind-readonly")
        .send()
        .await;
    let (w, h, luma) = decode_png(&png.body);
    assert_eq!(decode_qr(w, h, &luma), made["short_url"].as_str().unwrap());
}

#[tokio::test]
async fn a_configured_public_base_url_is_what_the_codes_encode() {
    let app =
        TestApp::spawn_with(|l| l.public_base_url = Some("http://192.168.1.20:8080/".into())).await;
    let code = app
        .get(&format!("/qr-codes/{ROOFTOP_QR}"))
        .key("harborview-readwrite")
        .send()
        .await
        .ok();
    let short = code["short_url"].as_str().unwrap();
    assert_eq!(
        short,
        format!(
            "http://192.168.1.20:8080/q/{}",
            code["code"].as_str().unwrap()
        )
    );
    let png = app
        .get(&format!("/qr-codes/{ROOFTOP_QR}/image?format=png"))
        .key("harborview-readwrite")
        .send()
        .await;
    let (w, h, luma) = decode_png(&png.body);
    assert_eq!(decode_qr(w, h, &luma), short);
}
