//! Pending MCP confirmations expiring as time passes ([`crate::timeline::Source`]).
//!
//! A prepared change not confirmed by its `expires_at` is marked `outcome = 'expired'` (`used_at`
//! stays NULL, so a late `confirm_change` still explains "expired at ...") and
//! `mcp.confirmation_expired` is recorded once, in the same transaction. The event has no company
//! (`company_id` NULL: a confirmation belongs to a credential, not to a company) and names the
//! change by the first 16 hex digits of the SHA-256 of its confirmation id, never the id itself.
//! Rows expired more than a day are purged on the way (the rule `prepare` already applies).

use crate::db::DbError;
use crate::db::WriteIntent;
use crate::timeline::{Env, Report, Source};
use serde_json::json;

pub struct ConfirmationExpiry;

/// A confirmation falling due: id_hash, actor, tool, target_type, target_id, expires_at.
type DueConfirmation = (String, String, String, String, String, i64);

pub const EXPIRED: &str = "mcp.confirmation_expired";

/// How long an expired confirmation is kept to explain a late confirm (as in `pending::prepare`).
const KEEP_SECS: i64 = 86_400;

impl Source for ConfirmationExpiry {
    fn name(&self) -> &'static str {
        "mcp_confirmation_expiry"
    }

    fn next_due(&self, env: &Env<'_>, until: i64) -> Result<Option<i64>, DbError> {
        let conn = env.db.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT min(expires_at) FROM mcp_pending_changes
             WHERE used_at IS NULL AND outcome IS NULL AND expires_at <= ?1",
        )?;
        Ok(stmt.query_row([until], |r| r.get(0))?)
    }

    fn run_due(&self, env: &Env<'_>, at: i64, report: &mut Report) -> Result<(), DbError> {
        env.db.write(&WriteIntent::sandbox(), |tx| {
            tx.prepare_cached("DELETE FROM mcp_pending_changes WHERE expires_at < ?1")?
                .execute([at - KEEP_SECS])?;
            let mut due: Vec<DueConfirmation> = tx
                .prepare_cached(
                    "UPDATE mcp_pending_changes SET outcome = 'expired'
                     WHERE used_at IS NULL AND outcome IS NULL AND expires_at <= ?1
                     RETURNING id_hash, actor, tool, target_type, target_id, expires_at",
                )?
                .query_map([at], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                })?
                .collect::<Result<_, _>>()?;
            // RETURNING has no order: record in expiry order, then by id, for identical runs.
            due.sort_by(|a, b| (a.5, &a.0).cmp(&(b.5, &b.0)));
            for (id_hash, actor, tool, target_type, target_id, expires_at) in &due {
                let short = id_hash.get(..16).unwrap_or(id_hash);
                let payload = json!({
                    "object": "mcp_pending_change",
                    "id_hash_prefix": short,
                    "actor": actor,
                    "tool": tool,
                    "target_type": target_type,
                    "target_id": target_id,
                    "expires_at": crate::time::rfc3339(*expires_at),
                });
                // A change of no company: no webhook delivers it.
                crate::events::record(
                    tx,
                    None::<&str>,
                    EXPIRED,
                    "mcp_pending_change",
                    short,
                    &payload,
                )?;
            }
            report.count(EXPIRED, due.len() as u64);
            Ok(())
        })
    }
}
