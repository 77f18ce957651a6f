//! Randomness, in two kinds that are never mixed up:
//!
//! - **Secrets and ids** ([`bytes`], [`base62`], [`hex`]): every call names its purpose and reads
//!   the operating system's generator (`getrandom`). API keys, webhook secrets, the login-token
//!   signing secret, MCP session ids, confirmation ids, QR codes, the random part of object ids.
//! - **Not secret** ([`nonsecret`]): a per-thread wyrand generator seeded once from the OS. Unique
//!   enough to tell requests apart in logs, cheap enough to draw on every request (no system call),
//!   and predictable to anyone who sees enough of its output, so it is only for labels.
//!
//! A sandbox started with a seed (`--seed N`) has a [`Seeded`] generator, which every purposed draw
//! is passed (`Option<&Seeded>`: a request's through its context, a write's through its handle,
//! background work's through its app's database): then every purposed draw comes from an
//! independent stream derived from (seed, purpose) — one per id kind (`id:wh`, `id:evt`, …), one
//! per kind of secret, one for QR codes — and only the work that needs that purpose advances it.
//! So the ids, secrets and bodies a sequence of writes produces depend only on that sequence of
//! writes and the clock: a read, a `/health` poll, a failed authentication or an injected fault
//! draws nothing. A stream's position is plain data
//! ([`Seeded::positions`]), which a sandbox snapshot saves and a restore puts back. Such secrets
//! are predictable by design; without a seed nothing here is predictable.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

pub const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The streams of a seeded sandbox: one wyrand state per purpose, derived from (seed, purpose) the
/// first time the purpose draws. Shared by every thread serving one app.
pub struct Seeded {
    seed: u64,
    streams: Mutex<BTreeMap<String, u64>>,
    /// Request ids of a seeded sandbox: a per-instance counter, not a stream (a request id labels
    /// a request; it is not part of the world a snapshot restores).
    requests: AtomicU64,
}

