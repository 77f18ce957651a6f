//! The layers of the crate run one way: a module may use modules of its own layer or of lower
//! ones, never of a higher one, and no two modules use each other (directly or around a loop).
//!
//! The test reads every `src/**/*.rs`, maps each file to its top-level module (`src/auth/jwt.rs`
//! is `auth`), and collects the top-level modules it names through `crate::` (`use crate::db::Db`,
//! `crate::time::now()`, `use crate::{db, ids}`), `$crate::`, `super::` chains that climb to the
//! crate root, and `signage::` in the binary. Comments, doc comments, string and character
//! literals are removed first, so prose that names a module (``[`crate::http`]``) is not an edge,
//! and `#[cfg(test)]` items are skipped: a unit test may reach up to build its fixture.
//!
//! A new upward `use` fails here, naming the file. An edge on [`KNOWN_UPWARD`] is tolerated until
//! the change that removes it lands; each says which.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first. A module may depend on its own layer and the layers before it.
const LAYERS: &[(&str, &[&str])] = &[
    // Leaf utilities: no I/O state, nothing of the request path.
    (
        "foundation",
        &[
            "time",
            "random",
            "ids",
            "jsonschema",
            "json_write",
            "markup",
            "areas",
            "config",
            "outbound",
            "opening_hours",
            "redact",
            "telemetry",
            "validate",
        ],
    ),
    // Storage and what is written with it.
    (
        "data",
        &["db", "audit", "events", "ledger", "timeline", "webhooks"],
    ),
    // Credentials -> principal -> decision. Returns its own errors, takes `&Db` and the verifier.
    ("auth", &["auth"]),
    // The server, the route table, the pipeline and the one error type.
    ("http", &["http"]),
    // What is served: the REST areas and the MCP endpoint (peers: neither uses the other).
    ("services", &["routes", "mcp"]),
    // The sandbox's instrument around the platform: clock control, faults, snapshots, the
    // simulations. It drives the platform; the platform never imports it.
    ("instrument", &["sandbox"]),
    // The composition: state and the whole route table.
    ("app", &["app"]),
    ("startup", &["startup"]),
    ("cli", &["cli"]),
    ("binary", &["main"]),
];

/// Upward or looping edges that still exist, each with the change that removes it.
const KNOWN_UPWARD: &[(&str, &str, &str)] = &[];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, mods)| mods.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The code of a Rust file with comments and the contents of string and character literals
/// replaced by spaces (newlines kept), so what remains is only tokens.
fn strip(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if (c == 'r' || (c == 'b' && next == Some('r')))
            && !b
                .get(i.wrapping_sub(1))
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
            && {
                let s = if c == 'b' { i + 2 } else { i + 1 };
                let mut j = s;
                while b.get(j) == Some(&'#') {
                    j += 1;
                }
                b.get(j) == Some(&'"')
            }
        {
            // Raw string: r"…", r#"…"#, br#"…"#.
            i += if c == 'b' { 2 } else { 1 };
            let mut hashes = 0;
            while b[i] == '#' {
                hashes += 1;
                i += 1;
            }
            i += 1; // the opening quote
            out.push('"');
            while i < b.len() {
                if b[i] == '"' && (0..hashes).all(|k| b.get(i + 1 + k) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                out.push(blank(b[i]));
                i += 1;
            }
            out.push('"');
        } else if c == '"' {
            out.push('"');
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
            out.push('"');
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{1F600}', '"') or a lifetime ('a, 'static).
            let close = if next == Some('\\') {
                (i + 2..b.len().min(i + 12)).find(|&j| b[j] == '\'')
            } else if b.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match close {
                Some(j) => {
                    out.push_str("' '");
                    i = j + 1;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// `code` without the items under `#[cfg(test)]` (a `mod tests { … }` or a single item).
fn without_test_items(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        // The item ends at its closing brace (a block item) or its semicolon, whichever comes
        // first at depth zero.
        let mut depth = 0usize;
        let mut end = after.len();
        for (k, ch) in after.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = k + 1;
                    break;
                }
                _ => {}
            }
        }
        out.extend(
            after[..end]
                .chars()
                .map(|c| if c == '\n' { '\n' } else { ' ' }),
        );
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The top-level modules a path prefix at `rest` (what follows `crate::`) names: one ident, or
/// each first ident of a `{a, b::c}` group.
fn named_after(rest: &str) -> Vec<String> {
    let rest = rest.trim_start();
    if let Some(group) = rest.strip_prefix('{') {
        let mut depth = 0usize;
        let mut names = Vec::new();
        let mut expect_name = true;
        for (k, ch) in group.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => expect_name = true,
                c if expect_name && depth == 0 && (c.is_alphabetic() || c == '_') => {
                    names.push(ident_at(&group[k..]).to_string());
                    expect_name = false;
                }
                _ => {}
            }
        }
        names
    } else {
        vec![ident_at(rest).to_string()]
    }
}

/// The top-level modules that the code of one file (top-level module `own`, `depth` directories
/// below `src/`) names.
fn references(code: &str, own: &str, depth: usize, is_binary: bool) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let bytes = code.as_bytes();
    let boundary =
        |at: usize| at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
    let roots: &[&str] = if is_binary {
        &["crate::", "signage::"]
    } else {
        &["crate::"]
    };
    for root in roots {
        for (at, _) in code.match_indices(root) {
            let dollar = at > 0 && bytes[at - 1] == b'$';
            if boundary(at) || dollar {
                found.extend(named_after(&code[at + root.len()..]));
            }
        }
    }
    // `super::` chains: a file `depth` directories down (or a `mod.rs` one less) reaches the crate
    // root after that many `super`s; only chains that climb that far name another top-level module.
    for (at, _) in code.match_indices("super::") {
        if !boundary(at) || (at >= 7 && &code[at - 7..at] == "super::") {
            continue;
        }
        let mut rest = &code[at..];
        let mut climbs = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            climbs += 1;
            rest = r.trim_start();
        }
        if climbs >= depth && depth > 0 {
            found.extend(named_after(rest));
        }
    }
    found.retain(|m| m != own && m != "self" && m != "super" && !m.is_empty());
    found
}

