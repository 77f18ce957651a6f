//! The book (`docs/src/`) and the README cannot quietly rot:
//! - every relative link resolves to a file, and every `#anchor` to a heading of that page;
//! - every page is in `SUMMARY.md`, and every `SUMMARY.md` entry is a page;
//! - every shell, Python or TypeScript example says whether it runs (`<!-- runnable -->`,
//!   `<!-- runnable: server -->`) or why not (`<!-- not runnable: … -->`) on the line before it;
//! - every runnable example is executed against a fresh server (the real binary, frozen, seeded, on a
//!   free port): each command must succeed (curl gets `--fail-with-body`), and a `# {…}` comment
//!   after a command (on its own line or at its end) is JSON the command's output must contain;
//! - a JSON block under `<!-- output-of: signage … -->` is what that command prints;
//! - the configuration page lists exactly the settings the code reads (file keys and variables).
//! - a page for users (all but `contributing/`) names no source file and no internal issue.

use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every page of the book.
fn markdown_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut files = vec![root().join("README.md")];
    walk(&root().join("docs/src"), &mut files);
    files.sort();
    files
}

/// mdBook's heading ids: lower-case, alphanumerics, `-` and `_` kept, whitespace to `-`, the rest
/// dropped (markup such as backticks included); a repeated id gets `-1`, `-2`, …
fn heading_ids(markdown: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut ids = BTreeSet::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let text = line.trim_start_matches('#').trim();
        let id: String = text
            .chars()
            .filter_map(|c| {
                if c.is_alphanumeric() || c == '_' || c == '-' {
                    Some(c.to_lowercase().next().unwrap_or(c))
                } else if c.is_whitespace() {
                    Some('-')
                } else {
                    None
                }
            })
            .collect();
        let n = seen.entry(id.clone()).or_insert(0);
        ids.insert(if *n == 0 {
            id.clone()
        } else {
            format!("{id}-{n}")
        });
        *n += 1;
    }
    ids
}

