//! Secrets in one string: where they are ([`holds_secret`]) and the string with them replaced
//! ([`redact_str`]). It runs the triage, the fold and the scan below it, and never imports
//! `mod.rs` or the JSON walkers above it ([`super::walk`], the value walk in `mod.rs`).

use super::{fold, pattern, scan, triage};
use std::borrow::Cow;

pub const REDACTED: &str = "[REDACTED]";

/// The original byte spans `[start, end)` of the secrets in `s`, in order, not overlapping.
fn secret_spans(s: &str, first_only: bool) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    match triage::triage(s) {
        triage::Triage::Clean => return spans,
        triage::Triage::Plain => collect_spans(s.as_bytes(), |a, b| (a, b), &mut spans, first_only),
        triage::Triage::Fold => {
            let f = fold::fold(s);
            collect_spans(&f.bytes, |a, b| f.span(a, b), &mut spans, first_only);
        }
    }
    // A span ends at a character boundary (a capped quoted value could stop inside one).
    for (_, end) in spans.iter_mut() {
        while !s.is_char_boundary(*end) {
            *end += 1;
        }
    }
    spans
}

/// Scans folded bytes; with `first_only`, stops at the first secret.
pub(super) fn collect_spans(
    bytes: &[u8],
    map: impl Fn(usize, usize) -> (usize, usize),
    spans: &mut Vec<(usize, usize)>,
    first_only: bool,
) {
    let mut i = 0;
    while i < bytes.len() {
        // Inside a word only a glued credential can start (`xsgn_test_…`, `t=eyJ…`): most
        // positions are passed over here.
        if !pattern::word_start(bytes, i) && !scan::may_start_inside_a_word(bytes[i]) {
            i += 1;
            continue;
        }
        match scan::secret_at(bytes, i) {
            Some(pattern::Hit::Secret((keep, end))) if end > keep => {
                spans.push(map(i + keep, i + end));
                if first_only {
                    return;
                }
                i += end;
            }
            Some(pattern::Hit::Public(len)) if len > 0 => i += len,
            _ => i += 1,
        }
    }
}

/// Whether `s` holds anything [`redact_str`] would replace.
pub fn holds_secret(s: &str) -> bool {
    !secret_spans(s, true).is_empty()
}

/// `s` with every secret-shaped part replaced; borrowed when there is nothing to replace.
pub fn redact_str(s: &str) -> Cow<'_, str> {
    let spans = secret_spans(s, false);
    if spans.is_empty() {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut copied = 0;
    for (start, end) in spans {
        if start < copied {
            continue;
        }
        out.push_str(&s[copied..start]);
        out.push_str(REDACTED);
        copied = end;
    }
    out.push_str(&s[copied..]);
    Cow::Owned(out)
}
