//! Companies and their branding (brand tokens and logos).

use super::crud::{self, Time};
use crate::auth::{Action, Area, Level};
use crate::http::response::PageWriter;
use crate::http::router::{Route, Tool};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{CompanyId, Kind};
use crate::opening_hours::Hours;
use crate::validate::{Errors, OneOf, Text};
use rusqlite::{Connection, OptionalExtension};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

const READ: Action = Action::Use(Area::Companies, Level::Read);
const WRITE: Action = Action::Use(Area::Companies, Level::Write);
/// Who may redirect a QR code (issue 31 item 5): the allow-list of landing domains decides where
/// the sandbox's public short links send people, so changing it is an `admin` act, not a write.
const SET_LANDING_DOMAINS: Action = Action::Admin;

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/companies", "listCompanies", READ, list)
            .tool(Tool::read(
                "list_companies",
                "List companies",
                &[],
                "The companies the key can see, with the ids the other tools take.",
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
                "Get one company: name, slug, industry, country, timezone, opening hours (and whether its stores are open now) and plan.",
            ))
            .tag("companies")
            .summary("Get one company.")
            .describe("One company by id, with `store`: whether its stores are open at the sandbox clock's now by its `opening_hours`, and when they next open or close. A company outside the credential's reach is 404, exactly like a missing id.")
            .ok("Company"),
        Route::patch("/companies/{id}", "updateCompany", SET_LANDING_DOMAINS, update)
            .tag("companies")
            .summary("Set a company's allowed landing domains (where its promotions and QR codes may send people) or its opening hours.")
            .describe("Sets `opening_hours` (the week its stores are open, local time in its `timezone`; its screens play only then, from now on; 422 naming `/opening_hours` for a day named twice or not a weekday, or a time that is not `HH:MM` or closes before it opens), `allowed_landing_domains`, or both; at least one. `allowed_landing_domains`: the hosts a promotion's `landing_url` and a QR code's `target_url` may point to (a host matches a domain it equals or is under). Needs the `admin` scope: the list decides where the public short links `/q/{code}` send people. An empty list allows any public http(s) host. At most 20 lower-case domains; a loopback, private, link-local or otherwise non-public address or a name of one (`localhost`, a single label, `.local`, `.internal`, `.lan`, a metadata name, `*.nip.io`...) is refused (422 `domain_not_public`), and so is a public suffix (`com`, `co.uk`, `github.io`: 422 `public_suffix`). Existing promotions and codes are kept as they are; new ones and changed landing pages are checked (422 `landing_domain_not_allowed`, or `landing_host_not_public` for a host that is not public whatever the list).")
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
            "A company's look: logos and brand tokens (colours, fonts, corner radius, tagline).",
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
    use crate::jsonschema::{named_body, named_response};
    vec![
        named_response::<Company>(),
        named_response::<Branding>(),
        named_body::<CompanyUpdate>(),
        named_body::<BrandingUpdate>(),
    ]
}

/// A brand colour: `#RRGGBB` (what `Errors::hex_color` accepts).
const COLOR_PATTERN: &str = "^#[0-9A-Fa-f]{6}$";
const FONT: Text = Text::new(1, 64);
const TAGLINE: Text = Text::new(0, 140);
const MAX_CORNER_RADIUS: i64 = 64;
const LOGO_VARIANT: OneOf = OneOf(&["primary", "dark", "icon"]);

const COMPANY_COLUMNS: &str =
    "id, account_id, name, slug, industry, country, timezone, plan_id, allowed_landing_domains,
     created_at, updated_at, opening_hours";

/// A tenant of the account. Devices, ads, media, promotions, tokens, invoices and webhooks each
/// belong to one company.
// Field order is the order of the JSON members.
#[derive(Serialize, JsonSchema)]
pub struct Company {
    #[schemars(transform = Kind::Company)]
    id: String,
    #[schemars(extend("const" = "company"))]
    object: &'static str,
    account_id: String,
    name: String,
    slug: String,
    industry: String,
    country: String,
    timezone: String,
    plan_id: String,
    /// Hosts the company's landing pages and QR targets may use (a host matches a domain it
    /// equals or is under); empty: any http(s) URL.
    allowed_landing_domains: Vec<String>,
    /// When the company's stores are open, local time in its `timezone`: one entry per open day
    /// (a day not listed is closed). Its screens play only then; outside these hours they stay
    /// on and heartbeat, playing nothing. Every day `00:00`-`24:00`: around the clock.
    opening_hours: Vec<crate::opening_hours::OpenDay>,
    created_at: Time,
    updated_at: Time,
    /// Whether the company's stores are open now (the sandbox clock's now), by its
    /// `opening_hours`, and when that next changes. Read-only: derived, never set.
    #[schemars(extend("readOnly" = true))]
    store: Store,
    // The hours `store` is read from at the request's now; not a member of the body.
    #[serde(skip)]
    hours: Hours,
}

