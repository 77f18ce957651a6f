//! Configuration: defaults, then `signage.toml`, then `SIGNAGE_*` environment variables, then flags.
//!
//! Each layer is a [`Layer`] of optional values; [`Settings::resolve`] stacks them so a later layer
//! wins. Every key is documented in `signage.toml.example`.

use serde::Deserialize;
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

/// The resolved configuration the server runs with.
#[derive(Clone, Debug)]
pub struct Settings {
    pub listen: SocketAddr,
    /// The base of the short URLs that QR codes encode (`{base}/q/{code}`), without a trailing
    /// slash. Unset: derived from the bound address at start-up ([`public_base_url_for`]).
    pub public_base_url: Option<String>,
    /// A file path, or `:memory:` for a throw-away database.
    pub database: String,
    pub load_fixtures: bool,
    pub log_format: LogFormat,
    pub log_level: String,
    pub max_body_bytes: usize,
    pub header_read_timeout_secs: u64,
    pub max_connections: usize,
    /// Seconds a client has to send a whole request body once its headers are in (408 after).
    pub body_read_timeout_secs: u64,
    /// Seconds a connection may stay silent (no bytes either way, no request running) before it is
    /// closed.
    pub idle_timeout_secs: u64,
    /// A connection that has not authenticated gets this long (milliseconds) for each request
    /// head (from its accept, or from its previous answer) and as long again for the body of a
    /// request that needs no credential; past it, the connection is closed.
    pub unauthenticated_timeout_millis: u64,
    /// The largest body a request without a credential may send (login, the sink): 413 above it.
    pub unauthenticated_max_body_bytes: usize,
    /// Connections not yet authenticated one client address may hold; one more closes that
    /// address's oldest one that is not running a request.
    pub max_unauthenticated_per_address: usize,
    /// Failed authentications one client address may make per minute (the bucket holds as many);
    /// past it, 429 `too_many_failed_authentications`. 0 turns the limit off.
    pub auth_failures_per_minute: u32,
    /// Tokens added per second to each credential's bucket; 0 turns rate limiting off.
    pub rate_limit_per_second: f64,
    /// Bucket size: the most requests a credential can make at once; 0 turns rate limiting off.
    pub rate_limit_burst: u32,
    pub mcp_allowed_origins: Vec<String>,
    /// Messages one MCP batch may hold; a larger batch is refused whole.
    pub mcp_max_batch_messages: usize,
    /// Bytes of JSON-RPC replies one MCP POST may return.
    pub mcp_max_response_bytes: usize,
    /// Bytes of rendered read-tool results kept for answers seen again (0: none kept).
    pub mcp_result_cache_bytes: usize,
    pub login_enabled: bool,
    pub login_token_ttl_secs: u64,
    /// When unset, a secret is generated once and stored in the database.
    pub jwt_secret: Option<String>,
    pub pending_change_ttl_secs: u64,
    /// Seconds of silence after which a device counts as offline.
    pub device_offline_after_secs: i64,
    /// Webhook URLs may target loopback and private ranges ([`crate::outbound`]).
    pub webhook_allow_private_targets: bool,
    /// Seconds between a failed webhook attempt and the next, one entry per retry; after the last
    /// retry fails, the delivery is marked failed.
    pub webhook_retry_schedule: Vec<u64>,
    /// A webhook whose deliveries keep failing this long (seconds since the first failure after a
    /// success) is disabled, with a `webhook.disabled` event.
    pub webhook_disable_after_secs: i64,
    /// The time one delivery attempt may take: connect, TLS, request and response (milliseconds).
    pub webhook_timeout_millis: u64,
    /// After `rotate-secret`, how long deliveries are also signed with the previous secret.
    pub webhook_rotation_grace_secs: i64,
    /// PEM certificates trusted for `https` webhook targets, besides the built-in roots.
    pub webhook_ca_file: Option<String>,
    /// Which clock signs the `webhook-timestamp` header.
    pub webhook_timestamps: WebhookTimestamps,
    /// The bytes all sandbox snapshots may take on disk together.
    pub sandbox_snapshot_budget_bytes: u64,
    /// Start with the clock frozen at this instant (Unix seconds); `None` follows the system clock.
    pub sandbox_clock: Option<i64>,
    /// Seed of the generator behind ids, secrets and request ids; `None` draws from the OS.
    pub sandbox_seed: Option<u64>,
    /// The `/_sandbox/*` control routes exist (404 when off).
    pub sandbox_control: bool,
    /// The seeded screens heartbeat and play on their own (the simulated fleet).
    pub sandbox_simulate_fleet: bool,
    /// Authenticated requests may ask for a fault themselves (`Prefer: code=503`, `delay=250`).
    pub sandbox_allow_prefer_faults: bool,
    /// On the system clock, how often (milliseconds) the sandbox runs what has fallen due.
    pub sandbox_tick_millis: u64,
    /// The demo console (`/console`) and the browser player (`/player/{id}`) are served.
    pub console_enabled: bool,
    /// Requests one account (all its keys and users together) may have held back by an injected
    /// delay at once.
    pub sandbox_max_delayed_per_account: usize,
    /// Scans kept one by one per QR code; later scans are only counted (per minute and agent class).
    pub scan_detail_per_code: u64,
    /// Scans one client address may make per minute on `/q/{code}`; 0 turns the limit off.
    pub scan_rate_limit_per_minute: u32,
    /// Bytes the write-ahead log may keep after a checkpoint (`journal_size_limit`); past it, the
    /// tick checkpoints and truncates it.
    pub wal_limit_bytes: u64,
    /// Days history is kept (events, audit, finished deliveries, scan detail, playback detail).
    pub retention_max_age_days: u64,
    /// Rows of each history table kept per account (per company for company-owned history).
    pub retention_max_rows_per_account: u64,
    /// Hours an idempotency record is kept (replays of older keys run anew).
    pub retention_idempotency_hours: u64,
    /// Days after which playbacks are rolled up into daily totals per device and ad.
    pub retention_playback_rollup_days: u64,
    /// Days the daily playback totals are kept.
    pub retention_daily_totals_days: u64,
    /// Rows one pruning transaction deletes at most (small batches never block requests long).
    pub retention_batch_rows: u64,
    /// Webhooks one company may have (422 `webhook_limit` beyond).
    pub webhook_max_per_company: usize,
    /// The time a webhook target's name may take to resolve (milliseconds).
    pub webhook_dns_timeout_millis: u64,
    /// Seconds a name that failed to resolve is remembered as failing (negative cache).
    pub webhook_dns_negative_cache_secs: u64,
    /// Bytes of media one company may store (422 `media_quota_exceeded` beyond).
    pub media_quota_bytes_per_company: u64,
    /// Every request is journaled (`sandbox.journal`); off, the journal's reads still answer from
    /// what it holds, and nothing new is recorded (what the benchmark compares against).
    pub journal: bool,
    /// The request journal keeps at most this many entries per account (the newest).
    pub journal_max_entries: usize,
    /// The request journal forgets entries older than this (wall-clock seconds).
    pub journal_max_age_secs: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            public_base_url: None,
            database: "./signage.db".into(),
            load_fixtures: true,
            log_format: LogFormat::Pretty,
            log_level: "info".into(),
            max_body_bytes: 8 * 1024 * 1024,
            header_read_timeout_secs: 10,
            max_connections: 512,
            body_read_timeout_secs: 30,
            idle_timeout_secs: 10,
            unauthenticated_timeout_millis: 3000,
            unauthenticated_max_body_bytes: 256 * 1024,
            max_unauthenticated_per_address: 32,
            auth_failures_per_minute: 300,
            rate_limit_per_second: 50.0,
            rate_limit_burst: 100,
            mcp_allowed_origins: vec![],
            mcp_max_batch_messages: 20,
            mcp_max_response_bytes: 4 * 1024 * 1024,
            mcp_result_cache_bytes: 512 * 1024,
            login_enabled: true,
            login_token_ttl_secs: 3600,
            jwt_secret: None,
            pending_change_ttl_secs: 600,
            device_offline_after_secs: 300,
            webhook_allow_private_targets: true,
            webhook_retry_schedule: vec![5, 300, 1800, 7200, 18_000, 36_000, 36_000],
            webhook_disable_after_secs: 5 * 86_400,
            webhook_timeout_millis: 10_000,
            webhook_rotation_grace_secs: 86_400,
            webhook_ca_file: None,
            webhook_timestamps: WebhookTimestamps::Wall,
            sandbox_snapshot_budget_bytes: DEFAULT_SNAPSHOT_BUDGET_BYTES,
            sandbox_clock: None,
            sandbox_seed: None,
            sandbox_control: true,
            sandbox_simulate_fleet: true,
            sandbox_allow_prefer_faults: true,
            sandbox_tick_millis: 1000,
            console_enabled: true,
            sandbox_max_delayed_per_account: 8,
            scan_detail_per_code: 1000,
            scan_rate_limit_per_minute: 120,
            wal_limit_bytes: 64 * 1024 * 1024,
            retention_max_age_days: 90,
            retention_max_rows_per_account: 100_000,
            retention_idempotency_hours: 24,
            retention_playback_rollup_days: 7,
            retention_daily_totals_days: 400,
            retention_batch_rows: 500,
            webhook_max_per_company: 16,
            webhook_dns_timeout_millis: 2000,
            webhook_dns_negative_cache_secs: 60,
            media_quota_bytes_per_company: 100 * 1024 * 1024,
            journal: true,
            journal_max_entries: 10_000,
            journal_max_age_secs: 7 * 86_400,
        }
    }
}

