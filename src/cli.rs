//! The command line (argh): `serve`, `migrate`, `reset`, and management of clients, keys and users
//! directly on a database file.

use crate::config::{Layer, LogFormat, Settings};
use crate::db::Db;
use crate::db::WriteIntent;
use crate::routes::admin;
use argh::FromArgs;
use rusqlite::OptionalExtension;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

mod config_layers;
mod demo;

use config_layers::base_layers;

#[derive(FromArgs)]
/// signage: a local sandbox of the digital-signage platform (REST API + MCP server).
pub struct Cli {
    /// print the version and exit
    #[argh(switch)]
    pub version: bool,
    #[argh(subcommand)]
    pub command: Option<Command>,
}

#[derive(FromArgs)]
#[argh(subcommand)]
pub enum Command {
    Serve(Serve),
    Migrate(Migrate),
    Reset(Reset),
    Clients(Clients),
    Keys(Keys),
    Users(Users),
    McpConfig(crate::mcp::config_cmd::McpConfig),
    Readiness(crate::sandbox::readiness::cli::Readiness),
    Demo(demo::Demo),
}

#[derive(FromArgs, Default)]
/// Run the server (REST API, MCP at /mcp, health at /health).
#[argh(subcommand, name = "serve")]
pub struct Serve {
    /// config file (default: ./signage.toml if present, or $SIGNAGE_CONFIG)
    #[argh(option)]
    pub config: Option<PathBuf>,
    /// listen address (default 127.0.0.1:8080)
    #[argh(option)]
    pub listen: Option<SocketAddr>,
    /// port on the listen address; 0 picks a free port
    #[argh(option)]
    pub port: Option<u16>,
    /// database file, or :memory: for a throw-away database (default ./signage.db)
    #[argh(option)]
    pub database: Option<String>,
    /// do not load the demo fixtures into a new database
    #[argh(switch)]
    pub no_fixtures: bool,
    /// log format: pretty or json
    #[argh(option)]
    pub log_format: Option<LogFormat>,
    /// log level filter (e.g. info, debug, signage=debug)
    #[argh(option)]
    pub log_level: Option<String>,
    /// maximum request body size in bytes
    #[argh(option)]
    pub max_body_bytes: Option<usize>,
    /// seconds a client has to send the request headers
    #[argh(option)]
    pub header_read_timeout_secs: Option<u64>,
    /// maximum simultaneous connections
    #[argh(option)]
    pub max_connections: Option<usize>,
    /// a name besides localhost and the public base URL's host that may reach the server as Host or
    /// Origin (repeatable)
    #[argh(option)]
    pub allowed_host: Vec<String>,
    /// an Origin allowed to call /mcp (repeatable)
    #[argh(option)]
    pub mcp_allowed_origin: Vec<String>,
    /// disable POST /auth/login
    #[argh(switch)]
    pub no_login: bool,
    /// start with the clock frozen at this RFC 3339 instant (e.g. 2026-03-02T09:00:00Z), or `system`
    #[argh(option)]
    pub clock: Option<String>,
    /// seed for ids, server-made secrets and request ids (reproducible runs; secrets predictable)
    #[argh(option)]
    pub seed: Option<u64>,
}

#[derive(FromArgs)]
/// Apply pending migrations to the database file (and load fixtures if it is new).
#[argh(subcommand, name = "migrate")]
pub struct Migrate {
    /// config file
    #[argh(option)]
    pub config: Option<PathBuf>,
    /// database file
    #[argh(option)]
    pub database: Option<String>,
    /// do not load the demo fixtures into a new database
    #[argh(switch)]
    pub no_fixtures: bool,
}

#[derive(FromArgs)]
/// Reload the demo fixtures into a database file (discards every change).
#[argh(subcommand, name = "reset")]
pub struct Reset {
    /// config file
    #[argh(option)]
    pub config: Option<PathBuf>,
    /// database file
    #[argh(option)]
    pub database: Option<String>,
}

#[derive(FromArgs)]
/// Manage API clients.
#[argh(subcommand, name = "clients")]
pub struct Clients {
    #[argh(subcommand)]
    pub action: ClientsAction,
}

