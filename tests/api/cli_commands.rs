//! Tests: the small commands a user pipes or scripts, run as the real binary. `signage
//! mcp-config` writes only JSON to stdout (so `> mcp.json` is a file a client reads) and points at
//! the server the user runs; `signage --version` answers.

use crate::helpers::{key, TestApp};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh, empty working directory (no `signage.toml` of the checkout's).
fn workdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("signage-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the binary in `dir` with none of the caller's SIGNAGE_* variables.
fn signage(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_signage"));
    cmd.args(args).current_dir(dir);
    for (name, _) in std::env::vars() {
        if name.starts_with("SIGNAGE_") {
            cmd.env_remove(name);
        }
    }
    cmd.output().unwrap()
}

/// The whole stdout as one JSON document (what `> mcp.json` writes).
fn stdout_json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

#[tokio::test]
async fn mcp_config_prints_json_only_for_the_running_servers_port_and_it_connects() {
    let app = TestApp::spawn().await;
    let port = app.base_url.rsplit(':').next().unwrap().to_string();
    let k = key("northwind-readwrite");
    let dir = workdir("mcp-config");
    let out = signage(
        &dir,
        &[
            "mcp-config",
            "--client-id",
            &k.client_id,
            "--format",
            "generic",
            "--port",
            &port,
        ],
    );
    let config = stdout_json(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("# Any Streamable HTTP MCP client"),
        "the notes go to stderr: {stderr}"
    );
    let url = config["url"].as_str().unwrap();
    assert_eq!(url, format!("{}/mcp", app.base_url));
    // The printed registration reaches this server: its URL and headers, with the key filled in.
    let path = url.strip_prefix(&app.base_url).unwrap();
    let mut request = app
        .post(path)
        .header("accept", "application/json, text/event-stream");
    for (name, value) in config["headers"].as_object().unwrap() {
        let value = value
            .as_str()
            .unwrap()
            .replace("${SIGNAGE_API_KEY}", &k.raw);
        request = request.header(name, &value);
    }
    let r = request
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "cli-test", "version": "1"}}}),
        )
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["result"]["serverInfo"]["name"], "signage");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mcp_config_takes_the_address_from_the_configuration_unless_told() {
    let dir = workdir("mcp-config-file");
    let url_of = |args: &[&str]| -> String {
        let mut all = vec!["mcp-config", "--client-id", "cli_1", "--format", "cursor"];
        all.extend_from_slice(args);
        let config = stdout_json(&signage(&dir, &all));
        config["mcpServers"]["signage"]["url"]
            .as_str()
            .unwrap()
            .to_string()
    };
    // No configuration: the default address of `signage serve`.
    assert_eq!(url_of(&[]), "http://127.0.0.1:8080/mcp");
    // The signage.toml `signage serve` would read in this directory.
    std::fs::write(
        dir.join("signage.toml"),
        "[server]\nlisten = \"127.0.0.1:7345\"\n",
    )
    .unwrap();
    assert_eq!(url_of(&[]), "http://127.0.0.1:7345/mcp");
    assert_eq!(url_of(&["--port", "7400"]), "http://127.0.0.1:7400/mcp");
    std::fs::write(
        dir.join("signage.toml"),
        "[server]\nlisten = \"0.0.0.0:7345\"\npublic_base_url = \"https://signage.example.test\"\n",
    )
    .unwrap();
    assert_eq!(url_of(&[]), "https://signage.example.test/mcp");
    // --url wins over everything.
    assert_eq!(
        url_of(&["--url", "http://10.0.0.5:9000/"]),
        "http://10.0.0.5:9000/mcp"
    );
    // A free port picked at start cannot be guessed: the command says what to give.
    let out = signage(&dir, &["mcp-config", "--client-id", "cli_1", "--port", "0"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--port"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn version_prints_the_package_version() {
    let dir = workdir("version");
    let out = signage(&dir, &["--version"]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("signage {}", env!("CARGO_PKG_VERSION"))
    );
    // No command at all is an error that points at the help, not a silent exit 0.
    let out = signage(&dir, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--help"));
    let _ = std::fs::remove_dir_all(&dir);
}
