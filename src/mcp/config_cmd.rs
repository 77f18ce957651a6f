//! `signage mcp-config`: prints the MCP registration for a client id, as Claude Desktop, Cursor
//! and VS Code read it, and in a generic form.
//!
//! By default no raw key is written into a config file: VS Code asks for it once through an
//! `inputs` entry with `"password": true` (and keeps it in its secret storage), Cursor reads it from
//! the environment (`${env:SIGNAGE_API_KEY}`), the generic form names the variable, and Claude
//! Desktop, which only launches local (stdio) servers through the `mcp-remote` bridge and passes
//! nothing but its own `env` block to it, gets a placeholder in that block for the user to fill in.
//! `--inline-key` writes the key itself everywhere (throw-away demos).
//!
//! The Claude entry keeps the key in an `env` variable because some clients split `args` on
//! spaces; `Authorization:${…}` has none.
//!
//! Only JSON goes to stdout: the notes that say where each block belongs go to stderr, so
//! `signage mcp-config --format cursor > .cursor/mcp.json` writes a file the client can read.

use argh::FromArgs;
use serde_json::{json, Value};

#[derive(FromArgs)]
/// Print the MCP client registration (Claude Desktop, Cursor, VS Code, generic) for a client id.
/// No API key is written unless --inline-key is given.
#[argh(subcommand, name = "mcp-config")]
pub struct McpConfig {
    /// base URL of the server (`/mcp` is appended if missing); default: the address `signage
    /// serve` listens on with the same configuration (signage.toml, $SIGNAGE_CONFIG, the
    /// SIGNAGE_* variables, --port), its public_base_url if set
    #[argh(option)]
    pub url: Option<String>,
    /// the server's port, when it is not the configured one (e.g. the port a `--port 0` server printed)
    #[argh(option)]
    pub port: Option<u16>,
    /// config file the server runs with (default: ./signage.toml if present, or $SIGNAGE_CONFIG)
    #[argh(option)]
    pub config: Option<std::path::PathBuf>,
    /// the API key, checked and (with --inline-key only) written (default: $SIGNAGE_API_KEY)
    #[argh(option)]
    pub key: Option<String>,
    /// the API client id of the key (`cli_…`)
    #[argh(option)]
    pub client_id: Option<String>,
    /// all (default), claude, cursor, vscode or generic
    #[argh(option, default = "String::from(\"all\")")]
    pub format: String,
    /// write the raw API key into the output (throw-away demos only; the default writes none)
    #[argh(switch)]
    pub inline_key: bool,
    /// only these toolsets, comma-separated (account, companies, devices, ads, promotions, plans,
    /// tokens, billing, media, webhooks); sent as the X-MCP-Toolsets header
    #[argh(option)]
    pub toolsets: Option<String>,
    /// read-only: no tool that prepares or confirms a change (the X-MCP-Readonly header)
    #[argh(switch)]
    pub readonly: bool,
}

pub const SERVER_NAME: &str = "signage";
/// The environment variable Cursor and the generic form read the key from.
pub const KEY_ENV: &str = "SIGNAGE_API_KEY";
/// The id of VS Code's input that asks for the key.
pub const VSCODE_INPUT: &str = "signage-api-key";
/// What stands in Claude Desktop's `env` block until the user pastes the key.
pub const CLAUDE_PLACEHOLDER: &str = "Bearer <paste the API key here>";

/// Where the key comes from in the printed configuration.
#[derive(Clone, Copy)]
pub enum KeySource<'a> {
    /// The raw key, written as it is (`--inline-key`).
    Inline(&'a str),
    /// A reference each client resolves itself (the default).
    Reference,
}

/// The `/mcp` endpoint for a base URL (or the endpoint itself).
pub fn endpoint(url: &str) -> String {
    let base = url.trim().trim_end_matches('/');
    if base.ends_with("/mcp") {
        base.to_string()
    } else {
        format!("{base}/mcp")
    }
}

