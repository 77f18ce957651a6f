//! `signage demo`: one command for a live demo. It binds to this machine's network address (or the
//! one given) so that phones on the same network reach it, makes that address the public base URL
//! (the QR codes on the screens encode it), runs a fresh demo world on the running clock with the
//! simulated fleet, and prints what a presenter opens: one link that signs the console in (the demo
//! key with the sandbox operator's controls), two screens' players, signed in the same way, and a
//! QR code of a sign-in link for a phone. The links work once, within 10 minutes; Enter prints
//! fresh ones, the phone's QR code included. The log keeps to warnings (the terminal holds the
//! banner, not a request log).

use super::config_layers::base_layers;
use crate::config::{Layer, Settings};
use argh::FromArgs;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::path::PathBuf;

/// The port a demo listens on unless told otherwise.
const DEMO_PORT: u16 = 8080;
/// The screens whose players the demo prints: they play the fixture video and photo.
const SCREENS: [&str; 2] = ["Entrance Screen 1", "Checkout Screen 1"];
/// The demo key the printed links sign in as (Northwind, read and write), with the `sandbox` scope
/// added so that the presenter's one console holds the operator's controls too.
const DEMO_KEY: &str = "northwind-readwrite";

#[derive(FromArgs, Default)]
/// Run a live demo: bind to this machine's network address, set the public base URL so phones can
/// scan, run the simulated fleet on the running clock, print the console and player URLs.
#[argh(subcommand, name = "demo")]
pub struct Demo {
    /// config file (default: ./signage.toml if present, or $SIGNAGE_CONFIG)
    #[argh(option)]
    pub config: Option<PathBuf>,
    /// listen address (default: this machine's network address, port 8080)
    #[argh(option)]
    pub listen: Option<SocketAddr>,
    /// port on the listen address (default 8080; 0 picks a free port)
    #[argh(option)]
    pub port: Option<u16>,
    /// the address phones reach this machine at, if not the listen address (e.g. http://demo.local:8080)
    #[argh(option)]
    pub public_base_url: Option<String>,
    /// database file (default :memory:, a fresh demo world every time)
    #[argh(option)]
    pub database: Option<String>,
}

/// This machine's address on its network: the source address of a route outwards. A UDP
/// "connection" sends nothing; it only asks the kernel which interface it would use.
fn network_address() -> Option<IpAddr> {
    let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).ok()?;
    socket.connect((Ipv4Addr::new(192, 0, 2, 1), 9)).ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_unspecified()).then_some(ip)
}

pub fn run(d: Demo) -> Result<(), String> {
    let port = d.port.unwrap_or(DEMO_PORT);
    let (listen, found) = match d.listen {
        Some(addr) => (addr, true),
        None => match network_address() {
            Some(ip) => (SocketAddr::new(ip, port), true),
            None => (SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port), false),
        },
    };
    // Listening on every interface: the links name the network address instead.
    let public = d.public_base_url.clone().or_else(|| {
        (listen.ip().is_unspecified() && listen.port() != 0)
            .then(network_address)
            .flatten()
            .map(|ip| format!("http://{}", SocketAddr::new(ip, listen.port())))
    });
    let mut layers = base_layers(&d.config)?;
    // The terminal keeps to the banner and warnings, unless the configuration asks for more.
    layers.insert(
        0,
        Layer {
            log_level: Some("warn".into()),
            ..Layer::default()
        },
    );
    layers.push(Layer {
        listen: Some(listen),
        port: d.port.filter(|_| d.listen.is_some()),
        database: Some(d.database.clone().unwrap_or_else(|| ":memory:".into())),
        public_base_url: public,
        // A live demo runs in real time: the fleet heartbeats and plays, and "+1 day" moves ahead.
        sandbox_clock: Some(None),
        sandbox_simulate_fleet: Some(true),
        ..Layer::default()
    });
    let settings = Settings::resolve(&layers).map_err(|e| e.to_string())?;
    crate::telemetry::init(settings.log_format, &settings.log_level);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the runtime: {e}"))?;
    runtime.block_on(async move {
        let server = crate::startup::Server::build(settings)
            .await
            .map_err(|e| e.to_string())?;
        let base = server
            .app
            .settings
            .public_base_url
            .clone()
            .unwrap_or_else(|| server.base_url());
        println!("{}", banner(&server, &base, found));
        let _ = std::io::stdout().flush();
        fresh_links_on_enter(std::sync::Arc::clone(&server.app), base.clone());
        server
            .run_until(crate::startup::shutdown_signal())
            .await
            .map_err(|e| e.to_string())
    })
}

/// What the presenter needs, in the order they need it.
fn banner(server: &crate::startup::Server, base: &str, found: bool) -> String {
    let mut out = format!(
        "signage demo listening on {} (MCP at {base}/mcp)\n\n",
        server.base_url()
    );
    out += &links(&server.app, base);
    if let Some((key, client)) = demo_key(DEMO_KEY) {
        out += &format!("  API key   {key}\n            client id {client}   (`{DEMO_KEY}`, for curl and MCP clients)\n");
    }
    out += "\n";
    if is_loopback_url(base) {
        out += &format!(
            "  WARNING: {base} is this machine only{}: phones cannot open it or scan the QR codes.\n  Give --listen <network address>:{} or --public-base-url.\n\n",
            if found { "" } else { " (no network address found)" },
            server.addr().port()
        );
    } else {
        out += "  Phones on the same network can open the console and scan the QR codes on the screens.\n\n";
    }
    out += &phone_qr(&server.app, base);
    out
}

