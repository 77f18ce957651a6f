//! `GET /l/{code}`: the sandbox's own landing page of a promotion, where the QR codes of a
//! promotion without a `landing_url` send a phone (`GET /q/{code}` counts the scan, then answers
//! `302 Location: /l/{code}?utm_…`). Public, like the short link: a phone's camera has no
//! credential, and the code (10 random base-62 characters) is what makes the page reachable.
//!
//! The page is the company's: its logo mark (drawn from its name and brand colours, as the console
//! and the player draw it), its colours, the offer (name, description, discount) and its dates, and
//! what the offer's state means for the person holding the phone (on now, starts on …, ended on …,
//! paused). It reveals nothing else: no ids, no counts, no other promotion.
//!
//! Served with a policy that allows its one inline style block by hash and nothing else (no script,
//! no request anywhere); every value is HTML-escaped.

use crate::auth::Action;
use crate::http::router::{param, Route};
use crate::http::{ApiError, Ctx, Response};
use crate::markup::escape;
use base64::Engine;
use hyper::StatusCode;
use rusqlite::OptionalExtension;
use sha2::{Digest, Sha256};

const UTM: &str = r#"{"type":"string","maxLength":100}"#;

/// The longest code the route looks up (as `GET /q/{code}`); anything else is a 404 without a query.
const MAX_CODE_LEN: usize = 32;

pub fn routes() -> Vec<Route> {
    vec![Route::get("/l/{code}", "getLandingPage", Action::Public, page)
        .no_tool("an HTML page for the phone that scanned a QR code, not data")
        .describe("The sandbox's landing page of a promotion without its own `landing_url`: the company's logo, colours, the offer and its dates, for the phone that scanned the promotion's QR code (`GET /q/{code}` redirects here). No credential; an unknown or deleted code is 404.")
        .tag("promotions")
        .summary("A promotion's landing page served by the sandbox (public HTML): where its QR codes land when it has no landing_url.")
        .produces("text/html")
        // The UTM parameters the short link's redirect carries: accepted, read by nothing here (the
        // scan was counted by `/q/{code}`); they are for a real landing page's analytics.
        .query(&[
            param("utm_source", UTM, "Carried from the code's redirect; not used by the page."),
            param("utm_medium", UTM, "Carried from the code's redirect; not used by the page."),
            param("utm_campaign", UTM, "Carried from the code's redirect; not used by the page."),
            param("utm_term", UTM, "Carried from the code's redirect; not used by the page."),
            param("utm_content", UTM, "Carried from the code's redirect; not used by the page."),
        ])
        // A page for people, not an API operation: listed in the book, left out of the OpenAPI
        // document (as the short link itself).
        .hidden()]
}

/// The `target_url` stored for a code of a promotion that lands on this page: a path, so the
/// redirect stays on the host the phone scanned, whatever the public base URL is now.
pub fn path_of(code: &str) -> String {
    format!("/l/{code}")
}

/// What the page shows, read in one query.
struct Offer {
    company: String,
    tagline: Option<String>,
    colors: Colors,
    name: String,
    description: String,
    discount: Option<i64>,
    active: bool,
    starts_at: i64,
    ends_at: i64,
}

struct Colors {
    primary: String,
    accent: String,
    background: String,
    text: String,
}

fn page(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let code = ctx.param("code").to_string();
    if code.is_empty()
        || code.len() > MAX_CODE_LEN
        || !code.bytes().all(|b| b.is_ascii_alphanumeric())
    {
        return Ok(not_found());
    }
    let conn = ctx.conn()?;
    let offer = conn
        .prepare_cached(
            "SELECT c.name, b.tagline, b.primary_color, b.accent_color, b.background_color,
                    b.text_color, p.name, p.description, p.discount_percent, p.active,
                    p.starts_at, p.ends_at
             FROM qr_codes q JOIN promotions p ON p.id = q.promotion_id
             JOIN companies c ON c.id = p.company_id
             LEFT JOIN brandings b ON b.company_id = c.id
             WHERE q.code = ?1",
        )?
        .query_row([&code], |r| {
            Ok(Offer {
                company: r.get(0)?,
                tagline: r.get(1)?,
                colors: Colors {
                    primary: color(r.get(2)?, "#1f4fd1"),
                    accent: color(r.get(3)?, "#f5a623"),
                    background: color(r.get(4)?, "#ffffff"),
                    text: color(r.get(5)?, "#16181d"),
                },
                name: r.get(6)?,
                description: r.get(7)?,
                discount: r.get(8)?,
                active: r.get::<_, i64>(9)? == 1,
                starts_at: r.get(10)?,
                ends_at: r.get(11)?,
            })
        })
        .optional()?;
    drop(conn);
    match offer {
        Some(offer) => Ok(html(StatusCode::OK, render(&offer, ctx.now()))),
        None => Ok(not_found()),
    }
}

