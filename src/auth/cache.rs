//! The principals behind API keys, kept between requests and checked on every one.
//!
//! An entry is made only after a key was verified against the database (its SHA-256, revocation,
//! expiry and client). It is used again only when, on this very request:
//! - the database's credentials generation is the one the entry was resolved at
//!   ([`crate::db::Generations`]): every write to `api_keys` (bar the minute stamp of
//!   `last_used_at`), `api_clients` or `companies` changes it in the same transaction, whichever
//!   process writes (`signage keys revoke` included), and a snapshot restore changes it too;
//! - the presented key equals the key that was verified, compared whole in constant time;
//! - the key is not revoked or expired at the request's clock instant (a rotation's grace period
//!   ends without any write), and the request's client id is the key's, compared in constant time.
//!
//! Anything else goes to the database as if there were no cache. Only verified keys are held, at
//! most [`MAX_ENTRIES`] (the map is emptied when full), and only in memory.

use super::principal::Principal;
use crate::db::Generations;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use subtle::ConstantTimeEq;

/// Entries held at most; a burst of more distinct keys empties the map and starts again.
pub const MAX_ENTRIES: usize = 4096;

/// What a verified key resolved to.
pub struct Entry {
    pub generations: Generations,
    /// The whole raw key that was verified.
    raw: Box<[u8]>,
    pub client_id: String,
    pub revoked_at: Option<i64>,
    pub expires_at: Option<i64>,
    /// The last `last_used_at` written (or read) for the key.
    pub last_used: AtomicI64,
    pub principal: Principal,
}

impl Entry {
    pub fn new(
        generations: Generations,
        raw: &str,
        client_id: String,
        revoked_at: Option<i64>,
        expires_at: Option<i64>,
        last_used: Option<i64>,
        principal: Principal,
    ) -> Entry {
        Entry {
            generations,
            raw: raw.as_bytes().into(),
            client_id,
            revoked_at,
            expires_at,
            last_used: AtomicI64::new(last_used.unwrap_or(i64::MIN)),
            principal,
        }
    }

    /// The presented key is the verified one (constant time in the key's bytes).
    pub fn same_key(&self, raw: &str) -> bool {
        self.raw.ct_eq(raw.as_bytes()).into()
    }

    /// The client header names the key's client (constant time).
    pub fn same_client(&self, client: &str) -> bool {
        self.client_id.as_bytes().ct_eq(client.as_bytes()).into()
    }

    pub fn last_used(&self) -> Option<i64> {
        Some(self.last_used.load(Ordering::Relaxed)).filter(|t| *t != i64::MIN)
    }
}

/// Verified keys by key id (the 16 characters after `sgn_test_`).
#[derive(Default)]
pub struct Principals {
    map: Mutex<HashMap<String, Arc<Entry>>>,
}

impl Principals {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Entry>>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The entry of `kid` if it was resolved at `generations`.
    pub fn get(&self, kid: &str, generations: Generations) -> Option<Arc<Entry>> {
        self.lock()
            .get(kid)
            .filter(|e| e.generations == generations)
            .cloned()
    }

    pub fn insert(&self, kid: &str, entry: Arc<Entry>) {
        let mut map = self.lock();
        if map.len() >= MAX_ENTRIES && !map.contains_key(kid) {
            map.clear();
        }
        map.insert(kid.to_string(), entry);
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
