//! Read-tool results rendered once. A read tool's successful result (the redacted structured
//! content and the fenced text block carrying the same JSON) depends on nothing but the tool, the
//! protocol era and the bytes of the REST answer behind it: redaction is a function of the bytes
//! and the tool's declared shape, and framing a function of the redacted bytes. So when a tool is
//! asked again and the REST answer is byte for byte one it gave before (an assistant listing the
//! same companies twice), the result rendered then is reused, and the answer is neither scanned
//! nor escaped again.
//!
//! Safety rests on the comparison, not on the hash: an entry is used only when its REST answer is
//! equal to the new one in every byte (the hash only picks which to compare), so an answer with
//! anything new in it (a secret planted since, one character changed) is always redacted afresh.
//! What is kept is bounded by `mcp.result_cache_bytes` (oldest first out; 0 keeps nothing), and
//! holds only what the callers were shown: redacted results and the REST answers they came from,
//! in memory, never on disk.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// An answer larger than this share of the budget is never kept (one large page must not push
/// out every small one).
const LARGEST_SHARE: usize = 8;

pub struct Results {
    budget: usize,
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    entries: VecDeque<Entry>,
    bytes: usize,
}

struct Entry {
    tool: &'static str,
    modern: bool,
    hash: u64,
    answer: Box<[u8]>,
    result: Arc<str>,
}

impl Entry {
    fn size(&self) -> usize {
        self.answer.len() + self.result.len() + std::mem::size_of::<Entry>()
    }
}

/// A fast hash of the answer's bytes, eight at a time (only to choose what to compare).
fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let mut word = [0u8; 8];
        word.copy_from_slice(w);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(K);
    }
    for &b in words.remainder() {
        h = (h.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
    }
    h
}

impl Results {
    pub fn new(budget: usize) -> Results {
        Results {
            budget,
            kept: Mutex::new(Kept::default()),
        }
    }

    /// The result rendered before for exactly this answer of `tool` in this era, if kept.
    pub fn get(&self, tool: &'static str, modern: bool, answer: &[u8]) -> Option<Arc<str>> {
        if self.budget == 0 {
            return None;
        }
        let h = hash(answer);
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.entries
            .iter()
            .find(|e| e.hash == h && e.modern == modern && e.tool == tool && *e.answer == *answer)
            .map(|e| Arc::clone(&e.result))
    }

    /// Keeps `result` as the rendering of `answer`, the oldest entries making room.
    pub fn put(&self, tool: &'static str, modern: bool, answer: &[u8], result: Arc<str>) {
        let entry = Entry {
            tool,
            modern,
            hash: hash(answer),
            answer: answer.into(),
            result,
        };
        let size = entry.size();
        if self.budget == 0 || size > self.budget / LARGEST_SHARE {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let same = |e: &Entry| {
            e.hash == entry.hash && e.modern == modern && e.tool == tool && e.answer == entry.answer
        };
        if kept.entries.iter().any(same) {
            return;
        }
        while kept.bytes + size > self.budget {
            match kept.entries.pop_front() {
                Some(old) => kept.bytes -= old.size(),
                None => break,
            }
        }
        kept.bytes += size;
        kept.entries.push_back(entry);
    }

    /// Bytes kept now.
    pub fn kept_bytes(&self) -> usize {
        self.kept.lock().map_or(0, |k| k.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_same_answer_of_the_same_tool_and_era_is_reused() {
        let r = Results::new(64 * 1024);
        r.put("list_ads", true, br#"{"a":"x"}"#, Arc::from("rendered"));
        assert_eq!(
            r.get("list_ads", true, br#"{"a":"x"}"#).as_deref(),
            Some("rendered")
        );
        assert!(r.get("list_ads", true, br#"{"a":"y"}"#).is_none());
        assert!(r.get("list_ads", false, br#"{"a":"x"}"#).is_none());
        assert!(r.get("get_ad", true, br#"{"a":"x"}"#).is_none());
    }

    #[test]
    fn what_is_kept_stays_within_the_budget_oldest_out_first() {
        let r = Results::new(8 * 1024);
        for i in 0..100 {
            let answer = format!("{{\"n\":{i},\"pad\":\"{}\"}}", "x".repeat(200));
            r.put(
                "list_ads",
                true,
                answer.as_bytes(),
                Arc::from("y".repeat(300)),
            );
            assert!(r.kept_bytes() <= 8 * 1024);
        }
        let last = format!("{{\"n\":99,\"pad\":\"{}\"}}", "x".repeat(200));
        assert!(r.get("list_ads", true, last.as_bytes()).is_some());
        let first = format!("{{\"n\":0,\"pad\":\"{}\"}}", "x".repeat(200));
        assert!(r.get("list_ads", true, first.as_bytes()).is_none());
        // Too large a share of the budget: not kept at all.
        r.put("list_ads", true, &[b'x'; 2048], Arc::from("z"));
        assert!(r.get("list_ads", true, &[b'x'; 2048]).is_none());
        // A budget of 0 keeps nothing.
        let off = Results::new(0);
        off.put("list_ads", true, b"{}", Arc::from("z"));
        assert!(off.get("list_ads", true, b"{}").is_none() && off.kept_bytes() == 0);
    }

    #[test]
    fn answers_whose_hashes_collide_are_told_apart_by_their_bytes() {
        let r = Results::new(64 * 1024);
        r.put("t", true, b"aaaaaaaa", Arc::from("A"));
        // Same length and (forced) same hash slot are not enough: the bytes are compared.
        assert!(r.get("t", true, b"aaaaaaab").is_none());
        assert_eq!(hash(b"abc"), hash(b"abc"));
    }
}
