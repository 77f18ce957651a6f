//! One readiness report computed: its [`Inputs`] gathered from the journal and the database for a
//! [`Scope`] ([`gather`]), the checks run and the verdict drawn ([`compute`]). Used by the routes
//! (`super`, the folder's face) and the `signage readiness` command; it never imports `mod.rs`.

use super::checks;
use super::inputs::{Hook, Inputs, Rotation};
use super::report::{Report, Status};
use super::scope;
pub use super::scope::Scope;
use crate::sandbox::drills;
use crate::sandbox::journal::store::{self, Accounts, Filter};
use rusqlite::Connection;

pub fn compute(account_id: &str, x: &Inputs) -> Report {
    let list = checks::all(x);
    let required = || list.iter().filter(|c| c.required);
    let verdict = if required().any(|c| c.status == Status::Fail) {
        "not_ready"
    } else if required().any(|c| c.status == Status::NotObserved) {
        "incomplete"
    } else {
        "ready"
    };
    Report {
        object: "readiness_report",
        account_id: account_id.to_string(),
        company_id: x.company.clone(),
        key_id: x.key.clone(),
        client_id: x.client.clone(),
        console: x.console,
        after: x.after.map(|a| a.to_string()),
        generated_at: crate::time::rfc3339(x.now_ms.div_euclid(1000)),
        verdict,
        checks: list,
    }
}

fn rotations(
    db: &Connection,
    account: &str,
    company: Option<&str>,
) -> rusqlite::Result<Vec<Rotation>> {
    let mut stmt = db.prepare(
        "SELECT k.id, k.replaced_by, k.expires_at FROM api_keys k
         JOIN api_clients c ON c.id = k.client_id
         WHERE c.account_id = ?1 AND k.replaced_by IS NOT NULL AND k.expires_at IS NOT NULL
           AND (?2 IS NULL OR k.company_id = ?2)
         ORDER BY k.id",
    )?;
    let rows = stmt.query_map(rusqlite::params![account, company], |r| {
        Ok(Rotation {
            old_key: r.get(0)?,
            new_key: r.get(1)?,
            grace_end: r.get(2)?,
        })
    })?;
    rows.collect()
}

/// The enabled webhooks of the account (or of one company), with a digest of each URL.
fn webhooks(db: &Connection, account: &str, company: Option<&str>) -> rusqlite::Result<Vec<Hook>> {
    let mut stmt = db.prepare(
        "SELECT w.id, w.company_id, w.url FROM webhooks w JOIN companies c ON c.id = w.company_id
         WHERE c.account_id = ?1 AND w.enabled = 1 AND (?2 IS NULL OR w.company_id = ?2)
         ORDER BY w.id",
    )?;
    let rows = stmt.query_map(rusqlite::params![account, company], |r| {
        Ok(Hook {
            id: r.get(0)?,
            company_id: r.get(1)?,
            url_digest: drills::url_digest(&r.get::<_, String>(2)?),
        })
    })?;
    rows.collect()
}

/// Reads the inputs of one report from the journal and the database (`index`: the running
/// writer's summary of the journal's segments, so only those of the integration's keys are read).
pub fn gather(
    journal: &Connection,
    index: Option<&store::Index>,
    db: &Connection,
    scope: &Scope,
    not_before_wall_ms: i64,
    now_ms: i64,
    min_seq: Option<i64>,
) -> rusqlite::Result<Inputs> {
    let after_floor = scope.after.map(|a| a.saturating_add(1));
    let filter = Filter {
        accounts: Some(Accounts::One(Some(scope.account.clone()))),
        company_id: scope.company.clone(),
        not_before_wall_ms,
        min_seq: match (min_seq, after_floor) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        },
        ..Filter::default()
    };
    let company = scope.company.as_deref();
    let rotations: Vec<Rotation> = rotations(db, &scope.account, company)?
        .into_iter()
        .filter(|r| scope.covers_key(&r.old_key))
        .collect();
    // The entries graded, and the account's entries of the rotated keys' (a rotation involves
    // two keys) of the same kind (the integrations', or the console's: the console's sessions are
    // never an integration's). Nothing else of the journal is built.
    let rotated = |key: Option<&str>| {
        key.is_some_and(|k| rotations.iter().any(|r| r.old_key == k || r.new_key == k))
    };
    let wanted = |key: Option<&str>| scope.covers(key) || rotated(key);
    let picked = store::picked_for_checks(journal, &filter, index, wanted, |credentials, key| {
        scope::is_console_session(credentials, key) == scope.console && wanted(key)
    })?;
    let (entries, all_entries) = if rotations.is_empty() {
        (picked, Vec::new())
    } else {
        let all_entries: Vec<_> = picked
            .iter()
            .filter(|e| rotated(e.key_id.as_deref()))
            .cloned()
            .collect();
        let entries = picked
            .into_iter()
            .filter(|e| scope.covers(e.key_id.as_deref()))
            .collect();
        (entries, all_entries)
    };
    let drills = drills::kept(
        journal,
        &scope.account,
        None,
        not_before_wall_ms,
        scope.after,
    )?
    .into_iter()
    .filter(|d| company.is_none_or(|c| d.company_id == c))
    .collect();
    Ok(Inputs {
        entries,
        all_entries,
        drills,
        webhooks: webhooks(db, &scope.account, company)?,
        rotations,
        key: scope.key.clone(),
        client: scope.client.clone(),
        console: scope.console,
        company: scope.company.clone(),
        after: scope.after,
        now_ms,
        wall_ms: crate::http::observe::wall_millis(),
    })
}
