//! `GET /q/{code}`: the short link a QR code encodes. Public (a phone's camera has no credential):
//! it records one scan and answers `302 Found` to the code's redirect URL, and reveals nothing
//! else. An unknown or deleted code is a plain 404 problem.
//!
//! Rules:
//! - Each request counts once: a scan row (the sandbox clock's time and the user-agent class, no
//!   address, no raw user agent), `scan_count + 1` and `last_scanned_at` on the code, all in one
//!   transaction.
//! - `qr_code.scanned` is rate-limited per code: at most one event per [`EVENT_INTERVAL_SECS`] of
//!   the sandbox clock; the event carries the running total and how many scans it stands for, so a
//!   scan storm cannot flood webhooks and no scan goes uncounted.
//! - Each client address may scan `scans.rate_limit_per_minute` times a minute; past it, a plain
//!   429 page (`Retry-After`, no redirect, nothing counted).
//! - Past `scans.detail_per_code` scans, a code's scans are counted per minute and agent class
//!   instead of one row each, so a flood grows the database by a few rows a minute.
//! - The redirect target was checked when the code was created (the promotion's landing-page host),
//!   so this route cannot be turned into an open redirect: nothing of the request reaches the
//!   `Location` header.

use crate::auth::Action;
use crate::http::router::Route;
use crate::http::{ApiError, Ctx, Response};
use crate::ids::Kind;
use hyper::StatusCode;
use rusqlite::OptionalExtension;
use serde::Serialize;

/// At most one `qr_code.scanned` event per code in this many seconds.
pub const EVENT_INTERVAL_SECS: i64 = 60;
/// The longest code the route looks up; anything else is a 404 without a query.
const MAX_CODE_LEN: usize = 32;

pub fn routes() -> Vec<Route> {
    vec![Route::get("/q/{code}", "scanQrCode", Action::Public, scan)
         .no_tool("the public short link a phone opens: it records a scan and redirects")
         .describe("The public short link a QR code encodes: it records one scan (sandbox clock, user-agent class, no IP) and answers 302 to the code's target with its UTM parameters. No credential. An unknown or deleted code is 404 and reveals nothing.")
        .tag("promotions")
        .summary("A QR code's short link (public): counts one scan and redirects (302) to the code's target URL with its UTM parameters. Unknown or deleted code: 404.")
        .returns(302, None)
        // A link for phones, not an API operation (it answers a redirect, never a body): listed in
        // the book's endpoints page, left out of the OpenAPI document.
        .hidden()]
}

/// The class of a user agent: `bot` (crawlers, link previews, HTTP libraries), `ios`, `android`,
/// `desktop` (Windows, macOS, Linux, ChromeOS browsers), or `other` (anything else, or none).
pub fn agent_class(user_agent: Option<&str>) -> &'static str {
    let ua = match user_agent {
        Some(ua) if !ua.trim().is_empty() => ua.to_ascii_lowercase(),
        _ => return "other",
    };
    const BOTS: &[&str] = &[
        "bot",
        "crawl",
        "spider",
        "slurp",
        "preview",
        "facebookexternalhit",
        "curl/",
        "wget/",
        "python-",
        "go-http-client",
        "okhttp",
        "java/",
        "headless",
        "httpclient",
        "libwww",
    ];
    if BOTS.iter().any(|b| ua.contains(b)) {
        "bot"
    } else if ["iphone", "ipad", "ipod"].iter().any(|d| ua.contains(d)) {
        "ios"
    } else if ua.contains("android") {
        "android"
    } else if ["windows nt", "macintosh", "x11", "linux", "cros"]
        .iter()
        .any(|d| ua.contains(d))
    {
        "desktop"
    } else {
        "other"
    }
}

// The `data` of `qr_code.scanned`: no description of its own (the event type's says what it is).
// Field order is the order of the JSON members.
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct Scanned<'a> {
    #[schemars(transform = Kind::QrCode)]
    qr_code_id: &'a str,
    #[schemars(transform = Kind::Promotion)]
    promotion_id: &'a str,
    code: &'a str,
    scanned_at: crate::routes::crud::Time,
    #[schemars(transform = crate::jsonschema::Component("QrScanAgentClass"))]
    agent_class: &'static str,
    /// The code's scans in all.
    #[schemars(range(min = 0))]
    scan_count: i64,
    /// The scans since the code's previous `qr_code.scanned` event, this one included.
    #[schemars(range(min = 0))]
    scans_since_last_event: i64,
}