#[derive(FromArgs)]
#[argh(subcommand)]
pub enum ClientsAction {
    Create(ClientsCreate),
    List(ClientsList),
}

#[derive(FromArgs)]
/// Create an API client in an account.
#[argh(subcommand, name = "create")]
pub struct ClientsCreate {
    /// database file
    #[argh(option)]
    pub database: Option<String>,
    /// config file
    #[argh(option)]
    pub config: Option<PathBuf>,
    /// account id (acct_…)
    #[argh(option)]
    pub account: String,
    /// client name
    #[argh(option)]
    pub name: String,
    /// description
    #[argh(option, default = "String::new()")]
    pub description: String,
    /// bind the client to one company of the account (cmp_…): its keys must all be scoped to it
    #[argh(option)]
    pub company: Option<String>,
}

#[derive(FromArgs)]
/// List API clients.
#[argh(subcommand, name = "list")]
pub struct ClientsList {
    /// database file
    #[argh(option)]
    pub database: Option<String>,
    /// config file
    #[argh(option)]
    pub config: Option<PathBuf>,
    /// only this account
    #[argh(option)]
    pub account: Option<String>,
}

#[derive(FromArgs)]
/// Manage API keys.
#[argh(subcommand, name = "keys")]
pub struct Keys {
    #[argh(subcommand)]
    pub action: KeysAction,
}

#[derive(FromArgs)]
#[argh(subcommand)]
pub enum KeysAction {
    Create(KeysCreate),
    List(KeysList),
    Revoke(KeysRevoke),
    Rotate(KeysRotate),
}

#[derive(FromArgs)]
/// Create an API key; prints it (with rawKey, shown only now) as JSON.
#[argh(subcommand, name = "create")]
pub struct KeysCreate {
    /// database file
    #[argh(option)]
    pub database: Option<String>,
    /// config file
    #[argh(option)]
    pub config: Option<PathBuf>,
    /// API client id (cli_…)
    #[argh(option)]
    pub client: String,
    /// key name
    #[argh(option)]
    pub name: String,
    /// space- or comma-separated scopes, e.g. "read write"
    #[argh(option)]
    pub scopes: String,
    /// restrict the key to this company (cmp_…)
    #[argh(option)]
    pub company_scope: Option<String>,
    /// expiry, RFC 3339
    #[argh(option)]
    pub expires_at: Option<String>,
}

#[derive(FromArgs)]
/// List API keys (never the secret).
#[argh(subcommand, name = "list")]
pub struct KeysList {
    /// database file
    #[argh(option)]
    pub database: Option<String>,
    /// config file
    #[argh(option)]
    pub config: Option<PathBuf>,
    /// only keys of this client
    #[argh(option)]
    pub client: Option<String>,
}

#[derive(FromArgs)]
/// Revoke an API key immediately.
#[argh(subcommand, name = "revoke")]
pub struct KeysRevoke {
    /// database file
    #[argh(option)]
    pub database: Option<String>,
    /// config file
    #[argh(option)]
    pub config: Option<PathBuf>,
    /// key id (key_…)
    #[argh(positional)]
    pub key: String,
}

#[derive(FromArgs)]
/// Rotate an API key: prints the new key; the old one stays valid for the grace period.
#[argh(subcommand, name = "rotate")]
pub struct KeysRotate {
    /// database file
    #[argh(option)]
    pub database: Option<String>,
    /// config file
    #[argh(option)]
    pub config: Option<PathBuf>,
    /// key id (key_…)
    #[argh(positional)]
    pub key: String,
    /// seconds the old key stays valid (default 86400)
    #[argh(option, default = "admin::keys::DEFAULT_GRACE_SECS")]
    pub grace_secs: i64,
}

#[derive(FromArgs)]
/// Manage login users (internal testing).
#[argh(subcommand, name = "users")]
pub struct Users {
    #[argh(subcommand)]
    pub action: UsersAction,
}

#[derive(FromArgs)]
#[argh(subcommand)]
pub enum UsersAction {
    Create(UsersCreate),
}

