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
//!
//! A sandbox started with a seed (`--seed N`) installs a [`Seeded`] generator for its requests, and
//! then both kinds draw from it: ids, secrets and request ids repeat from run to run, which is what
//! makes two seeded, frozen sandboxes answer byte for byte alike. Such secrets are predictable by
//! design; without a seed nothing here changes.

pub const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A seeded, deterministic generator (wyrand), shared by every thread serving one app.
pub struct Seeded {
    state: std::sync::Mutex<u64>,
}

impl Seeded {
    pub fn new(seed: u64) -> Seeded {
        Seeded {
            state: std::sync::Mutex::new(seed),
        }
    }

    pub fn next_u64(&self) -> u64 {
        // A poisoned lock only means another thread panicked while holding it; the state is valid.
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (next, out) = wyrand(*state);
        *state = next;
        out
    }

    /// Runs `f` with this generator installed for the thread: every draw in it comes from here.
    pub fn run<R>(self: &std::sync::Arc<Self>, f: impl FnOnce() -> R) -> R {
        struct Restore(Option<std::sync::Arc<Seeded>>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                SEEDED.with(|c| *c.borrow_mut() = previous);
            }
        }
        let previous = SEEDED.with(|c| c.borrow_mut().replace(std::sync::Arc::clone(self)));
        let _restore = Restore(previous);
        f()
    }
}

thread_local! {
    static SEEDED: std::cell::RefCell<Option<std::sync::Arc<Seeded>>> =
        const { std::cell::RefCell::new(None) };
}

/// One wyrand step: (next state, output).
fn wyrand(state: u64) -> (u64, u64) {
    let s = state.wrapping_add(0xa076_1d64_78bd_642f);
    let t = u128::from(s) * u128::from(s ^ 0xe703_7ed1_a0b4_28db);
    (s, ((t >> 64) as u64) ^ (t as u64))
}

/// The installed seeded generator's next word, if one is installed on this thread.
fn seeded_u64() -> Option<u64> {
    SEEDED.with(|c| c.borrow().as_ref().map(|g| g.next_u64()))
}

fn fill_seeded(buf: &mut [u8]) -> bool {
    SEEDED.with(|c| match c.borrow().as_ref() {
        Some(g) => {
            for chunk in buf.chunks_mut(8) {
                let word = g.next_u64().to_le_bytes();
                chunk.copy_from_slice(&word[..chunk.len()]);
            }
            true
        }
        None => false,
    })
}

/// `N` bytes from the operating system's generator (or the installed seeded one).
pub fn bytes<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    if fill_seeded(&mut buf) {
        return buf;
    }
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

/// Lowercase hex of `N` bytes from the OS generator even when a seeded generator is installed: for
/// what must differ between two seeded runs on one machine (the throw-away database file of
/// `:memory:`, which two identically seeded sandboxes would otherwise share). Never in a body.
pub fn unseeded_hex<const N: usize>() -> String {
    let mut buf = [0u8; N];
    if let Err(err) = getrandom::fill(&mut buf) {
        panic!("operating system randomness unavailable: {err}");
    }
    hex_of(&buf)
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

    /// The next 64 bits of this thread's wyrand stream (or of the installed seeded generator).
    pub fn next_u64() -> u64 {
        if let Some(word) = super::seeded_u64() {
            return word;
        }
        STATE.with(|state| {
            let (next, out) = super::wyrand(state.get());
            state.set(next);
            out
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
    fn a_seeded_generator_repeats_its_stream_for_every_kind_of_draw() {
        let draw = || {
            let g = std::sync::Arc::new(Seeded::new(42));
            g.run(|| (hex::<8>(), base62(20), nonsecret::hex::<4>()))
        };
        assert_eq!(draw(), draw());
        let unseeded = (hex::<8>(), base62(20));
        assert_ne!(unseeded.0, draw().0);
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