/// A stored brand colour when it is `#rrggbb`, else the default (the page's style takes nothing
/// else from the database).
fn color(stored: Option<String>, default: &str) -> String {
    match stored {
        Some(c)
            if c.len() == 7
                && c.starts_with('#')
                && c[1..].bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            c
        }
        _ => default.to_string(),
    }
}

/// WCAG relative luminance of `#rrggbb`.
fn luminance(hex: &str) -> f64 {
    let channel = |i: usize| {
        let c = f64::from(u8::from_str_radix(&hex[i..i + 2], 16).unwrap_or(0)) / 255.0;
        if c <= 0.039_28 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5)
}

fn contrast(a: &str, b: &str) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// White or black, whichever reads better on `background` (at least 4.5:1 for one of them).
fn ink_on(background: &str) -> &'static str {
    if contrast("#ffffff", background) >= contrast("#000000", background) {
        "#ffffff"
    } else {
        "#000000"
    }
}

/// `1764107201` -> `"25 November 2025"` (UTC).
pub fn long_date(ts: i64) -> String {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let (y, m, d) = crate::time::civil_from_days(ts.div_euclid(86_400));
    format!("{d} {} {y}", MONTHS[(m as usize).saturating_sub(1).min(11)])
}

/// What the offer's state means to the person holding the phone, at `now`.
fn state_line(o: &Offer, now: i64) -> String {
    if o.ends_at <= now {
        format!("This offer ended on {}.", long_date(o.ends_at - 1))
    } else if o.starts_at > now {
        format!(
            "Coming soon: this offer starts on {}.",
            long_date(o.starts_at)
        )
    } else if !o.active {
        "This offer is paused right now.".to_string()
    } else {
        format!("On now, until {}.", long_date(o.ends_at - 1))
    }
}

/// The company's initials, as the console's logo mark shows them.
fn initials(name: &str) -> String {
    let words: Vec<&str> = name.split_whitespace().collect();
    let letters: String = if words.len() > 1 {
        words
            .iter()
            .take(2)
            .filter_map(|w| w.chars().next())
            .collect()
    } else {
        name.chars().take(2).collect()
    };
    letters.to_uppercase()
}

