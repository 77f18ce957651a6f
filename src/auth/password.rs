//! Human passwords: argon2id with OWASP's parameters (19 MiB, 2 passes, 1 lane), the crate's
//! defaults. Costs ~20 ms: login and CLI only, always on a blocking thread.

use argon2::password_hash::phc::PasswordHash;
use argon2::{Argon2, PasswordHasher, PasswordVerifier};

pub fn hash(password: &str) -> Result<String, String> {
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

pub fn verify(password: &str, phc: &str) -> bool {
    match PasswordHash::new(phc) {
        Ok(parsed) => Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
        Err(_) => false,
    }
}

/// A valid hash of a random password, verified against when the username is unknown, so that an
/// unknown user costs the same time as a wrong password.
pub const DUMMY_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c2lnbmFnZS1kdW1teS1zYWx0$2cuBq7jWZ9xGf2m5Vq6cq3mY4K7K3X1b0nQy8J8h3Uo";