#[derive(FromArgs)]
/// Create a user; the password is read from stdin (first line) so it never appears in `ps`.
#[argh(subcommand, name = "create")]
pub struct UsersCreate {
    /// database file
    #[argh(option)]
    pub database: Option<String>,
    /// config file
    #[argh(option)]
    pub config: Option<PathBuf>,
    /// account id (acct_…)
    #[argh(option)]
    pub account: String,
    /// username
    #[argh(option)]
    pub username: String,
    /// role: admin, editor or viewer
    #[argh(option, default = "String::from(\"viewer\")")]
    pub role: String,
    /// restrict the user to one company of the account (cmp_…)
    #[argh(option)]
    pub company: Option<String>,
}

fn settings_for_db(
    config: &Option<PathBuf>,
    database: &Option<String>,
) -> Result<Settings, String> {
    let mut layers = base_layers(config)?;
    layers.push(Layer {
        database: database.clone(),
        ..Layer::default()
    });
    Settings::resolve(&layers).map_err(|e| e.to_string())
}

/// The clock of a management command, which serves no app: the system's, unseeded. Its writes
/// (a user, a key, the demo world of `migrate`) are stamped with the system time.
fn process_clock() -> std::sync::Arc<crate::time::Clock> {
    std::sync::Arc::new(crate::time::Clock::system())
}

fn open_db(config: &Option<PathBuf>, database: &Option<String>) -> Result<Db, String> {
    let settings = settings_for_db(config, database)?;
    if settings.database == ":memory:" {
        return Err("management commands need a database file, not :memory:".into());
    }
    Db::open(
        &settings.database,
        settings.load_fixtures,
        process_clock(),
        None,
    )
    .map(|(db, _)| db)
    .map_err(|e| e.to_string())
}

/// Writes a line to stdout. A closed pipe (`signage keys list | head`) ends the output quietly
/// instead of panicking as `println!` would.
/// `signage --version`: the name and the package version, as `cargo install` and release
/// artifacts report it.
pub fn version() -> String {
    format!("signage {}", env!("CARGO_PKG_VERSION"))
}

pub fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{text}").and_then(|_| stdout.flush());
}

/// Prints any value as the API would return it (a typed resource, a list of them), indented.
fn print_json<T: serde::Serialize + ?Sized>(v: &T) {
    out(&serde_json::to_string_pretty(v).unwrap_or_default());
}

fn api_err(e: crate::http::ApiError) -> String {
    match e {
        crate::http::ApiError::Validation(errors) => errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect::<Vec<_>>()
            .join("; "),
        other => other.to_string(),
    }
}

