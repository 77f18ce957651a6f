//! `GET /docs`: the reference rendered from `/openapi.json` by our own small page (no CDN, no
//! inline script, so a strict Content-Security-Policy holds), and the problem type pages.

use super::problems::ProblemType;
use crate::http::{ApiError, Ctx, Response};
use crate::markup::escape;
use hyper::StatusCode;

/// Only our own script, style and API; nothing inline, no frames, no forms posting elsewhere.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data: blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const PAGE: &str = include_str!("docs.html");
const SCRIPT: &str = include_str!("docs.js");
const STYLE: &str = include_str!("docs.css");

fn asset(content_type: &str, body: &'static str) -> Response {
    let mut r = Response::new(StatusCode::OK, content_type, body);
    r.set_header("content-security-policy", CSP);
    r.set_header("referrer-policy", "no-referrer");
    r
}

pub fn page(_: &mut Ctx<'_>) -> Result<Response, ApiError> {
    Ok(asset("text/html; charset=utf-8", PAGE))
}

/// `/docs/app.js` and `/docs/app.css`; any other name is 404.
pub fn asset_file(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    match ctx.param("file") {
        "app.js" => Ok(asset("text/javascript; charset=utf-8", SCRIPT)),
        "app.css" => Ok(asset("text/css; charset=utf-8", STYLE)),
        _ => Err(ApiError::NotFound("No such file of the docs page.".into())),
    }
}

pub fn problem_page(t: &ProblemType) -> Response {
    let body = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title} ({status}) · signage</title>\
<link rel=\"stylesheet\" href=\"/docs/app.css\"></head>\n<body><main class=\"problem\"><p><a href=\"/docs\">signage API reference</a></p>\
<h1>{title}</h1><p class=\"status\">HTTP {status} · <code>/problems/{slug}</code></p><p>{text}</p></main></body></html>\n",
        title = escape(t.title),
        status = t.status,
        slug = escape(t.slug),
        text = escape(t.description),
    );
    let mut r = Response::new(StatusCode::OK, "text/html; charset=utf-8", body);
    r.set_header("content-security-policy", CSP);
    r
}