fn is_local(url: &str) -> bool {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or(url);
    let host = rest.split('/').next().unwrap_or("");
    let name = match host.rfind(':') {
        Some(i) if !host.ends_with(']') => &host[..i],
        _ => host,
    };
    matches!(name, "localhost" | "127.0.0.1")
}

pub fn claude(url: &str, key: KeySource<'_>, client_id: &str) -> Value {
    let mut args = vec![
        json!("-y"),
        json!("mcp-remote"),
        json!(url),
        json!("--transport"),
        json!("http-only"),
        json!("--header"),
        json!("Authorization:${SIGNAGE_AUTH_HEADER}"),
        json!("--header"),
        json!("X-Service-Client-Id:${SIGNAGE_CLIENT_ID}"),
    ];
    // mcp-remote accepts plain http only for localhost unless told otherwise.
    if url.starts_with("http://") && !is_local(url) {
        args.push(json!("--allow-http"));
    }
    let auth = match key {
        KeySource::Inline(k) => format!("Bearer {k}"),
        KeySource::Reference => CLAUDE_PLACEHOLDER.to_string(),
    };
    json!({"mcpServers": {SERVER_NAME: {
        "command": "npx",
        "args": args,
        "env": {"SIGNAGE_AUTH_HEADER": auth, "SIGNAGE_CLIENT_ID": client_id}
    }}})
}

fn headers(authorization: String, client_id: &str) -> Value {
    json!({"Authorization": authorization, "X-Service-Client-Id": client_id})
}

pub fn cursor(url: &str, key: KeySource<'_>, client_id: &str) -> Value {
    let auth = match key {
        KeySource::Inline(k) => format!("Bearer {k}"),
        KeySource::Reference => format!("Bearer ${{env:{KEY_ENV}}}"),
    };
    json!({"mcpServers": {SERVER_NAME: {"url": url, "headers": headers(auth, client_id)}}})
}

pub fn vscode(url: &str, key: KeySource<'_>, client_id: &str) -> Value {
    match key {
        KeySource::Inline(k) => json!({"servers": {SERVER_NAME: {"type": "http", "url": url,
            "headers": headers(format!("Bearer {k}"), client_id)}}}),
        KeySource::Reference => json!({
            "inputs": [{"type": "promptString", "id": VSCODE_INPUT,
                "description": "Signage API key (sgn_test_…)", "password": true}],
            "servers": {SERVER_NAME: {"type": "http", "url": url,
                "headers": headers(format!("Bearer ${{input:{VSCODE_INPUT}}}"), client_id)}}}),
    }
}

pub fn generic(url: &str, key: KeySource<'_>, client_id: &str) -> Value {
    let auth = match key {
        KeySource::Inline(k) => format!("Bearer {k}"),
        KeySource::Reference => format!("Bearer ${{{KEY_ENV}}}"),
    };
    json!({"name": SERVER_NAME, "transport": "streamable-http", "url": url, "headers": headers(auth, client_id)})
}

/// The request headers that choose what the server shows ([`super::toolsets`]), from the options.
pub fn view_headers(
    toolsets: Option<&str>,
    readonly: bool,
) -> Result<Vec<(&'static str, String)>, String> {
    let mut out = Vec::new();
    if let Some(list) = toolsets {
        let names =
            super::toolsets::parse_toolsets(list).map_err(|e| format!("--toolsets: {e}"))?;
        out.push(("X-MCP-Toolsets", names.join(",")));
    }
    if readonly {
        out.push(("X-MCP-Readonly", "true".to_string()));
    }
    Ok(out)
}

