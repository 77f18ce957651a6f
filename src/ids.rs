//! Prefixed, typed resource identifiers (`cmp_…`, `dev_…`).
//!
//! A new id is `<prefix>_` + 9 base-36 characters of the creation time in milliseconds + 11 base-36
//! characters of a counter, so ids sort by creation time and every list can page by id alone. The
//! counter is monotonic per clock, that is per app (as ULID's monotonic mode): the first id of a millisecond
//! starts it at a random value, every further id of the same millisecond (or of an earlier one, if
//! the clock stepped back) adds a small random step to the previous value. So an id drawn later
//! always sorts after one drawn earlier, even within one millisecond; ids drawn inside a
//! `BEGIN IMMEDIATE` transaction therefore sort in commit order. The fixtures use the same shape
//! with times in early 2025, so they sort before anything created later.

use crate::random::{self, Seeded};
use crate::time::Clock;

const BASE36: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
/// 36^11: the number of values of the 11-character counter.
const COUNTER_SPAN: u64 = 131_621_703_842_267_136;

macro_rules! kinds {
    ($($variant:ident => $prefix:literal, $id:ident, $what:literal;)*) => {
        /// The kinds of resource, each with its id prefix.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Kind { $($variant,)* }

        impl Kind {
            /// Every kind's id prefix.
            pub const PREFIXES: &'static [&'static str] = &[$($prefix,)*];

            /// Whether `prefix` is a kind's id prefix (a `match` on the literals: no scan).
            pub fn is_prefix(prefix: &str) -> bool {
                matches!(prefix, $($prefix)|*)
            }

            pub const fn prefix(self) -> &'static str {
                match self { $(Kind::$variant => $prefix,)* }
            }

            /// The random stream a new id of this kind draws from (`id:<prefix>`).
            pub const fn purpose(self) -> &'static str {
                match self { $(Kind::$variant => concat!("id:", $prefix),)* }
            }

            /// What a 404 calls a missing object of this kind ("No device with id …").
            pub const fn what(self) -> &'static str {
                match self { $(Kind::$variant => $what,)* }
            }

            /// The JSON Schema pattern of an id of this kind: exactly what [`is_valid`] accepts.
            pub const fn pattern(self) -> &'static str {
                match self {
                    $(Kind::$variant => concat!("^", $prefix, "_[0-9A-Za-z]{1,64}$"),)*
                }
            }

            /// The JSON Schema (as text) of an id of this kind: exactly what [`is_valid`] accepts.
            pub const fn schema(self) -> &'static str {
                match self {
                    $(Kind::$variant => concat!(
                        r#"{"type":"string","pattern":"^"#, $prefix, r#"_[0-9A-Za-z]{1,64}$"}"#
                    ),)*
                }
            }

            /// The JSON Schema (as text) of a list's cursor over ids of this kind: the `next_cursor`
            /// of a page (an id, a `.` and the 8-character tag of the page's filters), or a bare id
            /// (a keyset bound a client builds, like Stripe's `starting_after`).
            pub const fn cursor_schema(self) -> &'static str {
                match self {
                    $(Kind::$variant => concat!(
                        r#"{"type":"string","pattern":"^"#, $prefix, r#"_[0-9A-Za-z]{1,64}(\\.[0-9A-Za-z]{8})?$"}"#
                    ),)*
                }
            }
        }

        $(
            #[doc = concat!("An id of a ", $what, " (`", $prefix, "_…`), checked when parsed.")]
            #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
            #[serde(transparent)]
            pub struct $id(String);

            impl TypedId for $id {
                const KIND: Kind = Kind::$variant;
                fn from_checked(s: String) -> Self {
                    $id(s)
                }
                fn as_str(&self) -> &str {
                    &self.0
                }
            }

            impl $id {
                /// The id, when `s` has the shape of an id of this kind.
                pub fn parse(s: &str) -> Option<Self> {
                    <Self as TypedId>::parse(s)
                }
                pub fn into_string(self) -> String {
                    self.0
                }
            }

            impl std::ops::Deref for $id {
                type Target = str;
                fn deref(&self) -> &str {
                    &self.0
                }
            }

            impl AsRef<str> for $id {
                fn as_ref(&self) -> &str {
                    &self.0
                }
            }

            impl std::fmt::Display for $id {
                fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str(&self.0)
                }
            }

            impl rusqlite::ToSql for $id {
                fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                    self.0.to_sql()
                }
            }
        )*
    };
}