/// Runs the CLI; returns the process exit code.
pub fn run(cli: Cli) -> i32 {
    if cli.version {
        out(&version());
        return 0;
    }
    let Some(command) = cli.command else {
        eprintln!(
            "error: give a command (serve, demo, mcp-config, …); `signage --help` lists them"
        );
        return 2;
    };
    let result = match command {
        Command::Serve(s) => serve(s),
        Command::Demo(d) => demo::run(d),
        Command::Migrate(m) => (|| {
            let mut layers = base_layers(&m.config)?;
            layers.push(Layer {
                database: m.database.clone(),
                load_fixtures: m.no_fixtures.then_some(false),
                ..Layer::default()
            });
            let s = Settings::resolve(&layers).map_err(|e| e.to_string())?;
            let (_, report) = Db::open(&s.database, s.load_fixtures, process_clock(), None)
                .map_err(|e| e.to_string())?;
            out(&format!(
                "migrated {}: {} migration(s) applied, fixtures {}",
                s.database,
                report.migrations_applied,
                if report.fixtures_loaded {
                    "loaded"
                } else {
                    "unchanged"
                }
            ));
            Ok(())
        })(),
        Command::Reset(r) => (|| {
            let db = open_db(&r.config, &r.database)?;
            db.reset().map_err(|e| e.to_string())?;
            out(&format!(
                "reset {}: demo fixtures restored",
                db.path().display()
            ));
            Ok(())
        })(),
        Command::Clients(c) => match c.action {
            ClientsAction::Create(a) => (|| {
                let db = open_db(&a.config, &a.database)?;
                let v = admin::clients::create_client(
                    db.unscoped(),
                    &WriteIntent::sandbox(),
                    None,
                    &a.account,
                    &a.name,
                    &a.description,
                    a.company.as_deref(),
                )
                .map_err(api_err)?;
                print_json(&v);
                Ok(())
            })(),
            ClientsAction::List(a) => (|| {
                let db = open_db(&a.config, &a.database)?;
                let v = admin::clients::list_clients_db(
                    db.unscoped(),
                    None,
                    a.account.as_deref(),
                    "~",
                    10_000,
                )
                .map_err(api_err)?;
                print_json(&v);
                Ok(())
            })(),
        },
        Command::Keys(k) => match k.action {
            KeysAction::Create(a) => (|| {
                let db = open_db(&a.config, &a.database)?;
                let expires_at = match &a.expires_at {
                    None => None,
                    Some(s) => {
                        Some(crate::time::parse_rfc3339(s).ok_or("--expires-at must be RFC 3339")?)
                    }
                };
                let spec = admin::keys::KeySpec {
                    client_id: a.client.clone(),
                    name: a.name.clone(),
                    scopes: a
                        .scopes
                        .split([' ', ','])
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect(),
                    company_scope: a.company_scope.clone(),
                    expires_at,
                };
                print_json(
                    &admin::keys::create_key(db.unscoped(), &WriteIntent::sandbox(), None, &spec)
                        .map_err(api_err)?,
                );
                Ok(())
            })(),
            KeysAction::List(a) => (|| {
                let db = open_db(&a.config, &a.database)?;
                let v = admin::keys::list_keys_db(
                    db.unscoped(),
                    None,
                    a.client.as_deref(),
                    "~",
                    10_000,
                    db.clock().now(),
                )
                .map_err(api_err)?;
                print_json(&v);
                Ok(())
            })(),
            KeysAction::Revoke(a) => (|| {
                let db = open_db(&a.config, &a.database)?;
                print_json(
                    &admin::keys::revoke_key(db.unscoped(), &WriteIntent::sandbox(), None, &a.key)
                        .map_err(api_err)?,
                );
                Ok(())
            })(),
            KeysAction::Rotate(a) => (|| {
                let db = open_db(&a.config, &a.database)?;
                print_json(
                    &admin::keys::rotate_key(
                        db.unscoped(),
                        &WriteIntent::sandbox(),
                        None,
                        &a.key,
                        a.grace_secs,
                    )
                    .map_err(api_err)?,
                );
                Ok(())
            })(),
        },
        Command::Users(u) => match u.action {
            UsersAction::Create(a) => create_user(a),
        },
        Command::McpConfig(m) => mcp_config(m),
        Command::Readiness(r) => match crate::sandbox::readiness::cli::run(&r) {
            Ok((text, code)) => {
                out(&text);
                return code;
            }
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(()) => 0,
        Err(msg) => {
            eprintln!("error: {msg}");
            1
        }
    }
}

/// `signage mcp-config`: the registration for the server at `--url`, or at the address `signage
/// serve` takes from the same configuration (with `--port`). Notes to stderr, JSON to stdout.
fn mcp_config(m: crate::mcp::config_cmd::McpConfig) -> Result<(), String> {
    use crate::mcp::config_cmd::{run, Part};
    let base = match &m.url {
        Some(url) => url.clone(),
        None => {
            let mut layers = base_layers(&m.config)?;
            layers.push(Layer {
                port: m.port,
                ..Layer::default()
            });
            let s = Settings::resolve(&layers).map_err(|e| e.to_string())?;
            if s.listen.port() == 0 {
                return Err("the server picks its port at start (port 0): give the port it printed with --port, or --url".into());
            }
            s.public_base_url
                .clone()
                .unwrap_or_else(|| crate::config::public_base_url_for(s.listen))
        }
    };
    for part in run(m, &base)? {
        match part {
            Part::Note(note) => {
                let _ = std::io::stdout().flush();
                eprintln!("{note}");
            }
            Part::Json(json) => out(&json),
        }
    }
    Ok(())
}

fn create_user(a: UsersCreate) -> Result<(), String> {
    if !["admin", "editor", "viewer"].contains(&a.role.as_str()) {
        return Err("--role must be admin, editor or viewer".into());
    }
    let mut password = String::new();
    std::io::stdin()
        .read_line(&mut password)
        .map_err(|e| format!("reading the password from stdin: {e}"))?;
    let password = password.trim_end_matches(['\r', '\n']);
    if password.chars().count() < 12 {
        return Err("the password (first line of stdin) must be at least 12 characters".into());
    }
    let hash = crate::auth::password::hash(password)?;
    let db = open_db(&a.config, &a.database)?;
    let id = db.new_id(crate::ids::Kind::User);
    db.write(&WriteIntent::sandbox(), |tx| -> Result<(), crate::http::ApiError> {
        let account_exists: bool = tx
            .query_row("SELECT count(*) > 0 FROM accounts WHERE id = ?1", [&a.account], |r| r.get(0))?;
        if !account_exists {
            return Err(crate::http::ApiError::NotFound(format!("there is no account {}", a.account)));
        }
        // A user restricted to a company acts inside that company's account only: a company of
        // another account would give it a foothold there.
        if let Some(company) = &a.company {
            let owner: Option<String> = tx
                .query_row("SELECT account_id FROM companies WHERE id = ?1", [company], |r| r.get(0))
                .optional()?;
            if owner.as_deref() != Some(a.account.as_str()) {
                return Err(crate::http::ApiError::NotFound(format!(
                    "{company} is not a company of account {}",
                    a.account
                )));
            }
        }
        tx.execute(
            "INSERT INTO users (id, account_id, username, password_hash, role, company_id, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            rusqlite::params![id, a.account, a.username, hash, a.role, a.company, tx.now()],
        )?;
        Ok(())
    })
    .map_err(|e| format!("creating the user: {}", api_err(e)))?;
    print_json(
        &serde_json::json!({"id": id, "object": "user", "username": a.username, "role": a.role, "account_id": a.account, "company_id": a.company}),
    );
    Ok(())
}

fn serve(s: Serve) -> Result<(), String> {
    let mut layers = base_layers(&s.config)?;
    let clock = match &s.clock {
        Some(v) => Some(crate::config::parse_clock(v).map_err(|e| format!("--clock: {e}"))?),
        None => None,
    };
    layers.push(Layer {
        listen: s.listen,
        port: s.port,
        database: s.database.clone(),
        load_fixtures: s.no_fixtures.then_some(false),
        log_format: s.log_format,
        log_level: s.log_level.clone(),
        max_body_bytes: s.max_body_bytes,
        header_read_timeout_secs: s.header_read_timeout_secs,
        max_connections: s.max_connections,
        allowed_hosts: (!s.allowed_host.is_empty()).then(|| s.allowed_host.clone()),
        mcp_allowed_origins: (!s.mcp_allowed_origin.is_empty())
            .then(|| s.mcp_allowed_origin.clone()),
        login_enabled: s.no_login.then_some(false),
        sandbox_clock: clock,
        sandbox_seed: s.seed,
        ..Layer::default()
    });
    let settings = Settings::resolve(&layers).map_err(|e| e.to_string())?;
    crate::telemetry::init(settings.log_format, &settings.log_level);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the runtime: {e}"))?;
    runtime.block_on(async move {
        let database = settings.database.clone();
        let server = crate::startup::Server::build(settings)
            .await
            .map_err(|e| e.to_string())?;
        // The first stdout line carries the base URL; test harnesses read it to find the port.
        println!(
            "signage listening on {} (MCP at {}/mcp)",
            server.base_url(),
            server.base_url()
        );
        let _ = std::io::stdout().flush();
        tracing::info!(
            url = %server.base_url(),
            database = %database,
            migrations_applied = server.report.migrations_applied,
            fixtures_loaded = server.report.fixtures_loaded,
            "signage started"
        );
        server
            .run_until(crate::startup::shutdown_signal())
            .await
            .map_err(|e| e.to_string())?;
        tracing::info!("signage stopped");
        Ok(())
    })
}