/// module -> (module it names -> the files that name it).
fn graph() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut edges: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&src).expect("under src");
        let parts: Vec<String> = rel
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        let own = parts[0].trim_end_matches(".rs").to_string();
        if own == "lib" {
            continue; // declares the modules; names them all
        }
        // Directories between src/ and the file's module: `src/a/b.rs` is in `a::b`, two `super`s
        // from the root; `src/a/mod.rs` is `a`, one.
        let is_mod_rs = parts.last().is_some_and(|f| f == "mod.rs");
        let depth = parts.len() - usize::from(is_mod_rs);
        let text = std::fs::read_to_string(&file).expect("read source");
        let code = without_test_items(&strip(&text));
        for target in references(&code, &own, depth, own == "main") {
            edges
                .entry(own.clone())
                .or_default()
                .entry(target)
                .or_default()
                .insert(rel.display().to_string());
        }
    }
    edges
}

fn known(from: &str, to: &str) -> bool {
    KNOWN_UPWARD.iter().any(|(f, t, _)| *f == from && *t == to)
}

#[test]
fn every_module_is_on_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let unplaced: BTreeSet<String> = files
        .iter()
        .filter_map(|f| f.strip_prefix(&src).ok())
        .filter_map(|r| r.iter().next())
        .map(|m| m.to_string_lossy().trim_end_matches(".rs").to_string())
        .filter(|m| m != "lib" && layer_of(m).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules on no layer (add them to LAYERS in tests/layers.rs): {unplaced:?}"
    );
}