/// Whether a company's stores are open at an instant, by its opening hours (the rule its screens
/// play by), and when that next changes: a store is closed at its `closes_at` and open at its
/// `opens_at`.
#[derive(Serialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[schemars(rename = "StoreStatus")]
pub struct Store {
    /// Whether the stores are open: the company's screens play only while they are.
    open: bool,
    /// While closed: when the stores next open (`null` while open, or when they do not open
    /// within a week).
    opens_at: Option<Time>,
    /// While open: when the stores next close (`null` while closed, or when they do not close
    /// within a week, as around the clock).
    closes_at: Option<Time>,
}

impl Store {
    /// The stores of `hours` at instant `t`: one search of the open spans from `t` on, to eight
    /// days after the end of `t`'s minute. Opening hours are whole minutes and summer time
    /// changes on the hour, so nothing of this changes within one UTC minute (which lets a kept
    /// row reuse it, [`CompanyJson::write`]).
    pub fn at(hours: &Hours, t: i64) -> Store {
        let horizon = (t.div_euclid(60) + 1) * 60 + 8 * 86_400;
        let first = hours.open_spans(t, horizon).into_iter().next();
        let open = hours.is_open(t);
        Store {
            open,
            opens_at: if open { None } else { first.map(|s| Time(s.0)) },
            closes_at: first
                .filter(|s| open && s.0 == t && s.1 < horizon)
                .map(|s| Time(s.1)),
        }
    }
}

impl Company {
    /// Reads a row of [`COMPANY_COLUMNS`] by column position, its stores as they are at `now`.
    fn from_row(r: &rusqlite::Row<'_>, now: i64) -> rusqlite::Result<Company> {
        let json: String = r.get(11)?;
        let timezone: String = r.get(6)?;
        let hours = Hours::read(&json, &timezone);
        Ok(Company {
            id: r.get(0)?,
            object: "company",
            account_id: r.get(1)?,
            name: r.get(2)?,
            slug: r.get(3)?,
            industry: r.get(4)?,
            country: r.get(5)?,
            timezone,
            plan_id: r.get(7)?,
            allowed_landing_domains: super::landing_domains::parse(
                r.get::<_, Option<String>>(8)?.as_deref(),
            ),
            created_at: Time(r.get(9)?),
            updated_at: Time(r.get(10)?),
            opening_hours: Hours::parse_days(&json),
            store: Store::at(&hours, now),
            hours,
        })
    }
}

/// A company's JSON as list pages keep it ([`crate::routes::rendered`]): its `Serialize`'s, with
/// the value of `store` (which depends on the clock) cut out ([`crate::json_write::cut_members`]),
/// and the hours that say it.
pub struct CompanyJson {
    /// `{"id":…,"store":` | `}`.
    json: Box<[u8]>,
    store_at: usize,
    hours: Hours,
    /// The `store` of the last minute it was asked for (UTC minutes since the epoch), as JSON: the
    /// same for every instant of that minute ([`Store::at`]).
    store: std::sync::Mutex<Option<(i64, Vec<u8>)>>,
}

impl CompanyJson {
    /// `None` only if the company's JSON had no `store`.
    fn of(company: &Company) -> Option<CompanyJson> {
        let json = serde_json::to_vec(company).ok()?;
        let (json, at) = crate::json_write::cut_members(&json, &["store"])?;
        Some(CompanyJson {
            json: json.into_boxed_slice(),
            store_at: at[0],
            hours: company.hours,
            store: std::sync::Mutex::new(None),
        })
    }

    fn len(&self) -> usize {
        self.json.len() + 80
    }