fn render(o: &Offer, now: i64) -> (String, String) {
    let c = &o.colors;
    let head_ink = ink_on(&c.primary);
    let badge_ink = ink_on(&c.accent);
    // The page's body: the brand's own text colour on its background when it reads, else the
    // contrast-safe one.
    let body_ink = if contrast(&c.text, &c.background) >= 4.5 {
        c.text.clone()
    } else {
        ink_on(&c.background).to_string()
    };
    let style = format!(
        "*{{box-sizing:border-box}}body{{margin:0;font-family:system-ui,-apple-system,\"Segoe UI\",Roboto,sans-serif;\
background:{bg};color:{ink};line-height:1.5}}\
header{{display:flex;align-items:center;gap:12px;padding:14px 20px;background:{primary};color:{head_ink};\
border-bottom:6px solid {accent}}}header svg{{flex:none}}.company{{font-weight:800;font-size:1.25rem}}\
main{{max-width:640px;margin:0 auto;padding:24px 20px 40px}}h1{{font-size:2rem;line-height:1.2;margin:8px 0 12px}}\
.state{{font-weight:700;margin:0}}.discount{{display:inline-block;background:{accent};color:{badge_ink};\
font-weight:800;font-size:1.5rem;padding:6px 14px;border-radius:10px;margin:4px 0 12px}}\
.dates{{font-weight:600}}.tagline{{font-style:italic}}footer{{max-width:640px;margin:0 auto;padding:0 20px 32px;\
font-size:0.9rem}}",
        bg = c.background,
        ink = body_ink,
        primary = c.primary,
        accent = c.accent,
    );
    let logo = format!(
        "<svg viewBox=\"0 0 40 40\" width=\"44\" height=\"44\" role=\"img\" aria-label=\"{name} logo\">\
<rect x=\"1\" y=\"1\" width=\"38\" height=\"38\" rx=\"9\" fill=\"{primary}\" stroke=\"#fff\" stroke-width=\"2\"/>\
<rect x=\"8\" y=\"30\" width=\"24\" height=\"3\" rx=\"1.5\" fill=\"{accent}\"/>\
<text x=\"20\" y=\"25\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"700\" fill=\"#fff\" \
font-family=\"system-ui, sans-serif\">{initials}</text></svg>",
        name = escape(&o.company),
        primary = c.primary,
        accent = c.accent,
        initials = escape(&initials(&o.company)),
    );
    // An ended offer no longer offers anything: no badge, and nothing to show in store.
    let ended = o.ends_at <= now;
    let discount = o
        .discount
        .filter(|_| !ended)
        // The offer's headline fact, so a heading (axe's `p-as-heading`), styled as a badge.
        .map(|d| format!("<h2 class=\"discount\">{d}% off</h2>"))
        .unwrap_or_default();
    let footer = if ended {
        "<p>This offer can no longer be used in store.</p>"
    } else {
        "<p>Show this page in store to get the offer.</p>"
    };
    let tagline = o
        .tagline
        .as_deref()
        .filter(|t| !t.trim().is_empty())
        .map(|t| format!("<p class=\"tagline\">{}</p>", escape(t)))
        .unwrap_or_default();
    let body = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>{name} · {company}</title><style>{style}</style></head>\n<body>\
<header>{logo}<span class=\"company\">{company}</span></header>\
<main><p class=\"state\" data-state>{state}</p><h1>{name}</h1>{discount}<p>{description}</p>\
<p class=\"dates\">Valid from {from} to {to}.</p>{tagline}</main>\
<footer>{footer}</footer></body></html>\n",
        name = escape(&o.name),
        company = escape(&o.company),
        state = escape(&state_line(o, now)),
        description = escape(&o.description),
        from = long_date(o.starts_at),
        to = long_date(o.ends_at - 1),
    );
    (body, style)
}

/// The page under a policy that allows exactly its own style block (by hash) and nothing else.
fn html(status: StatusCode, (body, style): (String, String)) -> Response {
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(style.as_bytes()));
    let csp = format!(
        "default-src 'none'; style-src 'sha256-{hash}'; img-src data:; base-uri 'none'; \
         form-action 'none'; frame-ancestors 'none'"
    );
    Response::new(status, "text/html; charset=utf-8", body)
        .with_header("content-security-policy", &csp)
        .with_header("referrer-policy", "no-referrer")
        .with_header("cache-control", "no-store")
}

/// An unknown code: a plain page for the phone (never a redirect, nothing about other codes).
fn not_found() -> Response {
    let style = "body{font-family:system-ui,sans-serif;margin:0;padding:24px;color:#16181d;background:#fff}".to_string();
    let body = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>Offer not found</title>\
<style>{style}</style></head>\n<body><main><h1>Offer not found</h1>\
<p>This code does not lead to an offer (any more).</p></main></body></html>\n"
    );
    html(StatusCode::NOT_FOUND, (body, style))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_read_as_people_write_them() {
        let t = crate::time::parse_rfc3339("2026-12-18T10:00:00Z").unwrap();
        assert_eq!(long_date(t), "18 December 2026");
        assert_eq!(initials("Northwind Grocers"), "NG");
        assert_eq!(initials("cafe"), "CA");
        assert_eq!(
            escape("<b a=\"x\">&'"),
            "&lt;b a=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn ink_is_readable_on_any_brand_colour() {
        for bg in [
            "#1f4fd1", "#f5a623", "#ffffff", "#000000", "#0e7490", "#ffeb3b",
        ] {
            assert!(contrast(ink_on(bg), bg) >= 4.5, "{bg}");
        }
        assert_eq!(color(Some("red".into()), "#123456"), "#123456");
        assert_eq!(color(Some("#ABCDEF".into()), "#123456"), "#ABCDEF");
    }
}
