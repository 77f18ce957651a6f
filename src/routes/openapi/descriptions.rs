//! The text of the named schemas and of their properties, for someone integrating. A schema's
//! own `description` (written where it is declared) wins; these fill what it leaves out. A test
//! names every schema that has neither (`every_schema_and_property_is_described`).

use serde_json::{Map, Value};

/// Schema name → what it is.
const SCHEMAS: &[(&str, &str)] = &[
    ("PlaybackSource", "Who reported a play: `player` (a real player, `POST /devices/{id}/playbacks`) or `simulator` (the simulated fleet)."),
    ("QrScanAgentClass", "The class of device that scanned: `ios`, `android`, `desktop`, `bot` (crawlers, link previews, scripts) or `other`."),
    ("WebhookDeliveryStatus", "Where a delivery is: `pending` (attempts left), `succeeded` (a 2xx arrived) or `failed` (no attempt left)."),
    ("EventVia", "Through which door the change came: `rest`, `mcp`, `sandbox` (the clock, the simulated fleet) or `unknown` (older events)."),
    ("SandboxFaultNewMatchMethod", "The HTTP method a fault rule matches."),
    ("SandboxFaultNewMatchVia", "Whether a fault rule matches REST requests, MCP tool calls, or both (`any`)."),
    ("SandboxDeviceSimulateProfile", "A profile an operator may give a screen: `steady`, `flaky`, `offline` or `failing_playback`."),
    ("SandboxDeviceSimulateEvent", "A one-off event a simulated screen can be made to report."),
    ("SandboxDeviceSimulationProfile", "A screen's behaviour profile in the simulated fleet."),
    // The enums, named where they first appear (`components::hoist_enums`).
    ("HealthBackendAuthMode", "How the MCP server authenticates the REST calls of its tools."),
    ("CredentialType", "The kind of credential: an API key or a login token."),
    ("BrandingLogosVariant", "Which logo variant: `primary`, `dark` (for dark backgrounds) or `icon`."),
    ("CompanyOpeningHoursDay", "A day of the week, in English, lower case: `monday` to `sunday`."),
    ("DevicePlatform", "The player platform of a screen."),
    ("DeviceOrientation", "How a screen is mounted."),
    ("DeviceStatus", "A screen's derived connection status: `online` (heartbeat within the offline threshold), `offline` (older), `never_seen` (none yet)."),
    ("AdStatus", "Where an ad is in its life: only `active` ads play."),
    ("MediaContentType", "The media types an upload may have."),
    ("PromotionState", "A promotion's derived state: `active` (on, within its window), `scheduled` (on, not started), `expired` (window over), `inactive` (off)."),
    ("TokenTransactionKind", "Why the token balance changed."),
    ("InvoiceStatus", "Where an invoice is: `draft`, `open` (charges accrue), `paid` or `void`."),
    ("ChargeKind", "What a charge bills: the subscription, a token pack, an overage, or a credit."),
    ("WebhookEventTypes", "The event types a webhook can subscribe to (`GET /webhook-event-types` describes each)."),
    ("ApiKeyStatus", "Whether a key works: `active`, or `revoked`/`expired` (refused with 401)."),
    ("ApiKeyCreateScopes", "The scopes a key can hold: `<area>:read`, `<area>:write` and `admin`."),
    ("PromotionsActive", "`true`: only promotions running now; `false`: only the others."),
    ("PromotionsFormat", "The image format of a QR code."),
    ("JournalFormat", "How a readiness report is answered: `json` (the default) or `junit` (JUnit XML, one test case per check)."),
    ("SandboxClockMode", "`system`: the clock follows the system time; `frozen`: it moves only when advanced."),
    // The request journal, the webhook drills and the readiness report (`crate::sandbox`).
    ("RequestEntryList", "A page of journal entries, newest first."),
    ("RequestEntryListOrCount", "A page of journal entries, or with `count=true` how many match."),
    ("RequestEntryVia", "Through which door the request came: `rest`, or `mcp` (a tool call)."),
    ("RequestEntryCredentials", "Which kind of credential a request presented (never its value): `none`, `api_key` or `bearer`."),
    ("WebhookDrillNewKind", "A drill: `duplicate`, `out_of_order`, `bad_signature`, `stale_timestamp` or `rotation`."),
    ("WebhookDrillVerdict", "`pass` when the receiver answered every delivery as a correct receiver must."),
    ("WebhookDrillAttemptsExpected", "The answer a correct receiver gives a drill delivery: `2xx` (accept) or `4xx` (refuse)."),
    ("ReadinessReportVerdict", "`ready`, `not_ready` (a required check failed) or `incomplete` (a required check was not observed)."),
    ("ReadinessReportChecksStatus", "A check's outcome: `pass`, `fail`, or `not_observed` until what it judges happened."),
];

