//! API clients: one integration each, of an account, optionally bound to one of its companies.

use crate::auth::reach::{may_manage, Credential, Manager};
use crate::auth::scopes::Scopes;
use crate::db::{Scoped, WriteIntent};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{self, ApiClientId, Kind, TypedId};
use crate::routes::crud::{self, Columns, Named, Time};
use crate::validate::{Errors, Text};
use rusqlite::OptionalExtension;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An integration of the account; its keys are sent with its id in `X-Service-Client-Id`.
// Field order is the order of the JSON members.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ApiClient {
    #[schemars(transform = Kind::ApiClient)]
    pub id: String,
    #[schemars(extend("const" = "api_client"))]
    object: &'static str,
    pub account_id: String,
    pub name: String,
    pub description: String,
    /// The company this client is bound to: its keys are all scoped to it.
    #[serde(rename = "companyScope")]
    pub company_scope: Option<String>,
    pub created_at: Time,
}

impl ApiClient {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<ApiClient> {
        Ok(ApiClient {
            id: r.get("id")?,
            object: "api_client",
            account_id: r.get("account_id")?,
            name: r.get("name")?,
            description: r.get("description")?,
            company_scope: r.get("company_id")?,
            created_at: Time(r.get("created_at")?),
        })
    }
}

impl crate::http::response::Listed for ApiClient {
    fn list_key(&self) -> &str {
        &self.id
    }
}

const CLIENT_COLUMNS: &str = "id, account_id, name, description, created_at, company_id";

/// A client, if it exists and `m` reaches it (an account-wide admin: every client of its account; a
/// company-scoped one: the clients bound to its company).
pub(super) fn load_client(
    conn: &rusqlite::Connection,
    m: Option<&Manager<'_>>,
    id: &str,
) -> Result<ApiClient, ApiError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {CLIENT_COLUMNS} FROM api_clients WHERE id = ?1"
    ))?;
    let columns = Columns::of(&stmt);
    let row = stmt
        .query_row([id], |r| ApiClient::from_row(&Named::new(r, &columns)))
        .optional()?;
    let no_scopes = Scopes::default();
    match row {
        Some(client)
            if may_manage(
                m,
                &Credential {
                    account: &client.account_id,
                    scopes: &no_scopes,
                    company: client.company_scope.as_deref(),
                },
            ) =>
        {
            Ok(client)
        }
        _ => Err(ApiError::not_found("API client", id)),
    }
}

/// Lists the clients `m` reaches (the CLI: of one account or of all).
pub fn list_clients_db(
    db: Scoped<'_>,
    m: Option<&Manager<'_>>,
    account: Option<&str>,
    before: &str,
    fetch: i64,
) -> Result<Vec<ApiClient>, ApiError> {
    let account = m.map(|m| m.account).or(account);
    let company = m.and_then(|m| m.company);
    let conn = db.conn()?;
    crud::query_all(
        &conn,
        &format!(
            "SELECT {CLIENT_COLUMNS} FROM api_clients
             WHERE (?1 IS NULL OR account_id = ?1) AND (?2 IS NULL OR company_id = ?2) AND id < ?3
             ORDER BY id DESC LIMIT ?4"
        ),
        rusqlite::params![account, company, before, fetch],
        ApiClient::from_row,
    )
}

/// Creates a client in `account`, bound to `company` if given. A company-scoped manager must bind
/// it to its own company.
pub fn create_client(
    db: Scoped<'_>,
    intent: &WriteIntent,
    m: Option<&Manager<'_>>,
    account: &str,
    name: &str,
    description: &str,
    company: Option<&str>,
) -> Result<ApiClient, ApiError> {
    let mut errors = Errors::new();
    NAME.check(&mut errors, "/name", name);
    if !description.is_empty() {
        DESCRIPTION.check(&mut errors, "/description", description);
    }
    errors.finish()?;
    check_company_reach(m, company)?;
    let id = ids::new_id(db.clock(), db.seeded(), Kind::ApiClient);
    db.write(intent, |tx| {
        let exists: bool = tx.query_row(
            "SELECT count(*) > 0 FROM accounts WHERE id = ?1",
            [account],
            |r| r.get(0),
        )?;
        if !exists {
            return Err(ApiError::not_found("account", account));
        }
        if let Some(c) = company {
            check_company_of_account(tx, account, c)?;
        }
        tx.execute(
            "INSERT INTO api_clients (id, account_id, name, description, created_at, company_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            rusqlite::params![
                id,
                account,
                name.trim(),
                description.trim(),
                tx.now(),
                company
            ],
        )?;
        load_client(tx, None, &id)
    })
}

/// A company-scoped manager must name its own company in what it creates (422 when it names none,
/// 404 when it names another).
pub(super) fn check_company_reach(
    m: Option<&Manager<'_>>,
    company: Option<&str>,
) -> Result<(), ApiError> {
    match (m.and_then(|m| m.company), company) {
        (Some(_), None) => Err(ApiError::invalid(
            "/companyScope",
            "required",
            "A company-scoped admin must give companyScope (its own company): it cannot create a credential wider than itself.",
        )),
        (Some(mine), Some(c)) if mine != c => Err(ApiError::not_found("company", c)),
        _ => Ok(()),
    }
}

pub(super) fn check_company_of_account(
    tx: &rusqlite::Connection,
    account: &str,
    company: &str,
) -> Result<(), ApiError> {
    let owner: Option<String> = tx
        .query_row(
            "SELECT account_id FROM companies WHERE id = ?1",
            [company],
            |r| r.get(0),
        )
        .optional()?;
    if owner.as_deref() == Some(account) {
        Ok(())
    } else {
        Err(ApiError::not_found("company", company))
    }
}

pub(super) fn list_clients(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let m = Manager::of(ctx.principal()?);
    let rows = list_clients_db(ctx.db, Some(&m), None, page.bound(), page.fetch())?;
    Ok(Response::page(rows, &page))
}

/// The name of a client or of a key.
pub(super) const NAME: Text = Text::new(1, 100);
const DESCRIPTION: Text = Text::new(0, 500);

/// An API client to create.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ApiClientCreate")]
pub(super) struct ClientCreate {
    #[schemars(transform = &NAME)]
    name: String,
    #[serde(default)]
    #[schemars(transform = &DESCRIPTION)]
    description: String,
    #[serde(default, rename = "companyScope")]
    #[schemars(transform = Kind::Company, transform = crate::jsonschema::or_null)]
    company_scope: Option<String>,
}

pub(super) fn create_client_route(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let input: ClientCreate = ctx.json()?;
    check_company_id(input.company_scope.as_deref())?;
    let p = ctx.principal()?;
    let m = Manager::of(p);
    Ok(Response::created(&create_client(
        ctx.db,
        ctx.intent,
        Some(&m),
        &p.account_id,
        &input.name,
        &input.description,
        input.company_scope.as_deref(),
    )?))
}

pub(super) fn get_client(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: ApiClientId = ctx.path()?;
    let m = Manager::of(ctx.principal()?);
    let conn = ctx.conn()?;
    Ok(Response::ok(&load_client(&conn, Some(&m), id.as_str())?))
}

/// A `companyScope` in a body must be a company id.
pub(super) fn check_company_id(company: Option<&str>) -> Result<(), ApiError> {
    match company {
        Some(c) if !ids::is_valid(Kind::Company, c) => Err(ApiError::invalid(
            "/companyScope",
            "invalid_id",
            "Must be a company id (`cmp_…`).",
        )),
        _ => Ok(()),
    }
}
