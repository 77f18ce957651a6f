//! The devices area's field rules: the platforms, orientations and statuses a device may have, the
//! lengths of its texts and the bounds of what a heartbeat reports, read by the handlers that
//! check a body and by the schemas that document it. A leaf: it imports nothing of the area.

use crate::validate::{OneOf, Text};

/// The `platform` CHECK of the `devices` table.
pub const PLATFORMS: &[&str] = &[
    "android",
    "tizen",
    "webos",
    "brightsign",
    "windows",
    "linux",
];
pub const ORIENTATIONS: &[&str] = &["landscape", "portrait"];
pub const STATUSES: &[&str] = &["online", "offline", "never_seen"];

/// What `resolution` accepts: `WIDTHxHEIGHT`, 2–5 digits each.
pub(super) const RESOLUTION_PATTERN: &str = "^[1-9][0-9]{1,4}x[1-9][0-9]{1,4}$";

pub(super) const NAME: Text = Text::new(1, 100);
pub(super) const LOCATION: Text = Text::new(0, 200);
pub(super) const PLAYBACK_MESSAGE: Text = Text::new(1, 500);
pub(super) const PLATFORM: OneOf = OneOf(PLATFORMS);
pub(super) const ORIENTATION: OneOf = OneOf(ORIENTATIONS);
pub(super) const STATUS: OneOf = OneOf(STATUSES);

/// Playback errors kept per device; older ones are pruned on heartbeat so the table stays bounded.
pub(crate) const KEPT_PLAYBACK_ERRORS: i64 = 100;
/// Playback errors reported by one heartbeat, and shown by diagnostics.
pub(super) const MAX_PLAYBACK_ERRORS: usize = 20;
pub(super) const MAX_STORAGE_MB: i64 = 100_000_000;
pub(super) const MAX_UPTIME_SECS: i64 = 3_153_600_000;