/// The `data` of `qr_code.scanned` for code `id` as it stands after its latest scan (the
/// catalogue's builder, [`crate::routes::payloads`]): `class` is that scan's agent class, `since`
/// the scans counted since the code's previous event (default: what the row says).
pub(crate) fn scanned_data(
    conn: &rusqlite::Connection,
    id: &str,
    class: &'static str,
    since: Option<i64>,
    now: i64,
) -> rusqlite::Result<serde_json::Value> {
    let (code, promotion, count, last, counted): (String, String, i64, Option<i64>, i64) = conn
        .prepare_cached(
            "SELECT code, promotion_id, scan_count, last_scanned_at, last_event_scan_count
             FROM qr_codes WHERE id = ?1",
        )?
        .query_row([id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?;
    Ok(scanned_payload(&Scanned {
        qr_code_id: id,
        promotion_id: &promotion,
        code: &code,
        scanned_at: crate::routes::crud::Time(last.unwrap_or(now)),
        agent_class: class,
        scan_count: count,
        scans_since_last_event: since.unwrap_or(count - counted),
    }))
}

fn scanned_payload(payload: &Scanned<'_>) -> serde_json::Value {
    // Our own plain struct always serializes; `Null` would only ever mean a bug, never a panic.
    serde_json::to_value(payload).unwrap_or_default()
}

/// A code as a scan needs it.
pub(crate) struct Found {
    pub id: String,
    pub company_id: String,
    pub promotion_id: String,
    pub code: String,
    pub redirect_url: String,
    pub scan_count: i64,
    pub last_event_at: Option<i64>,
    pub last_event_scan_count: i64,
}

/// Columns of a [`Found`], for `… FROM qr_codes q JOIN promotions p ON p.id = q.promotion_id`.
pub(crate) const FOUND_COLUMNS: &str = "q.id, p.company_id, q.redirect_url,
    q.scan_count, q.last_event_at, q.last_event_scan_count, q.promotion_id, q.code";

pub(crate) fn found_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Found> {
    Ok(Found {
        id: r.get(0)?,
        company_id: r.get(1)?,
        redirect_url: r.get(2)?,
        scan_count: r.get(3)?,
        last_event_at: r.get(4)?,
        last_event_scan_count: r.get(5)?,
        promotion_id: r.get(6)?,
        code: r.get(7)?,
    })
}

/// Records one scan of `found` at `at`: the scan row (or, once the code has `detail_cap` scans, one
/// more in its counter of the minute and agent class), the code's count and last scan, and, if the
/// code's last event is [`EVENT_INTERVAL_SECS`] or more before `at`, a `qr_code.scanned` event.
/// `found` is updated to match, so a caller can record several scans of one code in a row.
pub(crate) fn record_scan(
    tx: &crate::db::Tx,
    found: &mut Found,
    class: &'static str,
    at: i64,
    detail_cap: u64,
) -> rusqlite::Result<bool> {
    let evented = count_scan(tx, found, class, at, detail_cap)?;
    store_code(tx, found, at)?;
    Ok(evented)
}

/// [`record_scan`] but for the code's own row: `found` holds its new count and event marks, which
/// [`store_code`] writes, once for several scans of one code in a row (the simulated scans of an
/// hour) rather than once per scan.
pub(crate) fn count_scan(
    tx: &crate::db::Tx,
    found: &mut Found,
    class: &'static str,
    at: i64,
    detail_cap: u64,
) -> rusqlite::Result<bool> {
    if (found.scan_count.max(0) as u64) < detail_cap {
        let scan_id = tx.new_id(Kind::QrScan);
        tx.prepare_cached(
            "INSERT INTO qr_scans (id, qr_code_id, scanned_at, agent_class) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(rusqlite::params![scan_id, found.id, at, class])?;
    } else {
        // Past the cap a scan costs a counter increment: a flood adds a few rows a minute.
        tx.prepare_cached(
            "INSERT INTO qr_scan_counts (qr_code_id, minute, agent_class, scans)
             VALUES (?1, ?2, ?3, 1)
             ON CONFLICT (qr_code_id, minute, agent_class) DO UPDATE SET scans = scans + 1",
        )?
        .execute(rusqlite::params![found.id, at.div_euclid(60), class])?;
    }
    found.scan_count += 1;
    let due = found
        .last_event_at
        .is_none_or(|last| at - last >= EVENT_INTERVAL_SECS);
    if !due {
        return Ok(false);
    }
    // The event's data as `scanned_data` would read it back from the row once stored: `found`
    // holds every field (one query less per event).
    let payload = scanned_payload(&Scanned {
        qr_code_id: &found.id,
        promotion_id: &found.promotion_id,
        code: &found.code,
        scanned_at: crate::routes::crud::Time(at),
        agent_class: class,
        scan_count: found.scan_count,
        scans_since_last_event: found.scan_count - found.last_event_scan_count,
    });
    crate::events::record(
        tx,
        &found.company_id,
        "qr_code.scanned",
        "qr_code",
        &found.id,
        &payload,
    )?;
    found.last_event_at = Some(at);
    found.last_event_scan_count = found.scan_count;
    Ok(true)
}

/// Writes the code's count and event marks as `found` holds them, and `last_scanned_at` (the
/// instant of its latest scan counted).
pub(crate) fn store_code(
    tx: &rusqlite::Connection,
    found: &Found,
    last_scanned_at: i64,
) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "UPDATE qr_codes SET scan_count = ?2, last_scanned_at = ?3, last_event_at = ?4,
            last_event_scan_count = ?5 WHERE id = ?1",
    )?
    .execute(rusqlite::params![
        found.id,
        found.scan_count,
        last_scanned_at,
        found.last_event_at,
        found.last_event_scan_count
    ])?;
    Ok(())
}

/// The per-client-address bound on scans (`scans.rate_limit_per_minute`): a fixed one-minute
/// window per address, on the wall clock (it protects the machine, not the sandbox's story).
/// Registered by `app::App::build`.
pub struct ScanLimiter {
    per_minute: u32,
    windows:
        std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, (std::time::Instant, u32)>>,
}

/// Addresses remembered before the expired windows are swept.
const SWEEP_AT: usize = 10_000;

impl ScanLimiter {
    pub fn new(per_minute: u32) -> ScanLimiter {
        ScanLimiter {
            per_minute,
            windows: Default::default(),
        }
    }

    /// `Err(seconds)` to wait when `peer` has used its scans of this minute; counts one otherwise.
    pub fn take(&self, peer: std::net::IpAddr) -> Result<(), u64> {
        if self.per_minute == 0 {
            return Ok(());
        }
        let minute = std::time::Duration::from_secs(60);
        let now = std::time::Instant::now();
        // A poisoned lock only means a panic elsewhere; the windows are plain counters.
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        if windows.len() >= SWEEP_AT {
            windows.retain(|_, (start, _)| now.duration_since(*start) < minute);
        }
        let (start, used) = windows.entry(peer).or_insert((now, 0));
        if now.duration_since(*start) >= minute {
            *start = now;
            *used = 0;
        }
        if *used >= self.per_minute {
            let left = minute.saturating_sub(now.duration_since(*start));
            return Err(left.as_secs().max(1));
        }
        *used += 1;
        Ok(())
    }
}

/// The answer to a scanner over its limit: a small page for the phone's browser, never a redirect,
/// nothing counted.
fn too_many_scans(retry_after: u64) -> Response {
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Too many scans</title>\
         <meta name=\"viewport\" content=\"width=device-width\"></head><body><h1>Too many scans</h1>\
         <p>This device scanned too many codes in a short time. Try again in {retry_after} seconds.</p>\
         </body></html>"
    );
    Response::new(
        StatusCode::TOO_MANY_REQUESTS,
        "text/html; charset=utf-8",
        page,
    )
    .with_header("retry-after", &retry_after.to_string())
    .with_header("cache-control", "no-store")
}

