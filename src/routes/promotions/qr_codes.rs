//! A promotion's QR codes as a resource: create, list, get, delete.
//!
//! Each code has a short, unguessable `code` (10 base-62 characters from [`crate::random`]); its
//! images encode the short URL `{server.public_base_url}/q/{code}`, which `GET /q/{code}`
//! ([`crate::routes::scan`]) counts and redirects to `redirect_url`: the target URL with its UTM
//! parameters. The target is checked once, here, at creation: it must be on the promotion's
//! landing-page host, so the public redirect can never send anyone elsewhere. A promotion without
//! a landing URL lands on the sandbox's own page of it ([`crate::routes::landing`]): the code's
//! target is stored as the path `/l/{code}` (the redirect stays on the host the phone scanned) and
//! shown under the public base URL.

use super::fields::QR_LABEL;
use super::links::{absolute, short_url};
use super::promotion::load_visible;
use super::qr_image::qr_svg;
use crate::http::response::Listed;
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{PromotionId, QrCodeId, TypedId};
use crate::routes::crud::{self, Named, Time};
use crate::validate::{is_url, Errors, Text, UrlSchemes};
use rusqlite::Connection;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Characters of a new short code: 62^10 ≈ 8·10^17 codes, so guessing one is hopeless.
pub const CODE_LEN: usize = 10;
/// QR codes one promotion may hold; creating more is a 409 `qr_code_limit`.
pub const MAX_CODES_PER_PROMOTION: i64 = 100;
/// One UTM value.
pub const UTM_VALUE: Text = Text::new(1, 100);
/// The UTM parameters, in the order they are appended to the target URL.
pub const UTM_KEYS: &[&str] = &["source", "medium", "campaign", "term", "content"];

/// A UTM value: bounded text in a request (where absent and `null` both mean none), and text or
/// `null` in a response.
fn utm_value(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut schema = schemars::json_schema!({"type": ["string", "null"]});
    if generator.settings().contract.is_deserialize() {
        schemars::transform::Transform::transform(&mut &UTM_VALUE, &mut schema);
    }
    schema
}

/// The UTM parameters of a code; `null` when not set.
#[derive(Serialize, Deserialize, Default, Clone, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Utm {
    #[serde(default)]
    #[schemars(schema_with = "utm_value")]
    pub source: Option<String>,
    #[serde(default)]
    #[schemars(schema_with = "utm_value")]
    pub medium: Option<String>,
    #[serde(default)]
    #[schemars(schema_with = "utm_value")]
    pub campaign: Option<String>,
    #[serde(default)]
    #[schemars(schema_with = "utm_value")]
    pub term: Option<String>,
    #[serde(default)]
    #[schemars(schema_with = "utm_value")]
    pub content: Option<String>,
}

