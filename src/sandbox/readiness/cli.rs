//! `signage readiness --database PATH --account ID [--key ID | --company ID] [--console]
//! [--format json|junit]`: the report of `GET /readiness`, read from the database and its journal
//! file without a server, for CI to gate on; what it grades is [`super::scope::Scope::of`]'s, as
//! for every view. Exit status: 0 `ready`, 2 `not_ready` (a required check failed), 3 `incomplete` (a
//! required check was not observed), 1 an error.

use argh::FromArgs;
use std::path::Path;

#[derive(FromArgs)]
/// Print the readiness report of an account (exit 0 ready, 2 not ready, 3 incomplete).
#[argh(subcommand, name = "readiness")]
pub struct Readiness {
    /// database file (its journal is the file beside it, `<database>.requests`)
    #[argh(option)]
    pub database: String,
    /// the account to grade (`acct_…`)
    #[argh(option)]
    pub account: String,
    /// grade this key's integration (`key_…`): its API client, through any of its keys with the
    /// key's company scope, and that scope's webhooks and drills
    #[argh(option)]
    pub key: Option<String>,
    /// grade one company of the account (`cmp_…`), as a company-scoped admin's report does; with
    /// --key, the key's own company scope (another is an error)
    #[argh(option)]
    pub company: Option<String>,
    /// grade the console's own sessions (signed in by a sign-in link) instead of the integration
    #[argh(switch)]
    pub console: bool,
    /// json (default) or junit
    #[argh(option, default = "String::from(\"json\")")]
    pub format: String,
}

/// The report's text and the exit status it calls for.
pub fn run(r: &Readiness) -> Result<(String, i32), String> {
    if !crate::ids::is_valid(crate::ids::Kind::Account, &r.account) {
        return Err(format!(
            "--account `{}` is not an account id (`acct_…`)",
            r.account
        ));
    }
    if let Some(c) = &r.company {
        if !crate::ids::is_valid(crate::ids::Kind::Company, c) {
            return Err(format!("--company `{c}` is not a company id (`cmp_…`)"));
        }
    }
    if r.format != "json" && r.format != "junit" {
        return Err("--format must be `json` or `junit`".into());
    }
    let db_path = Path::new(&r.database);
    if !db_path.exists() {
        return Err(format!("no database at {}", r.database));
    }
    let journal_path = crate::sandbox::journal::path_for(&r.database)
        .ok_or("the readiness report needs a database file, not :memory:")?;
    if !journal_path.exists() {
        return Err(format!(
            "no request journal at {} (a server has not run on this database yet)",
            journal_path.display()
        ));
    }
    let read_only = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
    let db =
        rusqlite::Connection::open_with_flags(db_path, read_only).map_err(|e| e.to_string())?;
    let journal =
        crate::sandbox::journal::store::open_read_only(&journal_path).map_err(|e| e.to_string())?;
    let wall = crate::http::observe::wall_millis();
    let max_age_ms = i64::try_from(crate::config::Settings::default().journal_max_age_secs)
        .unwrap_or(i64::MAX / 1000)
        * 1000;
    // The sandbox clock's now, as the server last noted it in the journal's file (a frozen
    // clock's instant, or the system time plus a running clock's offset); for a file no server
    // noted it in, the newest journaled instant, else the wall clock (never 1970).
    use crate::sandbox::journal::store::{newest_at_ms, noted_now_ms};
    let now_ms = match noted_now_ms(&journal, wall).map_err(|e| e.to_string())? {
        Some(noted) => noted,
        None => match newest_at_ms(&journal).map_err(|e| e.to_string())? {
            0 => wall,
            newest => newest,
        },
    };
    // The server prunes its file lazily: the ring is cut here as its reads cut it.
    let max_entries =
        i64::try_from(crate::config::Settings::default().journal_max_entries).unwrap_or(i64::MAX);
    let floor = crate::sandbox::journal::store::ring_floor(&journal, Some(&r.account), max_entries)
        .map_err(|e| e.to_string())?;
    let scope = super::grade::Scope::of(
        &db,
        &r.account,
        r.company.as_deref(),
        r.key.as_deref(),
        r.console,
        None,
    )
    .map_err(|e| e.to_string())?;
    if r.company.is_some() && scope.company != r.company {
        return Err(format!(
            "--company {} is not the company scope of key {}: a key's report covers its own scope ({})",
            r.company.as_deref().unwrap_or_default(),
            r.key.as_deref().unwrap_or_default(),
            scope.company.as_deref().unwrap_or("the whole account")
        ));
    }
    let inputs = super::grade::gather(
        &journal,
        None,
        &db,
        &scope,
        wall - max_age_ms,
        now_ms,
        floor,
    )
    .map_err(|e| e.to_string())?;
    let report = super::grade::compute(&r.account, &inputs);
    let text = if r.format == "junit" {
        super::junit::junit(&report)
    } else {
        serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?
    };
    let code = match report.verdict {
        "ready" => 0,
        "not_ready" => 2,
        _ => 3,
    };
    Ok((text, code))
}
