//! Secret randomness from the operating system, and the encodings our secrets use.

pub const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

pub fn bytes<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    // The OS generator failing is not recoverable; a zeroed secret would be worse than stopping.
    if let Err(err) = getrandom::fill(&mut buf) {
        panic!("operating system randomness unavailable: {err}");
    }
    buf
}

/// `len` uniformly random base-62 characters (rejection sampling, no modulo bias).
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

/// Lowercase hex of random bytes: session ids, request ids.
pub fn hex<const N: usize>() -> String {
    let mut s = String::with_capacity(N * 2);
    for b in bytes::<N>() {
        s.push_str(&format!("{b:02x}"));
    }
    s
}