#[test]
fn no_module_uses_a_higher_layer() {
    let mut upward = Vec::new();
    for (from, targets) in graph() {
        let Some(lf) = layer_of(&from) else { continue };
        for (to, files) in targets {
            let Some(lt) = layer_of(&to) else { continue };
            if lt > lf && !known(&from, &to) {
                upward.push(format!(
                    "{from} ({}) -> {to} ({}) in {}",
                    LAYERS[lf].0,
                    LAYERS[lt].0,
                    files.into_iter().collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "upward dependencies:\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_module_graph_has_no_loop() {
    let g = graph();
    let mut adj: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, targets) in &g {
        for to in targets.keys().filter(|to| !known(from, to)) {
            adj.entry(from).or_default().push(to);
        }
    }
    // Depth-first search; a back edge is a loop.
    fn visit<'a>(
        n: &'a str,
        adj: &BTreeMap<&'a str, Vec<&'a str>>,
        state: &mut BTreeMap<&'a str, u8>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<&'a str>> {
        state.insert(n, 1);
        path.push(n);
        for &m in adj.get(n).map(Vec::as_slice).unwrap_or(&[]) {
            match state.get(m) {
                Some(1) => {
                    let from = path.iter().position(|x| *x == m).unwrap_or(0);
                    let mut cycle = path[from..].to_vec();
                    cycle.push(m);
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(m, adj, state, path) {
                        return Some(c);
                    }
                }
            }
        }
        path.pop();
        state.insert(n, 2);
        None
    }
    let mut state = BTreeMap::new();
    for &n in adj.keys() {
        if !state.contains_key(n) {
            let mut path = Vec::new();
            if let Some(cycle) = visit(n, &adj, &mut state, &mut path) {
                panic!("modules in a loop: {}", cycle.join(" -> "));
            }
        }
    }
}

#[test]
fn the_known_upward_edges_still_exist() {
    // An allowance outlives its edge only by mistake: drop it when the edge goes.
    let g = graph();
    for (from, to, why) in KNOWN_UPWARD {
        assert!(
            g.get(*from).is_some_and(|t| t.contains_key(*to)),
            "{from} -> {to} is gone ({why}): remove it from KNOWN_UPWARD"
        );
    }
}

#[test]
fn the_scanner_sees_code_and_not_prose() {
    let src = r##"
//! See [`crate::http`] for the server.
/// Uses `crate::app::App`.
use crate::{db::Db, ids::{self, Kind}};
fn f() -> &'static str { let _c = '"'; let _s = "crate::cli::out"; let _r = r#"crate::mcp"#; crate::time::now(); "x" }
/* crate::startup */
#[cfg(test)]
mod tests { use crate::routes; }
"##;
    let code = without_test_items(&strip(src));
    let found = references(&code, "auth", 2, false);
    let found: Vec<&str> = found.iter().map(String::as_str).collect();
    assert_eq!(found, ["db", "ids", "time"]);
    let nested = "use super::super::http::ApiError; use super::jwt;";
    assert_eq!(
        references(nested, "auth", 2, false)
            .into_iter()
            .collect::<Vec<_>>(),
        ["http"]
    );
}

// ---- File-level imports: no circle between files, inside a folder or across one. ----
//
// The layer table above orders the top-level modules; inside one (`routes/`, `mcp/`, `http/`) the
// files must run one way too, so that a file can be read, moved or replaced knowing only what is
// below it. Shared machinery lives in a file below its users (a `mod.rs` that its children import
// from holds nothing that imports them back).

/// Folders (under `src/`) whose files still import each other around a circle, each with the change
/// that removes it. A circle is tolerated only when every file of it is under one of these.
const KNOWN_FILE_CIRCLES: &[(&str, &str)] = &[(
    "http/",
    "issue 44: the type knot Ctx -> App -> Router -> Route -> handler(Ctx) (ctx, state, router)",
)];

/// Module path (`routes::ads::batch`) -> its file, for every file of `src/` that is not a test module.
fn module_files() -> BTreeMap<String, PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    // Files declared as `#[cfg(test)] mod name;` are unit tests: they may reach anywhere.
    let mut test_modules = BTreeSet::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read source");
        let code = strip(&text);
        let mut rest = code.as_str();
        while let Some(at) = rest.find("#[cfg(test)]") {
            rest = &rest[at + "#[cfg(test)]".len()..];
            let item = rest.trim_start();
            let item = item.strip_prefix("pub(crate) ").unwrap_or(item);
            if let Some(decl) = item.strip_prefix("mod ") {
                let name = ident_at(decl.trim_start());
                if decl.trim_start()[name.len()..]
                    .trim_start()
                    .starts_with(';')
                {
                    let dir = file.parent().expect("parent");
                    let stem = file
                        .file_stem()
                        .expect("stem")
                        .to_string_lossy()
                        .into_owned();
                    let base = if ["mod", "lib", "main"].contains(&stem.as_str()) {
                        dir.to_path_buf()
                    } else {
                        dir.join(&stem)
                    };
                    test_modules.insert(base.join(format!("{name}.rs")));
                    test_modules.insert(base.join(name).join("mod.rs"));
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    for file in files {
        if test_modules.contains(&file) {
            continue;
        }
        let rel = file.strip_prefix(&src).expect("under src");
        let mut parts: Vec<String> = rel
            .iter()
            .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
            .collect();
        if parts.last().is_some_and(|p| p == "mod") {
            parts.pop();
        }
        if parts == ["lib"] || parts == ["main"] {
            continue;
        }
        out.insert(parts.join("::"), file);
    }
    out
}

/// Every path the code names (`a::b::c`), with `use` groups expanded (`a::{b, c::d}` gives
/// `a::b` and `a::c::d`); a path of one segment only when it comes out of a group.
fn paths_in(code: &str) -> Vec<Vec<String>> {
    fn group(s: &str, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
        // `s` starts just after `{`; returns the bytes consumed up to and including `}`.
        let mut k = 0;
        let b = s.as_bytes();
        loop {
            while k < b.len() && (b[k].is_ascii_whitespace() || b[k] == b',') {
                k += 1;
            }
            if k >= b.len() {
                return k;
            }
            if b[k] == b'}' {
                return k + 1;
            }
            let (used, _) = path_at(&s[k..], prefix.to_vec(), out);
            k += used.max(1);
        }
    }
    // Reads one path at the start of `s` (after `prefix`); pushes it; returns (bytes used, path).
    fn path_at(s: &str, mut path: Vec<String>, out: &mut Vec<Vec<String>>) -> (usize, ()) {
        let b = s.as_bytes();
        let mut k = 0;
        loop {
            while k < b.len() && b[k].is_ascii_whitespace() {
                k += 1;
            }
            if k < b.len() && b[k] == b'{' {
                k += 1 + group(&s[k + 1..], &path, out);
                return (k, ());
            }
            if k < b.len() && b[k] == b'*' {
                out.push(path);
                return (k + 1, ());
            }
            let name = ident_at(&s[k..]);
            if name.is_empty() {
                if !path.is_empty() {
                    out.push(path);
                }
                return (k, ());
            }
            k += name.len();
            if name != "self" || path.is_empty() {
                path.push(name.to_string());
            }
            let after = s[k..].trim_start();
            if let Some(rest) = after.strip_prefix("::") {
                k = s.len() - rest.len();
            } else {
                // `as alias`, a generic, a call: the path ends here.
                let skip = after
                    .strip_prefix("as ")
                    .map(|r| s.len() - r.trim_start().len() + ident_at(r.trim_start()).len());
                out.push(path);
                return (skip.unwrap_or(k), ());
            }
        }
    }
    let mut out = Vec::new();
    let b = code.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let starts = (b[i].is_ascii_alphabetic() || b[i] == b'_')
            && (i == 0
                || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b':'));
        if !starts {
            i += 1;
            continue;
        }
        let name = ident_at(&code[i..]);
        let after = code[i + name.len()..].trim_start();
        if !after.starts_with("::") {
            i += name.len();
            continue;
        }
        let mut found = Vec::new();
        let (used, ()) = path_at(&code[i..], Vec::new(), &mut found);
        out.extend(found.into_iter().filter(|p| p.len() > 1));
        i += used.max(name.len());
    }
    out
}

/// The file a path names from module `own` (`crate::…`, `super::…`, `self::…`, or a child module
/// of `own`): the longest prefix of it that is a module with a file.
fn target_of(
    path: &[String],
    own: &[String],
    files: &BTreeMap<String, PathBuf>,
) -> Option<PathBuf> {
    let mut base: Vec<String> = own.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("super") => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        Some("self") => rest = &rest[1..],
        Some(first) => {
            let mut child = own.to_vec();
            child.push(first.to_string());
            if !files.contains_key(&child.join("::")) {
                return None;
            }
        }
        None => return None,
    }
    let full: Vec<String> = base.into_iter().chain(rest.iter().cloned()).collect();
    (1..=full.len())
        .rev()
        .find_map(|n| files.get(&full[..n].join("::")))
        .cloned()
}

/// file -> (file it imports from -> the names it takes).
fn file_graph() -> BTreeMap<PathBuf, BTreeMap<PathBuf, BTreeSet<String>>> {
    let files = module_files();
    let mut edges: BTreeMap<PathBuf, BTreeMap<PathBuf, BTreeSet<String>>> = BTreeMap::new();
    for (module, file) in &files {
        let own: Vec<String> = module.split("::").map(str::to_string).collect();
        let text = std::fs::read_to_string(file).expect("read source");
        let code = without_test_items(&strip(&text));
        for path in paths_in(&code) {
            let path: Vec<String> = path
                .into_iter()
                .map(|s| if s == "$crate" { "crate".into() } else { s })
                .collect();
            let Some(target) = target_of(&path, &own, &files) else {
                continue;
            };
            if &target != file {
                edges
                    .entry(file.clone())
                    .or_default()
                    .entry(target)
                    .or_default()
                    .insert(path.last().cloned().unwrap_or_default());
            }
        }
    }
    edges
}

/// The strongly connected components of more than one file (Tarjan).
fn file_circles(g: &BTreeMap<PathBuf, BTreeMap<PathBuf, BTreeSet<String>>>) -> Vec<Vec<PathBuf>> {
    struct Walk<'a> {
        g: &'a BTreeMap<PathBuf, BTreeMap<PathBuf, BTreeSet<String>>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        next: usize,
        out: Vec<Vec<PathBuf>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, n: &'a PathBuf) {
        w.index.insert(n, w.next);
        w.low.insert(n, w.next);
        w.next += 1;
        w.stack.push(n);
        w.on_stack.insert(n);
        if let Some(targets) = w.g.get(n) {
            for m in targets.keys() {
                if !w.index.contains_key(m) {
                    visit(w, m);
                    let lm = w.low[m];
                    let ln = w.low[n];
                    w.low.insert(n, ln.min(lm));
                } else if w.on_stack.contains(m) {
                    let im = w.index[m];
                    let ln = w.low[n];
                    w.low.insert(n, ln.min(im));
                }
            }
        }
        if w.low[n] == w.index[n] {
            let mut component = Vec::new();
            while let Some(m) = w.stack.pop() {
                w.on_stack.remove(m);
                component.push(m.clone());
                if m == n {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                w.out.push(component);
            }
        }
    }
    let mut w = Walk {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for n in g.keys() {
        if !w.index.contains_key(n) {
            visit(&mut w, n);
        }
    }
    w.out
}

#[test]
fn no_two_files_import_each_other_around_a_circle() {
    let g = file_graph();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let short = |p: &PathBuf| p.strip_prefix(&src).unwrap_or(p).display().to_string();
    let tolerated = |c: &Vec<PathBuf>| {
        KNOWN_FILE_CIRCLES
            .iter()
            .any(|(folder, _)| c.iter().all(|f| short(f).starts_with(folder)))
    };
    let circles: Vec<Vec<PathBuf>> = file_circles(&g)
        .into_iter()
        .filter(|c| !tolerated(c))
        .collect();
    let report: Vec<String> = circles
        .iter()
        .map(|c| {
            let members: BTreeSet<&PathBuf> = c.iter().collect();
            let arrows: Vec<String> = c
                .iter()
                .flat_map(|from| {
                    g[from]
                        .iter()
                        .filter(|(to, _)| members.contains(to))
                        .map(move |(to, names)| {
                            let names: Vec<&str> = names.iter().map(String::as_str).collect();
                            format!("    {} -> {}: {}", short(from), short(to), names.join(", "))
                        })
                })
                .collect();
            format!("circle of {} files:\n{}", c.len(), arrows.join("\n"))
        })
        .collect();
    assert!(
        circles.is_empty(),
        "{} import circle(s) between files (move what both sides share into a file below them):\n{}",
        circles.len(),
        report.join("\n")
    );
}

#[test]
fn every_tolerated_file_circle_still_exists() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let circles = file_circles(&file_graph());
    for (folder, why) in KNOWN_FILE_CIRCLES {
        assert!(
            circles.iter().any(|c| c.iter().all(|f| f
                .strip_prefix(&src)
                .unwrap_or(f)
                .display()
                .to_string()
                .starts_with(folder))),
            "no circle is left under {folder} ({why}): remove it from KNOWN_FILE_CIRCLES"
        );
    }
}

#[test]
fn the_file_scanner_resolves_paths_as_rustc_would() {
    let code = "use super::{payloads::{self, Payload}, crud}; use crate::http::{ctx::Ctx, ApiError as E};\n\
                fn f() { child::run(); super::super::ids::Kind::Ad; let _ = x::y; }";
    let paths: Vec<String> = paths_in(code).into_iter().map(|p| p.join("::")).collect();
    assert_eq!(
        paths,
        [
            "super::payloads",
            "super::payloads::Payload",
            "super::crud",
            "crate::http::ctx::Ctx",
            "crate::http::ApiError",
            "child::run",
            "super::super::ids::Kind::Ad",
            "x::y"
        ]
    );
    let files: BTreeMap<String, PathBuf> = [
        "routes",
        "routes::payloads",
        "routes::ads",
        "routes::ads::batch",
        "http",
        "http::ctx",
        "ids",
    ]
    .iter()
    .map(|m| (m.to_string(), PathBuf::from(m.replace("::", "/"))))
    .collect();
    let own: Vec<String> = vec!["routes".into(), "ads".into()];
    let t = |p: &str| {
        let p: Vec<String> = p.split("::").map(str::to_string).collect();
        target_of(&p, &own, &files).map(|f| f.display().to_string())
    };
    assert_eq!(
        t("super::payloads::Payload").as_deref(),
        Some("routes/payloads")
    );
    assert_eq!(t("batch::change").as_deref(), Some("routes/ads/batch"));
    assert_eq!(t("crate::http::ApiError").as_deref(), Some("http"));
    assert_eq!(t("super::super::ids::Kind").as_deref(), Some("ids"));
    assert_eq!(t("serde_json::Value"), None);
}
