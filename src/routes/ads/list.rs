//! The ads list: the page's ids by index, then each ad's JSON as kept rendered
//! ([`super::ad_json`]), `on_air` judged at the request's instant.

use super::ad::load;
use super::ad_json::AdJson;
use super::fields::STATUSES;
use crate::http::response::PageWriter;
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{AdId, DeviceId, Kind, PromotionId};
use crate::routes::crud;
use crate::routes::rendered::{self, Rendered};

pub(super) fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let companies = ctx.list_companies()?;
    let status = ctx.query_enum("status", STATUSES)?;
    let promotion = ctx.query_id("promotion_id", Kind::Promotion)?;
    let device = ctx
        .query_id("device_id", Kind::Device)?
        .and_then(|d| DeviceId::parse(&d));
    let mut filters: Vec<(&str, rusqlite::types::Value)> = Vec::new();
    if let Some(s) = status {
        filters.push(("a.status = ?", s.into()));
    }
    if let Some(like) = crate::routes::search::pattern(ctx)? {
        filters.push(("a.name LIKE ? ESCAPE '\\'", like));
    }
    let now = ctx.now();
    // The page's ids by index, then each ad's JSON as rendered at this generation of the ads
    // (rendered now when not kept), with `on_air` judged at `now`.
    let generations = ctx.db.generations()?;
    let stamp = (generations.ads, generations.restores);
    let conn = ctx.conn()?;
    if let Some(p) = promotion.and_then(|p| PromotionId::parse(&p)) {
        // Like the device filter: another company's promotion is a 404, not an empty list.
        crud::authorized_row(
            ctx,
            &conn,
            "SELECT company_id FROM promotions WHERE id = ?1",
            &p,
            |_| Ok(()),
        )?;
        filters.push(("a.promotion_id = ?", p.into_string().into()));
    }
    let ids: Vec<String> = match device {
        Some(device) => {
            let owner = crud::authorized_owner(ctx, &conn, "devices", &device)?;
            // A `company_id` filter that leaves the screen's company out leaves nothing.
            if companies.contains(&owner.company) {
                let mut all: Vec<(&str, rusqlite::types::Value)> =
                    vec![("j.device_id = ?", device.into_string().into())];
                all.extend(filters);
                // Walked through the assignment key (device, ad), as `page_for_device` does.
                crate::routes::queries::fetch_page(
                    &conn,
                    "SELECT j.ad_id FROM ad_assignments j JOIN ads a ON a.id = j.ad_id",
                    "a.company_id",
                    "j.ad_id",
                    &crate::http::ctx::Reach::companies(std::sync::Arc::from([owner.company])),
                    &all,
                    &page,
                    |r| r.row().get(0),
                )?
            } else {
                Vec::new()
            }
        }
        None => crate::routes::queries::fetch_page(
            &conn,
            "SELECT a.id FROM ads a",
            crate::routes::queries::Owner::with_account("a.company_id", "a.account_id"),
            "a.id",
            &companies,
            &filters,
            &page,
            |r| r.row().get(0),
        )?,
    };
    let limit = (page.limit as usize).min(ids.len());
    let cache = ctx
        .app
        .extensions
        .get::<std::sync::Arc<Rendered<AdJson>>>()
        .ok_or_else(|| ApiError::Internal("the ads' rendered rows are not set up".into()))?;
    let load_ad = |id: &str| {
        let id = AdId::parse(id)
            .ok_or_else(|| ApiError::Internal(format!("ad id {id} malformed in the database")))?;
        load(&conn, &id, now)
    };
    let rows = rendered::rows(cache, &ids[..limit], stamp, |id| {
        AdJson::render(&load_ad(id)?)
            .ok_or_else(|| ApiError::Internal(format!("ad {id}'s JSON has no on_air")))
    })?;
    let mut out = PageWriter::with_capacity(rows.iter().map(|r| r.len() + 1).sum());
    for (id, row) in ids.iter().zip(&rows) {
        let written = out.row();
        let start = written.len();
        row.write(written, now);
        if cfg!(debug_assertions) {
            // A kept row is never stale: it is the ad read again now, byte for byte.
            let expected =
                serde_json::to_vec(&load_ad(id)?).map_err(|e| ApiError::Internal(e.to_string()))?;
            debug_assert_eq!(
                String::from_utf8_lossy(&written[start..]),
                String::from_utf8_lossy(&expected),
                "a kept ad differs from the ad read now"
            );
        }
    }
    let last = ids[..limit].last().map(String::as_str);
    Ok(Response::page_written(out.finish(
        ids.len() > limit,
        last,
        &page.tag,
    )))
}