    /// The company's JSON at instant `now`, byte for byte its `Serialize` (a test holds the two
    /// equal).
    fn write(&self, out: &mut Vec<u8>, now: i64) -> Result<(), ApiError> {
        let minute = now.div_euclid(60);
        out.extend_from_slice(&self.json[..self.store_at]);
        // A poisoned lock only means another thread panicked holding it; the pair is whole.
        let mut kept = self.store.lock().unwrap_or_else(|e| e.into_inner());
        if !matches!(&*kept, Some((m, _)) if *m == minute) {
            let store = serde_json::to_vec(&Store::at(&self.hours, now))
                .map_err(|e| ApiError::Internal(format!("a store's JSON: {e}")))?;
            *kept = Some((minute, store));
        }
        if let Some((_, store)) = &*kept {
            out.extend_from_slice(store);
        }
        drop(kept);
        out.extend_from_slice(&self.json[self.store_at..]);
        Ok(())
    }
}

fn load_company(conn: &Connection, id: &str, now: i64) -> Result<Option<Company>, ApiError> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COMPANY_COLUMNS} FROM companies WHERE id = ?1"
        ))?
        .query_row([id], |r| Company::from_row(r, now))
        .optional()?)
}

/// The page's ids, by the index that fits the credential: an account-wide one reads its account's
/// companies by `(account_id, id)`, a company-scoped one its company by id. Only `q` reads the
/// rows themselves.
fn page_ids(
    conn: &Connection,
    principal: &crate::auth::Principal,
    page: &crate::http::ctx::PageRequest,
    like: Option<&rusqlite::types::Value>,
) -> Result<Vec<String>, ApiError> {
    let owner = match &principal.company_scope {
        None => principal.account_id.as_str(),
        Some(company) => company.as_str(),
    };
    let sql = page_ids_sql(principal.company_scope.is_some(), like.is_some());
    let mut stmt = conn.prepare_cached(&sql)?;
    let null = rusqlite::types::Value::Null;
    let ids = stmt
        .query_map(
            rusqlite::params![
                owner,
                page.bound(),
                page.fetch(),
                like.unwrap_or(&null),
                principal.account_id
            ],
            |r| r.get(0),
        )?
        .collect::<Result<Vec<String>, _>>()?;
    Ok(ids)
}

/// The query of [`page_ids`]: `?1` the account (or, company-scoped, the company), `?2` the keyset
/// bound, `?3` the rows to fetch, `?4` the `q` pattern, `?5` the account.
pub fn page_ids_sql(company_scoped: bool, search: bool) -> String {
    let owner = if company_scoped {
        "id = ?1"
    } else {
        "account_id = ?1"
    };
    let search = if search {
        " AND name LIKE ?4 ESCAPE '\\'"
    } else {
        ""
    };
    format!(
        "SELECT id FROM companies WHERE {owner} AND account_id = ?5 AND id < ?2{search}
         ORDER BY id DESC LIMIT ?3"
    )
}

fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let like = super::search::pattern(ctx)?;
    let generations = ctx.db.generations()?;
    let stamp = (generations.credentials, generations.restores);
    let now = ctx.now();
    let principal = ctx.principal()?;
    let conn = ctx.conn()?;
    let ids = page_ids(&conn, principal, &page, like.as_ref())?;
    let limit = (page.limit as usize).min(ids.len());
    let cache = ctx
        .app
        .extensions
        .get::<std::sync::Arc<super::rendered::Rendered<CompanyJson>>>()
        .ok_or_else(|| ApiError::Internal("the companies' rendered rows are not set up".into()))?;
    let rows = super::rendered::rows(cache, &ids[..limit], stamp, |id| {
        let company = load_company(&conn, id, now)?
            .ok_or_else(|| ApiError::Internal(format!("company {id} vanished within a read")))?;
        CompanyJson::of(&company)
            .ok_or_else(|| ApiError::Internal(format!("company {id}'s JSON has no store")))
    })?;
    let mut out = PageWriter::with_capacity(rows.iter().map(|r| r.len() + 1).sum());
    for row in &rows {
        row.write(out.row(), now)?;
    }
    let last = ids[..limit].last().map(String::as_str);
    Ok(Response::page_written(out.finish(
        ids.len() > limit,
        last,
        &page.tag,
    )))
}

/// The company in the path, visible to the caller; a malformed or invisible id is 404.
fn visible_company(ctx: &Ctx<'_>) -> Result<CompanyId, ApiError> {
    let id: CompanyId = ctx.path()?;
    ctx.authorize_company(&id, "company", &id)?;
    Ok(id)
}

fn get(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = visible_company(ctx)?;
    let now = ctx.now();
    let conn = ctx.conn()?;
    let company = crud::load(
        &conn,
        &format!("SELECT {COMPANY_COLUMNS} FROM companies WHERE id = ?1"),
        &id,
        |r| Company::from_row(r.row(), now),
    )?;
    Ok(Response::ok(&company))
}