/// Every `[text](target)` outside code, with its line number.
fn links(markdown: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (n, line) in markdown.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Inline code may hold `](` that is not a link.
        let visible: String = line.split('`').step_by(2).collect::<Vec<_>>().join("");
        let mut rest = visible.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((n + 1, after[..end].to_string()));
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn every_link_in_the_readme_and_the_book_resolves() {
    let mut broken = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, target) in links(&text) {
            if target.starts_with("http://")
                || target.starts_with("https://")
                || target.starts_with("mailto:")
            {
                continue; // the network is not ours to check from a test
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let resolved = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            let shown = format!(
                "{}:{line}: {target}",
                file.strip_prefix(root()).unwrap().display()
            );
            if !resolved.exists() {
                broken.push(format!("{shown} (no such file)"));
                continue;
            }
            if let Some(anchor) = anchor {
                let page = std::fs::read_to_string(&resolved).unwrap_or_default();
                if !heading_ids(&page).contains(anchor) {
                    broken.push(format!("{shown} (no heading with that id)"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_page_is_in_the_summary_and_every_entry_is_a_page() {
    let src = root().join("docs/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    let listed: BTreeSet<PathBuf> = links(&summary)
        .into_iter()
        .map(|(_, target)| src.join(target))
        .collect();
    for page in &listed {
        assert!(
            page.exists(),
            "SUMMARY.md lists {} which does not exist",
            page.display()
        );
    }
    let pages = root().join("docs/src");
    for file in markdown_files()
        .into_iter()
        .filter(|f| f.starts_with(&pages))
    {
        if file.ends_with("SUMMARY.md") {
            continue;
        }
        assert!(
            listed.contains(&file),
            "{} is not in SUMMARY.md",
            file.display()
        );
    }
}

/// A fenced code block and the HTML comment on the line before it, if any.
struct Block {
    file: PathBuf,
    line: usize,
    lang: String,
    marker: Option<String>,
    body: String,
}

fn blocks() -> Vec<Block> {
    let mut out = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let trimmed = lines[i].trim_start();
            if let Some(lang) = trimmed.strip_prefix("```") {
                let indent = lines[i].len() - trimmed.len();
                let marker = lines[..i]
                    .iter()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .map(|l| l.trim())
                    .filter(|l| l.starts_with("<!--") && l.ends_with("-->"))
                    .map(|l| l[4..l.len() - 3].trim().to_string());
                let mut body = String::new();
                let mut j = i + 1;
                while j < lines.len() && !lines[j].trim_start().starts_with("```") {
                    let l = lines[j];
                    body.push_str(
                        l.get(indent.min(l.len() - l.trim_start().len())..)
                            .unwrap_or(""),
                    );
                    body.push('\n');
                    j += 1;
                }
                out.push(Block {
                    file: file.clone(),
                    line: i + 1,
                    lang: lang.trim().to_string(),
                    marker,
                    body,
                });
                i = j + 1;
            } else {
                i += 1;
            }
        }
    }
    out
}

fn is_example(lang: &str) -> bool {
    matches!(lang, "sh" | "bash" | "console" | "python" | "ts" | "js")
}

#[test]
fn every_example_says_whether_it_runs() {
    let unmarked: Vec<String> = blocks()
        .into_iter()
        .filter(|b| is_example(&b.lang))
        .filter(|b| {
            !b.marker.as_deref().is_some_and(|m| {
                m == "runnable" || m == "runnable: server" || m.starts_with("not runnable: ")
            })
        })
        .map(|b| {
            format!(
                "{}:{}",
                b.file.strip_prefix(root()).unwrap().display(),
                b.line
            )
        })
        .collect();
    assert!(
        unmarked.is_empty(),
        "examples without `<!-- runnable -->` or `<!-- not runnable: why -->` before them:\n{}",
        unmarked.join("\n")
    );
}

/// A server for one example: the real binary, frozen and seeded, on a free port, stopped on drop.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(args: &[&str]) -> (Server, String) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_signage"))
            .args(args)
            .env_remove("SIGNAGE_CONFIG")
            .env("SIGNAGE_LOG_LEVEL", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the signage binary starts");
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let base = first
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no address in the first line: {first:?}"))
            .to_string();
        (Server { child, base }, first)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `expected` is contained in `actual`: every member of an object (recursively), arrays equal.
fn contains(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Object(a), Value::Object(e)) => e
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|av| contains(av, v))),
        _ => actual == expected,
    }
}

/// The commands of a shell example (continuation lines joined), each with the JSON a `# {…}`
/// comment says it prints.
fn steps(body: &str) -> Vec<(String, Option<Value>)> {
    let mut steps: Vec<(String, Option<Value>)> = Vec::new();
    let mut pending = String::new();
    // `Q="…"` lines set a variable for the commands after them.
    let mut assignments = String::new();
    for line in body.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if pending.is_empty() {
            if let Some(comment) = line.strip_prefix('#') {
                if let (Some(last), Ok(json)) = (
                    steps.last_mut(),
                    serde_json::from_str::<Value>(comment.trim()),
                ) {
                    last.1 = Some(json);
                }
                continue;
            }
        }
        if let Some(cont) = line.strip_suffix('\\') {
            pending.push_str(cont);
            pending.push(' ');
            continue;
        }
        pending.push_str(line);
        if pending.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        }) {
            assignments.push_str(&pending);
            assignments.push_str("; ");
            pending.clear();
            continue;
        }
        let (command, expected) = match pending.split_once("  # {") {
            Some((c, j)) => (
                c.trim().to_string(),
                serde_json::from_str(&format!("{{{j}")).ok(),
            ),
            None => (pending.trim().to_string(), None),
        };
        steps.push((format!("{assignments}{command}"), expected));
        pending.clear();
    }
    steps
}

