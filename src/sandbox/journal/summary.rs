//! What a segment of the journal holds, known without decoding it ([`Summary`]): how many entries,
//! the span of their clocks, and how many of each combination of the fields a count filters on
//! (company, key, operation, tool, door, status, fault). Kept as entries are encoded and as
//! segments are written, pruned and expired ([`Index`]), so that counting the journal costs its
//! segments, not its entries. Plain data: it imports only the codec's [`Fields`].

use super::codec::Fields;
use std::collections::BTreeMap;

/// One combination of the fields a count filters on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub company_id: Option<Box<str>>,
    pub key_id: Option<Box<str>>,
    pub operation_id: Option<Box<str>>,
    pub tool: Option<Box<str>>,
    pub via: Box<str>,
    pub status: u16,
    pub faulted: bool,
}

impl Group {
    fn of(f: &Fields<'_>) -> Group {
        let owned = |s: Option<&str>| s.map(Box::from);
        Group {
            company_id: owned(f.company_id),
            key_id: owned(f.key_id),
            operation_id: owned(f.operation_id),
            tool: owned(f.tool),
            via: f.via.into(),
            status: f.status,
            faulted: f.fault.is_some(),
        }
    }

    fn holds(&self, f: &Fields<'_>) -> bool {
        self.status == f.status
            && self.faulted == f.fault.is_some()
            && &*self.via == f.via
            && self.key_id.as_deref() == f.key_id
            && self.operation_id.as_deref() == f.operation_id
            && self.company_id.as_deref() == f.company_id
            && self.tool.as_deref() == f.tool
    }
}

/// What one segment holds.
#[derive(Clone, Debug)]
pub struct Summary {
    pub entries: i64,
    pub oldest_wall_ms: i64,
    pub newest_wall_ms: i64,
    pub oldest_at_ms: i64,
    pub newest_at_ms: i64,
    /// Entries of each combination, in the order first seen.
    pub groups: Vec<(Group, i64)>,
    /// The group the last entry fell in: a client's requests repeat theirs.
    last: usize,
}

impl Default for Summary {
    fn default() -> Summary {
        Summary {
            entries: 0,
            oldest_wall_ms: i64::MAX,
            newest_wall_ms: i64::MIN,
            oldest_at_ms: i64::MAX,
            newest_at_ms: i64::MIN,
            groups: Vec::new(),
            last: 0,
        }
    }
}

impl Summary {
    /// The summary of `entries`.
    pub fn of<'a>(entries: impl IntoIterator<Item = &'a Fields<'a>>) -> Summary {
        let mut s = Summary::default();
        for f in entries {
            s.add(f);
        }
        s
    }

    /// Counts one more entry.
    pub fn add(&mut self, f: &Fields<'_>) {
        self.entries += 1;
        self.oldest_wall_ms = self.oldest_wall_ms.min(f.wall_ms);
        self.newest_wall_ms = self.newest_wall_ms.max(f.wall_ms);
        self.oldest_at_ms = self.oldest_at_ms.min(f.at_ms);
        self.newest_at_ms = self.newest_at_ms.max(f.at_ms);
        let at = match self.groups.get(self.last) {
            Some((g, _)) if g.holds(f) => Some(self.last),
            _ => self.groups.iter().position(|(g, _)| g.holds(f)),
        };
        let at = at.unwrap_or_else(|| {
            self.groups.push((Group::of(f), 0));
            self.groups.len() - 1
        });
        self.groups[at].1 += 1;
        self.last = at;
    }
}

/// A segment in the file, as the index knows it.
#[derive(Clone, Debug)]
pub struct Indexed {
    pub account_id: Option<String>,
    pub last_seq: i64,
    pub summary: Summary,
}

/// Every segment of the file by its first sequence number: what the file holds, kept as the
/// writer changes it.
pub type Index = BTreeMap<i64, Indexed>;
