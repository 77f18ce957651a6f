//! The API key format: `sgn_test_<key id: 16 base62>_<secret: 32 base62><checksum: 6 base62>`.
//!
//! The secret carries 190 random bits. The checksum (CRC-32 of everything before it, as 6 base-62
//! digits) lets a mistyped or truncated key be refused without touching the database, in the
//! spirit of GitHub's token format. Only the SHA-256 of the whole key is stored; the key id locates
//! the row and the hash is compared in constant time.

use crate::random::{self, BASE62};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub const PREFIX: &str = "sgn_test_";
const KID_LEN: usize = 16;
const SECRET_LEN: usize = 32;
const CRC_LEN: usize = 6;
pub const RAW_LEN: usize = PREFIX.len() + KID_LEN + 1 + SECRET_LEN + CRC_LEN;

/// A key that has the right shape and checksum. Says nothing yet about whether it exists.
#[derive(Debug)]
pub struct ParsedKey<'a> {
    pub kid: &'a str,
    pub raw: &'a str,
}

impl ParsedKey<'_> {
    /// The public id of the key: `key_<kid>`.
    pub fn key_id(&self) -> String {
        format!("key_{}", self.kid)
    }
}

/// CRC-32 (IEEE, reflected) of every byte value, computed at compile time: one table lookup a
/// byte instead of eight shifts (every authenticated request checks a key's checksum).
const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &byte in data {
        crc = (crc >> 8) ^ CRC_TABLE[((crc ^ u32::from(byte)) & 0xFF) as usize];
    }
    !crc
}

/// The 6 base-62 checksum digits of a key body (everything before them), on the stack.
fn checksum_digits(body: &str) -> [u8; CRC_LEN] {
    let mut n = crc32(body.as_bytes());
    let mut digits = [b'0'; CRC_LEN];
    for slot in digits.iter_mut().rev() {
        *slot = BASE62[(n % 62) as usize];
        n /= 62;
    }
    digits
}

/// The 6 base-62 checksum digits of a key body (everything before them).
pub fn checksum(body: &str) -> String {
    checksum_digits(body).iter().map(|&c| c as char).collect()
}

fn is_base62(s: &str) -> bool {
    s.bytes().all(|c| c.is_ascii_alphanumeric())
}

/// Checks shape and checksum only; no I/O.
pub fn parse(raw: &str) -> Option<ParsedKey<'_>> {
    if raw.len() != RAW_LEN || !raw.is_ascii() {
        return None;
    }
    let rest = raw.strip_prefix(PREFIX)?;
    let (kid, rest) = rest.split_at(KID_LEN);
    let rest = rest.strip_prefix('_')?;
    let (secret, crc) = rest.split_at(SECRET_LEN);
    if !is_base62(kid) || !is_base62(secret) || !is_base62(crc) {
        return None;
    }
    let body = &raw[..raw.len() - CRC_LEN];
    if checksum_digits(body).ct_eq(crc.as_bytes()).unwrap_u8() != 1 {
        return None;
    }
    Some(ParsedKey { kid, raw })
}

/// A freshly minted key: the raw value (shown once) and what is stored.
pub struct NewKey {
    pub raw: String,
    pub key_id: String,
    pub prefix: String,
    pub last_four: String,
    pub secret_hash: String,
}

/// A new key, drawn from `seeded`'s stream in a seeded sandbox, else from the OS.
pub fn generate(seeded: Option<&random::Seeded>) -> NewKey {
    let kid = random::base62(seeded, "api_key", KID_LEN);
    let secret = random::base62(seeded, "api_key", SECRET_LEN);
    let body = format!("{PREFIX}{kid}_{secret}");
    let raw = format!("{body}{}", checksum(&body));
    NewKey {
        key_id: format!("key_{kid}"),
        prefix: format!("{PREFIX}{kid}"),
        last_four: raw[raw.len() - 4..].to_string(),
        secret_hash: hash(&raw),
        raw,
    }
}

pub fn hash(raw: &str) -> String {
    let digest = Sha256::digest(raw.as_bytes());
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 15)]));
    }
    out
}

/// Constant-time comparison of the presented key's hash with the stored one.
pub fn verify(raw: &str, stored_hash: &str) -> bool {
    hash(raw).as_bytes().ct_eq(stored_hash.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_parse_and_typos_do_not() {
        let k = generate(None);
        let parsed = parse(&k.raw).expect("valid");
        assert_eq!(parsed.key_id(), k.key_id);
        assert!(verify(&k.raw, &k.secret_hash));
        let mut typo = k.raw.clone().into_bytes();
        let i = PREFIX.len() + 20;
        typo[i] = if typo[i] == b'a' { b'b' } else { b'a' };
        assert!(parse(std::str::from_utf8(&typo).unwrap()).is_none());
        assert!(parse(&k.raw[..k.raw.len() - 1]).is_none());
        assert!(parse("sgn_test_").is_none());
    }

    #[test]
    fn hash_is_the_lowercase_hex_sha256() {
        assert_eq!(
            hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn crc_matches_reference() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
        // The table against the bitwise definition, for every byte value.
        let bitwise = |data: &[u8]| {
            let mut crc = 0xFFFF_FFFFu32;
            for &byte in data {
                crc ^= u32::from(byte);
                for _ in 0..8 {
                    let mask = (crc & 1).wrapping_neg();
                    crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
                }
            }
            !crc
        };
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(crc32(&all), bitwise(&all));
        for b in 0..=255u8 {
            assert_eq!(
                crc32(&[b, b.wrapping_mul(7)]),
                bitwise(&[b, b.wrapping_mul(7)])
            );
        }
    }
}