impl Utm {
    fn values(&self) -> [(&'static str, Option<&str>); 5] {
        [
            ("source", self.source.as_deref()),
            ("medium", self.medium.as_deref()),
            ("campaign", self.campaign.as_deref()),
            ("term", self.term.as_deref()),
            ("content", self.content.as_deref()),
        ]
    }
}

// Field order is the order of the JSON members.
/// A QR code of a promotion: its target URL and an inline SVG.
#[derive(Serialize, JsonSchema)]
pub(super) struct QrCode {
    #[schemars(transform = crate::ids::Kind::QrCode)]
    id: String,
    #[schemars(extend("const" = "qr_code"))]
    object: &'static str,
    promotion_id: String,
    label: String,
    /// The short code: `short_url` is `{server.public_base_url}/q/{code}`.
    #[schemars(regex(pattern = "^[0-9A-Za-z]{8,32}$"))]
    code: String,
    /// What the images encode; opening it counts a scan and redirects to `redirect_url`.
    short_url: String,
    /// Where the code leads: on the promotion's landing host, or the sandbox's landing page
    /// `{server.public_base_url}/l/{code}` when the promotion has no landing URL.
    target_url: String,
    /// The UTM parameters of the code; `null` when not set.
    utm: Utm,
    /// `target_url` with the UTM parameters: where a scan lands.
    redirect_url: String,
    #[schemars(range(min = 0))]
    scan_count: i64,
    last_scanned_at: Option<Time>,
    /// The QR code as an SVG document.
    image_svg: String,
    /// Path of the PNG rendering.
    image_png_url: String,
    created_at: Time,
    #[serde(skip)]
    version: i64,
    #[serde(skip)]
    company_id: String,
}

impl Listed for QrCode {
    fn list_key(&self) -> &str {
        &self.id
    }
}

const QR_SELECT: &str = "SELECT q.id, q.promotion_id, p.company_id, q.label, q.code, q.target_url,
    q.utm_source, q.utm_medium, q.utm_campaign, q.utm_term, q.utm_content, q.redirect_url,
    q.scan_count, q.last_scanned_at, q.created_at, q.version
    FROM qr_codes q JOIN promotions p ON p.id = q.promotion_id";

impl QrCode {
    /// Reads a row of [`QR_SELECT`]; a row whose image cannot be drawn is an internal error.
    fn from_row(
        settings: &crate::config::Settings,
        r: &Named<'_, '_>,
    ) -> rusqlite::Result<Result<QrCode, ApiError>> {
        let id: String = r.get("id")?;
        let code: String = r.get("code")?;
        let short = short_url(settings, &code);
        let image_svg = match qr_svg(&short) {
            Ok(svg) => svg,
            Err(e) => return Ok(Err(e)),
        };
        Ok(Ok(QrCode {
            object: "qr_code",
            promotion_id: r.get("promotion_id")?,
            label: r.get("label")?,
            code,
            short_url: short,
            target_url: absolute(settings, r.get("target_url")?),
            utm: Utm {
                source: r.get("utm_source")?,
                medium: r.get("utm_medium")?,
                campaign: r.get("utm_campaign")?,
                term: r.get("utm_term")?,
                content: r.get("utm_content")?,
            },
            redirect_url: absolute(settings, r.get("redirect_url")?),
            scan_count: r.get("scan_count")?,
            last_scanned_at: r.get::<Option<i64>>("last_scanned_at")?.map(Time),
            image_svg,
            image_png_url: format!("/qr-codes/{id}/image?format=png"),
            id,
            created_at: Time(r.get("created_at")?),
            version: r.get("version")?,
            company_id: r.get("company_id")?,
        }))
    }
}

/// One code, unauthorized (callers check `company_id`); missing is 404.
fn load(
    settings: &crate::config::Settings,
    conn: &Connection,
    id: &QrCodeId,
) -> Result<QrCode, ApiError> {
    crud::load(conn, &format!("{QR_SELECT} WHERE q.id = ?1"), id, |r| {
        QrCode::from_row(settings, r)
    })?
}

/// The `data` of `qr_code.created` (the catalogue's builder, [`crate::routes::payloads`]): the
/// code as `GET /qr-codes/{id}` shows it without its image (the PNG and SVG are one request away).
pub(crate) fn created_data(
    settings: &crate::config::Settings,
    conn: &Connection,
    id: &str,
) -> Result<serde_json::Value, ApiError> {
    let id = QrCodeId::parse(id).ok_or_else(|| ApiError::not_found("QR code", id))?;
    let mut payload = crate::routes::payload::to_data(&load(settings, conn, &id)?)?;
    if let Some(o) = payload.as_object_mut() {
        o.remove("image_svg");
    }
    Ok(payload)
}

/// One code, checked against the route's action: invisible or missing is the same 404.
fn load_visible_code(ctx: &Ctx<'_>, conn: &Connection, id: &QrCodeId) -> Result<QrCode, ApiError> {
    let code = load(&ctx.app.settings, conn, id)?;
    ctx.authorize_company(&code.company_id, "QR code", id.as_str())?;
    Ok(code)
}

pub(super) fn list_qr_codes(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let raw_id = ctx.param("id").to_string();
    let page = ctx.page()?;
    // After the page: a bad `limit` is reported before an unknown id, as it always was.
    let id: PromotionId =
        PromotionId::parse(&raw_id).ok_or_else(|| ApiError::not_found("promotion", &raw_id))?;
    let conn = ctx.conn()?;
    load_visible(ctx, &conn, &id, ctx.now())?;
    let mut stmt = conn.prepare_cached(&format!(
        "{QR_SELECT} WHERE q.promotion_id = ?1 AND q.id < ?2 ORDER BY q.id DESC LIMIT ?3"
    ))?;
    let columns = crud::Columns::of(&stmt);
    let settings = &ctx.app.settings;
    let rows = stmt
        .query_map(rusqlite::params![id, page.bound(), page.fetch()], |r| {
            QrCode::from_row(settings, &Named::new(r, &columns))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let items = rows.into_iter().collect::<Result<Vec<_>, _>>()?;
    Ok(Response::page(items, &page))
}

pub(super) fn get_qr_code(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: QrCodeId = ctx.path()?;
    let conn = ctx.conn()?;
    let code = load_visible_code(ctx, &conn, &id)?;
    Ok(Response::ok(&code).with_etag(code.version))
}

pub(super) fn delete_qr_code(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: QrCodeId = ctx.path()?;
    ctx.db.write(ctx.intent, |tx| {
        let (company, version): (String, i64) = crud::authorized_row(
            ctx,
            tx,
            "SELECT p.company_id, q.version FROM qr_codes q JOIN promotions p ON p.id = q.promotion_id
             WHERE q.id = ?1",
            &id,
            |r| r.get(1),
        )?;
        ctx.check_if_match(version)?;
        // Its scans go with it (ON DELETE CASCADE); its short URL is a 404 from now on.
        crud::delete_row(tx, "qr_codes", "qr_code", &company, &id)?;
        Ok(Response::no_content())
    })
}

/// A QR code to make for the promotion; every member optional.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct QrCodeCreate {
    /// Where the code hangs, e.g. `Door`.
    #[serde(default)]
    #[schemars(transform = &QR_LABEL)]
    label: Option<String>,
    /// On the landing URL's host (and port); default: the landing URL. Without a landing URL,
    /// leave it out: the code lands on the sandbox's page (`/l/{code}`).
    #[serde(default)]
    #[schemars(with = "String", length(min = 8, max = 2048), regex(pattern = crate::validate::url_pattern(UrlSchemes::Web)))]
    target_url: Option<String>,
    /// UTM parameters appended to the target URL on redirect (`utm_source`, …), in this order.
    #[serde(default)]
    #[schemars(with = "Utm")]
    utm: Option<Utm>,
}

/// `scheme://authority` is dropped; what is left of the authority is compared without case.
fn authority(url: &str) -> String {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .unwrap_or(url);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    rest[..end].to_ascii_lowercase()
}

/// Percent-encodes a UTM value for a query string (everything but RFC 3986 unreserved characters).
fn encode_component(value: &str, out: &mut String) {
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

/// The URL a scan redirects to: the target with the UTM parameters appended to its query (before
/// any fragment), and any non-ASCII character percent-encoded so it is valid header text.
pub fn redirect_url(target: &str, utm: &Utm) -> String {
    let (base, fragment) = match target.find('#') {
        Some(i) => target.split_at(i),
        None => (target, ""),
    };
    let mut out = String::with_capacity(target.len() + 64);
    for ch in base.chars() {
        if ch.is_ascii() {
            out.push(ch);
        } else {
            encode_component(ch.encode_utf8(&mut [0; 4]), &mut out);
        }
    }
    let mut sep = if base.contains('?') { '&' } else { '?' };
    for (key, value) in utm.values() {
        if let Some(v) = value {
            out.push(sep);
            out.push_str("utm_");
            out.push_str(key);
            out.push('=');
            encode_component(v, &mut out);
            sep = '&';
        }
    }
    for ch in fragment.chars() {
        if ch.is_ascii() {
            out.push(ch);
        } else {
            encode_component(ch.encode_utf8(&mut [0; 4]), &mut out);
        }
    }
    out
}

/// A target given for (or defaulted to) a promotion with a landing URL: a web URL on that URL's
/// host, and on the company's allowed landing domains.
fn check_target(errors: &mut Errors, target: &str, landing: &str, domains: &[String]) {
    if !is_url(target, UrlSchemes::Web) {
        errors.url("/target_url", target, UrlSchemes::Web);
    } else if authority(target) != authority(landing) {
        errors.push(
            "/target_url",
            "foreign_host",
            format!(
                "Must be on the promotion's landing-page host `{}`.",
                authority(landing)
            ),
        );
    } else {
        // A landing page set before the company narrowed its domains stays, but gets no new code.
        crate::routes::landing_domains::check(errors, "/target_url", target, domains);
    }
}

fn has_utm_param(url: &str) -> bool {
    let no_fragment = url.split('#').next().unwrap_or("");
    match no_fragment.split_once('?') {
        Some((_, query)) => query
            .split('&')
            .any(|p| p.to_ascii_lowercase().starts_with("utm_")),
        None => false,
    }
}

pub(super) fn create_qr_code(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let promo_id: PromotionId = ctx.path()?;
    let now = ctx.now();
    let (landing, domains) = {
        let conn = ctx.conn()?;
        let promo = load_visible(ctx, &conn, &promo_id, now)?;
        let domains = crate::routes::landing_domains::of_company(&conn, &promo.company_id)?;
        (promo.landing_url, domains)
    };
    let input: QrCodeCreate = ctx.json()?;
    let mut errors = Errors::new();
    let label = input.label.unwrap_or_default();
    QR_LABEL.check(&mut errors, "/label", &label);
    // `None`: the sandbox's landing page of the new code, known once the code is drawn.
    let target = match (&landing, input.target_url) {
        (None, None) => None,
        (None, Some(_)) => {
            errors.push(
                "/target_url",
                "sandbox_landing_page",
                "This promotion has no landing URL, so its QR codes land on the sandbox's landing page of the promotion: leave `target_url` out, or give the promotion a `landing_url` first.",
            );
            None
        }
        (Some(landing), given) => {
            let target = given.unwrap_or_else(|| landing.clone());
            check_target(&mut errors, &target, landing, &domains);
            Some(target)
        }
    };
    let utm = input.utm.unwrap_or_default();
    for (key, value) in utm.values() {
        if let Some(v) = value {
            UTM_VALUE.check(&mut errors, &format!("/utm/{key}"), v);
        }
    }
    if utm.values().iter().any(|(_, v)| v.is_some()) && target.as_deref().is_some_and(has_utm_param)
    {
        errors.push(
            "/target_url",
            "utm_conflict",
            "Already carries utm_ parameters; give them either in the URL or in `utm`, not both.",
        );
    }
    errors.finish()?;
    let id = ctx.generate::<QrCodeId>();
    let code = crate::random::base62(ctx.seeded(), "qr_code", CODE_LEN);
    let target = target.unwrap_or_else(|| crate::routes::landing::path_of(&code));
    let redirect = redirect_url(&target, &utm);
    let settings = &ctx.app.settings;
    ctx.db.write(ctx.intent, |tx| {
        let promo = load_visible(ctx, tx, &promo_id, now)?;
        let count: i64 = tx
            .prepare_cached("SELECT count(*) FROM qr_codes WHERE promotion_id = ?1")?
            .query_row([&promo_id], |r| r.get(0))?;
        if count >= MAX_CODES_PER_PROMOTION {
            return Err(ApiError::ConflictCode {
                code: "qr_code_limit",
                detail: format!(
                    "A promotion holds at most {MAX_CODES_PER_PROMOTION} QR codes; delete one first."
                ),
            });
        }
        tx.prepare_cached(
            "INSERT INTO qr_codes (id, promotion_id, code, label, target_url, utm_source, utm_medium,
                utm_campaign, utm_term, utm_content, redirect_url, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )?
        .execute(rusqlite::params![
            id,
            promo_id,
            code,
            label.trim(),
            target,
            utm.source,
            utm.medium,
            utm.campaign,
            utm.term,
            utm.content,
            redirect,
            now
        ])?;
        let qr = load(settings, tx, &id)?;
        let payload = created_data(settings, tx, id.as_str())?;
        crate::events::record(
            tx,
            &promo.company_id,
            "qr_code.created",
            "qr_code",
            id.as_str(),
            &payload,
        )?;
        Ok(Response::created(&qr).with_etag(qr.version))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_appends_utm_before_the_fragment_and_encodes() {
        let utm = Utm {
            source: Some("signage".into()),
            campaign: Some("spring & more".into()),
            ..Utm::default()
        };
        assert_eq!(
            redirect_url("https://a.example/p?x=1#top", &utm),
            "https://a.example/p?x=1&utm_source=signage&utm_campaign=spring%20%26%20more#top"
        );
        assert_eq!(
            redirect_url("https://a.example/café", &Utm::default()),
            "https://a.example/caf%C3%A9"
        );
        assert!(has_utm_param("https://a.example/?a=1&UTM_source=x"));
        assert!(!has_utm_param("https://a.example/#?utm_source=x"));
        assert_eq!(authority("https://A.example:8443/x"), "a.example:8443");
    }
}
