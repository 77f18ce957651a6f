//! A promotion's QR codes: the list, and each code as an SVG or PNG image.

use super::promotion::load_visible;
use crate::http::response::Listed;
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{PromotionId, QrCodeId};
use crate::routes::crud::{self, Time};
use hyper::StatusCode;
use serde::Serialize;

/// Pixels per QR module in the PNG, and the quiet zone in modules (the QR standard's minimum).
const PNG_SCALE: usize = 8;
const QUIET_ZONE: usize = 4;

fn qr_code(target_url: &str) -> Result<qrcode::QrCode, ApiError> {
    qrcode::QrCode::new(target_url.as_bytes())
        .map_err(|e| ApiError::Internal(format!("cannot encode QR code: {e}")))
}

/// The code as SVG: one user unit per module in the view box (so the module grid is exact), drawn
/// at the PNG's pixel size by default.
pub fn qr_svg(target_url: &str) -> Result<String, ApiError> {
    let code = qr_code(target_url)?;
    let units = code.width() + 2 * QUIET_ZONE;
    let svg = code
        .render::<qrcode::render::svg::Color>()
        .quiet_zone(true)
        .module_dimensions(1, 1)
        .build();
    let px = units * PNG_SCALE;
    Ok(svg.replacen(
        &format!(r#"width="{units}" height="{units}" viewBox"#),
        &format!(r#"width="{px}" height="{px}" viewBox"#),
        1,
    ))
}

/// The code as an 8-bit greyscale PNG: black modules on white, `PNG_SCALE` px per module.
pub fn qr_png(target_url: &str) -> Result<Vec<u8>, ApiError> {
    let code = qr_code(target_url)?;
    let modules = code.width();
    let colors = code.to_colors();
    let side = (modules + 2 * QUIET_ZONE) * PNG_SCALE;
    let mut pixels = vec![255u8; side * side];
    for (i, color) in colors.iter().enumerate() {
        if *color != qrcode::Color::Dark {
            continue;
        }
        let (mx, my) = (i % modules + QUIET_ZONE, i / modules + QUIET_ZONE);
        for y in my * PNG_SCALE..(my + 1) * PNG_SCALE {
            let row = y * side;
            pixels[row + mx * PNG_SCALE..row + (mx + 1) * PNG_SCALE].fill(0);
        }
    }
    let side = u32::try_from(side).map_err(|_| ApiError::Internal("QR code too large".into()))?;
    let png_err = |e: png::EncodingError| ApiError::Internal(format!("PNG encoding failed: {e}"));
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, side, side);
        encoder.set_color(png::ColorType::Grayscale);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(png_err)?;
        writer.write_image_data(&pixels).map_err(png_err)?;
        writer.finish().map_err(png_err)?;
    }
    Ok(out)
}

/// A QR code as the API returns it. Field order is the order of the JSON members.
#[derive(Serialize)]
struct QrCode {
    id: String,
    object: &'static str,
    promotion_id: String,
    label: String,
    image_svg: String,
    image_png_url: String,
    target_url: String,
    scan_count: i64,
    created_at: Time,
}

impl Listed for QrCode {
    fn list_key(&self) -> &str {
        &self.id
    }
}

pub(super) fn list_qr_codes(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let raw_id = ctx.param("id").to_string();
    let page = ctx.page()?;
    // After the page: a bad `limit` is reported before an unknown id, as it always was.
    let id: PromotionId =
        PromotionId::parse(&raw_id).ok_or_else(|| ApiError::not_found("promotion", &raw_id))?;
    let conn = ctx.app.db.conn()?;
    load_visible(ctx, &conn, &id, crate::time::now())?;
    let rows: Vec<(String, String, String, i64, i64)> = conn
        .prepare_cached(
            "SELECT id, label, target_url, scan_count, created_at FROM qr_codes
             WHERE promotion_id = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3",
        )?
        .query_map(rusqlite::params![id, page.bound(), page.fetch()], |r| {
            Ok((
                r.get("id")?,
                r.get("label")?,
                r.get("target_url")?,
                r.get("scan_count")?,
                r.get("created_at")?,
            ))
        })?
        .collect::<Result<_, _>>()?;
    let mut items = Vec::with_capacity(rows.len());
    for (qr_id, label, target_url, scan_count, created_at) in rows {
        items.push(QrCode {
            object: "qr_code",
            promotion_id: id.to_string(),
            label,
            image_svg: qr_svg(&target_url)?,
            image_png_url: format!("/qr-codes/{qr_id}/image?format=png"),
            id: qr_id,
            target_url,
            scan_count,
            created_at: Time(created_at),
        });
    }
    Ok(Response::page(items, &page))
}

pub(super) fn qr_image(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let format = ctx
        .query_enum("format", super::QR_FORMATS)?
        .unwrap_or_else(|| "svg".into());
    // After the format: a bad `format` is reported before an unknown id, as it always was.
    let id: QrCodeId = ctx.path()?;
    let conn = ctx.app.db.conn()?;
    let (_, target_url): (String, String) = crud::authorized_row(
        ctx,
        &conn,
        "SELECT p.company_id, q.target_url FROM qr_codes q JOIN promotions p ON p.id = q.promotion_id
         WHERE q.id = ?1",
        &id,
        |r| r.get(1),
    )?;
    let resp = if format == "png" {
        Response::new(StatusCode::OK, "image/png", qr_png(&target_url)?)
    } else {
        Response::new(StatusCode::OK, "image/svg+xml", qr_svg(&target_url)?)
    };
    Ok(resp.with_header("cache-control", "private, max-age=300"))
}
