//! Which field names hold a credential, judged by the name alone. A leaf: it imports no other
//! file of the redactor ([`super::shape`] and the value walk in `mod.rs` ask it).

/// Field names (lowercased, with everything but letters and digits removed) that always hold a
/// credential.
const SECRET_NAMES: &[&str] = &[
    "authorization",
    "proxyauthorization",
    "cookie",
    "setcookie",
    "apikey",
    "xapikey",
    "rawkey",
    "privatekey",
    "secretkey",
    "signingkey",
    "keyhash",
    "tokenhash",
    "accesstoken",
    "refreshtoken",
    "idtoken",
    "sessiontoken",
    "authtoken",
    "apitoken",
    "bearertoken",
    "logintoken",
    "jwt",
    "jwtsecret",
];

/// True when a field of this name holds a secret, so its value is never shown.
pub fn is_secret_field(name: &str) -> bool {
    let mut buf = [0u8; 48];
    let mut n = 0;
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() {
            if n == buf.len() {
                // No secret name is this long; long keys are data, not credentials.
                return false;
            }
            buf[n] = b.to_ascii_lowercase();
            n += 1;
        }
    }
    let c = &buf[..n];
    if contains(c, b"password") || contains(c, b"passwd") || contains(c, b"passphrase") {
        return true;
    }
    if contains(c, b"secret") {
        // The last characters of a signing secret are shown on purpose, to tell secrets apart.
        return !(c.ends_with(b"lastfour") || c.ends_with(b"last4"));
    }
    SECRET_NAMES.iter().any(|s| s.as_bytes() == c)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
