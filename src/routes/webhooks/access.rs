//! The actions the webhooks area's routes require: reading and writing webhooks and their
//! deliveries. A leaf: it imports nothing of the area.

use crate::auth::{Action, Area, Level};

pub(super) const READ: Action = Action::Use(Area::Webhooks, Level::Read);
pub(super) const WRITE: Action = Action::Use(Area::Webhooks, Level::Write);