/// The variables the examples use, as a harness would set them.
fn example_env(base: &str) -> Vec<(&'static str, String)> {
    let creds: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("fixtures/demo-credentials.json")).unwrap(),
    )
    .unwrap();
    let key = |name: &str| -> (String, String) {
        let k = creds["keys"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["name"] == name)
            .unwrap_or_else(|| panic!("demo key {name}"));
        (
            k["rawKey"].as_str().unwrap().to_string(),
            k["client_id"].as_str().unwrap().to_string(),
        )
    };
    let (op, op_client) = key("sandbox-operator");
    let (rw, rw_client) = key("northwind-readwrite");
    let hooks = Command::new("curl")
        .args(["-s", &format!("{base}/webhooks?limit=1"), "-H"])
        .arg(format!("X-API-KEY: {rw}"))
        .arg("-H")
        .arg(format!("X-Service-Client-Id: {rw_client}"))
        .output()
        .unwrap();
    let hooks: Value = serde_json::from_slice(&hooks.stdout).unwrap();
    let hook = hooks["data"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    vec![
        ("BASE", base.to_string()),
        ("OP", op),
        ("OP_CLIENT", op_client),
        ("KEY", rw),
        ("CLIENT", rw_client),
        ("HOOK", hook),
    ]
}

const SERVE: [&str; 9] = [
    "serve",
    "--port",
    "0",
    "--database",
    ":memory:",
    "--clock",
    "2026-03-02T09:00:00Z",
    "--seed",
    "7",
];

#[test]
fn every_runnable_example_runs_against_a_fresh_server() {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_signage"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut ran = 0;
    for block in blocks() {
        let at = format!(
            "{}:{}",
            block.file.strip_prefix(root()).unwrap().display(),
            block.line
        );
        match block.marker.as_deref() {
            Some("runnable") => {
                let (server, _) = Server::start(&SERVE);
                let env = example_env(&server.base);
                for (command, expected) in steps(&block.body) {
                    let command = command.replace("http://127.0.0.1:8080", &server.base);
                    // A command that is a plain curl call must succeed (a 4xx or 5xx fails it).
                    let command = match command.rsplit_once("; curl ") {
                        Some((vars, rest)) => format!("{vars}; curl --fail-with-body {rest}"),
                        None => match command.strip_prefix("curl ") {
                            Some(rest) => format!("curl --fail-with-body {rest}"),
                            None => command,
                        },
                    };
                    let out = Command::new("bash")
                        .args(["-o", "pipefail", "-c", &command])
                        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
                        .env("PATH", &path)
                        .output()
                        .unwrap();
                    let stdout = String::from_utf8_lossy(&out.stdout);
                    assert!(
                        out.status.success(),
                        "{at}: `{command}` failed ({}):\n{stdout}{}",
                        out.status,
                        String::from_utf8_lossy(&out.stderr)
                    );
                    if let Some(expected) = expected {
                        let actual: Value =
                            serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
                                panic!("{at}: `{command}` printed no JSON ({e}): {stdout}")
                            });
                        assert!(
                            contains(&actual, &expected),
                            "{at}: `{command}` printed {actual}, the example says {expected}"
                        );
                    }
                }
                ran += 1;
            }
            Some("runnable: server") => {
                // The example starts a server: start it exactly so, and check its first line.
                let command = block
                    .body
                    .lines()
                    .map(str::trim)
                    .find(|l| l.starts_with("signage serve"))
                    .unwrap_or_else(|| panic!("{at}: no `signage serve` line"));
                let args: Vec<&str> = command.split_whitespace().skip(1).collect();
                let (_server, first) = Server::start(&args);
                assert!(
                    first.starts_with("signage listening on http://127.0.0.1:"),
                    "{at}: first line {first:?}"
                );
                ran += 1;
            }
            _ => {}
        }
    }
    assert!(ran >= 5, "only {ran} runnable examples found");
}

