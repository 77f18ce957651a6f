//! Companies and their branding (brand tokens and logos).

use crate::auth::{Action, Area, Level};
use crate::events;
use crate::http::router::Route;
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{self, Kind};
use crate::time::rfc3339;
use crate::validate::{text_schema, Errors};
use rusqlite::{OptionalExtension, Row};
use serde::Deserialize;
use serde_json::{json, Value};

const READ: Action = Action::Use(Area::Companies, Level::Read);
const WRITE: Action = Action::Use(Area::Companies, Level::Write);

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/companies", "listCompanies", READ, list)
            .tag("companies")
            .summary("List the companies visible to the credential.")
            .paged_by(Kind::Company)
            .ok("CompanyList"),
        Route::get("/companies/{id}", "getCompany", READ, get)
            .tag("companies")
            .summary("Get one company.")
            .ok("Company"),
        Route::get(
            "/companies/{id}/branding",
            "getCompanyBranding",
            READ,
            get_branding,
        )
        .tag("companies")
        .summary("Get a company's branding: logos and brand tokens (colours, fonts, radius).")
        .ok("Branding"),
        Route::patch(
            "/companies/{id}/branding",
            "updateCompanyBranding",
            WRITE,
            update_branding,
        )
        .tag("companies")
        .summary("Update brand tokens. Honours If-Match.")
        .body("BrandingUpdate")
        .ok("Branding"),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    let color = json!({"type":"string","pattern":"^#[0-9A-Fa-f]{6}$"});
    vec![
        (
            "Company",
            json!({"type":"object","additionalProperties":false,
                "required":["id","object","account_id","name","slug","industry","country","timezone","plan_id","created_at","updated_at"],
                "properties":{"id":{"type":"string","pattern":"^cmp_"},"object":{"const":"company"},
                    "account_id":{"type":"string"},"name":{"type":"string"},"slug":{"type":"string"},
                    "industry":{"type":"string"},"country":{"type":"string"},"timezone":{"type":"string"},
                    "plan_id":{"type":"string"},"created_at":{"type":"string","format":"date-time"},
                    "updated_at":{"type":"string","format":"date-time"}}}),
        ),
        (
            "Branding",
            json!({"type":"object","additionalProperties":false,
                "required":["object","company_id","colors","fonts","corner_radius_px","tagline","logos","updated_at"],
                "properties":{"object":{"const":"branding"},"company_id":{"type":"string"},
                    "colors":{"type":"object","additionalProperties":false,
                        "required":["primary","secondary","accent","background","text"],
                        "properties":{"primary":color,"secondary":color,"accent":color,"background":color,"text":color}},
                    "fonts":{"type":"object","additionalProperties":false,"required":["heading","body"],
                        "properties":{"heading":{"type":"string"},"body":{"type":"string"}}},
                    "corner_radius_px":{"type":"integer","minimum":0,"maximum":64},
                    "tagline":{"type":["string","null"]},
                    "logos":{"type":"array","items":{"type":"object","additionalProperties":false,
                        "required":["id","variant","url","format","width","height"],
                        "properties":{"id":{"type":"string"},"variant":{"type":"string","enum":["primary","dark","icon"]},
                            "url":{"type":"string","format":"uri"},"format":{"type":"string"},
                            "width":{"type":"integer"},"height":{"type":"integer"}}}},
                    "updated_at":{"type":"string","format":"date-time"}}}),
        ),
        (
            "BrandingUpdate",
            json!({"type":"object","additionalProperties":false,"minProperties":1,
                "properties":{
                    "colors":{"type":"object","additionalProperties":false,"minProperties":1,
                        "properties":{"primary":color,"secondary":color,"accent":color,"background":color,"text":color}},
                    "fonts":{"type":"object","additionalProperties":false,"minProperties":1,
                        "properties":{"heading":text_schema(1, 64),
                                      "body":text_schema(1, 64)}},
                    "corner_radius_px":{"type":"integer","minimum":0,"maximum":64},
                    "tagline":{"type":["string","null"],"maxLength":140,"pattern":crate::validate::text_pattern(false)}}}),
        ),
    ]
}

const COMPANY_COLUMNS: &str =
    "id, account_id, name, slug, industry, country, timezone, plan_id, created_at, updated_at";