/// Schema name suffix → text, for schemas the table does not name.
const SUFFIXES: &[(&str, &str)] = &[
    ("Create", "The body that creates this kind of object."),
    (
        "Update",
        "Fields to change; absent fields keep their value.",
    ),
];

/// Property name → what it holds, wherever it appears without its own text.
const PROPERTIES: &[(&str, &str)] = &[
    ("source", "Where it came from: for a play, who reported it (`player` or `simulator`); in `utm`, the `utm_source` value."),
    ("plays", "How many plays (a simulated row: the plays started in its hour)."),
    ("seconds", "Seconds played."),
    ("used_bytes", "Bytes the company's media take now (the sum of their `size_bytes`)."),
    ("quota_bytes", "The most bytes of media the company may store (`media.quota_bytes_per_company`)."),
    ("available_bytes", "Bytes still free under the quota."),
    ("media_count", "How many media items the company has."),
    ("ends_at", "When it ends (RFC 3339, UTC; exclusive)."),
    ("ads", "Per ad (or, for a device, how many distinct ads played)."),
    ("devices", "Per device."),
    ("companies", "One entry per company."),
    ("company_name", "The company's name."),
    ("total", "How many in all."),
    ("online", "Screens whose last heartbeat is within the offline threshold."),
    ("offline", "Screens whose last heartbeat is older than the offline threshold."),
    ("never_seen", "Screens that never sent a heartbeat."),
    ("last_playback_error", "The screen's latest playback error, if any."),
    ("utm", "The UTM parameters added to the target URL when the code is scanned."),
    ("medium", "The `utm_medium` value."),
    ("campaign", "The `utm_campaign` value."),
    ("term", "The `utm_term` value."),
    ("content", "The `utm_content` value."),
    ("last_scanned_at", "When it was last scanned (sandbox clock); `null`: never."),
    ("qr_code_id", "The QR code scanned."),
    ("scanned_at", "When the scan happened (sandbox clock, RFC 3339)."),
    ("agent_class", "The class of device that scanned."),
    ("generated_at", "When this report was computed (sandbox clock)."),
    ("scans_per_day", "Scans per UTC day, oldest first."),
    ("date", "A UTC day (YYYY-MM-DD)."),
    ("scans", "How many scans."),
    ("scans_by_agent_class", "Scans per class of scanning device."),
    ("ios", "Scans from iPhones and iPads."),
    ("android", "Scans from Android devices."),
    ("desktop", "Scans from desktop browsers."),
    ("bot", "Scans from crawlers, link previews and scripts."),
    ("other", "Scans from anything else."),
    ("qr_codes", "Per QR code of the promotion."),
    ("opening_balance", "The balance at the start of the range."),
    ("closing_balance", "The balance at the end of the range."),
    ("net", "Tokens added minus tokens spent in the range."),
    ("transaction_count", "How many ledger entries fall in the range."),
    ("by_kind", "Totals per kind of ledger entry."),
    ("count", "How many."),
    ("rate_percent", "The VAT rate, in percent."),
    ("net_cents", "The amount before VAT, in cents."),
    ("vat_cents", "The VAT, in cents."),
    ("webhook_id", "The webhook it was sent to."),
    ("event_type", "The type of the event delivered."),
    ("attempt_count", "How many attempts were made."),
    ("next_attempt_at", "When the next attempt is due (sandbox clock); `null`: none."),
    ("attempts", "Every attempt, oldest first."),
    ("n", "The attempt's number, from 1."),
    ("latency_ms", "Milliseconds from sending to the answer (or to the failure)."),
    ("resource_type", "The kind of object the event concerns."),
    ("resource_id", "The id of the object the event concerns."),
    ("action", "What the rule does to a matching request: answer a status, delay, or drop the connection."),
    ("detail", "The `detail` of the injected problem."),
    ("delay_ms", "Milliseconds the answer is held back."),
    ("fired", "How many times the rule has applied."),
    ("data", "The items."),
    ("snapshot", "The snapshot restored."),
    ("profile", "The screen's behaviour profile in the simulated fleet."),
    ("profile_since", "Since when the screen has this profile (sandbox clock)."),
    ("next_transition_at", "When the profile next changes what the screen does (a flaky drop-out, a failing screen's error); `null`: never."),
    ("playback_error", "The playback error the screen reported."),
    (
        "id",
        "The object's id: its kind's prefix and a time-sortable suffix.",
    ),
    (
        "object",
        "The kind of object, the same value for every object of this schema.",
    ),
    ("company_id", "The company that owns it."),
    ("account_id", "The account the credential belongs to."),
    ("name", "The human-readable name shown in the console."),
    ("description", "Free text for people; not interpreted."),
    ("status", "Its current status (see the enum)."),
    ("state", "Its derived state (see the enum)."),
    ("created_at", "When it was created (RFC 3339, UTC)."),
    ("updated_at", "When it last changed (RFC 3339, UTC)."),
    (
        "expires_at",
        "When it stops being valid (RFC 3339, UTC); `null`: never.",
    ),
    (
        "client_id",
        "The API client (integration), sent as `X-Service-Client-Id`.",
    ),
    (
        "companyScope",
        "The one company the key is limited to; `null`: every company of the account.",
    ),
    (
        "currency",
        "ISO 4217 currency code of the amounts (integer cents).",
    ),
    (
        "scopes",
        "What the credential may do: `<area>:read`, `<area>:write`, `admin`.",
    ),
    ("scope", "The scope involved."),
    ("event_types", "The event types delivered to this webhook."),
    ("enabled", "Whether deliveries are made."),
    ("type", "The kind of credential or record."),
    (
        "prefix",
        "The key's public prefix (`sgn_test_<key id>`), safe to log.",
    ),
    (
        "location",
        "Where the screen hangs, free text (may be empty).",
    ),
    ("platform", "The screen's player platform."),
    ("orientation", "How the screen is mounted."),
    ("resolution", "WIDTHxHEIGHT in pixels, e.g. 1920x1080."),
    (
        "app_version",
        "The player app version last reported by a heartbeat; `null` before one.",
    ),
    ("device_id", "The device (screen)."),
    ("ad_id", "The ad."),
    ("headline", "The text shown with the ad."),
    ("promotion_id", "The linked promotion; `null`: none."),
    ("media_id", "The media item the ad shows; `null`: none."),
    (
        "duration_seconds",
        "How long the ad plays per loop, in seconds.",
    ),
    ("landing_url", "Where the QR codes lead; `null` (or left out): the sandbox's own landing page of the promotion, `/l/{code}`."),
    ("on_air", "Whether screens play it now: `active`, within its dates, and its promotion (if any) switched on and within its window."),
    ("discount_percent", "The discount offered, in percent."),
    (
        "activation_cost_tokens",
        "Tokens spent from the company's balance each time it is activated.",
    ),
    ("starts_at", "When it starts (RFC 3339, UTC)."),
    (
        "ends_at",
        "When it ends (RFC 3339, UTC); `null`: open-ended.",
    ),
    ("username", "The demo user's username."),
    ("password", "The demo user's password."),
    ("access_token", "The JWT."),
    ("token_type", "Always `Bearer`."),
    ("expires_in", "Seconds until the token expires."),
    ("colors", "Brand colours as `#rrggbb`, by role."),
    ("fonts", "Font families, by role."),
    (
        "corner_radius_px",
        "Corner radius of cards on screen, in pixels.",
    ),
    ("tagline", "A short brand line shown on screens."),
    ("logos", "The company's logo variants."),
    (
        "uptime_seconds",
        "Seconds since the player started, as last reported.",
    ),
    ("code", "A machine-readable code."),
    ("balance", "Tokens available."),
    ("balance_after", "The balance right after this transaction."),
    ("kind", "What kind of entry this is (see the enum)."),
    ("number", "The human-facing number."),
    ("period_start", "First day of the billed period."),
    ("period_end", "Last day of the billed period."),
    ("issued_at", "When it was issued; `null` while open."),
    ("due_at", "When payment is due; `null` while open."),
    ("paid_at", "When it was paid; `null` if unpaid."),
    ("total_cents", "The total, in cents of `currency`."),
    ("amount_cents", "The amount, in cents of `currency`."),
    ("price_cents", "The price, in cents of `currency`."),
    (
        "monthly_price_cents",
        "The monthly price, in cents of `currency`.",
    ),
    ("url", "The endpoint deliveries are POSTed to."),
    (
        "last_four",
        "The last four characters of the secret, to recognise it.",
    ),
    (
        "last_used_at",
        "When it was last used (updated at most once a minute); `null`: never.",
    ),
    ("revoked_at", "When it was revoked; `null`: not revoked."),
    (
        "replaced_by",
        "The key that replaced it in a rotation; `null`: none.",
    ),
    ("ok", "`true` when the service is up."),
    (
        "backendAuthMode",
        "How MCP tool calls authenticate: `passthrough`, with the caller's own key.",
    ),
    ("key_id", "The key's id."),
    ("user_id", "The login user's id."),
    (
        "visible_company_ids",
        "The companies this credential can see.",
    ),
    ("activated_at", "When it was last activated; `null`: never."),
    (
        "deactivated_at",
        "When it was last deactivated; `null`: never.",
    ),
    (
        "actor",
        "Who made the request: a key id or a login user; `null` if unauthenticated.",
    ),
    ("assigned_ad_count", "How many ads are assigned to it."),
    ("assigned_at", "When the ad was put on the device."),
    ("at", "When it happened (RFC 3339, UTC)."),
    ("charge", "The charge billed for it."),
    ("charge_id", "The charge billed for it."),
    ("content_type", "The media type of the bytes."),
    ("country", "ISO 3166-1 alpha-2 country code."),
    (
        "current_ad",
        "The ad the screen reports playing; `null`: none.",
    ),
    (
        "current_ad_id",
        "The ad the screen last reported playing; `null`: none.",
    ),
    ("device_count", "How many devices it has."),
    (
        "duration_ms",
        "Video duration in milliseconds; `null` for images.",
    ),
    ("features", "What the plan includes."),
    ("filename", "The file name given at upload."),
    (
        "grace_period_seconds",
        "How long the replaced key stays valid.",
    ),
    ("height", "Height in pixels; `null` when not an image."),
    ("width", "Width in pixels; `null` when not an image."),
    ("included_tokens_monthly", "Tokens credited each month."),
    ("industry", "The company's industry."),
    ("invoice_id", "The invoice it is billed on."),
    ("label", "A label for people."),
    (
        "last_heartbeat_at",
        "When the last heartbeat arrived; `null`: never.",
    ),
    (
        "last_seen",
        "When the last heartbeat arrived; `null`: never.",
    ),
    ("lines", "The charges on the invoice."),
    ("max_devices", "Devices allowed per company."),
    ("method", "The HTTP method."),
    ("new_key", "The new key, with its secret (shown once)."),
    (
        "offline_after_seconds",
        "Heartbeat age after which the device counts as offline.",
    ),
    ("outcome", "`ok`, or the problem code or type of a failure."),
    ("plan_id", "The plan."),
    (
        "playback_errors",
        "Playback errors since the last heartbeat.",
    ),
    ("previous_key", "The replaced key, with its new expiry."),
    ("qr_code_count", "How many QR codes it has."),
    (
        "recent_playback_errors",
        "The latest playback errors, newest first.",
    ),
    ("request_id", "The request's `Request-Id`."),
    ("reset", "What was restored."),
    ("route", "The route pattern called."),
    ("scan_count", "How many times it was scanned."),
    (
        "seconds_since_heartbeat",
        "Age of the last heartbeat in seconds; `null`: never.",
    ),
    (
        "sha256",
        "SHA-256 of the bytes, hex; also the download's ETag.",
    ),
    ("size_bytes", "Size of the bytes."),
    ("slug", "A URL-safe short name."),
    ("storage", "Storage use as last reported."),
    ("storage_total_mb", "Total storage in MB."),
    ("storage_used_mb", "Used storage in MB."),
    ("target_url", "The URL the QR code encodes."),
    ("timezone", "IANA time zone name."),
    ("token_pack_id", "The token pack."),
    ("tokens", "Number of tokens."),
    ("transaction", "The ledger entry."),
    ("message", "What went wrong, for people."),
    ("occurred_at", "When it happened (RFC 3339, UTC)."),
    ("download_url", "Where to GET the bytes."),
    ("secret", "The signing secret, shown once."),
    (
        "secret_last4",
        "The last four characters of the signing secret.",
    ),
    ("rawKey", "The API key itself: shown once, store it now."),
    ("devices", "The devices it is assigned to."),
    (
        "newly_assigned",
        "`false` when it was already assigned (nothing changed).",
    ),
    ("amount", "Tokens added (positive) or spent (negative)."),
    ("free_percent", "Free storage in percent."),
    ("used_mb", "Used storage in MB."),
    ("total_mb", "Total storage in MB."),
    ("svg", "The QR code as an SVG document."),
    ("image_url", "Where to GET the QR code as an image."),
    ("variant", "Which logo variant."),
    ("primary", "Main brand colour."),
    ("secondary", "Second brand colour."),
    ("accent", "Colour for highlights and calls to action."),
    ("background", "Screen background colour."),
    ("text", "Body text colour."),
    ("heading", "Font family of headings."),
    ("body", "Font family of body text."),
    ("format", "The file format."),
    ("now", "The clock's current instant (RFC 3339, UTC)."),
    ("from", "Where the clock was before (RFC 3339, UTC)."),
    ("to", "Where the clock was asked to go (RFC 3339, UTC)."),
    ("mode", "The clock's mode (see the enum)."),
    ("transitions", "State changes on the way, counted by kind."),
    (
        "events",
        "Domain events recorded on the way, counted by type.",
    ),
];

fn lookup(table: &[(&str, &'static str)], key: &str) -> Option<&'static str> {
    table.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

/// Adds the table's text to each schema and property without one.
pub fn describe(schemas: &mut Map<String, Value>) {
    for (name, schema) in schemas.iter_mut() {
        let Some(obj) = schema.as_object_mut() else {
            continue;
        };
        if !obj.contains_key("description") {
            let text = lookup(SCHEMAS, name).or_else(|| {
                SUFFIXES
                    .iter()
                    .find(|(s, _)| name.ends_with(s))
                    .map(|(_, t)| *t)
            });
            if let Some(text) = text {
                obj.insert("description".into(), text.into());
            }
        }
        describe_properties(schema);
    }
}

fn describe_properties(schema: &mut Value) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            if let Some(p) = prop.as_object_mut() {
                if !p.contains_key("description") {
                    if let Some(text) = lookup(PROPERTIES, name) {
                        p.insert("description".into(), text.into());
                    }
                }
            }
            describe_properties(prop);
        }
    }
    if let Some(items) = obj.get_mut("items") {
        describe_properties(items);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = obj.get_mut(key) {
            branches.iter_mut().for_each(describe_properties);
        }
    }
}
