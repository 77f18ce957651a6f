//! The vocabulary every secret pattern is written in: what a match is ([`Match`], [`Hit`]) and the
//! byte tests the patterns share. It imports no other file of the redactor: the pattern files
//! ([`super::known`], [`super::runs`], [`super::scan`]) sit above it.

/// A match at `i`: bytes `[i, i + keep)` stay shown, `[i + keep, i + end)` are the secret.
pub type Match = (usize, usize);

/// What starts at a position.
#[derive(Debug, PartialEq, Eq)]
pub enum Hit {
    /// A secret: see [`Match`].
    Secret(Match),
    /// Text of this length that looks like a secret but is public (a key's `sgn_test_<KID>`
    /// prefix): no pattern may start inside it.
    Public(usize),
}

pub fn run_len(bytes: &[u8], from: usize, ok: impl Fn(u8) -> bool) -> usize {
    bytes
        .get(from..)
        .map_or(0, |r| r.iter().take_while(|&&b| ok(b)).count())
}

pub fn starts_with_ci(bytes: &[u8], i: usize, prefix: &[u8]) -> bool {
    bytes
        .get(i..i + prefix.len())
        .is_some_and(|w| w.eq_ignore_ascii_case(prefix))
}

pub fn word_start(bytes: &[u8], i: usize) -> bool {
    i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')
}
