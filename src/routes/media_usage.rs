//! `GET /media/usage?company_id=…`: how much of its media quota a company uses, from the stored
//! bytes themselves (the sum of its media's `size_bytes`, the same sum an upload is checked
//! against), so that the console's storage line and the 422 `media_quota_exceeded` agree.

use crate::auth::{Action, Area, Level};
use crate::http::router::{param, Param, Route};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::Kind;
use schemars::JsonSchema;
use serde::Serialize;

pub fn route() -> Route {
    Route::get(
        "/media/usage",
        "getMediaUsage",
        Action::Use(Area::Media, Level::Read),
        usage,
    )
    .no_tool("the console's storage line; list_media gives every item's size, and an upload past the quota says what is left")
    .tag("media")
    .summary("A company's media storage: bytes used, its quota and what is left.")
    .describe("How much of `media.quota_bytes_per_company` a company's media take: the sum of their sizes (what an upload is checked against), the quota, what is left, and how many items. An upload past `available_bytes` is 422 `media_quota_exceeded`.")
    .query(&[Param {
        required: true,
        ..param("company_id", Kind::Company.schema(), "The company.")
    }])
    .ok("MediaUsage")
}

/// How much of its media quota a company uses: the sum of its media's sizes against
/// `media.quota_bytes_per_company`.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "MediaUsage")]
pub(super) struct Usage {
    #[schemars(extend("const" = "media_usage"))]
    object: &'static str,
    company_id: String,
    used_bytes: u64,
    quota_bytes: u64,
    available_bytes: u64,
    media_count: u64,
}

fn usage(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let company = ctx.query_id("company_id", Kind::Company)?.ok_or_else(|| {
        ApiError::invalid("company_id", "required", "Give the company (`company_id`).")
    })?;
    {
        let conn = ctx.conn()?;
        let exists = conn
            .prepare_cached("SELECT 1 FROM companies WHERE id = ?1")?
            .exists([&company])?;
        if !exists {
            return Err(ApiError::not_found("company", &company));
        }
    }
    ctx.authorize_company(&company, "company", &company)?;
    let (used, count): (i64, i64) = ctx
        .conn()?
        .prepare_cached(
            "SELECT coalesce(sum(size_bytes), 0), count(*) FROM media WHERE company_id = ?1",
        )?
        .query_row([&company], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let quota = ctx.app.settings.media_quota_bytes_per_company;
    let used = used.max(0) as u64;
    Ok(Response::ok(&Usage {
        object: "media_usage",
        company_id: company,
        used_bytes: used,
        quota_bytes: quota,
        available_bytes: quota.saturating_sub(used),
        media_count: count.max(0) as u64,
    }))
}