/// What to change of a company: its landing domains, its opening hours, or both (at least one).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("minProperties" = 1))]
struct CompanyUpdate {
    /// The domains the company's landing pages and QR targets may use (a host matches a domain it
    /// equals or is under); `[]` allows any http(s) URL. Replaces the whole list.
    #[serde(default, deserialize_with = "super::optional::present")]
    #[schemars(with = "Vec<String>", length(max = super::landing_domains::MAX_DOMAINS), inner(length(min = 1, max = 253), regex(pattern = super::landing_domains::DOMAIN_PATTERN)))]
    allowed_landing_domains: Option<Vec<String>>,
    /// When the company's stores are open, local time in its `timezone`: one entry per open day,
    /// each day at most once, `opens` before `closes` (`24:00`: midnight); a day not listed is
    /// closed, `[]` closes every day. Replaces the whole week; its screens play by it from now on.
    #[serde(default, deserialize_with = "super::optional::present")]
    #[schemars(with = "crate::opening_hours::OpeningHours")]
    opening_hours: Option<crate::opening_hours::OpeningHours>,
}

fn update(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = visible_company(ctx)?;
    let input: CompanyUpdate = ctx.json()?;
    if input.allowed_landing_domains.is_none() && input.opening_hours.is_none() {
        let mut errors = Errors::new();
        errors.push(
            "",
            "empty",
            "Send `allowed_landing_domains`, `opening_hours` or both.",
        );
        errors.finish()?;
    }
    let domains = match input.allowed_landing_domains {
        Some(domains) => Some(landing_domains(domains)?),
        None => None,
    };
    let hours = input
        .opening_hours
        .map(|h| serde_json::to_string(&h.days()))
        .transpose()
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let now = ctx.now();
    ctx.db.write(ctx.intent, |tx| {
        if let Some(domains) = &domains {
            tx.prepare_cached(
                "UPDATE companies SET allowed_landing_domains = ?2, updated_at = ?3 WHERE id = ?1",
            )?
            .execute(rusqlite::params![id, domains, now])?;
        }
        if let Some(hours) = &hours {
            tx.prepare_cached(
                "UPDATE companies SET opening_hours = ?2, updated_at = ?3 WHERE id = ?1",
            )?
            .execute(rusqlite::params![id, hours, now])?;
        }
        let company = crud::load(
            tx,
            &format!("SELECT {COMPANY_COLUMNS} FROM companies WHERE id = ?1"),
            &id,
            |r| Company::from_row(r.row(), now),
        )?;
        Ok(Response::ok(&company))
    })
}

/// A list of landing domains checked and kept sorted and once each, as stored (JSON).
fn landing_domains(input: Vec<String>) -> Result<String, ApiError> {
    let mut errors = Errors::new();
    if input.len() > super::landing_domains::MAX_DOMAINS {
        errors.push(
            "/allowed_landing_domains",
            "too_many",
            format!("At most {} domains.", super::landing_domains::MAX_DOMAINS),
        );
    }
    for (i, d) in input.iter().enumerate() {
        let field = format!("/allowed_landing_domains/{i}");
        if !super::landing_domains::is_domain(d) {
            errors.push(
                &field,
                "invalid_domain",
                "Must be a lower-case domain name such as `shop.example` (no scheme, port or path).",
            );
        } else if !super::landing_domains::is_public_host(d) {
            errors.push(
                &field,
                "domain_not_public",
                super::landing_domains::NOT_PUBLIC,
            );
        } else if super::landing_domains::is_public_suffix(d) {
            errors.push(
                &field,
                "public_suffix",
                super::landing_domains::PUBLIC_SUFFIX,
            );
        }
    }
    errors.finish()?;
    let mut domains = input;
    domains.sort();
    domains.dedup();
    serde_json::to_string(&domains).map_err(|e| ApiError::Internal(e.to_string()))
}

/// How a company's screens look: brand colours, fonts, corner radius, tagline and logos.
// Field order is the order of the JSON members.
#[derive(Serialize, JsonSchema)]
struct Branding {
    #[schemars(extend("const" = "branding"))]
    object: &'static str,
    company_id: String,
    colors: Colors,
    fonts: Fonts,
    #[schemars(range(min = 0, max = MAX_CORNER_RADIUS))]
    corner_radius_px: i64,
    tagline: Option<String>,
    updated_at: Time,
    logos: Vec<Logo>,
    // The ETag's version; not a member of the body.
    #[serde(skip)]
    version: i64,
}

