//! Configuration: defaults, then `signage.toml`, then `SIGNAGE_*` environment variables, then flags.
//!
//! Each layer is a [`Layer`] of optional values; [`Settings::resolve`] stacks them so a later layer
//! wins. Every key is documented in `signage.toml.example`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Pretty,
    Json,
}

impl std::str::FromStr for LogFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "pretty" => Ok(LogFormat::Pretty),
            "json" => Ok(LogFormat::Json),
            other => Err(format!(
                "log format must be `pretty` or `json`, not `{other}`"
            )),
        }
    }
}

/// Which clock signs a webhook attempt's `webhook-timestamp` header (`webhooks.timestamps`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WebhookTimestamps {
    /// The wall clock: stock Standard Webhooks verifiers (±5 minutes of their own clock) accept
    /// every delivery, also from a frozen sandbox. The default.
    Wall,
    /// The sandbox clock: deliveries of a frozen sandbox are byte-identical from run to run, and
    /// stock verifiers reject them unless the sandbox clock is near the wall clock.
    Sandbox,
}

impl std::str::FromStr for WebhookTimestamps {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "wall" => Ok(WebhookTimestamps::Wall),
            "sandbox" => Ok(WebhookTimestamps::Sandbox),
            other => Err(format!(
                "webhooks.timestamps must be `wall` or `sandbox`, not `{other}`"
            )),
        }
    }
}

/// The bytes all sandbox snapshots may take together by default (`sandbox.snapshot_budget_bytes`).
pub const DEFAULT_SNAPSHOT_BUDGET_BYTES: u64 = 512 * 1024 * 1024;

/// The largest `mcp.max_batch_messages` accepted: even refused messages cost a short error each.
pub const MAX_BATCH_MESSAGES: usize = 1000;

