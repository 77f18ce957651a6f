//! The ads area's field rules: the statuses, the lengths of an ad's texts and its defaults, read
//! by the handlers that check a body and by the schemas that document it. A leaf: it imports
//! nothing of the area.

use crate::validate::{OneOf, Text};

pub const STATUSES: &[&str] = &["draft", "active", "paused", "archived"];
pub(super) const STATUS: OneOf = OneOf(STATUSES);
pub(super) const NAME: Text = Text::new(1, 100);
pub(super) const HEADLINE: Text = Text::new(1, 200);
/// `device_ids` in an ad lists at most this many; `device_count` has the total.
pub(super) const MAX_DEVICE_IDS: i64 = 100;
pub(super) const DEFAULT_DURATION_SECS: i64 = 15;
/// Seconds on screen per play: 1 to an hour.
pub(super) const MAX_DURATION_SECS: i64 = 3600;
