//! The sandbox's links of a QR code: its short URL (what its images encode) and a stored target
//! shown under the public base URL. A leaf: it imports nothing of the area.

/// The base every sandbox link starts with: `server.public_base_url`, or the bound address.
fn base(settings: &crate::config::Settings) -> String {
    match &settings.public_base_url {
        Some(b) => b.clone(),
        None => crate::config::public_base_url_for(settings.listen),
    }
}

/// The short URL a code's images encode.
pub fn short_url(settings: &crate::config::Settings, code: &str) -> String {
    format!("{}/q/{code}", base(settings))
}

/// A stored target or redirect as the API shows it: the sandbox's own landing page is stored as a
/// path (`/l/{code}`, so the redirect stays on the host a phone scanned) and shown under the base.
pub(super) fn absolute(settings: &crate::config::Settings, stored: String) -> String {
    if stored.starts_with('/') {
        format!("{}{stored}", base(settings))
    } else {
        stored
    }
}
