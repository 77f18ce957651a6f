//! The promotions area's field rules: the states, the lengths of a promotion's and a QR code's
//! texts, the activation cost's bound and the image formats, read by the handlers that check a
//! request and by the schemas that document it. A leaf: it imports nothing of the area.

use crate::validate::Text;

pub const STATES: &[&str] = &["active", "inactive", "expired", "scheduled"];
/// The renderings of a QR code image (`?format=`).
pub(super) const QR_FORMATS: &[&str] = &["svg", "png"];
pub(super) const NAME: Text = Text::new(1, 100);
/// A QR code's placement label ("Entrance screen"); empty when not given.
pub(super) const QR_LABEL: Text = Text::new(0, 100);
pub(super) const DESCRIPTION: Text = Text::new(0, 1000);
pub const MAX_ACTIVATION_COST: i64 = 100_000;