fn company_json(r: &Row<'_>) -> rusqlite::Result<Value> {
    Ok(json!({
        "id": r.get::<_, String>(0)?,
        "object": "company",
        "account_id": r.get::<_, String>(1)?,
        "name": r.get::<_, String>(2)?,
        "slug": r.get::<_, String>(3)?,
        "industry": r.get::<_, String>(4)?,
        "country": r.get::<_, String>(5)?,
        "timezone": r.get::<_, String>(6)?,
        "plan_id": r.get::<_, String>(7)?,
        "created_at": rfc3339(r.get(8)?),
        "updated_at": rfc3339(r.get(9)?),
    }))
}

/// `?, ?, ?` for an IN list of `n` values starting at parameter `first`.
pub fn placeholders(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let companies = ctx.principal()?.visible_companies.clone();
    let sql = format!(
        "SELECT {COMPANY_COLUMNS} FROM companies WHERE id IN ({}) AND id < ?1 ORDER BY id DESC LIMIT ?2",
        placeholders(3, companies.len())
    );
    let conn = ctx.app.db.conn()?;
    let mut stmt = conn.prepare_cached(&sql)?;
    let bound = page.bound().to_string();
    let fetch = page.fetch();
    let mut args: Vec<&dyn rusqlite::ToSql> = vec![&bound, &fetch];
    for c in &companies {
        args.push(c);
    }
    let rows = stmt
        .query_map(args.as_slice(), company_json)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Response::page(rows, &page))
}

fn valid_company_id(id: &str) -> Result<(), ApiError> {
    if ids::is_valid(Kind::Company, id) {
        Ok(())
    } else {
        Err(ApiError::not_found("company", id))
    }
}

fn get(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = ctx.param("id").to_string();
    valid_company_id(&id)?;
    ctx.authorize_company(&id, "company", &id)?;
    let conn = ctx.app.db.conn()?;
    let company = conn
        .prepare_cached(&format!(
            "SELECT {COMPANY_COLUMNS} FROM companies WHERE id = ?1"
        ))?
        .query_row([&id], company_json)
        .optional()?
        .ok_or_else(|| ApiError::not_found("company", &id))?;
    Ok(Response::ok(&company))
}

