//! `signage mcp-config`: prints the MCP registration for a key and client id, as Claude Desktop,
//! Cursor and VS Code read it, and in a generic form.
//!
//! Claude Desktop's `claude_desktop_config.json` only launches local (stdio) servers, so its entry
//! runs the `mcp-remote` bridge (`npx mcp-remote <url> --header …`). The key travels in an `env`
//! variable because some clients split `args` on spaces; `Authorization:${…}` has none.

use argh::FromArgs;
use serde_json::{json, Value};

#[derive(FromArgs)]
/// Print the MCP client registration (Claude Desktop, Cursor, VS Code, generic) for a key.
#[argh(subcommand, name = "mcp-config")]
pub struct McpConfig {
    /// base URL of the server (default http://127.0.0.1:8080); `/mcp` is appended if missing
    #[argh(option, default = "String::from(\"http://127.0.0.1:8080\")")]
    pub url: String,
    /// the API key (default: $SIGNAGE_API_KEY)
    #[argh(option)]
    pub key: Option<String>,
    /// the API client id of the key (`cli_…`)
    #[argh(option)]
    pub client_id: Option<String>,
    /// all (default), claude, cursor, vscode or generic
    #[argh(option, default = "String::from(\"all\")")]
    pub format: String,
}

pub const SERVER_NAME: &str = "signage";

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

pub fn claude(url: &str, key: &str, client_id: &str) -> Value {
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
    json!({"mcpServers": {SERVER_NAME: {
        "command": "npx",
        "args": args,
        "env": {"SIGNAGE_AUTH_HEADER": format!("Bearer {key}"), "SIGNAGE_CLIENT_ID": client_id}
    }}})
}

fn headers(key: &str, client_id: &str) -> Value {
    json!({"Authorization": format!("Bearer {key}"), "X-Service-Client-Id": client_id})
}

pub fn cursor(url: &str, key: &str, client_id: &str) -> Value {
    json!({"mcpServers": {SERVER_NAME: {"url": url, "headers": headers(key, client_id)}}})
}

pub fn vscode(url: &str, key: &str, client_id: &str) -> Value {
    json!({"servers": {SERVER_NAME: {"type": "http", "url": url, "headers": headers(key, client_id)}}})
}

pub fn generic(url: &str, key: &str, client_id: &str) -> Value {
    json!({"name": SERVER_NAME, "transport": "streamable-http", "url": url, "headers": headers(key, client_id)})
}

/// The text printed for a format.
pub fn render(format: &str, url: &str, key: &str, client_id: &str) -> Result<String, String> {
    let pretty = |v: Value| serde_json::to_string_pretty(&v).unwrap_or_default();
    let sections: Vec<(&str, String)> = vec![
        (
            "claude",
            format!(
                "# Claude Desktop: claude_desktop_config.json (Settings > Developer > Edit Config).\n# It only starts local stdio servers, so this runs the mcp-remote bridge (needs Node.js/npx).\n{}",
                pretty(claude(url, key, client_id))
            ),
        ),
        (
            "cursor",
            format!(
                "# Cursor: ~/.cursor/mcp.json (or .cursor/mcp.json in a project).\n{}",
                pretty(cursor(url, key, client_id))
            ),
        ),
        (
            "vscode",
            format!(
                "# VS Code: .vscode/mcp.json (or the user mcp.json).\n{}",
                pretty(vscode(url, key, client_id))
            ),
        ),
        (
            "generic",
            format!(
                "# Any Streamable HTTP MCP client: POST the URL with these two headers.\n{}",
                pretty(generic(url, key, client_id))
            ),
        ),
    ];
    match format {
        "all" => Ok(sections
            .into_iter()
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join("\n\n")),
        f => sections
            .into_iter()
            .find(|(name, _)| *name == f)
            .map(|(_, s)| s)
            .ok_or_else(|| {
                format!("--format must be all, claude, cursor, vscode or generic, not `{f}`")
            }),
    }
}

/// The configuration text to print (the caller prints it: this module writes no output itself).
pub fn run(cmd: McpConfig) -> Result<String, String> {
    let key = cmd
        .key
        .or_else(|| std::env::var("SIGNAGE_API_KEY").ok())
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty())
        .ok_or("give the API key with --key or in SIGNAGE_API_KEY")?;
    if crate::auth::keys::parse(&key).is_none() {
        return Err(
            "the API key is not a signage key (`sgn_test_…`); check for a copy/paste error".into(),
        );
    }
    let client_id = cmd
        .client_id
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .ok_or("give the key's API client id with --client-id (`cli_…`)")?;
    let url = endpoint(&cmd.url);
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(format!(
            "--url must be an http:// or https:// URL, not `{}`",
            cmd.url
        ));
    }
    let text = render(&cmd.format, &url, &key, &client_id)?;
    eprintln!("note: the output contains the API key; keep it out of chats, tickets and shared repositories.");
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sgn_test_VECFOkBoPCcq3rfr_ssqf9Y9xxptbfgNOxP5rqItR2hoMjFvg2yaUNr";

    #[test]
    fn formats_carry_the_url_and_both_headers() {
        let url = endpoint("http://127.0.0.1:8080/");
        assert_eq!(url, "http://127.0.0.1:8080/mcp");
        assert_eq!(endpoint("https://x.example/mcp"), "https://x.example/mcp");
        let c = cursor(&url, KEY, "cli_1");
        assert_eq!(c["mcpServers"]["signage"]["url"], url);
        assert_eq!(
            c["mcpServers"]["signage"]["headers"]["Authorization"],
            format!("Bearer {KEY}")
        );
        assert_eq!(
            c["mcpServers"]["signage"]["headers"]["X-Service-Client-Id"],
            "cli_1"
        );
        let v = vscode(&url, KEY, "cli_1");
        assert_eq!(v["servers"]["signage"]["type"], "http");
        let d = claude(&url, KEY, "cli_1");
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
        let remote = claude("http://10.0.0.5:8080/mcp", KEY, "cli_1");
        assert!(remote["mcpServers"]["signage"]["args"]
            .as_array()
            .unwrap()
            .contains(&json!("--allow-http")));
        let g = generic(&url, KEY, "cli_1");
        assert_eq!(g["name"], "signage");
    }

    #[test]
    fn render_selects_formats() {
        let all = render("all", "http://127.0.0.1:8080/mcp", KEY, "cli_1").unwrap();
        for marker in ["Claude Desktop", "Cursor", "VS Code", "Any Streamable HTTP"] {
            assert!(all.contains(marker), "{marker}");
        }
        let one = render("cursor", "http://127.0.0.1:8080/mcp", KEY, "cli_1").unwrap();
        assert!(one.contains("mcpServers") && !one.contains("npx"));
        assert!(render("emacs", "u", KEY, "c").is_err());
    }
}