/// The phone's QR code of a console sign-in link of its own, and what Enter does. Printed in the
/// banner and again on every Enter: the phone's link expires like the others.
fn phone_qr(app: &crate::http::App, base: &str) -> String {
    let phone = sign_in_link(app, "/console").unwrap_or_else(|| format!("{base}/console"));
    format!(
        "  Scan to open the console on a phone (signed in):\n{}\n  Press Enter for fresh sign-in links and a fresh QR code, Ctrl-C to stop (the demo world lives in memory unless --database names a file).",
        terminal_qr(&phone)
    )
}

/// What Enter prints: fresh links for the console and the players, and a fresh QR code.
fn fresh(app: &crate::http::App, base: &str) -> String {
    format!("\n{}\n{}", links(app, base), phone_qr(app, base))
}

/// The console's and the two players' sign-in links, one line each.
fn links(app: &crate::http::App, base: &str) -> String {
    let mut out = String::new();
    let console = sign_in_link(app, "/console").unwrap_or_else(|| format!("{base}/console"));
    out += &format!("  Console   {console}\n");
    out += &format!(
        "            (signs this browser in once, within {} minutes, as `{DEMO_KEY}` with the Sandbox controls)\n",
        crate::routes::sign_in::LINK_TTL_SECS / 60
    );
    for (id, name) in screens(app) {
        let path = format!("/player/{id}");
        let player = sign_in_link(app, &path).unwrap_or_else(|| format!("{base}{path}"));
        out += &format!("  Player    {player}   ({name})\n");
    }
    out
}

/// A sign-in link to `path` for the demo key with the `sandbox` scope added.
fn sign_in_link(app: &crate::http::App, path: &str) -> Option<String> {
    let (raw, _) = demo_key(DEMO_KEY)?;
    let key_id = crate::auth::keys::parse(&raw)?.key_id();
    let scopes: String = app
        .db
        .conn()
        .ok()?
        .query_row(
            "SELECT scopes FROM api_keys WHERE id = ?1",
            [&key_id],
            |r| r.get(0),
        )
        .ok()?;
    let links = app
        .extensions
        .get::<std::sync::Arc<crate::routes::sign_in::SignInLinks>>()?;
    let token = links
        .mint(&key_id, &format!("{scopes} sandbox"), path)
        .ok()?;
    Some(crate::routes::sign_in::url(&app.settings, path, &token))
}

/// Prints fresh links and a fresh QR code each time Enter is pressed (a link works once and for
/// 10 minutes). Stops when standard input closes.
fn fresh_links_on_enter(app: std::sync::Arc<crate::http::App>, base: String) {
    std::thread::spawn(move || {
        let mut line = String::new();
        while std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {
            line.clear();
            println!("{}", fresh(&app, &base));
            let _ = std::io::stdout().flush();
        }
    });
}

/// True when `url`'s host is this machine only (127.0.0.0/8, ::1, localhost, 0.0.0.0).
fn is_loopback_url(url: &str) -> bool {
    let host = url
        .split("://")
        .nth(1)
        .unwrap_or(url)
        .split('/')
        .next()
        .unwrap_or_default();
    let host = host
        .rsplit_once(':')
        .filter(|(h, p)| !h.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        .map_or(host, |(h, _)| h)
        .trim_start_matches('[')
        .trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback() || ip.is_unspecified())
}

/// Two screens to open as players: the ones that play the fixture video and photo, or any two.
fn screens(app: &crate::http::App) -> Vec<(String, String)> {
    let Ok(conn) = app.db.conn() else {
        return Vec::new();
    };
    let query = "SELECT id, name FROM devices ORDER BY (name = ?1 OR name = ?2) DESC, id LIMIT 2";
    conn.prepare(query)
        .and_then(|mut stmt| {
            stmt.query_map(SCREENS, |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<(String, String)>>>()
        })
        .unwrap_or_default()
}

/// A demo key's raw key and client id, from the published fixtures (test-only values).
fn demo_key(name: &str) -> Option<(String, String)> {
    let creds: serde_json::Value =
        serde_json::from_str(crate::db::fixtures::DEMO_CREDENTIALS_JSON).ok()?;
    let key = creds["keys"]
        .as_array()?
        .iter()
        .find(|k| k["name"] == name)?;
    Some((
        key["rawKey"].as_str()?.to_string(),
        key["client_id"].as_str()?.to_string(),
    ))
}

/// A QR code drawn with half-block characters, light on a dark terminal.
fn terminal_qr(text: &str) -> String {
    use qrcode::render::unicode::Dense1x2;
    match qrcode::QrCode::new(text.as_bytes()) {
        Ok(code) => code
            .render::<Dense1x2>()
            .dark_color(Dense1x2::Light)
            .light_color(Dense1x2::Dark)
            .quiet_zone(true)
            .build(),
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_urls_are_told_apart() {
        for url in [
            "http://127.0.0.1:8080",
            "http://localhost:8080/x",
            "http://[::1]:80",
            "http://0.0.0.0:1",
        ] {
            assert!(is_loopback_url(url), "{url}");
        }
        for url in [
            "http://192.168.1.20:8080",
            "https://demo.example",
            "http://[fe80::1]:8080",
        ] {
            assert!(!is_loopback_url(url), "{url}");
        }
    }
}