fn load_branding(
    conn: &rusqlite::Connection,
    company_id: &str,
) -> Result<Option<(Value, i64)>, ApiError> {
    let row = conn
        .prepare_cached(
            "SELECT primary_color, secondary_color, accent_color, background_color, text_color,
                    heading_font, body_font, corner_radius_px, tagline, updated_at, version
             FROM brandings WHERE company_id = ?1",
        )?
        .query_row([company_id], |r| {
            Ok((
                json!({
                    "object": "branding",
                    "company_id": company_id,
                    "colors": {
                        "primary": r.get::<_, String>(0)?,
                        "secondary": r.get::<_, String>(1)?,
                        "accent": r.get::<_, String>(2)?,
                        "background": r.get::<_, String>(3)?,
                        "text": r.get::<_, String>(4)?,
                    },
                    "fonts": {"heading": r.get::<_, String>(5)?, "body": r.get::<_, String>(6)?},
                    "corner_radius_px": r.get::<_, i64>(7)?,
                    "tagline": r.get::<_, Option<String>>(8)?,
                    "updated_at": rfc3339(r.get(9)?),
                }),
                r.get::<_, i64>(10)?,
            ))
        })
        .optional()?;
    let Some((mut branding, version)) = row else {
        return Ok(None);
    };
    let logos = conn
        .prepare_cached(
            "SELECT id, variant, url, format, width, height FROM brand_logos WHERE company_id = ?1 ORDER BY id",
        )?
        .query_map([company_id], |r| {
            Ok(json!({
                "id": r.get::<_, String>(0)?,
                "variant": r.get::<_, String>(1)?,
                "url": r.get::<_, String>(2)?,
                "format": r.get::<_, String>(3)?,
                "width": r.get::<_, i64>(4)?,
                "height": r.get::<_, i64>(5)?,
            }))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    branding["logos"] = json!(logos);
    Ok(Some((branding, version)))
}

fn get_branding(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = ctx.param("id").to_string();
    valid_company_id(&id)?;
    ctx.authorize_company(&id, "company", &id)?;
    let conn = ctx.app.db.conn()?;
    let (branding, version) =
        load_branding(&conn, &id)?.ok_or_else(|| ApiError::not_found("company", &id))?;
    Ok(Response::ok(&branding).with_etag(version))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ColorsUpdate {
    #[serde(default, deserialize_with = "crate::routes::present")]
    primary: Option<String>,
    #[serde(default, deserialize_with = "crate::routes::present")]
    secondary: Option<String>,
    #[serde(default, deserialize_with = "crate::routes::present")]
    accent: Option<String>,
    #[serde(default, deserialize_with = "crate::routes::present")]
    background: Option<String>,
    #[serde(default, deserialize_with = "crate::routes::present")]
    text: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FontsUpdate {
    #[serde(default, deserialize_with = "crate::routes::present")]
    heading: Option<String>,
    #[serde(default, deserialize_with = "crate::routes::present")]
    body: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BrandingUpdate {
    #[serde(default, deserialize_with = "crate::routes::present")]
    colors: Option<ColorsUpdate>,
    #[serde(default, deserialize_with = "crate::routes::present")]
    fonts: Option<FontsUpdate>,
    #[serde(default, deserialize_with = "crate::routes::present")]
    corner_radius_px: Option<i64>,
    #[serde(default, deserialize_with = "crate::routes::nullable")]
    tagline: Option<Option<String>>,
}

fn update_branding(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = ctx.param("id").to_string();
    valid_company_id(&id)?;
    ctx.authorize_company(&id, "company", &id)?;
    let input: BrandingUpdate = ctx.json()?;
    let mut errors = Errors::new();
    let mut sets: Vec<(&str, rusqlite::types::Value)> = Vec::new();
    if let Some(c) = &input.colors {
        for (field, column, value) in [
            ("/colors/primary", "primary_color", &c.primary),
            ("/colors/secondary", "secondary_color", &c.secondary),
            ("/colors/accent", "accent_color", &c.accent),
            ("/colors/background", "background_color", &c.background),
            ("/colors/text", "text_color", &c.text),
        ] {
            if let Some(v) = value {
                errors.hex_color(field, v);
                sets.push((column, v.to_uppercase().into()));
            }
        }
        if sets.is_empty() {
            errors.push("/colors", "empty", "Give at least one colour.");
        }
    }
    if let Some(f) = &input.fonts {
        let before = sets.len();
        for (field, column, value) in [
            ("/fonts/heading", "heading_font", &f.heading),
            ("/fonts/body", "body_font", &f.body),
        ] {
            if let Some(v) = value {
                errors.text(field, v, 1, 64);
                sets.push((column, v.trim().to_string().into()));
            }
        }
        if sets.len() == before {
            errors.push("/fonts", "empty", "Give at least one font.");
        }
    }
    if let Some(r) = input.corner_radius_px {
        errors.range("/corner_radius_px", r, 0, 64);
        sets.push(("corner_radius_px", r.into()));
    }
    if let Some(t) = &input.tagline {
        match t {
            Some(t) => {
                errors.text("/tagline", t, 0, 140);
                sets.push(("tagline", t.trim().to_string().into()));
            }
            None => sets.push(("tagline", rusqlite::types::Value::Null)),
        }
    }
    if sets.is_empty() && input.colors.is_none() && input.fonts.is_none() {
        errors.push("", "empty", "Give at least one field to change.");
    }
    errors.finish()?;

    let now = crate::time::now();
    ctx.app.db.write(|tx| {
        let version: i64 = tx
            .query_row(
                "SELECT version FROM brandings WHERE company_id = ?1",
                [&id],
                |r| r.get(0),
            )
            .optional()?
            .ok_or_else(|| ApiError::not_found("company", &id))?;
        ctx.check_if_match(version)?;
        crate::routes::update_versioned(tx, "brandings", "company_id", &id, now, &sets)?;
        let (branding, version) =
            load_branding(tx, &id)?.ok_or_else(|| ApiError::not_found("company", &id))?;
        events::record(tx, &id, "branding.updated", "branding", &id, &branding)?;
        Ok(Response::ok(&branding).with_etag(version))
    })
}