/// An id newtype: only [`TypedId::parse`] (which checks the shape) or [`new_id`]-style creation
/// makes one, so a handler holding a `DeviceId` holds a well-formed device id.
pub trait TypedId: Sized {
    const KIND: Kind;
    /// Wraps a string already known to have the shape of [`Self::KIND`].
    fn from_checked(s: String) -> Self;
    fn as_str(&self) -> &str;
    /// The id, when `s` has the shape of an id of [`Self::KIND`].
    fn parse(s: &str) -> Option<Self> {
        is_valid(Self::KIND, s).then(|| Self::from_checked(s.to_string()))
    }
    /// A new id of this kind, drawn on `clock` (with `seeded`'s stream in a seeded sandbox).
    fn generate(clock: &Clock, seeded: Option<&Seeded>) -> Self {
        Self::from_checked(new_id(clock, seeded, Self::KIND))
    }
}

kinds! {
    Account => "acct", AccountId, "account";
    Company => "cmp", CompanyId, "company";
    Logo => "logo", LogoId, "logo";
    Device => "dev", DeviceId, "device";
    PlaybackError => "perr", PlaybackErrorId, "playback error";
    Playback => "pb", PlaybackId, "playback";
    Ad => "ad", AdId, "ad";
    Promotion => "promo", PromotionId, "promotion";
    QrCode => "qr", QrCodeId, "QR code";
    QrScan => "qrs", QrScanId, "QR code scan";
    Plan => "plan", PlanId, "plan";
    TokenPack => "tpk", TokenPackId, "token pack";
    TokenTransaction => "ttx", TokenTransactionId, "token transaction";
    Invoice => "inv", InvoiceId, "invoice";
    Charge => "ch", ChargeId, "charge";
    Media => "med", MediaId, "media";
    Webhook => "wh", WebhookId, "webhook";
    ApiClient => "cli", ApiClientId, "API client";
    ApiKey => "key", ApiKeyId, "API key";
    User => "usr", UserId, "user";
    Event => "evt", EventId, "event";
    WebhookDelivery => "whd", WebhookDeliveryId, "webhook delivery";
    PendingChange => "chg", PendingChangeId, "pending change";
    Fault => "flt", FaultId, "fault rule";
}

/// An id field's pattern on its derived schema: `#[schemars(transform = Kind::Company)]`.
impl schemars::transform::Transform for Kind {
    fn transform(&mut self, schema: &mut schemars::Schema) {
        schema.insert("type".into(), "string".into());
        schema.insert("pattern".into(), self.pattern().into());
    }
}

/// A field that holds an id of the kind or `null`, on its derived schema:
/// `#[schemars(transform = NullableId(Kind::Ad))]`.
pub struct NullableId(pub Kind);

impl schemars::transform::Transform for NullableId {
    fn transform(&mut self, schema: &mut schemars::Schema) {
        let description = schema.remove("description");
        *schema = schemars::json_schema!({"anyOf": [
            {"type": "string", "pattern": self.0.pattern()},
            {"type": "null"}
        ]});
        if let Some(description) = description {
            schema.insert("description".into(), description);
        }
    }
}

/// The pair after `last` at clock `now_ms`: a new millisecond starts the counter at a random value
/// in its lower half (room for many increments); otherwise the counter steps by 1 to 65,536, and
/// if it would overflow, the millisecond moves one ahead of the clock instead.
fn advance(last: (u64, u64), now_ms: u64, random: u64) -> (u64, u64) {
    let (last_ms, last_counter) = last;
    if now_ms > last_ms {
        return (now_ms, random % (COUNTER_SPAN / 2));
    }
    let next = last_counter + 1 + (random & 0xffff);
    if next < COUNTER_SPAN {
        (last_ms, next)
    } else {
        (last_ms + 1, random % (COUNTER_SPAN / 2))
    }
}

fn push_base36(out: &mut String, mut n: u64, width: usize) {
    let mut digits = [b'0'; 13];
    for slot in digits[..width].iter_mut().rev() {
        *slot = BASE36[(n % 36) as usize];
        n /= 36;
    }
    out.extend(digits[..width].iter().map(|&c| c as char));
}