#[test]
fn every_shown_command_output_is_what_the_command_prints() {
    let bin = env!("CARGO_BIN_EXE_signage");
    let mut checked = 0;
    for block in blocks() {
        let Some(command) = block
            .marker
            .as_deref()
            .and_then(|m| m.strip_prefix("output-of: signage "))
        else {
            continue;
        };
        let out = Command::new(bin)
            .args(command.split_whitespace())
            .env_remove("SIGNAGE_API_KEY")
            .output()
            .unwrap();
        assert!(out.status.success(), "signage {command} failed");
        // Stdout is the JSON alone (notes go to stderr), so a redirect writes a valid file.
        let printed: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("signage {command}: stdout is not one JSON document: {e}"));
        let shown: Value = serde_json::from_str(&block.body)
            .unwrap_or_else(|e| panic!("{}:{}: not JSON: {e}", block.file.display(), block.line));
        assert_eq!(shown, printed, "{}:{}", block.file.display(), block.line);
        checked += 1;
    }
    assert!(checked >= 1);
}

#[test]
fn the_configuration_page_lists_exactly_the_settings_the_code_reads() {
    let page = std::fs::read_to_string(root().join("docs/src/configuration.md")).unwrap();
    // Variables: every name the code asks the environment for.
    let asked = std::cell::RefCell::new(BTreeSet::new());
    signage::config::Layer::from_env(|name| {
        asked.borrow_mut().insert(name.to_string());
        None
    })
    .unwrap();
    let documented: BTreeSet<String> = page
        .split('`')
        .filter(|w| {
            w.starts_with("SIGNAGE_") && w.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        })
        .map(str::to_string)
        .collect();
    let asked = asked.into_inner();
    let undocumented: Vec<_> = asked.difference(&documented).collect();
    let unknown: Vec<_> = documented.difference(&asked).collect();
    assert!(
        undocumented.is_empty(),
        "variables the code reads that the page does not list: {undocumented:?}"
    );
    assert!(
        unknown.is_empty(),
        "variables the page lists that the code does not read: {unknown:?}"
    );
    // File keys: every key of the example file, set or shown commented out (`# seed = 7`), is in
    // the table, and every key in the table's first column is in the example file.
    let mut keys = BTreeSet::new();
    let mut section = String::new();
    for line in std::fs::read_to_string(root().join("signage.toml.example"))
        .unwrap()
        .lines()
    {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_string();
            continue;
        }
        let setting = line.strip_prefix("# ").unwrap_or(line);
        if let Some((key, _)) = setting.split_once(" = ") {
            if !key.is_empty() && key.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                keys.insert(format!("{section}.{key}"));
            }
        }
    }
    let in_table: BTreeSet<String> = page
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .filter(|k| k.contains('.'))
        .map(str::to_string)
        .collect();
    // And the code's own list: every key a setting reads under its current name.
    let read: BTreeSet<String> = signage::config::KEYS
        .iter()
        .map(|k| k.file[0].to_string())
        .collect();
    assert_eq!(
        read, in_table,
        "the keys the code reads and the configuration table differ"
    );
    let missing: Vec<_> = keys.difference(&in_table).collect();
    let extra: Vec<_> = in_table.difference(&keys).collect();
    assert!(
        missing.is_empty(),
        "keys of signage.toml.example not in the configuration table: {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "keys in the configuration table that signage.toml.example lacks: {extra:?}"
    );
}

#[test]
fn the_security_page_names_every_route_an_outsider_reaches() {
    let page = std::fs::read_to_string(root().join("docs/src/security.md")).unwrap();
    let outsiders = page
        .split("- **Outsiders**")
        .nth(1)
        .and_then(|rest| rest.split("\n- ").next())
        .expect("the Outsiders item of security.md");
    let unnamed: Vec<String> = signage::app::routes()
        .iter()
        .filter(|r| r.action == signage::auth::Action::Public)
        // The console's files are named together, as `/console/…`.
        .filter(|r| !(r.path.starts_with("/console/") && outsiders.contains("`/console/…`")))
        .filter(|r| {
            !outsiders.contains(&format!("`{}`", r.path))
                && !outsiders.contains(&format!("`{} {}`", r.method, r.path))
        })
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(
        unnamed.is_empty(),
        "public routes security.md does not name among what outsiders reach: {unnamed:?}"
    );
}

