//! A QR code as an image, SVG or PNG, encoding the code's short URL (`{public_base_url}/q/{code}`).

use super::links::short_url;
use crate::http::{ApiError, Ctx, Response};
use crate::ids::QrCodeId;
use crate::routes::crud;
use hyper::StatusCode;

/// Pixels per QR module in the PNG, and the quiet zone in modules (the QR standard's minimum).
const PNG_SCALE: usize = 8;
const QUIET_ZONE: usize = 4;

fn qr_code(url: &str) -> Result<qrcode::QrCode, ApiError> {
    qrcode::QrCode::new(url.as_bytes())
        .map_err(|e| ApiError::Internal(format!("cannot encode QR code: {e}")))
}

/// The code as SVG: one user unit per module in the view box (so the module grid is exact), drawn
/// at the PNG's pixel size by default.
pub fn qr_svg(url: &str) -> Result<String, ApiError> {
    let code = qr_code(url)?;
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
pub fn qr_png(url: &str) -> Result<Vec<u8>, ApiError> {
    let code = qr_code(url)?;
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

pub(super) fn qr_image(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let format = ctx
        .query_enum("format", super::fields::QR_FORMATS)?
        .unwrap_or_else(|| "svg".into());
    // After the format: a bad `format` is reported before an unknown id, as it always was.
    let id: QrCodeId = ctx.path()?;
    let conn = ctx.conn()?;
    let (_, code): (String, String) = crud::authorized_row(
        ctx,
        &conn,
        "SELECT p.company_id, q.code FROM qr_codes q JOIN promotions p ON p.id = q.promotion_id
         WHERE q.id = ?1",
        &id,
        |r| r.get(1),
    )?;
    let url = short_url(&ctx.app.settings, &code);
    let resp = if format == "png" {
        Response::new(StatusCode::OK, "image/png", qr_png(&url)?)
    } else {
        Response::new(StatusCode::OK, "image/svg+xml", qr_svg(&url)?)
    };
    Ok(resp.with_header("cache-control", "private, max-age=300"))
}