impl Seeded {
    pub fn new(seed: u64) -> Seeded {
        Seeded {
            seed,
            streams: Mutex::new(BTreeMap::new()),
            requests: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, u64>> {
        // A poisoned lock only means another thread panicked while holding it; the states are valid.
        self.streams.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next word of the stream of `purpose`.
    pub fn next_u64(&self, purpose: &str) -> u64 {
        let mut streams = self.lock();
        let state = match streams.get_mut(purpose) {
            Some(state) => state,
            None => streams
                .entry(purpose.to_string())
                .or_insert_with(|| derive(self.seed, purpose)),
        };
        let (next, out) = wyrand(*state);
        *state = next;
        out
    }

    /// The starting state of the stream of `purpose` (for what keeps its own position, such as a
    /// fault rule's draws, or hashes its inputs with it, such as the simulations).
    pub fn key(&self, purpose: &str) -> u64 {
        derive(self.seed, purpose)
    }

    /// Every stream that has drawn, with its position.
    pub fn positions(&self) -> BTreeMap<String, u64> {
        self.lock().clone()
    }

    /// Puts the streams back where [`Seeded::positions`] saw them; a stream that had not drawn
    /// then starts afresh.
    pub fn restore(&self, positions: BTreeMap<String, u64>) {
        *self.lock() = positions;
    }

    /// The next request number of this instance (1, 2, …).
    pub fn next_request(&self) -> u64 {
        self.requests.fetch_add(1, Ordering::Relaxed) + 1
    }
}

/// splitmix64's finaliser: spreads every input bit over the output.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The starting state of the stream of `purpose` under `seed`: FNV-1a of the purpose, mixed with
/// the seed (stable across builds and machines).
fn derive(seed: u64, purpose: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in purpose.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    mix(mix(seed) ^ h)
}

/// One wyrand step: (next state, output).
fn wyrand(state: u64) -> (u64, u64) {
    let s = state.wrapping_add(0xa076_1d64_78bd_642f);
    let t = u128::from(s) * u128::from(s ^ 0xe703_7ed1_a0b4_28db);
    (s, ((t >> 64) as u64) ^ (t as u64))
}

/// Steps a state kept elsewhere (a fault rule's draws): the next word.
pub fn step(state: &mut u64) -> u64 {
    let (next, out) = wyrand(*state);
    *state = next;
    out
}

/// The key of `purpose` under `seeded` (see [`Seeded::key`]); 0 without a seed, so an unseeded
/// sandbox hashes exactly as before.
pub fn stream_key(seeded: Option<&Seeded>, purpose: &str) -> u64 {
    seeded.map_or(0, |g| g.key(purpose))
}

fn fill_seeded(seeded: Option<&Seeded>, purpose: &str, buf: &mut [u8]) -> bool {
    match seeded {
        Some(g) => {
            for chunk in buf.chunks_mut(8) {
                let word = g.next_u64(purpose).to_le_bytes();
                chunk.copy_from_slice(&word[..chunk.len()]);
            }
            true
        }
        None => false,
    }
}

/// `N` bytes from the operating system's generator, or from the stream of `purpose` of `seeded`
/// (a seeded sandbox's generator, passed by whoever draws).
pub fn bytes<const N: usize>(seeded: Option<&Seeded>, purpose: &str) -> [u8; N] {
    let mut buf = [0u8; N];
    if fill_seeded(seeded, purpose, &mut buf) {
        return buf;
    }
    // The OS generator failing is not recoverable; a zeroed secret would be worse than stopping.
    if let Err(err) = getrandom::fill(&mut buf) {
        panic!("operating system randomness unavailable: {err}");
    }
    buf
}

/// 64 random bits for an id's random part ([`crate::ids`]): the stream of `purpose` of `seeded`
/// as [`bytes`], else the operating system's generator read through a per-thread buffer, one
/// system call per [`ID_BUFFER`] bytes instead of one per id (a bulk write draws thousands). The
/// bytes are the OS generator's, each handed out once and wiped from the buffer as it is, so an id
/// is exactly as unguessable as one drawn by its own call.
pub fn id_word(seeded: Option<&Seeded>, purpose: &str) -> u64 {
    let mut word = [0u8; 8];
    if fill_seeded(seeded, purpose, &mut word) {
        return u64::from_le_bytes(word);
    }
    ID_BYTES.with(|cell| {
        let mut b = cell.borrow_mut();
        if b.1 + 8 > ID_BUFFER {
            // The OS generator failing is not recoverable; a zeroed id part would repeat.
            if let Err(err) = getrandom::fill(&mut b.0) {
                panic!("operating system randomness unavailable: {err}");
            }
            b.1 = 0;
        }
        let at = b.1;
        word.copy_from_slice(&b.0[at..at + 8]);
        b.0[at..at + 8].fill(0);
        b.1 = at + 8;
    });
    u64::from_le_bytes(word)
}

/// Bytes of OS randomness [`id_word`] reads ahead per thread.
pub const ID_BUFFER: usize = 512;

thread_local! {
    /// (bytes, how many are used): starts used up, so the first draw fills it.
    static ID_BYTES: std::cell::RefCell<([u8; ID_BUFFER], usize)> =
        const { std::cell::RefCell::new(([0; ID_BUFFER], ID_BUFFER)) };
}

/// `len` uniformly random base-62 characters for `purpose` (rejection sampling, no modulo bias).
pub fn base62(seeded: Option<&Seeded>, purpose: &str, len: usize) -> String {
    let mut out = String::with_capacity(len);
    while out.len() < len {
        for b in bytes::<32>(seeded, purpose) {
            if b < 248 && out.len() < len {
                out.push(BASE62[(b % 62) as usize] as char);
            }
        }
    }
    out
}

/// Lowercase hex of `N` bytes for `purpose`: session ids, file names.
pub fn hex<const N: usize>(seeded: Option<&Seeded>, purpose: &str) -> String {
    hex_of(&bytes::<N>(seeded, purpose))
}

/// Lowercase hex of `N` bytes from the OS generator even in a seeded sandbox: for
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

    /// The next 64 bits of this thread's wyrand stream (never the seeded streams: a label drawn
    /// on every request must not move them).
    pub fn next_u64() -> u64 {
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

    /// Appends the lowercase hex of `N` bytes of this thread's stream to `out` (a request id,
    /// written in place: no string of its own, no character encoded one at a time).
    pub fn push_hex<const N: usize>(out: &mut String) {
        let mut buf = [0u8; 128];
        let len = (2 * N).min(buf.len());
        for (pair, b) in buf[..len].chunks_exact_mut(2).zip(bytes::<N>()) {
            pair[0] = super::HEX[usize::from(b >> 4)];
            pair[1] = super::HEX[usize::from(b & 0x0f)];
        }
        if let Ok(text) = std::str::from_utf8(&buf[..len]) {
            out.push_str(text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn push_hex_appends_lowercase_hex_of_fresh_bytes() {
        let mut a = String::from("req_");
        nonsecret::push_hex::<12>(&mut a);
        let mut b = String::from("req_");
        nonsecret::push_hex::<12>(&mut b);
        assert_eq!(a.len(), 28);
        assert!(a[4..]
            .bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)));
        assert_ne!(a, b);
    }

    #[test]
    fn hex_is_lowercase_and_twice_as_long() {
        assert_eq!(hex_of(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        for s in [hex::<12>(None, "test"), nonsecret::hex::<12>()] {
            assert_eq!(s.len(), 24);
            assert!(s
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        }
    }

    #[test]
    fn a_seeded_generator_repeats_its_stream_for_every_kind_of_draw() {
        let draw = || {
            let g = Seeded::new(42);
            (hex::<8>(Some(&g), "a"), base62(Some(&g), "b", 20))
        };
        assert_eq!(draw(), draw());
        let unseeded = (hex::<8>(None, "a"), base62(None, "b", 20));
        assert_ne!(unseeded.0, draw().0);
    }

    #[test]
    fn a_purpose_s_stream_ignores_draws_of_other_purposes_and_labels() {
        let g = Seeded::new(7);
        let quiet = hex::<8>(Some(&g), "id:wh");
        let g = Seeded::new(7);
        let busy = {
            let _ = hex::<8>(Some(&g), "id:evt");
            let _ = base62(Some(&g), "api_key", 40);
            let _ = nonsecret::hex::<12>();
            hex::<8>(Some(&g), "id:wh")
        };
        assert_eq!(quiet, busy);
        let other_seed = hex::<8>(Some(&Seeded::new(8)), "id:wh");
        assert_ne!(quiet, other_seed);
    }

    #[test]
    fn positions_put_back_replay_the_same_draws() {
        let g = Seeded::new(3);
        let _ = hex::<8>(Some(&g), "qr");
        let saved = g.positions();
        let first = (hex::<8>(Some(&g), "qr"), hex::<8>(Some(&g), "id:ad"));
        g.restore(saved);
        assert_eq!(
            first,
            (hex::<8>(Some(&g), "qr"), hex::<8>(Some(&g), "id:ad"))
        );
    }

    #[test]
    fn id_words_do_not_repeat_across_refills_and_follow_a_seed() {
        let words: HashSet<u64> = (0..10 * ID_BUFFER / 8)
            .map(|_| id_word(None, "id:t"))
            .collect();
        assert_eq!(words.len(), 10 * ID_BUFFER / 8);
        // Every bit position varies: the buffer hands out random bytes, not its wiped zeros.
        let (or, and) = (0..200).fold((0u64, u64::MAX), |(o, a), _| {
            let w = id_word(None, "id:t");
            (o | w, a & w)
        });
        assert_eq!((or, and), (u64::MAX, 0));
        let seeded = |seed| id_word(Some(&Seeded::new(seed)), "id:t");
        assert_eq!(seeded(5), seeded(5));
        assert_eq!(
            seeded(5),
            u64::from_le_bytes(bytes::<8>(Some(&Seeded::new(5)), "id:t"))
        );
    }

    #[test]
    fn base62_has_the_asked_length_and_alphabet() {
        let s = base62(None, "test", 100);
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