/// The demo credentials of the fixtures: (name, rawKey, client_id) of every key.
fn demo_keys() -> Vec<(String, String, String)> {
    let creds: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("fixtures/demo-credentials.json")).unwrap(),
    )
    .unwrap();
    creds["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            let s = |f: &str| k[f].as_str().unwrap().to_string();
            (s("name"), s("rawKey"), s("client_id"))
        })
        .collect()
}

#[test]
fn the_copy_paste_credentials_are_the_fixtures_and_the_same_on_every_page() {
    let keys = demo_keys();
    let of = |name: &str| keys.iter().find(|k| k.0 == name).unwrap().clone();
    let (_, key, client) = of("northwind-readwrite");
    let (_, op, op_client) = of("sandbox-operator");
    let expected: Vec<(String, String)> = [
        ("BASE", "http://127.0.0.1:8080".to_string()),
        ("KEY", key),
        ("CLIENT", client),
        ("OP", op),
        ("OP_CLIENT", op_client),
    ]
    .into_iter()
    .map(|(n, v)| (n.to_string(), v))
    .collect();
    let mut first: Option<String> = None;
    for page in ["demo-data.md", "test-suite.md", "going-live.md"] {
        let block = blocks()
            .into_iter()
            .find(|b| b.file.ends_with(page) && b.body.lines().any(|l| l.starts_with("OP_CLIENT=")))
            .unwrap_or_else(|| panic!("{page} has no credential block"));
        let set: Vec<(String, String)> = block
            .body
            .lines()
            .filter_map(|l| l.split_once('='))
            .filter(|(n, _)| n.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        assert_eq!(set, expected, "{page}: the credential block");
        match &first {
            None => first = Some(block.body.clone()),
            Some(body) => assert_eq!(&block.body, body, "{page}: not the same block"),
        }
        // At the top of the page: before its first section.
        let text = std::fs::read_to_string(&block.file).unwrap();
        let at = text.find("OP_CLIENT=").unwrap();
        if page != "demo-data.md" {
            assert!(
                !text[..at].contains("\n## "),
                "{page}: the block is not at the top"
            );
        }
    }
}

#[test]
fn the_demo_credentials_page_lists_every_key_of_the_fixtures() {
    let page = std::fs::read_to_string(root().join("docs/src/demo-data.md")).unwrap();
    let missing: Vec<String> = demo_keys()
        .into_iter()
        .filter(|(name, raw, client)| {
            !page.lines().any(|l| {
                l.starts_with(&format!("| `{name}` |"))
                    && l.contains(&format!("`{raw}`"))
                    && l.contains(&format!("`{client}`"))
            })
        })
        .map(|(name, _, _)| name)
        .collect();
    assert!(
        missing.is_empty(),
        "demo-data.md lacks the keys {missing:?}"
    );
}

/// A link from a page of the book to a file outside `docs/src` resolves in the Markdown but is dead
/// in the built HTML (mdBook copies only the book): link to a page, or include the text.
#[test]
fn no_link_of_the_book_leaves_the_book() {
    let src = root().join("docs/src").canonicalize().unwrap();
    let mut leaving = Vec::new();
    let pages = root().join("docs/src");
    for file in markdown_files()
        .into_iter()
        .filter(|f| f.starts_with(&pages))
    {
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") || target.starts_with('#') {
                continue;
            }
            let path = target.split('#').next().unwrap_or_default();
            let resolved = file.parent().unwrap().join(path).canonicalize();
            if !resolved.is_ok_and(|p| p.starts_with(&src)) {
                leaving.push(format!(
                    "{}:{line}: {target}",
                    file.strip_prefix(root()).unwrap().display()
                ));
            }
        }
    }
    assert!(
        leaving.is_empty(),
        "links that leave the book:\n{}",
        leaving.join("\n")
    );
}

