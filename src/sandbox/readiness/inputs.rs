//! What the readiness checks read ([`Inputs`]): the journal's entries, the kept drills, the
//! webhooks graded and the key rotations, gathered once per report. Plain data: this file
//! imports no other file of `readiness` (the checks import it).

use crate::sandbox::drills::Drill;
use crate::sandbox::journal::store::Entry;

/// A rotation of an API key of the account, from the database.
pub struct Rotation {
    pub old_key: String,
    pub new_key: String,
    /// When the old key stops working (sandbox clock, Unix seconds).
    pub grace_end: i64,
}

/// What the checks read.
pub struct Inputs {
    /// The entries the report is about (the key's, when one is given), oldest first.
    pub entries: Vec<Entry>,
    /// The account's entries of the keys of [`Inputs::rotations`], of the same kind, the
    /// console's or not (a rotation involves two keys): what `rotated_key_adopted` reads.
    pub all_entries: Vec<Entry>,
    pub drills: Vec<Drill>,
    /// The enabled webhooks the report grades.
    pub webhooks: Vec<Hook>,
    /// The rotations of the keys graded (of the account's, or company's, for a report of no key).
    pub rotations: Vec<Rotation>,
    pub key: Option<String>,
    /// The API client graded (every key of it in the company scope), when the key is one.
    pub client: Option<String>,
    /// The console's sessions are graded, not the integration.
    pub console: bool,
    pub company: Option<String>,
    pub after: Option<i64>,
    /// The sandbox clock now (Unix milliseconds).
    pub now_ms: i64,
    /// The wall clock now (Unix milliseconds): a failure unretried this long is given up.
    pub wall_ms: i64,
}

/// An enabled webhook the report grades.
pub struct Hook {
    pub id: String,
    pub company_id: String,
    /// [`crate::sandbox::drills::url_digest`] of its URL.
    pub url_digest: String,
}
