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

    /// The result for exactly this answer of `tool` in this era: the one kept, else `render()`'s,
    /// kept for next time (the oldest entries making room). The answer is hashed once.
    pub fn get_or_render(
        &self,
        tool: &'static str,
        modern: bool,
        answer: &[u8],
        render: impl FnOnce() -> String,
    ) -> Arc<str> {
        if self.budget == 0 {
            return render().into();
        }
        let h = hash(answer);
        let same =
            |e: &Entry| e.hash == h && e.modern == modern && e.tool == tool && *e.answer == *answer;
        if let Some(e) = self.lock().entries.iter().find(|e| same(e)) {
            return Arc::clone(&e.result);
        }
        let result: Arc<str> = render().into();
        let size = answer.len() + result.len() + std::mem::size_of::<Entry>();
        if size > self.budget / LARGEST_SHARE {
            return result;
        }
        let mut kept = self.lock();
        // Another request may have rendered the same answer meanwhile.
        if kept.entries.iter().any(same) {
            return result;
        }
        while kept.bytes + size > self.budget {
            match kept.entries.pop_front() {
                Some(old) => kept.bytes -= old.size(),
                None => break,
            }
        }
        kept.bytes += size;
        kept.entries.push_back(Entry {
            tool,
            modern,
            hash: h,
            answer: answer.into(),
            result: Arc::clone(&result),
        });
        result
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes kept now.
    pub fn kept_bytes(&self) -> usize {
        self.kept.lock().map_or(0, |k| k.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// `get_or_render`, and whether it had to render.
    fn ask(
        r: &Results,
        tool: &'static str,
        modern: bool,
        answer: &[u8],
        as_: &str,
    ) -> (String, bool) {
        let rendered = Cell::new(false);
        let out = r.get_or_render(tool, modern, answer, || {
            rendered.set(true);
            as_.to_string()
        });
        (out.to_string(), rendered.get())
    }

    #[test]
    fn only_the_same_answer_of_the_same_tool_and_era_is_reused() {
        let r = Results::new(64 * 1024);
        assert_eq!(
            ask(&r, "list_ads", true, br#"{"a":"x"}"#, "one"),
            ("one".into(), true)
        );
        assert_eq!(
            ask(&r, "list_ads", true, br#"{"a":"x"}"#, "two"),
            ("one".into(), false)
        );
        for (tool, modern, answer) in [
            ("list_ads", true, &br#"{"a":"y"}"#[..]),
            ("list_ads", false, br#"{"a":"x"}"#),
            ("get_ad", true, br#"{"a":"x"}"#),
        ] {
            assert_eq!(ask(&r, tool, modern, answer, "new"), ("new".into(), true));
        }
    }

    #[test]
    fn what_is_kept_stays_within_the_budget_oldest_out_first() {
        let r = Results::new(8 * 1024);
        let answer = |i: usize| format!("{{\"n\":{i},\"pad\":\"{}\"}}", "x".repeat(200));
        for i in 0..100 {
            ask(&r, "list_ads", true, answer(i).as_bytes(), &"y".repeat(300));
            assert!(r.kept_bytes() <= 8 * 1024);
        }
        assert!(!ask(&r, "list_ads", true, answer(99).as_bytes(), "z").1);
        assert!(ask(&r, "list_ads", true, answer(0).as_bytes(), "z").1);
        // Too large a share of the budget: rendered every time, never kept.
        assert!(ask(&r, "list_ads", true, &[b'x'; 2048], "z").1);
        assert!(ask(&r, "list_ads", true, &[b'x'; 2048], "z").1);
        // A budget of 0 keeps nothing.
        let off = Results::new(0);
        assert!(ask(&off, "list_ads", true, b"{}", "z").1);
        assert!(ask(&off, "list_ads", true, b"{}", "z").1 && off.kept_bytes() == 0);
    }

    #[test]
    fn answers_of_the_same_length_are_told_apart_by_their_bytes() {
        let r = Results::new(64 * 1024);
        ask(&r, "t", true, b"aaaaaaaa", "A");
        assert_eq!(ask(&r, "t", true, b"aaaaaaab", "B"), ("B".into(), true));
        assert_eq!(hash(b"abc"), hash(b"abc"));
    }
}