#[test]
fn the_book_names_the_version_the_binary_reports() {
    let version = env!("CARGO_PKG_VERSION");
    let mut wrong = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            for shown in line.split("`signage ").skip(1) {
                let word = shown.split('`').next().unwrap_or_default();
                let is_version = word.split('.').count() == 3
                    && word
                        .split('.')
                        .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
                if is_version && word != version {
                    wrong.push(format!("{}:{}: signage {word}", file.display(), n + 1));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "the binary is signage {version}: {wrong:?}"
    );
}

/// Every problem `code` the troubleshooting page explains is one the server answers with.
#[test]
fn the_troubleshooting_page_explains_codes_that_exist() {
    let page = std::fs::read_to_string(root().join("docs/src/troubleshooting.md")).unwrap();
    let mut source = String::new();
    fn read_all(dir: &Path, out: &mut String) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                read_all(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push_str(&std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    read_all(&root().join("src"), &mut source);
    let codes: Vec<&str> = page
        .split("**")
        .skip(1)
        .step_by(2) // the bold parts: the symptoms
        .flat_map(|bold| bold.split('`').skip(1).step_by(2))
        .filter(|w| {
            w.len() > 3 && w.chars().all(|c| c.is_ascii_lowercase() || c == '_') && w.contains('_')
        })
        .collect();
    assert!(codes.len() >= 5, "{codes:?}");
    let unknown: Vec<&&str> = codes
        .iter()
        .filter(|c| !source.contains(&format!("\"{c}\"")))
        .collect();
    assert!(
        unknown.is_empty(),
        "codes the server never answers: {unknown:?}"
    );
}

/// The pages written for users: every page of the book but the contributors' part
/// (`contributing/`: architecture, tests, benchmarks' measurements and history).
fn user_pages() -> Vec<(String, String)> {
    markdown_files()
        .into_iter()
        .filter_map(|file| {
            let shown = file.strip_prefix(root()).unwrap().display().to_string();
            let user =
                shown.starts_with("docs/src/") && !shown.starts_with("docs/src/contributing/");
            user.then(|| (shown, std::fs::read_to_string(&file).unwrap()))
        })
        .collect()
}

/// Pages for users speak of what the user does: the project's issue numbers belong to the
/// contributors' part.
#[test]
fn no_user_page_names_an_internal_issue() {
    let mut found = Vec::new();
    for (shown, text) in user_pages() {
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            for after in lower.split("issue ").skip(1) {
                if after.starts_with(|c: char| c.is_ascii_digit()) {
                    found.push(format!("{shown}:{}", n + 1));
                }
            }
        }
    }
    assert!(found.is_empty(), "issue numbers in user pages: {found:?}");
}

/// The folders of the source: what a builder reads, not what a user runs.
const SOURCE_FOLDERS: [&str; 9] = [
    "src",
    "tests",
    ".ci",
    ".github",
    "bench",
    "schema",
    "fixtures",
    "clients",
    "reference",
];

/// Paths a user types, which a user page may name: the Python client is installed from the
/// checkout (`pip install ./clients/python`).
const PATHS_A_USER_TYPES: [&str; 1] = ["clients/python"];

/// The source files a user page names in its text (code blocks hold what the user types, and are
/// not read): a path in a source folder (`src/…`, `tests/…`, `.ci/…`), a Rust file or module
/// path (`auth::cache`), or a file of those folders by its bare name (`story.py`). `/`-rooted
/// paths are the server's URLs.
fn source_files_named(text: &str, source_names: &BTreeSet<String>) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut fenced = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        // Code blocks hold what the user types; HTML comments and mdBook's includes are not shown.
        let hidden = line.trim_start().starts_with("<!--") || line.trim_start().starts_with("{{#");
        if fenced || hidden {
            continue;
        }
        // A Rust path in inline code (`auth::cache`) names a module of the source.
        for code in line.split('`').skip(1).step_by(2) {
            let Some((head, tail)) = code.split_once("::") else {
                continue;
            };
            let is_module = head.starts_with(|c: char| c.is_ascii_lowercase())
                && head
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            // `fc00::/7` and `fe80::1` are addresses, not paths.
            if is_module && tail.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
                found.push((n + 1, code.to_string()));
            }
        }
        let tokens = line.split(|c: char| !(c.is_ascii_alphanumeric() || "_./{}*-".contains(c)));
        for token in tokens {
            let token = token.trim_end_matches('.');
            let mut path = token;
            while let Some(rest) = path.strip_prefix("./").or_else(|| path.strip_prefix("../")) {
                path = rest;
            }
            let in_folder = !token.starts_with('/')
                && SOURCE_FOLDERS.iter().any(|f| {
                    path == *f && token.ends_with('/') || path.starts_with(&format!("{f}/"))
                });
            let rust_file = token.ends_with(".rs") && token.len() > 3;
            let by_name = !token.contains('/') && source_names.contains(token);
            let allowed = PATHS_A_USER_TYPES.contains(&path.trim_end_matches('/'));
            if (in_folder || rust_file || by_name) && !allowed {
                found.push((n + 1, token.to_string()));
            }
        }
    }
    found
}

