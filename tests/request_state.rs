//! State a function depends on belongs in its signature. A `thread_local!` is allowed only as a
//! per-thread cache that cannot change an outcome (compiled patterns, a buffer of OS randomness),
//! listed below with why. No request state is held per thread: the clock, its preview shift and
//! seeded randomness travel with the database, the request context and the write handle; the
//! database's read and write scopes in the `db::Scoped` handle.
//!
//! The test reads every `thread_local!` block of `src/` and compares the statics it declares with
//! the two lists: a new one fails here until it is passed explicitly or shown to be a cache. The
//! debt list is empty and must stay so.

use std::path::Path;

/// Per-thread caches: none of them can make one request's answer differ from another's.
const CACHES: &[(&str, &str)] = &[
    (
        "COMPILED",
        "routes/openapi/examples.rs: regexes compiled while the document is built, keyed by pattern",
    ),
    (
        "ID_BYTES",
        "random.rs: OS randomness read ahead; any byte is as good as any other",
    ),
    (
        "STATE",
        "random.rs nonsecret: a wyrand stream for labels that only need to differ",
    ),
];

/// Request state still carried per thread: none (issue 44 passed the last of it explicitly).
const REQUEST_STATE: &[(&str, &str)] = &[];

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let p = entry.expect("dir entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The names of the statics declared in `thread_local!` blocks of `code`.
fn thread_local_statics(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("thread_local!") {
        rest = &rest[at + "thread_local!".len()..];
        let Some(open) = rest.find('{') else { break };
        let mut depth = 0usize;
        let mut end = rest.len();
        for (k, ch) in rest[open..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + k;
                        break;
                    }
                }
                _ => {}
            }
        }
        let block = &rest[open..end];
        for line in block.lines() {
            let line = line.trim_start();
            // Any visibility: `pub`, `pub(crate)`, `pub(super)`.
            let line = match line.strip_prefix("pub") {
                Some(rest) if rest.starts_with('(') => rest
                    .split_once(')')
                    .map_or(rest, |(_, after)| after.trim_start()),
                Some(rest) => rest.trim_start(),
                None => line,
            };
            if let Some(decl) = line.strip_prefix("static ") {
                let name: String = decl
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                names.push(name);
            }
        }
        rest = &rest[end..];
    }
    names
}

fn declared() -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut names = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read source");
        // Comments and doc comments may name the macro; only code declares.
        let code: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        names.extend(thread_local_statics(&code));
    }
    names.sort();
    names
}

#[test]
fn every_thread_local_is_a_cache_or_listed_request_state() {
    let mut listed: Vec<String> = CACHES
        .iter()
        .chain(REQUEST_STATE)
        .map(|(n, _)| n.to_string())
        .collect();
    listed.sort();
    let found = declared();
    let new: Vec<&String> = found.iter().filter(|n| !listed.contains(n)).collect();
    assert!(
        new.is_empty(),
        "thread_local! statics on neither list: {new:?}. Pass request state explicitly (the \
         request context or the write handle); a cache that cannot change an outcome goes on CACHES \
         with why"
    );
    assert_eq!(
        found, listed,
        "a listed thread_local! is gone (or declared twice): remove its line, so the count stays true"
    );
}

#[test]
fn the_scanner_reads_every_static_of_a_block() {
    let code = "thread_local! {\n    /// doc\n    static A: Cell<u8> = Cell::new(0);\n    pub static B_2: RefCell<Vec<u8>> = RefCell::new(Vec::new());\n    pub(super) static C3: Cell<bool> = Cell::new(false);\n}\nstatic C: u8 = 0;";
    assert_eq!(thread_local_statics(code), ["A", "B_2", "C3"]);
}

/// A handler or a timeline source reaches the database through the `db::Scoped` handle it was
/// passed (`ctx.db`, `ctx.conn()`, `env.db`): `app.db.conn()` or `app.db.write(…)` there would
/// read or write outside its request's read scope or its run's write scope, and nothing else would
/// say so. Only the command line and start-up, which run in no scope, use the app's pool directly.
#[test]
fn request_code_reads_and_writes_through_its_scoped_handle() {
    const OUTSIDE_ANY_SCOPE: &[&str] = &["cli.rs", "cli/", "app.rs", "startup.rs"];
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut offenders = Vec::new();
    for f in files {
        let rel = f
            .strip_prefix(&src)
            .expect("under src")
            .to_string_lossy()
            .into_owned();
        if OUTSIDE_ANY_SCOPE.iter().any(|p| rel.starts_with(p)) {
            continue;
        }
        let text = std::fs::read_to_string(&f).expect("read source");
        // Comments may name it; a call split over lines is still one call.
        let code: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .flat_map(|l| l.chars().filter(|c| !c.is_whitespace()))
            .collect();
        for call in ["app.db.conn(", "app.db.write("] {
            if code.contains(call) {
                offenders.push(format!("{rel}: {call}…)"));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "the app's pool used where a scope may be open: {offenders:?}. Take the `db::Scoped` handle \
         (`ctx.db`, `ctx.conn()`, `env.db`) instead"
    );
}
