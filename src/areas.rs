//! The area registry: the data areas of the API, each declared once, here.
//!
//! An area is what a scope names (`devices:read`), what a webhook subscribes to (its event types),
//! and what the fixtures fill (its tables). Everything that lists areas reads this table: the scope
//! names ([`crate::auth::scopes`]), the webhook event types ([`crate::events::EVENT_TYPES`]), the
//! MCP server's instructions, the authorization-matrix test (which paths hold company-owned
//! objects, and which table a path parameter names), the console's navigation test (which areas it
//! shows) and the registry tests (every fixture table and route belongs to one area). The code
//! of an area (its routes and schemas) is one line of the route registry, `crate::routes::MODULES`.
//!
//! This module sits at the bottom of the layers (it knows only [`crate::ids::Kind`]), so the scope
//! parser and the event log can read it without depending on the route handlers.

use crate::ids::Kind;

/// What the registry says of one area.
#[derive(Debug)]
pub struct AreaSpec {
    /// The scope prefix (`<name>:read`, `<name>:write`).
    pub name: &'static str,
    /// How the MCP instructions name what the area holds.
    pub summary: &'static str,
    /// What the area's tag of the API reference says of it (the OpenAPI document's `tags`).
    pub description: &'static str,
    /// False for a read-only catalogue: no `<name>:write` scope exists.
    pub writable: bool,
    /// True when an object reached by id under [`AreaSpec::paths`] belongs to one company, so
    /// another company's credential gets 404 for it.
    pub company_owned: bool,
    /// The first path segments of the area's routes (`/devices/...`, `/qr-codes/...`).
    pub paths: &'static [&'static str],
    /// The kinds of id the area issues.
    pub kinds: &'static [Kind],
    /// The webhook event types the area emits, in the order webhooks list them.
    pub events: &'static [&'static str],
    /// The fixture (and schema) tables that hold the area's data.
    pub tables: &'static [&'static str],
    /// Whether the console's navigation (`src/routes/console/assets/console.js`) has a view of the
    /// area; `registry::every_area_has_a_console_view_or_a_reason` holds the script to it.
    pub console_view: ConsoleView,
}

/// See [`AreaSpec::console_view`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsoleView {
    /// The navigation lists a view of the area (`[sub-path, label, area]`).
    Shown,
    /// The console shows no view of the area, for this reason.
    Without(&'static str),
}

macro_rules! areas {
    ($($variant:ident => $spec:expr,)*) => {
        /// The data areas of the API; each has a read and (most) a write scope.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Area { $($variant,)* }

        impl Area {
            /// Every area, in registry order (the order of scope names and event types).
            pub const ALL: &'static [Area] = &[$(Area::$variant,)*];

            /// The registry entry of this area.
            pub const fn spec(self) -> &'static AreaSpec {
                match self { $(Area::$variant => &$spec,)* }
            }
        }
    };
}

areas! {
    Companies => AreaSpec {
        name: "companies",
        summary: "companies, branding",
        description: "Companies (tenants) of the account and their branding. Every other object belongs to one company; a company-scoped credential only sees its own.",
        writable: true,
        company_owned: true,
        paths: &["companies"],
        kinds: &[Kind::Company, Kind::Logo],
        events: &["branding.updated"],
        tables: &["companies", "brandings", "brand_logos"],
        console_view: ConsoleView::Shown,
    },
    Devices => AreaSpec {
        name: "devices",
        summary: "devices (screens)",
        description: "Screens: registration, derived online status, assigned ads, heartbeats and playback diagnostics.",
        writable: true,
        company_owned: true,
        paths: &["devices", "reports"],
        kinds: &[Kind::Device, Kind::PlaybackError, Kind::Playback],
        events: &[
            "device.created",
            "device.updated",
            "device.deleted",
            "device.heartbeat",
            "device.offline",
            "device.online",
            "device.playback_recorded",
        ],
        tables: &["devices", "playback_errors"],
        console_view: ConsoleView::Shown,
    },
    Ads => AreaSpec {
        name: "ads",
        summary: "ads",
        description: "Ads: a media item scheduled on devices. Activating an ad costs tokens.",
        writable: true,
        company_owned: true,
        paths: &["ads"],
        kinds: &[Kind::Ad],
        events: &["ad.created", "ad.updated", "ad.deleted", "ad.assigned", "ad.unassigned"],
        tables: &["ads", "ad_assignments"],
        console_view: ConsoleView::Shown,
    },
    Promotions => AreaSpec {
        name: "promotions",
        summary: "promotions",
        description: "Promotions with QR codes that screens show; their lifecycle and QR images.",
        writable: true,
        company_owned: true,
        paths: &["promotions", "qr-codes"],
        kinds: &[Kind::Promotion, Kind::QrCode, Kind::QrScan],
        events: &[
            "promotion.created",
            "promotion.updated",
            "promotion.activated",
            "promotion.deactivated",
            "promotion.started",
            "promotion.ended",
            "qr_code.created",
            "qr_code.deleted",
            "qr_code.scanned",
        ],
        tables: &["promotions", "qr_codes", "qr_scans"],
        console_view: ConsoleView::Shown,
    },
    Plans => AreaSpec {
        name: "plans",
        summary: "plans",
        description: "Subscription plans and the limits they set (devices per company, ...).",
        writable: false,
        company_owned: false,
        paths: &["plans"],
        kinds: &[Kind::Plan],
        events: &[],
        tables: &["plans"],
        console_view: ConsoleView::Without(
            "a read-only catalogue of three plans, with nothing to manage",
        ),
    },
    Tokens => AreaSpec {
        name: "tokens",
        summary: "tokens",
        description: "The token ledger: balance, transactions, token packs and purchases.",
        writable: true,
        // The balance belongs to the caller's company, but nothing is reached by id: the packs
        // are a shared catalogue.
        company_owned: false,
        paths: &["tokens", "token-packs"],
        kinds: &[Kind::TokenPack, Kind::TokenTransaction],
        events: &["tokens.purchased", "tokens.spent", "tokens.granted"],
        tables: &["token_packs", "token_balances", "token_transactions"],
        console_view: ConsoleView::Shown,
    },
    Billing => AreaSpec {
        name: "billing",
        summary: "billing",
        description: "Invoices and the subscription of each company.",
        writable: true,
        company_owned: true,
        paths: &["invoices", "charges"],
        kinds: &[Kind::Invoice, Kind::Charge],
        events: &["invoice.overdue"],
        tables: &["invoices", "charges"],
        console_view: ConsoleView::Shown,
    },
    Media => AreaSpec {
        name: "media",
        summary: "media",
        description: "Images and videos uploaded for ads: upload, metadata, download.",
        writable: true,
        company_owned: true,
        paths: &["media"],
        kinds: &[Kind::Media],
        events: &["media.created", "media.deleted"],
        tables: &["media"],
        console_view: ConsoleView::Shown,
    },
    Webhooks => AreaSpec {
        name: "webhooks",
        summary: "webhooks",
        description: "Webhook endpoints that receive signed event deliveries.",
        writable: true,
        company_owned: true,
        paths: &["webhooks", "webhook-event-types", "events"],
        kinds: &[Kind::Webhook, Kind::WebhookDelivery, Kind::Event],
        events: &[
            "webhook.created",
            "webhook.updated",
            "webhook.deleted",
            "webhook.disabled",
            "webhook.test",
        ],
        tables: &["webhooks"],
        console_view: ConsoleView::Shown,
    },
}