fn scan(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    if let (Some(limiter), Some(peer)) = (
        ctx.app.extensions.get::<std::sync::Arc<ScanLimiter>>(),
        ctx.peer,
    ) {
        if let Err(retry_after) = limiter.take(peer) {
            return Ok(too_many_scans(retry_after));
        }
    }
    let code = ctx.param("code").to_string();
    if code.is_empty()
        || code.len() > MAX_CODE_LEN
        || !code.bytes().all(|b| b.is_ascii_alphanumeric())
    {
        return Err(ApiError::not_found("QR code", &code));
    }
    let class = agent_class(ctx.header("user-agent"));
    let now = ctx.now();
    let detail_cap = ctx.app.settings.scan_detail_per_code;
    let location = ctx.db.write(ctx.intent, |tx| {
        let mut found = tx
            .prepare_cached(&format!(
                "SELECT {FOUND_COLUMNS} FROM qr_codes q JOIN promotions p ON p.id = q.promotion_id
                 WHERE q.code = ?1"
            ))?
            .query_row([&code], found_from_row)
            .optional()?
            .ok_or_else(|| ApiError::not_found("QR code", &code))?;
        record_scan(tx, &mut found, class, now, detail_cap)?;
        Ok::<_, ApiError>(found.redirect_url)
    })?;
    if hyper::header::HeaderValue::from_str(&location).is_err() {
        return Err(ApiError::Internal(
            "stored redirect URL is not valid header text".into(),
        ));
    }
    Ok(
        Response::new(StatusCode::FOUND, "text/plain; charset=utf-8", "")
            .with_header("location", &location)
            .with_header("cache-control", "no-store")
            .with_header("referrer-policy", "no-referrer"),
    )
}

#[cfg(test)]
mod tests {
    use super::agent_class;

    #[test]
    fn user_agent_classes() {
        let cases = [
            (
                "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15",
                "ios",
            ),
            (
                "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 Chrome/120 Mobile",
                "android",
            ),
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/120",
                "desktop",
            ),
            (
                "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) Safari/605.1.15",
                "desktop",
            ),
            (
                "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
                "bot",
            ),
            ("curl/8.5.0", "bot"),
            ("Mozilla/5.0 (Linux; Android 14) Googlebot/2.1", "bot"),
            ("SmartTV/1.0", "other"),
            ("", "other"),
        ];
        for (ua, class) in cases {
            assert_eq!(agent_class(Some(ua)), class, "{ua}");
        }
        assert_eq!(agent_class(None), "other");
    }
}
