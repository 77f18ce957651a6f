//! Companies and their branding (brand tokens and logos).

use super::crud::{self, Time};
use crate::auth::{Action, Area, Level};
use crate::http::router::{Route, Tool};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{CompanyId, Kind};
use crate::validate::{text_schema, Errors};
use rusqlite::{Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

const READ: Action = Action::Use(Area::Companies, Level::Read);
const WRITE: Action = Action::Use(Area::Companies, Level::Write);

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/companies", "listCompanies", READ, list)
            .tool(Tool::read(
                "list_companies",
                "List companies",
                &[],
                "List the companies the API key can see, newest first. Use it to find company ids for the other tools.",
            ))
            .tag("companies")
            .summary("List the companies visible to the credential.")
            .describe("The companies (tenants) this credential may act for: all of the account's companies for an account-wide key, one for a company-scoped key. Every other object belongs to one of these; use their ids as `company_id` filters and in create bodies.")
            .paged_by(Kind::Company)
            .query(&[super::search::Q])
            .ok("CompanyList"),
        Route::get("/companies/{id}", "getCompany", READ, get)
            .tool(Tool::read(
                "get_company",
                "Get company",
                &[("company_id", "The company id (`cmp_…`), as returned by list_companies.")],
                "Get one company: name, slug, industry, country, timezone and plan.",
            ))
            .tag("companies")
            .summary("Get one company.")
            .describe("One company by id. A company outside the credential's reach is 404, exactly like a missing id.")
            .ok("Company"),
        Route::patch("/companies/{id}", "updateCompany", WRITE, update)
            .tag("companies")
            .summary("Set a company's allowed landing domains (where its promotions and QR codes may send people).")
            .describe("Sets `allowed_landing_domains`: the hosts a promotion's `landing_url` and a QR code's `target_url` may point to (a host matches a domain it equals or is under). An empty list allows any http(s) URL. At most 20 lower-case domains. Existing promotions and codes are kept as they are; new ones and changed landing pages are checked (422 `landing_domain_not_allowed`).")
            .body("CompanyUpdate")
            .ok("Company"),
        Route::get(
            "/companies/{id}/branding",
            "getCompanyBranding",
            READ,
            get_branding,
        )
        .tool(Tool::read(
            "get_company_branding",
            "Get company branding",
            &[("company_id", "The company id (`cmp_…`), as returned by list_companies.")],
            "Get a company's branding: logos and brand tokens (colours, fonts, corner radius, tagline). Use it for questions about a company's look on screen.",
        ))
        .tag("companies")
        .summary("Get a company's branding: logos and brand tokens (colours, fonts, radius).")
        .describe("The company's brand tokens (colours, fonts, corner radius) and logos, as screens render them. The `ETag` identifies this version; send it in `If-Match` to update without overwriting someone else's change.")
        .etag()
        .ok("Branding"),
        Route::patch(
            "/companies/{id}/branding",
            "updateCompanyBranding",
            WRITE,
            update_branding,
        )
        .tag("companies")
        .summary("Update brand tokens. Honours If-Match.")
        .describe("Changes some brand tokens, leaving the others as they are. Emits `branding.updated`. Returns the new branding and its new `ETag`.")
        .etag()
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
                "required":["id","object","account_id","name","slug","industry","country","timezone","plan_id","allowed_landing_domains","created_at","updated_at"],
                "properties":{"id":{"type":"string","pattern":"^cmp_"},"object":{"const":"company"},
                    "account_id":{"type":"string"},"name":{"type":"string"},"slug":{"type":"string"},
                    "industry":{"type":"string"},"country":{"type":"string"},"timezone":{"type":"string"},
                    "plan_id":{"type":"string"},
                    "allowed_landing_domains":{"type":"array","items":{"type":"string"},
                        "description":"Hosts the company's landing pages and QR targets may use (a host matches a domain it equals or is under); empty: any http(s) URL."},
                    "created_at":{"type":"string","format":"date-time"},
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
            "CompanyUpdate",
            json!({"type":"object","additionalProperties":false,"required":["allowed_landing_domains"],
                "properties":{"allowed_landing_domains":{"type":"array","maxItems":super::landing_domains::MAX_DOMAINS,
                    "description":"The domains the company's landing pages and QR targets may use (a host matches a domain it equals or is under); `[]` allows any http(s) URL. Replaces the whole list.",
                    "items":{"type":"string","minLength":1,"maxLength":253,"pattern":"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$"}}}}),
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
    "id, account_id, name, slug, industry, country, timezone, plan_id, allowed_landing_domains,
     created_at, updated_at";

/// A company as the API returns it. Field order is the order of the JSON members.
#[derive(Serialize)]
pub struct Company {
    id: String,
    object: &'static str,
    account_id: String,
    name: String,
    slug: String,
    industry: String,
    country: String,
    timezone: String,
    plan_id: String,
    allowed_landing_domains: Vec<String>,
    created_at: Time,
    updated_at: Time,
}

impl Company {
    /// Reads a row of [`COMPANY_COLUMNS`] by column name.
    fn from_row(r: &crud::Named<'_, '_>) -> rusqlite::Result<Company> {
        Ok(Company {
            id: r.get("id")?,
            object: "company",
            account_id: r.get("account_id")?,
            name: r.get("name")?,
            slug: r.get("slug")?,
            industry: r.get("industry")?,
            country: r.get("country")?,
            timezone: r.get("timezone")?,
            plan_id: r.get("plan_id")?,
            allowed_landing_domains: super::landing_domains::parse(
                r.get::<Option<String>>("allowed_landing_domains")?
                    .as_deref(),
            ),
            created_at: Time(r.get("created_at")?),
            updated_at: Time(r.get("updated_at")?),
        })
    }
}

impl crate::http::response::Listed for Company {
    fn list_key(&self) -> &str {
        &self.id
    }
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
    let like = super::search::pattern(ctx)?.unwrap_or(rusqlite::types::Value::Null);
    let sql = format!(
        "SELECT {COMPANY_COLUMNS} FROM companies WHERE id IN ({}) AND id < ?1
           AND (?3 IS NULL OR name LIKE ?3 ESCAPE '\\') ORDER BY id DESC LIMIT ?2",
        placeholders(4, companies.len())
    );
    let conn = ctx.app.db.conn()?;
    let bound = page.bound().to_string();
    let fetch = page.fetch();
    let mut args: Vec<&dyn rusqlite::ToSql> = vec![&bound, &fetch, &like];
    for c in &companies {
        args.push(c);
    }
    let rows = crud::query_all(&conn, &sql, args.as_slice(), Company::from_row)?;
    Ok(Response::page(rows, &page))
}

/// The company in the path, visible to the caller; a malformed or invisible id is 404.
fn visible_company(ctx: &Ctx<'_>) -> Result<CompanyId, ApiError> {
    let id: CompanyId = ctx.path()?;
    ctx.authorize_company(&id, "company", &id)?;
    Ok(id)
}

fn get(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = visible_company(ctx)?;
    let conn = ctx.app.db.conn()?;
    let company = crud::load(
        &conn,
        &format!("SELECT {COMPANY_COLUMNS} FROM companies WHERE id = ?1"),
        &id,
        Company::from_row,
    )?;
    Ok(Response::ok(&company))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CompanyUpdate {
    allowed_landing_domains: Vec<String>,
}

fn update(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = visible_company(ctx)?;
    let input: CompanyUpdate = ctx.json()?;
    let mut errors = Errors::new();
    if input.allowed_landing_domains.len() > super::landing_domains::MAX_DOMAINS {
        errors.push(
            "/allowed_landing_domains",
            "too_many",
            format!("At most {} domains.", super::landing_domains::MAX_DOMAINS),
        );
    }
    for (i, d) in input.allowed_landing_domains.iter().enumerate() {
        if !super::landing_domains::is_domain(d) {
            errors.push(
                &format!("/allowed_landing_domains/{i}"),
                "invalid_domain",
                "Must be a lower-case domain name such as `shop.example` (no scheme, port or path).",
            );
        }
    }
    errors.finish()?;
    let mut domains = input.allowed_landing_domains;
    domains.sort();
    domains.dedup();
    let stored = serde_json::to_string(&domains).map_err(|e| ApiError::Internal(e.to_string()))?;
    let now = crate::time::now();
    ctx.app.db.write(|tx| {
        tx.prepare_cached(
            "UPDATE companies SET allowed_landing_domains = ?2, updated_at = ?3 WHERE id = ?1",
        )?
        .execute(rusqlite::params![id, stored, now])?;
        let company = crud::load(
            tx,
            &format!("SELECT {COMPANY_COLUMNS} FROM companies WHERE id = ?1"),
            &id,
            Company::from_row,
        )?;
        Ok(Response::ok(&company))
    })
}

/// A company's branding as the API returns it. Field order is the order of the JSON members.
#[derive(Serialize)]
struct Branding {
    object: &'static str,
    company_id: String,
    colors: Colors,
    fonts: Fonts,
    corner_radius_px: i64,
    tagline: Option<String>,
    updated_at: Time,
    logos: Vec<Logo>,
    /// The ETag's version; not a member of the body.
    #[serde(skip)]
    version: i64,
}

#[derive(Serialize)]
struct Colors {
    primary: String,
    secondary: String,
    accent: String,
    background: String,
    text: String,
}

#[derive(Serialize)]
struct Fonts {
    heading: String,
    body: String,
}

#[derive(Serialize)]
struct Logo {
    id: String,
    variant: String,
    url: String,
    format: String,
    width: i64,
    height: i64,
}

/// The branding of a company (which has one exactly when it exists); missing is 404.
/// The companies area's event payloads ([`crate::routes::payloads`]): the branding as `GET
/// /companies/{id}/branding` shows it.
pub fn payloads() -> Vec<crate::routes::payloads::Payload> {
    vec![crate::routes::payloads::Payload::new(
        "branding.updated",
        "A company's brand tokens changed: the branding.",
        Kind::Company,
        "branding",
        crate::routes::payloads::schema_ref("Branding"),
        |s| {
            let id = CompanyId::parse(s.id).ok_or_else(|| ApiError::not_found("company", s.id))?;
            crate::routes::payloads::to_data(&load_branding(s.conn, &id)?)
        },
    )]
}

fn load_branding(conn: &Connection, company_id: &CompanyId) -> Result<Branding, ApiError> {
    let mut branding = crud::load(
        conn,
        "SELECT primary_color, secondary_color, accent_color, background_color, text_color,
                heading_font, body_font, corner_radius_px, tagline, updated_at, version
         FROM brandings WHERE company_id = ?1",
        company_id,
        |r| {
            Ok(Branding {
                object: "branding",
                company_id: company_id.to_string(),
                colors: Colors {
                    primary: r.get("primary_color")?,
                    secondary: r.get("secondary_color")?,
                    accent: r.get("accent_color")?,
                    background: r.get("background_color")?,
                    text: r.get("text_color")?,
                },
                fonts: Fonts {
                    heading: r.get("heading_font")?,
                    body: r.get("body_font")?,
                },
                corner_radius_px: r.get("corner_radius_px")?,
                tagline: r.get("tagline")?,
                updated_at: Time(r.get("updated_at")?),
                logos: Vec::new(),
                version: r.get("version")?,
            })
        },
    )?;
    branding.logos = conn
        .prepare_cached(
            "SELECT id, variant, url, format, width, height FROM brand_logos WHERE company_id = ?1 ORDER BY id",
        )?
        .query_map([company_id], |r| {
            Ok(Logo {
                id: r.get("id")?,
                variant: r.get("variant")?,
                url: r.get("url")?,
                format: r.get("format")?,
                width: r.get("width")?,
                height: r.get("height")?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(branding)
}

fn get_branding(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = visible_company(ctx)?;
    let conn = ctx.app.db.conn()?;
    let branding = load_branding(&conn, &id)?;
    Ok(Response::ok(&branding).with_etag(branding.version))
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
    let id = visible_company(ctx)?;
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
        let branding = load_branding(tx, &id)?;
        crud::record(tx, &id, "branding.updated", "branding", &id, &branding)?;
        Ok(Response::ok(&branding).with_etag(branding.version))
    })
}