/// Declares every setting once: its field of [`Settings`] (type, default, documentation), its key
/// in `signage.toml` (and any older name still read) and its `SIGNAGE_*` variables. [`Settings`],
/// its `Default`, [`Layer`], the file and environment readers, the stacking of layers and
/// [`KEYS`] are all made from this one list, so a setting cannot exist in one and not another.
///
/// A row `name: Type = default; "section.key"; "SIGNAGE_VAR";` under `defaults` is a setting with a
/// default; a row `name: Type; …` under `optional` may be unset (`Option<Type>` in [`Settings`] and
/// in [`Layer`]). Alternatives after `|` are older names, read when the first is absent.
macro_rules! settings {
    (
        defaults {$(
            $(#[$meta:meta])*
            $field:ident : $ty:ty = $default:expr ; $($key:literal)|+ ; $($var:literal)|+ ;
        )*}
        optional {$(
            $(#[$ometa:meta])*
            $ofield:ident : $oty:ty ; $($okey:literal)|+ ; $($ovar:literal)|+ ;
        )*}
    ) => {
        /// The resolved configuration the server runs with.
        #[derive(Clone, Debug)]
        pub struct Settings {
            $( $(#[$meta])* pub $field: $ty, )*
            $( $(#[$ometa])* pub $ofield: Option<$oty>, )*
        }

        impl Default for Settings {
            fn default() -> Self {
                Settings {
                    $( $field: $default, )*
                    $( $ofield: None, )*
                }
            }
        }

        /// One layer of configuration; `None` means "not set here".
        #[derive(Clone, Debug, Default)]
        pub struct Layer {
            $( pub $field: Option<$ty>, )*
            $( pub $ofield: Option<$oty>, )*
            /// Only the port of `listen` (`--port`, `SIGNAGE_PORT`); `0` picks a free one.
            pub port: Option<u16>,
        }

        /// Every setting's file key and variables (first the current name, then older ones).
        pub const KEYS: &[Key] = &[
            $( Key { field: stringify!($field), file: &[$($key),+], env: &[$($var),+] }, )*
            $( Key { field: stringify!($ofield), file: &[$($okey),+], env: &[$($ovar),+] }, )*
        ];

        impl Layer {
            /// A layer of the values `source` finds for each setting, given its file keys and
            /// its variables.
            fn read(mut source: impl FnMut(&[&'static str], &[&'static str]) -> Result<Option<Found>, ConfigError>)
                -> Result<Layer, ConfigError>
            {
                Ok(Layer {
                    $( $field: source(&[$($key),+], &[$($var),+])?.map(|f| f.parse()).transpose()?, )*
                    $( $ofield: source(&[$($okey),+], &[$($ovar),+])?.map(|f| f.parse()).transpose()?, )*
                    port: None,
                })
            }
        }

        impl Settings {
            /// Stacks the layers over the defaults; later layers win.
            pub fn resolve(layers: &[Layer]) -> Result<Settings, ConfigError> {
                let mut s = Settings::default();
                for l in layers {
                    $( if let Some(v) = &l.$field { s.$field = v.clone(); } )*
                    $( if let Some(v) = &l.$ofield { s.$ofield = Some(v.clone()); } )*
                    if let Some(port) = l.port {
                        s.listen.set_port(port);
                    }
                }
                s.settle(layers)?;
                Ok(s)
            }
        }
    };
}

settings! {
    defaults {
        listen: SocketAddr = SocketAddr::from(([127, 0, 0, 1], 8080)); "server.listen"; "SIGNAGE_LISTEN";
        /// A file path, or `:memory:` for a throw-away database.
        database: String = "./signage.db".into(); "database.path"; "SIGNAGE_DATABASE";
        load_fixtures: bool = true; "database.load_fixtures"; "SIGNAGE_LOAD_FIXTURES";
        log_format: LogFormat = LogFormat::Pretty; "log.format"; "SIGNAGE_LOG_FORMAT";
        log_level: String = "info".into(); "log.level"; "SIGNAGE_LOG_LEVEL";
        max_body_bytes: usize = 8 * 1024 * 1024; "server.max_body_bytes"; "SIGNAGE_MAX_BODY_BYTES";
        header_read_timeout_secs: u64 = 10; "server.header_read_timeout_secs"; "SIGNAGE_HEADER_READ_TIMEOUT_SECS";
        max_connections: usize = 512; "server.max_connections"; "SIGNAGE_MAX_CONNECTIONS";
        /// Seconds a client has to send a whole request body once its headers are in (408 after).
        body_read_timeout_secs: u64 = 30; "server.body_read_timeout_secs"; "SIGNAGE_BODY_READ_TIMEOUT_SECS";
        /// Seconds a connection may stay silent (no bytes either way, no request running) before it is
        /// closed.
        idle_timeout_secs: u64 = 10; "server.idle_timeout_secs"; "SIGNAGE_IDLE_TIMEOUT_SECS";
        /// A connection that has not authenticated gets this long (milliseconds) for each request
        /// head (from its accept, or from its previous answer) and as long again for the body of a
        /// request that needs no credential; past it, the connection is closed.
        unauthenticated_timeout_millis: u64 = 3000; "server.unauthenticated_timeout_millis"; "SIGNAGE_UNAUTHENTICATED_TIMEOUT_MILLIS";
        /// The largest body a request without a credential may send (login, the sink): 413 above it.
        unauthenticated_max_body_bytes: usize = 256 * 1024; "server.unauthenticated_max_body_bytes"; "SIGNAGE_UNAUTHENTICATED_MAX_BODY_BYTES";
        /// Connections not yet authenticated one client address may hold; one more closes that
        /// address's oldest one that is not running a request.
        max_unauthenticated_per_address: usize = 32; "server.max_unauthenticated_per_address"; "SIGNAGE_MAX_UNAUTHENTICATED_PER_ADDRESS";
        /// Failed authentications one client address may make per minute (the bucket holds as many);
        /// past it, 429 `too_many_failed_authentications`. 0 turns the limit off.
        auth_failures_per_minute: u32 = 300; "server.auth_failures_per_minute"; "SIGNAGE_AUTH_FAILURES_PER_MINUTE";
        /// Tokens added per second to each credential's bucket; 0 turns rate limiting off.
        rate_limit_per_second: f64 = 50.0; "server.rate_limit_per_second"; "SIGNAGE_RATE_LIMIT_PER_SECOND";
        /// Bucket size: the most requests a credential can make at once; 0 turns rate limiting off.
        rate_limit_burst: u32 = 100; "server.rate_limit_burst"; "SIGNAGE_RATE_LIMIT_BURST";
        /// Names besides loopback ones and the public base URL's host that may appear as `Host`, or
        /// as the host of a browser's `Origin` ([`crate::http::site`]).
        allowed_hosts: Vec<String> = vec![]; "server.allowed_hosts"; "SIGNAGE_ALLOWED_HOSTS";
        mcp_allowed_origins: Vec<String> = vec![]; "mcp.allowed_origins"; "SIGNAGE_MCP_ALLOWED_ORIGINS";
        /// Messages one MCP batch may hold; a larger batch is refused whole.
        mcp_max_batch_messages: usize = 20; "mcp.max_batch_messages"; "SIGNAGE_MCP_MAX_BATCH_MESSAGES";
        /// Bytes of JSON-RPC replies one MCP POST may return.
        mcp_max_response_bytes: usize = 4 * 1024 * 1024; "mcp.max_response_bytes"; "SIGNAGE_MCP_MAX_RESPONSE_BYTES";
        /// Bytes of rendered read-tool results kept for answers seen again (0: none kept).
        mcp_result_cache_bytes: usize = 512 * 1024; "mcp.result_cache_bytes"; "SIGNAGE_MCP_RESULT_CACHE_BYTES";
        login_enabled: bool = true; "auth.login_enabled"; "SIGNAGE_LOGIN_ENABLED";
        login_token_ttl_secs: u64 = 3600; "auth.login_token_ttl_secs"; "SIGNAGE_LOGIN_TOKEN_TTL_SECS";
        pending_change_ttl_secs: u64 = 600; "mcp.pending_change_ttl_secs"; "SIGNAGE_PENDING_CHANGE_TTL_SECS";
        /// How long the link to a secret made through MCP (a rotated webhook secret) works, once.
        mcp_secret_reveal_ttl_secs: u64 = 900; "mcp.secret_reveal_ttl_secs"; "SIGNAGE_MCP_SECRET_REVEAL_TTL_SECS";
        /// Seconds of silence after which a device counts as offline.
        device_offline_after_secs: i64 = 300; "devices.offline_after_secs"; "SIGNAGE_DEVICE_OFFLINE_AFTER_SECS";
        /// Webhook URLs may target loopback and private ranges ([`crate::outbound`]).
        webhook_allow_private_targets: bool = true; "webhooks.allow_private_targets"; "SIGNAGE_WEBHOOKS_ALLOW_PRIVATE_TARGETS";
        /// Seconds between a failed webhook attempt and the next, one entry per retry; after the last
        /// retry fails, the delivery is marked failed.
        webhook_retry_schedule: Vec<u64> = vec![5, 300, 1800, 7200, 18_000, 36_000, 36_000]; "webhooks.retry_schedule_secs"; "SIGNAGE_WEBHOOKS_RETRY_SCHEDULE_SECS";
        /// A webhook whose deliveries keep failing this long (seconds since the first failure after a
        /// success) is disabled, with a `webhook.disabled` event.
        webhook_disable_after_secs: i64 = 5 * 86_400; "webhooks.disable_after_secs"; "SIGNAGE_WEBHOOKS_DISABLE_AFTER_SECS";
        /// The time one delivery attempt may take: connect, TLS, request and response (milliseconds).
        webhook_timeout_millis: u64 = 10_000; "webhooks.timeout_millis"; "SIGNAGE_WEBHOOKS_TIMEOUT_MILLIS";
        /// After `rotate-secret`, how long deliveries are also signed with the previous secret.
        webhook_rotation_grace_secs: i64 = 86_400; "webhooks.rotation_grace_secs"; "SIGNAGE_WEBHOOKS_ROTATION_GRACE_SECS";
        /// Which clock signs the `webhook-timestamp` header.
        webhook_timestamps: WebhookTimestamps = WebhookTimestamps::Wall; "webhooks.timestamps"; "SIGNAGE_WEBHOOKS_TIMESTAMPS";
        /// The bytes all sandbox snapshots may take on disk together.
        sandbox_snapshot_budget_bytes: u64 = DEFAULT_SNAPSHOT_BUDGET_BYTES; "sandbox.snapshot_budget_bytes"; "SIGNAGE_SANDBOX_SNAPSHOT_BUDGET_BYTES";
        /// Start with the clock frozen at this instant (Unix seconds); `None` follows the system clock.
        sandbox_clock: Option<i64> = None; "sandbox.clock"; "SIGNAGE_CLOCK";
        /// The `/_sandbox/*` control routes exist (404 when off).
        sandbox_control: bool = true; "sandbox.control"; "SIGNAGE_SANDBOX_CONTROL";
        /// The seeded screens heartbeat and play on their own (the simulated fleet).
        sandbox_simulate_fleet: bool = true; "sandbox.simulate_fleet"; "SIGNAGE_SANDBOX_SIMULATE_FLEET";
        /// Authenticated requests may ask for a fault themselves (`Prefer: code=503`, `delay=250`).
        sandbox_allow_prefer_faults: bool = true; "sandbox.allow_prefer_faults"; "SIGNAGE_SANDBOX_ALLOW_PREFER_FAULTS";
        /// New play rows a run of the timeline (an advance) writes at most in one transaction: it
        /// commits at the first step past it (and at any step a request's write waits), so requests'
        /// writes wait for a slice, not the whole run; 0 writes the whole run in one transaction.
        sandbox_advance_slice_rows: u64 = 1000; "sandbox.advance_slice_rows"; "SIGNAGE_SANDBOX_ADVANCE_SLICE_ROWS";
        /// On the system clock, how often (milliseconds) the sandbox runs what has fallen due.
        sandbox_tick_millis: u64 = 1000; "sandbox.tick_millis"; "SIGNAGE_SANDBOX_TICK_MILLIS";
        /// The demo console (`/console`) and the browser player (`/player/{id}`) are served.
        console_enabled: bool = true; "console.enabled"; "SIGNAGE_CONSOLE_ENABLED";
        /// Requests one account (all its keys and users together) may have held back by an injected
        /// delay at once.
        // Issue 31 made the bound per account; the old names are still read.
        sandbox_max_delayed_per_account: usize = 8; "sandbox.max_delayed_per_account" | "sandbox.max_delayed_per_credential"; "SIGNAGE_SANDBOX_MAX_DELAYED_PER_ACCOUNT" | "SIGNAGE_SANDBOX_MAX_DELAYED_PER_CREDENTIAL";
        /// Scans kept one by one per QR code; later scans are only counted (per minute and agent class).
        scan_detail_per_code: u64 = 1000; "scans.detail_per_code"; "SIGNAGE_SCANS_DETAIL_PER_CODE";
        /// Scans one client address may make per minute on `/q/{code}`; 0 turns the limit off.
        scan_rate_limit_per_minute: u32 = 120; "scans.rate_limit_per_minute"; "SIGNAGE_SCANS_RATE_LIMIT_PER_MINUTE";
        /// Bytes the write-ahead log may keep after a checkpoint (`journal_size_limit`); past it, the
        /// tick checkpoints and truncates it.
        wal_limit_bytes: u64 = 64 * 1024 * 1024; "database.wal_limit_bytes"; "SIGNAGE_DATABASE_WAL_LIMIT_BYTES";
        /// Days history is kept (events, audit, finished deliveries, scan detail, playback detail).
        retention_max_age_days: u64 = 90; "retention.max_age_days"; "SIGNAGE_RETENTION_MAX_AGE_DAYS";
        /// Rows of each history table kept per account (per company for company-owned history).
        retention_max_rows_per_account: u64 = 100_000; "retention.max_rows_per_account"; "SIGNAGE_RETENTION_MAX_ROWS_PER_ACCOUNT";
        /// Hours an idempotency record is kept (replays of older keys run anew).
        retention_idempotency_hours: u64 = 24; "retention.idempotency_hours"; "SIGNAGE_RETENTION_IDEMPOTENCY_HOURS";
        /// Days after which playbacks are rolled up: deleted, their sums kept in the daily roll-up per device and ad.
        retention_playback_rollup_days: u64 = 7; "retention.playback_rollup_days"; "SIGNAGE_RETENTION_PLAYBACK_ROLLUP_DAYS";
        /// Days the daily roll-up of playbacks is kept.
        retention_daily_totals_days: u64 = 400; "retention.daily_totals_days"; "SIGNAGE_RETENTION_DAILY_TOTALS_DAYS";
        /// Rows one pruning transaction deletes at most (small batches never block requests long).
        retention_batch_rows: u64 = 500; "retention.batch_rows"; "SIGNAGE_RETENTION_BATCH_ROWS";
        /// Webhooks one company may have (422 `webhook_limit` beyond).
        webhook_max_per_company: usize = 16; "webhooks.max_per_company"; "SIGNAGE_WEBHOOKS_MAX_PER_COMPANY";
        /// The time a webhook target's name may take to resolve (milliseconds).
        webhook_dns_timeout_millis: u64 = 2000; "webhooks.dns_timeout_millis"; "SIGNAGE_WEBHOOKS_DNS_TIMEOUT_MILLIS";
        /// Seconds a name that failed to resolve is remembered as failing (negative cache).
        webhook_dns_negative_cache_secs: u64 = 60; "webhooks.dns_negative_cache_secs"; "SIGNAGE_WEBHOOKS_DNS_NEGATIVE_CACHE_SECS";
        /// Bytes of media one company may store (422 `media_quota_exceeded` beyond).
        media_quota_bytes_per_company: u64 = 100 * 1024 * 1024; "media.quota_bytes_per_company"; "SIGNAGE_MEDIA_QUOTA_BYTES_PER_COMPANY";
        /// Every request is journaled (`sandbox.journal`); off, the journal's reads still answer from
        /// what it holds, and nothing new is recorded (what the benchmark compares against).
        journal: bool = true; "sandbox.journal"; "SIGNAGE_JOURNAL";
        /// The request journal keeps at most this many entries per account (the newest).
        journal_max_entries: usize = 10_000; "sandbox.journal_max_entries"; "SIGNAGE_JOURNAL_MAX_ENTRIES";
        /// The request journal forgets entries older than this (wall-clock seconds).
        journal_max_age_secs: u64 = 7 * 86_400; "sandbox.journal_max_age_secs"; "SIGNAGE_JOURNAL_MAX_AGE_SECS";
    }
    optional {
        /// The base of the short URLs that QR codes encode (`{base}/q/{code}`), without a trailing
        /// slash. Unset: derived from the bound address at start-up ([`public_base_url_for`]).
        public_base_url: String; "server.public_base_url"; "SIGNAGE_PUBLIC_BASE_URL";
        /// When unset, a secret is generated once and stored in the database.
        jwt_secret: String; "auth.jwt_secret"; "SIGNAGE_JWT_SECRET";
        /// PEM certificates trusted for `https` webhook targets, besides the built-in roots.
        webhook_ca_file: String; "webhooks.ca_file"; "SIGNAGE_WEBHOOKS_CA_FILE";
        /// Seed of the generator behind ids, secrets and request ids; `None` draws from the OS.
        sandbox_seed: u64; "sandbox.seed"; "SIGNAGE_SEED";
    }
}

/// One setting's names outside the code: its file keys and its variables, the current name
/// first, then older ones still read.
#[derive(Debug)]
pub struct Key {
    pub field: &'static str,
    pub file: &'static [&'static str],
    pub env: &'static [&'static str],
}

/// A value found for a setting, and where: parsed into the setting's type by [`Setting`].
struct Found {
    raw: Raw,
    origin: Origin,
}

enum Raw {
    Toml(toml::Value),
    Text(String),
}

enum Origin {
    File { path: PathBuf, key: &'static str },
    Env { name: &'static str },
}

impl Found {
    fn parse<T: Setting>(self) -> Result<T, ConfigError> {
        let parsed = match self.raw {
            Raw::Toml(v) => T::from_toml(v),
            Raw::Text(t) => T::from_env(&t),
        };
        parsed.map_err(|message| match self.origin {
            Origin::File { path, key } => ConfigError::Parse {
                path,
                message: format!("{key}: {message}"),
            },
            Origin::Env { name } => ConfigError::Invalid {
                name: name.into(),
                message,
            },
        })
    }
}

/// How a setting's type is read from a TOML value and from an environment variable.
trait Setting: Sized {
    fn from_toml(value: toml::Value) -> Result<Self, String>;
    fn from_env(text: &str) -> Result<Self, String>;
}

/// Types serde reads from TOML and `FromStr` from a variable (surrounding blanks ignored).
macro_rules! plain_setting {
    ($($t:ty),*) => {$(
        impl Setting for $t {
            fn from_toml(value: toml::Value) -> Result<Self, String> {
                value.try_into().map_err(|e: toml::de::Error| e.to_string())
            }
            fn from_env(text: &str) -> Result<Self, String> {
                text.trim().parse().map_err(|e: <$t as std::str::FromStr>::Err| e.to_string())
            }
        }
    )*};
}
plain_setting!(SocketAddr, bool, u16, u32, u64, usize, i64, f64);

/// Words read as they are, in a file and in a variable.
impl Setting for String {
    fn from_toml(value: toml::Value) -> Result<Self, String> {
        value.try_into().map_err(|e: toml::de::Error| e.to_string())
    }
    fn from_env(text: &str) -> Result<Self, String> {
        Ok(text.to_string())
    }
}

/// Named choices: a string in a file, the same word in a variable.
macro_rules! word_setting {
    ($($t:ty),*) => {$(
        impl Setting for $t {
            fn from_toml(value: toml::Value) -> Result<Self, String> {
                String::from_toml(value)?.parse()
            }
            fn from_env(text: &str) -> Result<Self, String> {
                text.trim().parse()
            }
        }
    )*};
}
word_setting!(LogFormat, WebhookTimestamps);

/// A list: an array in a file, comma-separated in a variable (empty items skipped).
fn comma_separated(text: &str) -> impl Iterator<Item = &str> {
    text.split(',').map(str::trim).filter(|s| !s.is_empty())
}

impl Setting for Vec<String> {
    fn from_toml(value: toml::Value) -> Result<Self, String> {
        value.try_into().map_err(|e: toml::de::Error| e.to_string())
    }
    fn from_env(text: &str) -> Result<Self, String> {
        Ok(comma_separated(text).map(String::from).collect())
    }
}

impl Setting for Vec<u64> {
    fn from_toml(value: toml::Value) -> Result<Self, String> {
        value.try_into().map_err(|e: toml::de::Error| e.to_string())
    }
    fn from_env(text: &str) -> Result<Self, String> {
        comma_separated(text)
            .map(|s| s.parse::<u64>().map_err(|e| e.to_string()))
            .collect()
    }
}

/// The start of the sandbox clock (`sandbox.clock`): an RFC 3339 instant, or `system` (`None`).
impl Setting for Option<i64> {
    fn from_toml(value: toml::Value) -> Result<Self, String> {
        parse_clock(&String::from_toml(value)?)
    }
    fn from_env(text: &str) -> Result<Self, String> {
        parse_clock(text)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("invalid value for {name}: {message}")]
    Invalid { name: String, message: String },
}

/// An instant for `sandbox.clock`: RFC 3339, or `system` for the system clock.
pub fn parse_clock(value: &str) -> Result<Option<i64>, String> {
    if value == "system" {
        return Ok(None);
    }
    crate::time::parse_rfc3339(value).map(Some).ok_or_else(|| {
        format!("`{value}` is not an RFC 3339 instant (2026-03-02T09:00:00Z) or `system`")
    })
}

impl Layer {
    /// Reads a TOML file. Unknown keys are an error, so a typo never silently falls back to a default.
    pub fn from_file(path: &Path) -> Result<Layer, ConfigError> {
        let failed = |message: String| ConfigError::Parse {
            path: path.to_owned(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        let mut table: toml::Table = toml::from_str(&text).map_err(|e| failed(e.to_string()))?;
        let layer = Layer::read(|keys, _| {
            let mut found = keys.iter().filter_map(|key| {
                let (section, name) = key.split_once('.')?;
                let value = table.get_mut(section)?.as_table_mut()?.remove(name)?;
                Some((*key, value))
            });
            let first = found.next();
            if let Some((other, _)) = found.next() {
                return Err(failed(format!(
                    "set only one of `{}` and `{other}`",
                    keys[0]
                )));
            }
            Ok(first.map(|(key, value)| Found {
                raw: Raw::Toml(value),
                origin: Origin::File {
                    path: path.to_owned(),
                    key,
                },
            }))
        })?;
        // Whatever no setting took is a key nobody reads.
        for (section, value) in &table {
            let unknown = match value.as_table() {
                Some(rest) => rest.keys().next().map(|k| format!("{section}.{k}")),
                None => Some(section.clone()),
            };
            if let Some(key) = unknown {
                return Err(failed(format!("unknown key `{key}`")));
            }
        }
        Ok(layer)
    }

    /// Reads `SIGNAGE_*` variables through `get` (the process environment in production).
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Layer, ConfigError> {
        let found = |vars: &[&'static str]| {
            vars.iter().find_map(|name| {
                get(name).map(|text| Found {
                    raw: Raw::Text(text),
                    origin: Origin::Env { name },
                })
            })
        };
        let mut layer = Layer::read(|_, vars| Ok(found(vars)))?;
        layer.port = found(&["SIGNAGE_PORT"]).map(Found::parse).transpose()?;
        Ok(layer)
    }
}

impl Settings {
    /// Rate limiting is on unless the rate or the burst is 0.
    pub fn rate_limit_enabled(&self) -> bool {
        self.rate_limit_per_second > 0.0 && self.rate_limit_burst > 0
    }

    /// What follows from the stacked layers: a base URL without its trailing slash, a public body
    /// limit nobody set following a smaller overall limit down; then the checks.
    fn settle(&mut self, layers: &[Layer]) -> Result<(), ConfigError> {
        if let Some(base) = &mut self.public_base_url {
            *base = base.trim_end_matches('/').to_string();
        }
        // Lowering `max_body_bytes` alone is a valid configuration.
        if layers
            .iter()
            .all(|l| l.unauthenticated_max_body_bytes.is_none())
        {
            self.unauthenticated_max_body_bytes =
                self.unauthenticated_max_body_bytes.min(self.max_body_bytes);
        }
        self.validate()
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |name: &str, message: &str| ConfigError::Invalid {
            name: name.into(),
            message: message.into(),
        };
        if self.max_body_bytes < 1024 {
            return Err(invalid("max_body_bytes", "must be at least 1024"));
        }
        if self.header_read_timeout_secs == 0 {
            return Err(invalid("header_read_timeout_secs", "must be at least 1"));
        }
        if self.max_connections == 0 {
            return Err(invalid("max_connections", "must be at least 1"));
        }
        if self.body_read_timeout_secs == 0 {
            return Err(invalid("body_read_timeout_secs", "must be at least 1"));
        }
        if self.idle_timeout_secs == 0 {
            return Err(invalid("idle_timeout_secs", "must be at least 1"));
        }
        if !(100..=60_000).contains(&self.unauthenticated_timeout_millis) {
            return Err(invalid(
                "server.unauthenticated_timeout_millis",
                "must be between 100 and 60000",
            ));
        }
        if self.unauthenticated_max_body_bytes < 1024
            || self.unauthenticated_max_body_bytes > self.max_body_bytes
        {
            return Err(invalid(
                "server.unauthenticated_max_body_bytes",
                "must be at least 1024 and at most max_body_bytes",
            ));
        }
        if self.max_unauthenticated_per_address == 0 {
            return Err(invalid(
                "server.max_unauthenticated_per_address",
                "must be at least 1",
            ));
        }
        if !self.rate_limit_per_second.is_finite() || self.rate_limit_per_second < 0.0 {
            return Err(invalid(
                "rate_limit_per_second",
                "must be a number, 0 (off) or more",
            ));
        }
        if !(1..=MAX_BATCH_MESSAGES).contains(&self.mcp_max_batch_messages) {
            return Err(invalid(
                "mcp.max_batch_messages",
                &format!("must be between 1 and {MAX_BATCH_MESSAGES}"),
            ));
        }
        if self.mcp_max_response_bytes < 1024 {
            return Err(invalid("mcp.max_response_bytes", "must be at least 1024"));
        }
        if self.mcp_result_cache_bytes > 64 * 1024 * 1024 {
            return Err(invalid(
                "mcp.result_cache_bytes",
                "must be at most 67108864 (64 MiB)",
            ));
        }
        if !(1..=3600).contains(&self.mcp_secret_reveal_ttl_secs) {
            return Err(invalid(
                "mcp.secret_reveal_ttl_secs",
                "must be between 1 and 3600",
            ));
        }
        if self.login_token_ttl_secs < 60 || self.login_token_ttl_secs > 86_400 {
            return Err(invalid(
                "login_token_ttl_secs",
                "must be between 60 and 86400",
            ));
        }
        if !(1..=1_000_000).contains(&self.journal_max_entries) {
            return Err(invalid(
                "sandbox.journal_max_entries",
                "must be between 1 and 1000000",
            ));
        }
        if !(60..=366 * 86_400).contains(&self.journal_max_age_secs) {
            return Err(invalid(
                "sandbox.journal_max_age_secs",
                "must be between 60 and 31622400 (366 days)",
            ));
        }
        if !(10..=60_000).contains(&self.sandbox_tick_millis) {
            return Err(invalid(
                "sandbox.tick_millis",
                "must be between 10 and 60000",
            ));
        }
        if self.webhook_retry_schedule.len() > 20
            || self.webhook_retry_schedule.iter().any(|&s| s > 7 * 86_400)
        {
            return Err(invalid(
                "webhooks.retry_schedule_secs",
                "at most 20 retries, each at most 604800 seconds (a week) after the previous attempt",
            ));
        }
        if self.webhook_disable_after_secs < 1 {
            return Err(invalid("webhooks.disable_after_secs", "must be at least 1"));
        }
        if !(100..=60_000).contains(&self.webhook_timeout_millis) {
            return Err(invalid(
                "webhooks.timeout_millis",
                "must be between 100 and 60000",
            ));
        }
        if !(0..=30 * 86_400).contains(&self.webhook_rotation_grace_secs) {
            return Err(invalid(
                "webhooks.rotation_grace_secs",
                "must be between 0 and 2592000 (30 days)",
            ));
        }
        if let Some(path) = &self.webhook_ca_file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| invalid("webhooks.ca_file", &format!("cannot read {path}: {e}")))?;
            if !text.contains("-----BEGIN CERTIFICATE-----") {
                return Err(invalid(
                    "webhooks.ca_file",
                    &format!("{path} holds no PEM certificate"),
                ));
            }
        }
        if self.pending_change_ttl_secs == 0 {
            return Err(invalid("pending_change_ttl_secs", "must be at least 1"));
        }
        if let Some(secret) = &self.jwt_secret {
            if secret.len() < 32 {
                return Err(invalid(
                    "jwt_secret",
                    "must be at least 32 bytes (256 bits)",
                ));
            }
        }
        if let Some(base) = &self.public_base_url {
            let bare = !base.contains(['?', '#']);
            if !bare || !crate::validate::is_url(base, crate::validate::UrlSchemes::Web) {
                return Err(invalid(
                    "server.public_base_url",
                    "must be an http(s) URL with a host (and optional port and path), without query or fragment",
                ));
            }
        }
        if self.sandbox_max_delayed_per_account == 0 {
            return Err(invalid(
                "sandbox.max_delayed_per_account",
                "must be at least 1",
            ));
        }
        if self.wal_limit_bytes < 1024 * 1024 {
            return Err(invalid(
                "database.wal_limit_bytes",
                "must be at least 1048576 (1 MiB)",
            ));
        }
        if self.retention_max_age_days == 0
            || self.retention_max_rows_per_account < 100
            || self.retention_idempotency_hours == 0
            || self.retention_batch_rows == 0
        {
            return Err(invalid(
                "retention",
                "max_age_days, idempotency_hours and batch_rows must be at least 1, max_rows_per_account at least 100",
            ));
        }
        if self.retention_playback_rollup_days == 0
            || self.retention_daily_totals_days < self.retention_playback_rollup_days
        {
            return Err(invalid(
                "retention.playback_rollup_days",
                "must be at least 1, and daily_totals_days at least as long",
            ));
        }
        if !(1..=1000).contains(&self.webhook_max_per_company) {
            return Err(invalid(
                "webhooks.max_per_company",
                "must be between 1 and 1000",
            ));
        }
        if !(10..=30_000).contains(&self.webhook_dns_timeout_millis) {
            return Err(invalid(
                "webhooks.dns_timeout_millis",
                "must be between 10 and 30000",
            ));
        }
        if self.database.is_empty() {
            return Err(invalid("database", "must not be empty"));
        }
        Ok(())
    }
}

/// The base URL short links use when `server.public_base_url` is unset: `http://` and the bound
/// address, with an unspecified address (`0.0.0.0`, `::`) named `localhost`.
pub fn public_base_url_for(bound: SocketAddr) -> String {
    if bound.ip().is_unspecified() {
        format!("http://localhost:{}", bound.port())
    } else {
        format!("http://{bound}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_layers_win() {
        let file = Layer {
            database: Some("file.db".into()),
            max_connections: Some(10),
            ..Layer::default()
        };
        let env = Layer::from_env(|k| match k {
            "SIGNAGE_DATABASE" => Some("env.db".into()),
            "SIGNAGE_MCP_ALLOWED_ORIGINS" => Some("http://a, http://b".into()),
            _ => None,
        })
        .unwrap();
        let flags = Layer {
            port: Some(0),
            ..Layer::default()
        };
        let s = Settings::resolve(&[file, env, flags]).unwrap();
        assert_eq!(s.database, "env.db");
        assert_eq!(s.max_connections, 10);
        assert_eq!(s.listen.port(), 0);
        assert_eq!(s.mcp_allowed_origins, vec!["http://a", "http://b"]);
    }

    #[test]
    fn public_base_url_is_checked_and_derived() {
        let with = |v: &str| {
            Settings::resolve(&[Layer {
                public_base_url: Some(v.into()),
                ..Layer::default()
            }])
        };
        assert_eq!(
            with("http://192.168.1.20:8080/").unwrap().public_base_url,
            Some("http://192.168.1.20:8080".into())
        );
        for bad in [
            "ftp://x.example",
            "http://x.example/?a=1",
            "x.example",
            "http://a@b",
        ] {
            assert!(with(bad).is_err(), "{bad}");
        }
        let any: SocketAddr = "0.0.0.0:9000".parse().unwrap();
        assert_eq!(public_base_url_for(any), "http://localhost:9000");
        let v6: SocketAddr = "[::1]:80".parse().unwrap();
        assert_eq!(public_base_url_for(v6), "http://[::1]:80");
    }

    #[test]
    fn an_older_name_is_still_read_and_two_names_at_once_are_refused() {
        let dir = std::env::temp_dir().join(format!("signage-cfg-alias-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("old.toml");
        std::fs::write(&path, "[sandbox]\nmax_delayed_per_credential = 3\n").unwrap();
        let layer = Layer::from_file(&path).unwrap();
        assert_eq!(layer.sandbox_max_delayed_per_account, Some(3));
        std::fs::write(
            &path,
            "[sandbox]\nmax_delayed_per_credential = 3\nmax_delayed_per_account = 4\n",
        )
        .unwrap();
        let err = Layer::from_file(&path).unwrap_err().to_string();
        assert!(err.contains("set only one of"), "{err}");
        std::fs::write(&path, "[sandbox]\nclock = \"yesterday\"\n").unwrap();
        let err = Layer::from_file(&path).unwrap_err().to_string();
        assert!(err.contains("sandbox.clock: `yesterday`"), "{err}");
        std::fs::write(&path, "[nowhere]\nthing = 1\n").unwrap();
        let err = Layer::from_file(&path).unwrap_err().to_string();
        assert!(err.contains("unknown key `nowhere.thing`"), "{err}");
        std::fs::write(&path, "[server]\nrate_limit_per_second = 5\n").unwrap();
        let layer = Layer::from_file(&path).unwrap();
        assert_eq!(layer.rate_limit_per_second, Some(5.0));
        let _ = std::fs::remove_dir_all(&dir);
        let env = Layer::from_env(|k| {
            (k == "SIGNAGE_SANDBOX_MAX_DELAYED_PER_CREDENTIAL").then(|| "5".into())
        })
        .unwrap();
        assert_eq!(env.sandbox_max_delayed_per_account, Some(5));
        let env = Layer::from_env(|k| match k {
            "SIGNAGE_WEBHOOKS_RETRY_SCHEDULE_SECS" => Some("1, 2,,3".into()),
            "SIGNAGE_PORT" => Some(" 9 ".into()),
            "SIGNAGE_CLOCK" => Some("system".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(env.webhook_retry_schedule, Some(vec![1, 2, 3]));
        assert_eq!(env.port, Some(9));
        assert_eq!(env.sandbox_clock, Some(None));
    }

    #[test]
    fn bad_env_value_is_an_error() {
        let err = Layer::from_env(|k| (k == "SIGNAGE_MAX_CONNECTIONS").then(|| "many".into()));
        assert!(err.is_err());
    }

    #[test]
    fn a_public_body_limit_nobody_set_follows_a_lowered_overall_limit() {
        let lowered = Layer {
            max_body_bytes: Some(4096),
            ..Layer::default()
        };
        let s = Settings::resolve(std::slice::from_ref(&lowered)).unwrap();
        assert_eq!(s.unauthenticated_max_body_bytes, 4096);
        // Set explicitly above the overall limit, it is still refused.
        let wider = Layer {
            unauthenticated_max_body_bytes: Some(8192),
            ..lowered
        };
        assert!(Settings::resolve(&[wider]).is_err());
        // Left alone, the default stands.
        let s = Settings::resolve(&[]).unwrap();
        assert_eq!(s.unauthenticated_max_body_bytes, 256 * 1024);
    }
}