/// Adds the view headers to a client entry: to its `headers`, or as `--header` arguments of the
/// mcp-remote bridge (Claude Desktop).
fn with_view(mut v: Value, view: &[(&'static str, String)]) -> Value {
    let servers = ["mcpServers", "servers"]
        .into_iter()
        .find(|k| v.get(*k).is_some());
    let entry = match servers {
        Some(k) => &mut v[k][SERVER_NAME],
        None => &mut v,
    };
    for (name, value) in view {
        if let Some(h) = entry.get_mut("headers").and_then(Value::as_object_mut) {
            h.insert(name.to_string(), json!(value));
        } else if let Some(args) = entry.get_mut("args").and_then(Value::as_array_mut) {
            args.push(json!("--header"));
            args.push(json!(format!("{name}:{value}")));
        }
    }
    v
}

/// One piece of the output: a note for the person (stderr) or a client's JSON (stdout).
#[derive(Debug, PartialEq)]
pub enum Part {
    Note(String),
    Json(String),
}

/// The notes and JSON printed for a format, in order.
pub fn render(
    format: &str,
    url: &str,
    key: KeySource<'_>,
    client_id: &str,
    view: &[(&'static str, String)],
) -> Result<Vec<Part>, String> {
    let pretty = |v: Value| serde_json::to_string_pretty(&with_view(v, view)).unwrap_or_default();
    let inline = matches!(key, KeySource::Inline(_));
    let unless_inline = |note: &str| (!inline).then(|| note.to_string());
    let sections: Vec<(&str, Vec<String>, String)> = vec![
        (
            "claude",
            [
                Some("Claude Desktop: claude_desktop_config.json (Settings > Developer > Edit Config).".to_string()),
                Some("It only starts local stdio servers, so this runs the mcp-remote bridge (needs Node.js/npx).".to_string()),
                unless_inline("Replace the placeholder in `env` with `Bearer <your key>`: Claude Desktop passes mcp-remote nothing else."),
            ]
            .into_iter()
            .flatten()
            .collect(),
            pretty(claude(url, key, client_id)),
        ),
        (
            "cursor",
            [
                Some("Cursor: ~/.cursor/mcp.json (or .cursor/mcp.json in a project).".to_string()),
                unless_inline("The key is read from the environment variable SIGNAGE_API_KEY of the process that starts Cursor."),
            ]
            .into_iter()
            .flatten()
            .collect(),
            pretty(cursor(url, key, client_id)),
        ),
        (
            "vscode",
            [
                Some("VS Code: .vscode/mcp.json (or the user mcp.json).".to_string()),
                unless_inline("VS Code asks for the key once and keeps it in its secret storage."),
            ]
            .into_iter()
            .flatten()
            .collect(),
            pretty(vscode(url, key, client_id)),
        ),
        (
            "generic",
            [
                Some("Any Streamable HTTP MCP client: POST the URL with these two headers.".to_string()),
                unless_inline("${SIGNAGE_API_KEY} stands for the key: use your client's way to read it from the environment or a secret store."),
            ]
            .into_iter()
            .flatten()
            .collect(),
            pretty(generic(url, key, client_id)),
        ),
    ];
    if format != "all" && !sections.iter().any(|(name, _, _)| *name == format) {
        return Err(format!(
            "--format must be all, claude, cursor, vscode or generic, not `{format}`"
        ));
    }
    Ok(sections
        .into_iter()
        .filter(|(name, _, _)| format == "all" || *name == format)
        .flat_map(|(_, notes, json)| {
            notes
                .into_iter()
                .map(|n| Part::Note(format!("# {n}")))
                .chain([Part::Json(json)])
        })
        .collect())
}

/// What to print for the server at `base_url` (the caller prints it: notes to stderr, JSON to
/// stdout; this module writes no output itself).
pub fn run(cmd: McpConfig, base_url: &str) -> Result<Vec<Part>, String> {
    let key = cmd
        .key
        .or_else(|| std::env::var(KEY_ENV).ok())
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty());
    // The key is only needed to be written; when given, a copy/paste error is still caught.
    if let Some(k) = &key {
        if crate::auth::keys::parse(k).is_none() {
            return Err(
                "the API key is not a signage key (`sgn_test_…`); check for a copy/paste error"
                    .into(),
            );
        }
    }
    let source = match (&key, cmd.inline_key) {
        (Some(k), true) => KeySource::Inline(k),
        (None, true) => {
            return Err(
                "--inline-key needs the key: give it with --key or in SIGNAGE_API_KEY".into(),
            )
        }
        (_, false) => KeySource::Reference,
    };
    let client_id = cmd
        .client_id
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .ok_or("give the key's API client id with --client-id (`cli_…`)")?;
    let url = endpoint(base_url);
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(format!(
            "--url must be an http:// or https:// URL, not `{base_url}`"
        ));
    }
    let view = view_headers(cmd.toolsets.as_deref(), cmd.readonly)?;
    let mut parts = render(&cmd.format, &url, source, &client_id, &view)?;
    parts.insert(0, Part::Note(if cmd.inline_key {
        "note: the output contains the API key; keep it out of chats, tickets and shared repositories.".to_string()
    } else {
        "note: the output contains no API key: VS Code asks for it, Cursor reads $SIGNAGE_API_KEY, Claude Desktop needs it pasted into its env block. --inline-key writes it (throw-away demos only).".to_string()
    }));
    Ok(parts)
}

/// The JSON of the parts, as stdout carries it.
pub fn stdout_of(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|p| match p {
            Part::Json(j) => Some(j.as_str()),
            Part::Note(_) => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sgn_test_VECFOkBoPCcq3rfr_ssqf9Y9xxptbfgNOxP5rqItR2hoMjFvg2yaUNr";
    const INLINE: KeySource<'static> = KeySource::Inline(KEY);

    /// Everything printed, notes and JSON, in order.
    fn text(parts: Vec<Part>) -> String {
        parts
            .into_iter()
            .map(|p| match p {
                Part::Note(t) | Part::Json(t) => t,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn formats_carry_the_url_and_both_headers() {
        let url = endpoint("http://127.0.0.1:8080/");
        assert_eq!(url, "http://127.0.0.1:8080/mcp");
        assert_eq!(endpoint("https://x.example/mcp"), "https://x.example/mcp");
        let c = cursor(&url, INLINE, "cli_1");
        assert_eq!(c["mcpServers"]["signage"]["url"], url);
        assert_eq!(
            c["mcpServers"]["signage"]["headers"]["Authorization"],
            format!("Bearer {KEY}")
        );
        assert_eq!(
            c["mcpServers"]["signage"]["headers"]["X-Service-Client-Id"],
            "cli_1"
        );
        let v = vscode(&url, INLINE, "cli_1");
        assert_eq!(v["servers"]["signage"]["type"], "http");
        let d = claude(&url, INLINE, "cli_1");
        let s = &d["mcpServers"]["signage"];
        assert_eq!(s["command"], "npx");
        let args: Vec<&str> = s["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert!(args.contains(&"mcp-remote") && args.contains(&url.as_str()));
        assert!(!args.contains(&"--allow-http"));
        assert!(
            args.iter().all(|a| !a.contains(' ')),
            "no spaces in args: {args:?}"
        );
        assert_eq!(s["env"]["SIGNAGE_AUTH_HEADER"], format!("Bearer {KEY}"));
        let remote = claude("http://10.0.0.5:8080/mcp", INLINE, "cli_1");
        assert!(remote["mcpServers"]["signage"]["args"]
            .as_array()
            .unwrap()
            .contains(&json!("--allow-http")));
        let g = generic(&url, INLINE, "cli_1");
        assert_eq!(g["name"], "signage");
    }

    #[test]
    fn by_default_no_key_is_written() {
        let url = "http://127.0.0.1:8080/mcp";
        let all = text(render("all", url, KeySource::Reference, "cli_1", &[]).unwrap());
        // Nothing key-shaped: the redactor finds nothing to replace.
        assert_eq!(crate::redact::redact_str(&all), all.as_str());
        let v = vscode(url, KeySource::Reference, "cli_1");
        assert_eq!(
            v["inputs"],
            json!([{"type": "promptString", "id": "signage-api-key",
                "description": "Signage API key (sgn_test_…)", "password": true}])
        );
        assert_eq!(
            v["servers"]["signage"]["headers"]["Authorization"],
            "Bearer ${input:signage-api-key}"
        );
        let c = cursor(url, KeySource::Reference, "cli_1");
        assert_eq!(
            c["mcpServers"]["signage"]["headers"]["Authorization"],
            "Bearer ${env:SIGNAGE_API_KEY}"
        );
        let d = claude(url, KeySource::Reference, "cli_1");
        assert_eq!(
            d["mcpServers"]["signage"]["env"]["SIGNAGE_AUTH_HEADER"],
            CLAUDE_PLACEHOLDER
        );
        assert_eq!(
            d["mcpServers"]["signage"]["env"]["SIGNAGE_CLIENT_ID"],
            "cli_1"
        );
    }

    #[test]
    fn run_writes_the_key_only_when_asked() {
        let cmd = |key: Option<&str>, inline_key: bool| McpConfig {
            url: None,
            port: None,
            config: None,
            key: key.map(String::from),
            client_id: Some("cli_1".into()),
            format: "all".into(),
            inline_key,
            toolsets: None,
            readonly: false,
        };
        let url = "http://127.0.0.1:8080";
        let printed = text(run(cmd(Some(KEY), false), url).unwrap());
        assert!(!printed.contains(KEY));
        let printed = text(run(cmd(Some(KEY), true), url).unwrap());
        assert_eq!(printed.matches(KEY).count(), 4);
        assert!(run(cmd(Some("sgn_test_nope"), false), url).is_err());
        assert!(run(cmd(None, false), "ftp://x").is_err());
    }

    #[test]
    fn toolsets_and_read_only_mode_reach_every_format() {
        let view = view_headers(Some("Devices, ads"), true).unwrap();
        assert_eq!(
            view,
            [
                ("X-MCP-Toolsets", "devices,ads".to_string()),
                ("X-MCP-Readonly", "true".to_string())
            ]
        );
        assert!(view_headers(Some("screens"), false)
            .unwrap_err()
            .contains("`screens`"));
        let url = "http://127.0.0.1:8080/mcp";
        let all = text(render("all", url, KeySource::Reference, "cli_1", &view).unwrap());
        // Cursor, VS Code and the generic form carry both headers; Claude's bridge gets arguments.
        assert_eq!(
            all.matches("\"X-MCP-Toolsets\": \"devices,ads\"").count(),
            3,
            "{all}"
        );
        assert_eq!(all.matches("\"X-MCP-Readonly\": \"true\"").count(), 3);
        assert!(all.contains("\"X-MCP-Toolsets:devices,ads\""));
        assert!(all.contains("\"X-MCP-Readonly:true\""));
    }

    #[test]
    fn render_selects_formats() {
        let all = text(render("all", "http://127.0.0.1:8080/mcp", INLINE, "cli_1", &[]).unwrap());
        for marker in ["Claude Desktop", "Cursor", "VS Code", "Any Streamable HTTP"] {
            assert!(all.contains(marker), "{marker}");
        }
        let one = render("cursor", "http://127.0.0.1:8080/mcp", INLINE, "cli_1", &[]).unwrap();
        // One format: its notes, then exactly one JSON document.
        let json: Vec<&Part> = one.iter().filter(|p| matches!(p, Part::Json(_))).collect();
        assert_eq!(json.len(), 1);
        let doc: Value = serde_json::from_str(&stdout_of(&one)).unwrap();
        assert!(doc.get("mcpServers").is_some() && !doc.to_string().contains("npx"));
        assert!(render("emacs", "u", INLINE, "c", &[]).is_err());
    }
}
