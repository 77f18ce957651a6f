//! An ad's assignment to a screen as the API shows it (`AdAssignment`): the answer of the
//! assignment routes and the `data` of `ad.assigned`. A leaf: it imports nothing of the area.

use crate::routes::crud::Time;
use schemars::JsonSchema;
use serde::Serialize;

/// An ad on a device.
// Field order is the order of the JSON members.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "AdAssignment")]
pub(super) struct Assignment<'a> {
    #[schemars(extend("const" = "ad_assignment"))]
    object: &'static str,
    ad_id: &'a str,
    device_id: &'a str,
    company_id: &'a str,
    assigned_at: Time,
    /// False when the ad was already assigned to the device.
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
