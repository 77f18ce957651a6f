//! Randomness, in two kinds that are never mixed up:
//!
//! - **Secrets** ([`bytes`], [`base62`], [`hex`]): every call reads the operating system's generator
//!   (`getrandom`). API keys, webhook secrets, the login-token signing secret, MCP session ids,
//!   confirmation ids, the random part of object ids, throw-away file names. This is the default: a
//!   plain `random::hex` is the strong one.
//! - **Not secret** ([`nonsecret`]): a per-thread wyrand generator seeded once from the OS. Unique
//!   enough to tell requests apart in logs, cheap enough to draw on every request (no system call),
//!   and predictable to anyone who sees enough of its output, so it is only for labels such as
//!   request ids. Its name is at every call site.

pub const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

const HEX: &[u8; 16] = b"0123456789abcdef";

/// `N` bytes from the operating system's generator.
pub fn bytes<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    // The OS generator failing is not recoverable; a zeroed secret would be worse than stopping.
    if let Err(err) = getrandom::fill(&mut buf) {
        panic!("operating system randomness unavailable: {err}");
    }
    buf
}

/// `len` uniformly random base-62 characters from the OS generator (rejection sampling, no modulo
/// bias).
pub fn base62(len: usize) -> String {
    let mut out = String::with_capacity(len);
    while out.len() < len {
        for b in bytes::<32>() {
            if b < 248 && out.len() < len {
                out.push(BASE62[(b % 62) as usize] as char);
            }
        }
    }
    out
}

/// Lowercase hex of `N` bytes from the OS generator: session ids, file names.
pub fn hex<const N: usize>() -> String {
    hex_of(&bytes::<N>())
}

fn hex_of(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 0x0f) as usize] as char);
    }
    s
}

/// Randomness that is not secret: labels that must differ, drawn without a system call. Never use
/// it for anything a client could gain by predicting.
pub mod nonsecret {
    use std::cell::Cell;

    thread_local! {
        /// wyrand state; seeded from the OS the first time a thread draws.
        static STATE: Cell<u64> = Cell::new(seed());
    }

    fn seed() -> u64 {
        let mut buf = [0u8; 8];
        if getrandom::fill(&mut buf).is_ok() {
            return u64::from_le_bytes(buf);
        }
        // No OS generator: these values are not secret, so a seed from the clock and the thread is
        // enough to keep threads apart.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let here = &buf as *const _ as u64;
        nanos ^ here.rotate_left(32)
    }

    /// The next 64 bits of this thread's wyrand stream.
    pub fn next_u64() -> u64 {
        STATE.with(|state| {
            let s = state.get().wrapping_add(0xa076_1d64_78bd_642f);
            state.set(s);
            let t = u128::from(s) * u128::from(s ^ 0xe703_7ed1_a0b4_28db);
            ((t >> 64) as u64) ^ (t as u64)
        })
    }

    /// `N` bytes of this thread's stream.
    pub fn bytes<const N: usize>() -> [u8; N] {
        let mut buf = [0u8; N];
        for chunk in buf.chunks_mut(8) {
            let word = next_u64().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
        buf
    }

    /// Lowercase hex of `N` bytes of this thread's stream: request ids.
    pub fn hex<const N: usize>() -> String {
        super::hex_of(&bytes::<N>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn hex_is_lowercase_and_twice_as_long() {
        assert_eq!(hex_of(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        for s in [hex::<12>(), nonsecret::hex::<12>()] {
            assert_eq!(s.len(), 24);
            assert!(s
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        }
    }

    #[test]
    fn base62_has_the_asked_length_and_alphabet() {
        let s = base62(100);
        assert_eq!(s.len(), 100);
        assert!(s.bytes().all(|b| BASE62.contains(&b)));
    }

    #[test]
    fn nonsecret_draws_do_not_repeat_within_or_across_threads() {
        let draw = || {
            (0..10_000)
                .map(|_| nonsecret::hex::<12>())
                .collect::<Vec<_>>()
        };
        let mut seen: HashSet<String> = draw().into_iter().collect();
        assert_eq!(seen.len(), 10_000);
        let other = std::thread::spawn(draw).join().unwrap();
        seen.extend(other);
        assert_eq!(seen.len(), 20_000, "a second thread has its own seed");
    }

    #[test]
    fn nonsecret_bytes_fill_odd_lengths_and_vary() {
        let a = nonsecret::bytes::<13>();
        let b = nonsecret::bytes::<13>();
        assert_ne!(a, b);
        // Every bit position is set in some draw and clear in another.
        let (mut or, mut and) = ([0u8; 13], [0xffu8; 13]);
        for _ in 0..200 {
            let x = nonsecret::bytes::<13>();
            for i in 0..13 {
                or[i] |= x[i];
                and[i] &= x[i];
            }
        }
        assert_eq!(or, [0xff; 13]);
        assert_eq!(and, [0; 13]);
    }
}