/// One layer of configuration; `None` means "not set here".
#[derive(Clone, Debug, Default)]
pub struct Layer {
    pub listen: Option<SocketAddr>,
    pub port: Option<u16>,
    pub public_base_url: Option<String>,
    pub database: Option<String>,
    pub load_fixtures: Option<bool>,
    pub log_format: Option<LogFormat>,
    pub log_level: Option<String>,
    pub max_body_bytes: Option<usize>,
    pub header_read_timeout_secs: Option<u64>,
    pub max_connections: Option<usize>,
    pub body_read_timeout_secs: Option<u64>,
    pub idle_timeout_secs: Option<u64>,
    pub unauthenticated_timeout_millis: Option<u64>,
    pub unauthenticated_max_body_bytes: Option<usize>,
    pub max_unauthenticated_per_address: Option<usize>,
    pub auth_failures_per_minute: Option<u32>,
    pub rate_limit_per_second: Option<f64>,
    pub rate_limit_burst: Option<u32>,
    pub mcp_allowed_origins: Option<Vec<String>>,
    pub mcp_max_batch_messages: Option<usize>,
    pub mcp_max_response_bytes: Option<usize>,
    pub mcp_result_cache_bytes: Option<usize>,
    pub login_enabled: Option<bool>,
    pub login_token_ttl_secs: Option<u64>,
    pub jwt_secret: Option<String>,
    pub pending_change_ttl_secs: Option<u64>,
    pub device_offline_after_secs: Option<i64>,
    pub webhook_allow_private_targets: Option<bool>,
    pub webhook_retry_schedule: Option<Vec<u64>>,
    pub webhook_disable_after_secs: Option<i64>,
    pub webhook_timeout_millis: Option<u64>,
    pub webhook_rotation_grace_secs: Option<i64>,
    pub webhook_ca_file: Option<String>,
    pub webhook_timestamps: Option<WebhookTimestamps>,
    pub sandbox_snapshot_budget_bytes: Option<u64>,
    /// `Some(None)`: the system clock, set explicitly (overrides a frozen clock of a lower layer).
    pub sandbox_clock: Option<Option<i64>>,
    pub sandbox_seed: Option<u64>,
    pub sandbox_control: Option<bool>,
    pub sandbox_simulate_fleet: Option<bool>,
    pub sandbox_allow_prefer_faults: Option<bool>,
    pub sandbox_tick_millis: Option<u64>,
    pub console_enabled: Option<bool>,
    pub sandbox_max_delayed_per_account: Option<usize>,
    pub scan_detail_per_code: Option<u64>,
    pub scan_rate_limit_per_minute: Option<u32>,
    pub wal_limit_bytes: Option<u64>,
    pub retention_max_age_days: Option<u64>,
    pub retention_max_rows_per_account: Option<u64>,
    pub retention_idempotency_hours: Option<u64>,
    pub retention_playback_rollup_days: Option<u64>,
    pub retention_daily_totals_days: Option<u64>,
    pub retention_batch_rows: Option<u64>,
    pub webhook_max_per_company: Option<usize>,
    pub webhook_dns_timeout_millis: Option<u64>,
    pub webhook_dns_negative_cache_secs: Option<u64>,
    pub media_quota_bytes_per_company: Option<u64>,
    pub journal: Option<bool>,
    pub journal_max_entries: Option<usize>,
    pub journal_max_age_secs: Option<u64>,
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

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    server: FileServer,
    #[serde(default)]
    database: FileDatabase,
    #[serde(default)]
    log: FileLog,
    #[serde(default)]
    auth: FileAuth,
    #[serde(default)]
    mcp: FileMcp,
    #[serde(default)]
    devices: FileDevices,
    #[serde(default)]
    webhooks: FileWebhooks,
    #[serde(default)]
    sandbox: FileSandbox,
    #[serde(default)]
    console: FileConsole,
    #[serde(default)]
    scans: FileScans,
    #[serde(default)]
    retention: FileRetention,
    #[serde(default)]
    media: FileMedia,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileScans {
    detail_per_code: Option<u64>,
    rate_limit_per_minute: Option<u32>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileRetention {
    max_age_days: Option<u64>,
    max_rows_per_account: Option<u64>,
    idempotency_hours: Option<u64>,
    playback_rollup_days: Option<u64>,
    daily_totals_days: Option<u64>,
    batch_rows: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileMedia {
    quota_bytes_per_company: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileConsole {
    enabled: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileServer {
    listen: Option<SocketAddr>,
    public_base_url: Option<String>,
    max_body_bytes: Option<usize>,
    header_read_timeout_secs: Option<u64>,
    max_connections: Option<usize>,
    body_read_timeout_secs: Option<u64>,
    idle_timeout_secs: Option<u64>,
    unauthenticated_timeout_millis: Option<u64>,
    unauthenticated_max_body_bytes: Option<usize>,
    max_unauthenticated_per_address: Option<usize>,
    auth_failures_per_minute: Option<u32>,
    rate_limit_per_second: Option<f64>,
    rate_limit_burst: Option<u32>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileDatabase {
    path: Option<String>,
    load_fixtures: Option<bool>,
    wal_limit_bytes: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileLog {
    format: Option<String>,
    level: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileAuth {
    login_enabled: Option<bool>,
    login_token_ttl_secs: Option<u64>,
    jwt_secret: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileMcp {
    allowed_origins: Option<Vec<String>>,
    pending_change_ttl_secs: Option<u64>,
    max_batch_messages: Option<usize>,
    max_response_bytes: Option<usize>,
    result_cache_bytes: Option<usize>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileDevices {
    offline_after_secs: Option<i64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileWebhooks {
    allow_private_targets: Option<bool>,
    retry_schedule_secs: Option<Vec<u64>>,
    disable_after_secs: Option<i64>,
    timeout_millis: Option<u64>,
    rotation_grace_secs: Option<i64>,
    ca_file: Option<String>,
    max_per_company: Option<usize>,
    dns_timeout_millis: Option<u64>,
    dns_negative_cache_secs: Option<u64>,
    timestamps: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileSandbox {
    clock: Option<String>,
    seed: Option<u64>,
    control: Option<bool>,
    simulate_fleet: Option<bool>,
    allow_prefer_faults: Option<bool>,
    tick_millis: Option<u64>,
    /// Issue 31 made the bound per account; the old name is still read.
    #[serde(alias = "max_delayed_per_credential")]
    max_delayed_per_account: Option<usize>,
    journal: Option<bool>,
    journal_max_entries: Option<usize>,
    journal_max_age_secs: Option<u64>,
    snapshot_budget_bytes: Option<u64>,
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
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        let file: FileConfig = toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        let log_format = match file.log.format {
            Some(f) => Some(f.parse().map_err(|message| ConfigError::Parse {
                path: path.to_owned(),
                message,
            })?),
            None => None,
        };
        let sandbox_clock = match &file.sandbox.clock {
            Some(v) => Some(parse_clock(v).map_err(|message| ConfigError::Parse {
                path: path.to_owned(),
                message: format!("sandbox.clock: {message}"),
            })?),
            None => None,
        };
        let webhook_timestamps = match &file.webhooks.timestamps {
            Some(v) => Some(v.parse().map_err(|message| ConfigError::Parse {
                path: path.to_owned(),
                message,
            })?),
            None => None,
        };
        Ok(Layer {
            listen: file.server.listen,
            port: None,
            public_base_url: file.server.public_base_url,
            database: file.database.path,
            load_fixtures: file.database.load_fixtures,
            log_format,
            log_level: file.log.level,
            max_body_bytes: file.server.max_body_bytes,
            header_read_timeout_secs: file.server.header_read_timeout_secs,
            max_connections: file.server.max_connections,
            body_read_timeout_secs: file.server.body_read_timeout_secs,
            idle_timeout_secs: file.server.idle_timeout_secs,
            unauthenticated_timeout_millis: file.server.unauthenticated_timeout_millis,
            unauthenticated_max_body_bytes: file.server.unauthenticated_max_body_bytes,
            max_unauthenticated_per_address: file.server.max_unauthenticated_per_address,
            auth_failures_per_minute: file.server.auth_failures_per_minute,
            rate_limit_per_second: file.server.rate_limit_per_second,
            rate_limit_burst: file.server.rate_limit_burst,
            mcp_allowed_origins: file.mcp.allowed_origins,
            mcp_max_batch_messages: file.mcp.max_batch_messages,
            mcp_max_response_bytes: file.mcp.max_response_bytes,
            mcp_result_cache_bytes: file.mcp.result_cache_bytes,
            login_enabled: file.auth.login_enabled,
            login_token_ttl_secs: file.auth.login_token_ttl_secs,
            jwt_secret: file.auth.jwt_secret,
            pending_change_ttl_secs: file.mcp.pending_change_ttl_secs,
            device_offline_after_secs: file.devices.offline_after_secs,
            webhook_allow_private_targets: file.webhooks.allow_private_targets,
            webhook_retry_schedule: file.webhooks.retry_schedule_secs,
            webhook_disable_after_secs: file.webhooks.disable_after_secs,
            webhook_timeout_millis: file.webhooks.timeout_millis,
            webhook_rotation_grace_secs: file.webhooks.rotation_grace_secs,
            webhook_ca_file: file.webhooks.ca_file,
            webhook_timestamps,
            sandbox_snapshot_budget_bytes: file.sandbox.snapshot_budget_bytes,
            sandbox_clock,
            sandbox_seed: file.sandbox.seed,
            sandbox_control: file.sandbox.control,
            sandbox_simulate_fleet: file.sandbox.simulate_fleet,
            sandbox_allow_prefer_faults: file.sandbox.allow_prefer_faults,
            sandbox_tick_millis: file.sandbox.tick_millis,
            console_enabled: file.console.enabled,
            sandbox_max_delayed_per_account: file.sandbox.max_delayed_per_account,
            scan_detail_per_code: file.scans.detail_per_code,
            scan_rate_limit_per_minute: file.scans.rate_limit_per_minute,
            wal_limit_bytes: file.database.wal_limit_bytes,
            retention_max_age_days: file.retention.max_age_days,
            retention_max_rows_per_account: file.retention.max_rows_per_account,
            retention_idempotency_hours: file.retention.idempotency_hours,
            retention_playback_rollup_days: file.retention.playback_rollup_days,
            retention_daily_totals_days: file.retention.daily_totals_days,
            retention_batch_rows: file.retention.batch_rows,
            webhook_max_per_company: file.webhooks.max_per_company,
            webhook_dns_timeout_millis: file.webhooks.dns_timeout_millis,
            webhook_dns_negative_cache_secs: file.webhooks.dns_negative_cache_secs,
            media_quota_bytes_per_company: file.media.quota_bytes_per_company,
            journal: file.sandbox.journal,
            journal_max_entries: file.sandbox.journal_max_entries,
            journal_max_age_secs: file.sandbox.journal_max_age_secs,
        })
    }

    /// Reads `SIGNAGE_*` variables through `get` (the process environment in production).
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Layer, ConfigError> {
        fn parse<T: std::str::FromStr>(
            get: &impl Fn(&str) -> Option<String>,
            name: &str,
        ) -> Result<Option<T>, ConfigError>
        where
            T::Err: std::fmt::Display,
        {
            match get(name) {
                None => Ok(None),
                Some(v) => v
                    .trim()
                    .parse()
                    .map(Some)
                    .map_err(|e: T::Err| ConfigError::Invalid {
                        name: name.into(),
                        message: e.to_string(),
                    }),
            }
        }
        Ok(Layer {
            listen: parse(&get, "SIGNAGE_LISTEN")?,
            port: parse(&get, "SIGNAGE_PORT")?,
            public_base_url: get("SIGNAGE_PUBLIC_BASE_URL"),
            database: get("SIGNAGE_DATABASE"),
            load_fixtures: parse(&get, "SIGNAGE_LOAD_FIXTURES")?,
            log_format: parse(&get, "SIGNAGE_LOG_FORMAT")?,
            log_level: get("SIGNAGE_LOG_LEVEL"),
            max_body_bytes: parse(&get, "SIGNAGE_MAX_BODY_BYTES")?,
            header_read_timeout_secs: parse(&get, "SIGNAGE_HEADER_READ_TIMEOUT_SECS")?,
            max_connections: parse(&get, "SIGNAGE_MAX_CONNECTIONS")?,
            body_read_timeout_secs: parse(&get, "SIGNAGE_BODY_READ_TIMEOUT_SECS")?,
            idle_timeout_secs: parse(&get, "SIGNAGE_IDLE_TIMEOUT_SECS")?,
            unauthenticated_timeout_millis: parse(&get, "SIGNAGE_UNAUTHENTICATED_TIMEOUT_MILLIS")?,
            unauthenticated_max_body_bytes: parse(&get, "SIGNAGE_UNAUTHENTICATED_MAX_BODY_BYTES")?,
            max_unauthenticated_per_address: parse(
                &get,
                "SIGNAGE_MAX_UNAUTHENTICATED_PER_ADDRESS",
            )?,
            auth_failures_per_minute: parse(&get, "SIGNAGE_AUTH_FAILURES_PER_MINUTE")?,
            rate_limit_per_second: parse(&get, "SIGNAGE_RATE_LIMIT_PER_SECOND")?,
            rate_limit_burst: parse(&get, "SIGNAGE_RATE_LIMIT_BURST")?,
            mcp_max_batch_messages: parse(&get, "SIGNAGE_MCP_MAX_BATCH_MESSAGES")?,
            mcp_max_response_bytes: parse(&get, "SIGNAGE_MCP_MAX_RESPONSE_BYTES")?,
            mcp_result_cache_bytes: parse(&get, "SIGNAGE_MCP_RESULT_CACHE_BYTES")?,
            mcp_allowed_origins: get("SIGNAGE_MCP_ALLOWED_ORIGINS").map(|v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect()
            }),
            login_enabled: parse(&get, "SIGNAGE_LOGIN_ENABLED")?,
            login_token_ttl_secs: parse(&get, "SIGNAGE_LOGIN_TOKEN_TTL_SECS")?,
            jwt_secret: get("SIGNAGE_JWT_SECRET"),
            pending_change_ttl_secs: parse(&get, "SIGNAGE_PENDING_CHANGE_TTL_SECS")?,
            device_offline_after_secs: parse(&get, "SIGNAGE_DEVICE_OFFLINE_AFTER_SECS")?,
            webhook_allow_private_targets: parse(&get, "SIGNAGE_WEBHOOKS_ALLOW_PRIVATE_TARGETS")?,
            webhook_retry_schedule: match get("SIGNAGE_WEBHOOKS_RETRY_SCHEDULE_SECS") {
                Some(v) => Some(
                    v.split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(|s| s.parse::<u64>())
                        .collect::<Result<Vec<u64>, _>>()
                        .map_err(|e| ConfigError::Invalid {
                            name: "SIGNAGE_WEBHOOKS_RETRY_SCHEDULE_SECS".into(),
                            message: e.to_string(),
                        })?,
                ),
                None => None,
            },
            webhook_disable_after_secs: parse(&get, "SIGNAGE_WEBHOOKS_DISABLE_AFTER_SECS")?,
            webhook_timeout_millis: parse(&get, "SIGNAGE_WEBHOOKS_TIMEOUT_MILLIS")?,
            webhook_rotation_grace_secs: parse(&get, "SIGNAGE_WEBHOOKS_ROTATION_GRACE_SECS")?,
            webhook_ca_file: get("SIGNAGE_WEBHOOKS_CA_FILE"),
            webhook_timestamps: parse(&get, "SIGNAGE_WEBHOOKS_TIMESTAMPS")?,
            sandbox_snapshot_budget_bytes: parse(&get, "SIGNAGE_SANDBOX_SNAPSHOT_BUDGET_BYTES")?,
            sandbox_clock: match get("SIGNAGE_CLOCK") {
                Some(v) => Some(parse_clock(&v).map_err(|message| ConfigError::Invalid {
                    name: "SIGNAGE_CLOCK".into(),
                    message,
                })?),
                None => None,
            },
            sandbox_seed: parse(&get, "SIGNAGE_SEED")?,
            sandbox_control: parse(&get, "SIGNAGE_SANDBOX_CONTROL")?,
            sandbox_simulate_fleet: parse(&get, "SIGNAGE_SANDBOX_SIMULATE_FLEET")?,
            sandbox_allow_prefer_faults: parse(&get, "SIGNAGE_SANDBOX_ALLOW_PREFER_FAULTS")?,
            sandbox_tick_millis: parse(&get, "SIGNAGE_SANDBOX_TICK_MILLIS")?,
            console_enabled: parse(&get, "SIGNAGE_CONSOLE_ENABLED")?,
            // Issue 31 made the bound per account; the old name is still read.
            sandbox_max_delayed_per_account: match parse(
                &get,
                "SIGNAGE_SANDBOX_MAX_DELAYED_PER_ACCOUNT",
            )? {
                Some(n) => Some(n),
                None => parse(&get, "SIGNAGE_SANDBOX_MAX_DELAYED_PER_CREDENTIAL")?,
            },
            scan_detail_per_code: parse(&get, "SIGNAGE_SCANS_DETAIL_PER_CODE")?,
            scan_rate_limit_per_minute: parse(&get, "SIGNAGE_SCANS_RATE_LIMIT_PER_MINUTE")?,
            wal_limit_bytes: parse(&get, "SIGNAGE_DATABASE_WAL_LIMIT_BYTES")?,
            retention_max_age_days: parse(&get, "SIGNAGE_RETENTION_MAX_AGE_DAYS")?,
            retention_max_rows_per_account: parse(&get, "SIGNAGE_RETENTION_MAX_ROWS_PER_ACCOUNT")?,
            retention_idempotency_hours: parse(&get, "SIGNAGE_RETENTION_IDEMPOTENCY_HOURS")?,
            retention_playback_rollup_days: parse(&get, "SIGNAGE_RETENTION_PLAYBACK_ROLLUP_DAYS")?,
            retention_daily_totals_days: parse(&get, "SIGNAGE_RETENTION_DAILY_TOTALS_DAYS")?,
            retention_batch_rows: parse(&get, "SIGNAGE_RETENTION_BATCH_ROWS")?,
            webhook_max_per_company: parse(&get, "SIGNAGE_WEBHOOKS_MAX_PER_COMPANY")?,
            webhook_dns_timeout_millis: parse(&get, "SIGNAGE_WEBHOOKS_DNS_TIMEOUT_MILLIS")?,
            webhook_dns_negative_cache_secs: parse(
                &get,
                "SIGNAGE_WEBHOOKS_DNS_NEGATIVE_CACHE_SECS",
            )?,
            media_quota_bytes_per_company: parse(&get, "SIGNAGE_MEDIA_QUOTA_BYTES_PER_COMPANY")?,
            journal: parse(&get, "SIGNAGE_JOURNAL")?,
            journal_max_entries: parse(&get, "SIGNAGE_JOURNAL_MAX_ENTRIES")?,
            journal_max_age_secs: parse(&get, "SIGNAGE_JOURNAL_MAX_AGE_SECS")?,
        })
    }
}

impl Settings {
    /// Rate limiting is on unless the rate or the burst is 0.
    pub fn rate_limit_enabled(&self) -> bool {
        self.rate_limit_per_second > 0.0 && self.rate_limit_burst > 0
    }

    /// Stacks the layers over the defaults; later layers win.
    pub fn resolve(layers: &[Layer]) -> Result<Settings, ConfigError> {
        let mut s = Settings::default();
        for l in layers {
            macro_rules! take {
                ($($f:ident),*) => { $( if let Some(v) = l.$f.clone() { s.$f = v; } )* };
            }
            take!(
                listen,
                database,
                load_fixtures,
                log_format,
                log_level,
                max_body_bytes,
                header_read_timeout_secs,
                max_connections,
                body_read_timeout_secs,
                idle_timeout_secs,
                unauthenticated_timeout_millis,
                unauthenticated_max_body_bytes,
                max_unauthenticated_per_address,
                auth_failures_per_minute,
                rate_limit_per_second,
                rate_limit_burst,
                mcp_allowed_origins,
                mcp_max_batch_messages,
                mcp_max_response_bytes,
                mcp_result_cache_bytes,
                login_enabled,
                login_token_ttl_secs,
                pending_change_ttl_secs,
                device_offline_after_secs,
                webhook_allow_private_targets,
                webhook_retry_schedule,
                webhook_disable_after_secs,
                webhook_timeout_millis,
                webhook_rotation_grace_secs,
                sandbox_clock,
                sandbox_control,
                sandbox_simulate_fleet,
                sandbox_allow_prefer_faults,
                sandbox_tick_millis,
                console_enabled,
                sandbox_max_delayed_per_account,
                scan_detail_per_code,
                scan_rate_limit_per_minute,
                wal_limit_bytes,
                retention_max_age_days,
                retention_max_rows_per_account,
                retention_idempotency_hours,
                retention_playback_rollup_days,
                retention_daily_totals_days,
                retention_batch_rows,
                webhook_max_per_company,
                webhook_dns_timeout_millis,
                webhook_dns_negative_cache_secs,
                media_quota_bytes_per_company,
                journal,
                journal_max_entries,
                journal_max_age_secs,
                webhook_timestamps,
                sandbox_snapshot_budget_bytes
            );
            if let Some(seed) = l.sandbox_seed {
                s.sandbox_seed = Some(seed);
            }
            if let Some(base) = &l.public_base_url {
                s.public_base_url = Some(base.trim_end_matches('/').to_string());
            }
            if let Some(file) = l.webhook_ca_file.clone() {
                s.webhook_ca_file = Some(file);
            }
            if let Some(secret) = l.jwt_secret.clone() {
                s.jwt_secret = Some(secret);
            }
            if let Some(port) = l.port {
                s.listen.set_port(port);
            }
        }
        // A public route's limit that nobody set follows a smaller overall limit down, so that
        // lowering `max_body_bytes` alone is a valid configuration.
        if layers
            .iter()
            .all(|l| l.unauthenticated_max_body_bytes.is_none())
        {
            s.unauthenticated_max_body_bytes =
                s.unauthenticated_max_body_bytes.min(s.max_body_bytes);
        }
        s.validate()?;
        Ok(s)
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
