//! The audit log as the account's admins read it (`GET /audit-log`); [`crate::audit`] writes it.

use crate::auth::reach::Manager;
use crate::http::{ApiError, Ctx, Response};
use crate::routes::crud::{self, Named, Time};
use schemars::JsonSchema;
use serde::Serialize;

/// One audited request: who, what route, the status and outcome.
// Field order is the order of the JSON members.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AuditEntry {
    // The row id as text: it is also the list's cursor.
    pub id: String,
    #[schemars(extend("const" = "audit_entry"))]
    object: &'static str,
    pub at: Time,
    pub request_id: String,
    pub actor: Option<String>,
    pub client_id: Option<String>,
    pub method: String,
    pub route: String,
    pub status: i64,
    pub outcome: String,
    /// Failures are aggregated per minute: how many requests this entry stands for (`at` and
    /// `request_id` are the first one's).
    #[schemars(range(min = 1))]
    pub count: i64,
}

impl AuditEntry {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<AuditEntry> {
        Ok(AuditEntry {
            id: r.get::<i64>("id")?.to_string(),
            object: "audit_entry",
            at: Time(r.get("at")?),
            request_id: r.get("request_id")?,
            actor: r.get("actor")?,
            client_id: r.get("client_id")?,
            method: r.get("method")?,
            route: r.get("route")?,
            status: r.get("status")?,
            outcome: r.get("outcome")?,
            count: r.get("count")?,
        })
    }
}

impl crate::http::response::Listed for AuditEntry {
    fn list_key(&self) -> &str {
        &self.id
    }
}

/// Entries of `account`, newest first, before the entry `before`; a company-scoped admin sees
/// those of its company's credentials only.
fn list(
    conn: &rusqlite::Connection,
    account: &str,
    company: Option<&str>,
    before: i64,
    fetch: i64,
) -> Result<Vec<AuditEntry>, ApiError> {
    crud::query_all(
        conn,
        "SELECT id, at, request_id, actor, client_id, method, route, status, outcome, count
         FROM audit_log
         WHERE account_id = ?1 AND (?2 IS NULL OR company_id = ?2) AND id < ?3
         ORDER BY id DESC LIMIT ?4",
        rusqlite::params![account, company, before, fetch],
        AuditEntry::from_row,
    )
}

/// `GET /audit-log`: audit entries have integer ids, so the cursor is a number.
pub(super) fn list_audit(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let before: i64 = match &page.before {
        None => i64::MAX,
        Some(c) => c.parse().map_err(|_| {
            ApiError::invalid("cursor", "invalid_cursor", "Not a cursor of this list.")
        })?,
    };
    let m = Manager::of(ctx.principal()?);
    let conn = ctx.conn()?;
    let rows = list(&conn, m.account, m.company, before, page.fetch())?;
    Ok(Response::page(rows, &page))
}
