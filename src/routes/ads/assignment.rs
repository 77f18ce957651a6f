//! An ad's assignment to a screen as the API shows it (`AdAssignment`): the answer of the
//! assignment routes and the `data` of `ad.assigned`. A leaf: it imports nothing of the area.

use crate::routes::crud::Time;
use serde::Serialize;

/// An ad's assignment to a device. Field order is the order of the JSON members.
#[derive(Serialize)]
pub(super) struct Assignment<'a> {
    object: &'static str,
    ad_id: &'a str,
    device_id: &'a str,
    company_id: &'a str,
    assigned_at: Time,
    newly_assigned: bool,
}

pub(super) fn assignment<'a>(
    ad: &'a str,
    device: &'a str,
    company: &'a str,
    at: i64,
    newly: bool,
) -> Assignment<'a> {
    Assignment {
        object: "ad_assignment",
        ad_id: ad,
        device_id: device,
        company_id: company,
        assigned_at: Time(at),
        newly_assigned: newly,
    }
}