#[derive(Serialize, JsonSchema)]
struct Colors {
    #[schemars(regex(pattern = COLOR_PATTERN))]
    primary: String,
    #[schemars(regex(pattern = COLOR_PATTERN))]
    secondary: String,
    #[schemars(regex(pattern = COLOR_PATTERN))]
    accent: String,
    #[schemars(regex(pattern = COLOR_PATTERN))]
    background: String,
    #[schemars(regex(pattern = COLOR_PATTERN))]
    text: String,
}

#[derive(Serialize, JsonSchema)]
struct Fonts {
    heading: String,
    body: String,
}

#[derive(Serialize, JsonSchema)]
struct Logo {
    id: String,
    #[schemars(transform = &LOGO_VARIANT)]
    variant: String,
    #[schemars(extend("format" = "uri"))]
    url: String,
    format: String,
    width: i64,
    height: i64,
}

/// The subject of the events about a company's branding (`resource_type` `branding`).
pub const BRANDING: crate::routes::payload::SubjectKind = crate::routes::payload::SubjectKind {
    kind: Kind::Company,
    resource: "branding",
    table: "companies o",
    company: "o.id",
};

/// The branding of a company (which has one exactly when it exists); missing is 404.
/// The companies area's event payloads ([`crate::routes::payloads`]): the branding as `GET
/// /companies/{id}/branding` shows it.
pub fn payloads() -> Vec<crate::routes::payload::Payload> {
    vec![crate::routes::payload::Payload::new(
        "branding.updated",
        "A company's brand tokens changed: the branding.",
        &BRANDING,
        crate::routes::payload::schema_ref("Branding"),
        |s| {
            let id = CompanyId::parse(s.id).ok_or_else(|| ApiError::not_found("company", s.id))?;
            crate::routes::payload::to_data(&load_branding(s.conn, &id)?)
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
    let conn = ctx.conn()?;
    let branding = load_branding(&conn, &id)?;
    Ok(Response::ok(&branding).with_etag(branding.version))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("minProperties" = 1))]
struct ColorsUpdate {
    #[serde(default, deserialize_with = "crate::routes::optional::present")]
    #[schemars(with = "String", regex(pattern = COLOR_PATTERN))]
    primary: Option<String>,
    #[serde(default, deserialize_with = "crate::routes::optional::present")]
    #[schemars(with = "String", regex(pattern = COLOR_PATTERN))]
    secondary: Option<String>,
    #[serde(default, deserialize_with = "crate::routes::optional::present")]
    #[schemars(with = "String", regex(pattern = COLOR_PATTERN))]
    accent: Option<String>,
    #[serde(default, deserialize_with = "crate::routes::optional::present")]
    #[schemars(with = "String", regex(pattern = COLOR_PATTERN))]
    background: Option<String>,
    #[serde(default, deserialize_with = "crate::routes::optional::present")]
    #[schemars(with = "String", regex(pattern = COLOR_PATTERN))]
    text: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("minProperties" = 1))]
struct FontsUpdate {
    #[serde(default, deserialize_with = "crate::routes::optional::present")]
    #[schemars(transform = &FONT)]
    heading: Option<String>,
    #[serde(default, deserialize_with = "crate::routes::optional::present")]
    #[schemars(transform = &FONT)]
    body: Option<String>,
}

/// Brand tokens to change; absent members keep their value.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("minProperties" = 1))]
struct BrandingUpdate {
    #[serde(default, deserialize_with = "crate::routes::optional::present")]
    #[schemars(with = "ColorsUpdate")]
    colors: Option<ColorsUpdate>,
    #[serde(default, deserialize_with = "crate::routes::optional::present")]
    #[schemars(with = "FontsUpdate")]
    fonts: Option<FontsUpdate>,
    #[serde(default, deserialize_with = "crate::routes::optional::present")]
    #[schemars(with = "i64", range(min = 0, max = MAX_CORNER_RADIUS))]
    corner_radius_px: Option<i64>,
    #[serde(default, deserialize_with = "crate::routes::optional::nullable")]
    #[schemars(with = "Option<String>", transform = &TAGLINE, transform = crate::jsonschema::or_null)]
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
                FONT.check(&mut errors, field, v);
                sets.push((column, v.trim().to_string().into()));
            }
        }
        if sets.len() == before {
            errors.push("/fonts", "empty", "Give at least one font.");
        }
    }
    if let Some(r) = input.corner_radius_px {
        errors.range("/corner_radius_px", r, 0, MAX_CORNER_RADIUS);
        sets.push(("corner_radius_px", r.into()));
    }
    if let Some(t) = &input.tagline {
        match t {
            Some(t) => {
                TAGLINE.check(&mut errors, "/tagline", t);
                sets.push(("tagline", t.trim().to_string().into()));
            }
            None => sets.push(("tagline", rusqlite::types::Value::Null)),
        }
    }
    if sets.is_empty() && input.colors.is_none() && input.fonts.is_none() {
        errors.push("", "empty", "Give at least one field to change.");
    }
    errors.finish()?;

    let now = ctx.now();
    ctx.db.write(ctx.intent, |tx| {
        let version: i64 = tx
            .query_row(
                "SELECT version FROM brandings WHERE company_id = ?1",
                [&id],
                |r| r.get(0),
            )
            .optional()?
            .ok_or_else(|| ApiError::not_found("company", &id))?;
        ctx.check_if_match(version)?;
        crate::routes::queries::update_versioned(tx, "brandings", "company_id", &id, now, &sets)?;
        let branding = load_branding(tx, &id)?;
        crate::events::record(tx, &*id, "branding.updated", "branding", &id, &branding)?;
        Ok(Response::ok(&branding).with_etag(branding.version))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rendered_company_is_its_serialized_json() {
        const SHOP: &str = r#"[{"day":"monday","opens":"08:00","closes":"21:00"}]"#;
        for (text, domains, t, hours) in [
            (
                "Northwind",
                vec![],
                1_700_000_000,
                crate::opening_hours::AROUND_THE_CLOCK,
            ),
            (
                "Café \"Ü\" \\ 北京\n\u{1}",
                vec!["a.example".to_string(), "b\"c".to_string()],
                -62_167_219_201,
                SHOP,
            ),
        ] {
            let hours = Hours::read(hours, "Europe/Amsterdam");
            let mut c = Company {
                id: "cmp_0m5d4ruo5fepbn59k9ts".into(),
                object: "company",
                account_id: "acct_0m5d4ruo0fb72isqzrb5".into(),
                name: text.into(),
                slug: text.into(),
                industry: text.into(),
                country: "NL".into(),
                timezone: text.into(),
                plan_id: "plan_0m5d4ruo3lgv7fuynar1".into(),
                allowed_landing_domains: domains,
                opening_hours: Hours::parse_days(crate::opening_hours::AROUND_THE_CLOCK),
                created_at: Time(t),
                updated_at: Time(253_402_300_800),
                store: Store::at(&hours, 0),
                hours,
            };
            let kept = CompanyJson::of(&c).unwrap();
            // Open and closed, with and without the instants (Monday 7 December 2026, 12:00 and
            // 21:00 UTC).
            for now in [0, 1_796_644_800, 1_796_677_200] {
                c.store = Store::at(&hours, now);
                let mut out = Vec::new();
                kept.write(&mut out, now).unwrap();
                assert_eq!(
                    String::from_utf8(out).unwrap(),
                    serde_json::to_string(&c).unwrap()
                );
            }
        }
    }

    #[test]
    fn a_stores_status_holds_for_its_whole_minute_and_is_the_rule_of_its_hours() {
        let hours = Hours::read(
            r#"[{"day":"monday","opens":"08:30","closes":"19:00"},
                {"day":"saturday","opens":"09:00","closes":"24:00"},
                {"day":"sunday","opens":"00:00","closes":"03:15"}]"#,
            "Europe/Amsterdam",
        );
        // Every 5 minutes of a fortnight around each summer time change of 2026 (29 March,
        // 25 October), and the seconds within each minute.
        for start in [1_774_224_000_i64, 1_792_368_000] {
            for m in (start..start + 14 * 86_400).step_by(300) {
                let store = Store::at(&hours, m);
                for s in [1, 30, 59] {
                    assert_eq!(Store::at(&hours, m + s), store, "{m} + {s}");
                }
                assert_eq!(store.open, hours.is_open(m), "{m}");
                let opens = if store.open { None } else { hours.opens_at(m) };
                assert_eq!(store.opens_at.map(|t| t.0), opens, "{m}");
                assert_eq!(store.closes_at.map(|t| t.0), hours.closes_at(m), "{m}");
            }
        }
    }
}