/// Event types of the platform itself rather than of an area, recorded as time passes: a key's
/// expiry (stored with the key's `companyScope` as its company, or none for an account-wide key) and
/// a pending MCP confirmation's (stored with no company). No webhook subscribes to them: keys and
/// confirmations belong to credentials, not to the company a webhook serves.
pub const PLATFORM_EVENTS: &[&str] = &["api_key.expired", "mcp.confirmation_expired"];

/// Tables of the platform itself rather than of an area (accounts, credentials, users).
pub const PLATFORM_TABLES: &[&str] = &["accounts", "api_clients", "api_keys", "users"];

impl Area {
    pub const fn name(self) -> &'static str {
        self.spec().name
    }

    /// Plans are a read-only catalogue.
    pub const fn has_write(self) -> bool {
        self.spec().writable
    }

    /// The area whose routes start with this path segment (`"qr-codes"` -> promotions).
    pub fn of_path_segment(segment: &str) -> Option<Area> {
        Area::ALL
            .iter()
            .copied()
            .find(|a| a.spec().paths.contains(&segment))
    }
}

/// How many event types the areas declare in all.
const fn event_count() -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < Area::ALL.len() {
        n += Area::ALL[i].spec().events.len();
        i += 1;
    }
    n
}

const EVENT_COUNT: usize = event_count();

/// Every area's event types, in registry order.
const fn all_events() -> [&'static str; EVENT_COUNT] {
    let mut out = [""; EVENT_COUNT];
    let mut n = 0;
    let mut i = 0;
    while i < Area::ALL.len() {
        let events = Area::ALL[i].spec().events;
        let mut j = 0;
        while j < events.len() {
            out[n] = events[j];
            n += 1;
            j += 1;
        }
        i += 1;
    }
    out
}

/// Every event type of every area, in registry order.
pub const EVENT_TYPES: &[&str] = &all_events();

/// The MCP instructions' list of what the sandbox holds: `companies, branding, ..., media and
/// webhooks`.
pub fn summary() -> String {
    let parts: Vec<&str> = Area::ALL.iter().map(|a| a.spec().summary).collect();
    match parts.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => (*last).to_string(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_paths_kinds_events_and_tables_are_each_claimed_once() {
        let mut seen = HashSet::new();
        for a in Area::ALL {
            let s = a.spec();
            assert!(seen.insert(format!("name {}", s.name)), "{a:?}");
            for p in s.paths {
                assert!(seen.insert(format!("path {p}")), "{a:?} repeats path {p}");
            }
            for k in s.kinds {
                assert!(
                    seen.insert(format!("kind {k:?}")),
                    "{a:?} repeats kind {k:?}"
                );
            }
            for e in s.events {
                assert!(seen.insert(format!("event {e}")), "{a:?} repeats event {e}");
            }
            for t in s.tables {
                assert!(
                    !PLATFORM_TABLES.contains(t),
                    "{a:?} claims platform table {t}"
                );
                assert!(seen.insert(format!("table {t}")), "{a:?} repeats table {t}");
            }
        }
        assert_eq!(
            EVENT_TYPES.len(),
            seen.iter().filter(|s| s.starts_with("event ")).count()
        );
    }

    #[test]
    fn the_summary_names_every_area() {
        assert_eq!(
            summary(),
            "companies, branding, devices (screens), ads, promotions, plans, tokens, billing, media and webhooks"
        );
    }
}