/// A new id of `kind`, stamped on `clock` (the app's: its stamps are strictly increasing per app)
/// and drawn from `seeded`'s stream of the kind in a seeded sandbox, else from the OS.
pub fn new_id(clock: &Clock, seeded: Option<&Seeded>, kind: Kind) -> String {
    // One seeded stream per kind: creating an event never shifts the next webhook's id.
    let random = random::id_word(seeded, kind.purpose());
    let (ms, counter) = clock.next_id_stamp(|now_ms, last| advance(last, now_ms, random));
    let mut out = String::with_capacity(kind.prefix().len() + 21);
    out.push_str(kind.prefix());
    out.push('_');
    push_base36(&mut out, ms, 9);
    push_base36(&mut out, counter, 11);
    out
}

/// True when `s` has the shape of an id of `kind`: the prefix, `_`, then 1–64 ASCII letters or digits.
/// Handlers check this before any query, so a malformed id is a plain 404 at no cost.
pub fn is_valid(kind: Kind, s: &str) -> bool {
    match s
        .strip_prefix(kind.prefix())
        .and_then(|rest| rest.strip_prefix('_'))
    {
        Some(body) => {
            !body.is_empty() && body.len() <= 64 && body.bytes().all(|c| c.is_ascii_alphanumeric())
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new id on `clock`, unseeded.
    fn id_on(clock: &Clock, kind: Kind) -> String {
        new_id(clock, None, kind)
    }

    #[test]
    fn ids_are_prefixed_and_ordered() {
        let clock = Clock::system();
        let a = id_on(&clock, Kind::Device);
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = id_on(&clock, Kind::Device);
        assert!(a.starts_with("dev_") && a.len() == 24);
        assert!(a < b);
        assert!(is_valid(Kind::Device, &a));
        assert!(!is_valid(Kind::Ad, &a));
        assert!(!is_valid(Kind::Device, "dev_"));
        assert!(!is_valid(Kind::Device, "dev_ab'--"));
    }

    #[test]
    fn ids_drawn_in_a_row_strictly_increase_even_within_a_millisecond() {
        let clock = Clock::system();
        let mut previous = id_on(&clock, Kind::TokenTransaction);
        for _ in 0..100_000 {
            let next = id_on(&clock, Kind::TokenTransaction);
            assert!(next > previous, "{next} <= {previous}");
            assert_eq!(next.len(), 24);
            previous = next;
        }
    }

    #[test]
    fn ids_from_many_threads_are_unique_and_each_thread_sees_them_increase() {
        let clock = std::sync::Arc::new(Clock::system());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let clock = std::sync::Arc::clone(&clock);
                std::thread::spawn(move || {
                    let ids: Vec<String> =
                        (0..20_000).map(|_| id_on(&clock, Kind::Event)).collect();
                    assert!(ids.windows(2).all(|w| w[0] < w[1]));
                    ids
                })
            })
            .collect();
        let mut all: Vec<String> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        let n = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), n);
    }

    #[test]
    fn the_counter_survives_a_clock_step_back_and_an_overflow() {
        // Same or earlier millisecond: the counter moves on, the millisecond stays.
        assert_eq!(advance((1_000, 5), 1_000, 0), (1_000, 6));
        assert_eq!(advance((1_000, 5), 400, 9), (1_000, 15));
        // A later millisecond restarts the counter in its lower half.
        let (ms, c) = advance((1_000, 5), 1_001, u64::MAX);
        assert_eq!(ms, 1_001);
        assert!(c < COUNTER_SPAN / 2);
        // Overflow: the millisecond moves ahead instead, still in order.
        let last = (1_000, COUNTER_SPAN - 1);
        let next = advance(last, 1_000, 7);
        assert!(next > last && next.1 < COUNTER_SPAN, "{next:?}");
        assert_eq!(COUNTER_SPAN, 36u64.pow(11));
    }

    #[test]
    fn a_typed_id_is_only_made_from_a_well_formed_id() {
        assert_eq!(DeviceId::parse("dev_abc").as_deref(), Some("dev_abc"));
        assert!(DeviceId::parse("ad_abc").is_none());
        assert!(DeviceId::parse("dev_a b").is_none());
        assert!(AdId::generate(&Clock::system(), None).starts_with("ad_"));
        assert_eq!(
            serde_json::to_string(&MediaId::parse("med_1").unwrap()).unwrap(),
            r#""med_1""#
        );
    }

    #[test]
    fn the_schema_of_a_kind_states_its_prefix() {
        assert_eq!(Kind::Company.pattern(), "^cmp_[0-9A-Za-z]{1,64}$");
        assert_eq!(Kind::QrScan.purpose(), "id:qrs");
        assert_eq!(
            Kind::Ad.schema(),
            r#"{"type":"string","pattern":"^ad_[0-9A-Za-z]{1,64}$"}"#
        );
    }
}