/// Pages for users speak of what the user does and sees: where a behaviour is implemented or
/// tested belongs to the contributors' part, which a user page links to when a builder needs it.
#[test]
fn no_user_page_names_a_source_file() {
    fn names(dir: &Path, out: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            if path.is_dir() {
                if !["node_modules", "__pycache__", "results", "target"].contains(&name.as_str()) {
                    names(&path, out);
                }
            } else if name.contains('.') && !name.starts_with('.') {
                out.insert(name);
            }
        }
    }
    let mut source_names = BTreeSet::new();
    for folder in SOURCE_FOLDERS {
        names(&root().join(folder), &mut source_names);
    }
    // Names a user page uses for the user's own files, or the server's, not the source's.
    for own in [
        "README.md",
        "package.json",
        "pyproject.toml",
        "conftest.py",
        "mcp.json",
    ] {
        source_names.remove(own);
    }
    let mut found = Vec::new();
    for (shown, text) in user_pages() {
        for (line, name) in source_files_named(&text, &source_names) {
            found.push(format!("{shown}:{line}: {name}"));
        }
    }
    assert!(
        found.is_empty(),
        "source files named in user pages (say what the user sees; link the contributors' part):\n{}",
        found.join("\n")
    );
}

/// The check above finds what it should, and leaves the server's URLs and the user's commands alone.
#[test]
fn the_source_file_check_tells_source_from_urls_and_commands() {
    let names: BTreeSet<String> = ["story.py".to_string()].into();
    let page = "See `src/mcp/spec.rs` and [the test](../tests/api/journal.rs), `.ci/run`, \
                retries.rs, story.py, `auth::cache` and the `tests/` folder.\n\
                `GET /console/app.js`, `/openapi.json`, `::1`; `pip install ./clients/python`.\n\
                <!-- not runnable: tests/docs.rs runs it -->\n\
                ```sh\npython3 bench/instructions.py\n```\n";
    let found: Vec<String> = source_files_named(page, &names)
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    assert_eq!(
        found,
        [
            "auth::cache", // the module paths of a line come first
            "src/mcp/spec.rs",
            "../tests/api/journal.rs",
            ".ci/run",
            "retries.rs",
            "story.py",
            "tests/"
        ]
    );
}
