//! API clients: one integration each, of an account, optionally bound to one of its companies.

use crate::auth::reach::{may_manage, Credential, Manager};
use crate::auth::scopes::Scopes;
use crate::db::Db;
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{self, Kind};
use crate::time::{now, rfc3339};
use crate::validate::Errors;
use rusqlite::{OptionalExtension, Row};
use serde::Deserialize;
use serde_json::{json, Value};

fn client_json(r: &Row<'_>) -> rusqlite::Result<Value> {
    Ok(json!({
        "id": r.get::<_, String>(0)?,
        "object": "api_client",
        "account_id": r.get::<_, String>(1)?,
        "name": r.get::<_, String>(2)?,
        "description": r.get::<_, String>(3)?,
        "companyScope": r.get::<_, Option<String>>(5)?,
        "created_at": rfc3339(r.get(4)?),
    }))
}

const CLIENT_COLUMNS: &str = "id, account_id, name, description, created_at, company_id";

/// A client, if it exists and `m` reaches it (an account-wide admin: every client of its account; a
/// company-scoped one: the clients bound to its company).
pub(super) fn load_client(
    conn: &rusqlite::Connection,
    m: Option<&Manager<'_>>,
    id: &str,
) -> Result<(Value, Option<String>), ApiError> {
    let row = conn
        .prepare_cached(&format!(
            "SELECT {CLIENT_COLUMNS} FROM api_clients WHERE id = ?1"
        ))?
        .query_row([id], |r| {
            Ok((
                client_json(r)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(5)?,
            ))
        })
        .optional()?;
    let no_scopes = Scopes::default();
    match row {
        Some((client, account, company))
            if may_manage(
                m,
                &Credential {
                    account: &account,
                    scopes: &no_scopes,
                    company: company.as_deref(),
                },
            ) =>
        {
            Ok((client, company))
        }
        _ => Err(ApiError::not_found("API client", id)),
    }
}

/// Lists the clients `m` reaches (the CLI: of one account or of all).
pub fn list_clients_db(
    db: &Db,
    m: Option<&Manager<'_>>,
    account: Option<&str>,
    before: &str,
    fetch: i64,
) -> Result<Vec<Value>, ApiError> {
    let account = m.map(|m| m.account).or(account);
    let company = m.and_then(|m| m.company);
    let conn = db.conn()?;
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {CLIENT_COLUMNS} FROM api_clients
         WHERE (?1 IS NULL OR account_id = ?1) AND (?2 IS NULL OR company_id = ?2) AND id < ?3
         ORDER BY id DESC LIMIT ?4"
    ))?;
    let rows = stmt.query_map(
        rusqlite::params![account, company, before, fetch],
        client_json,
    )?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Creates a client in `account`, bound to `company` if given. A company-scoped manager must bind
/// it to its own company.
pub fn create_client(
    db: &Db,
    m: Option<&Manager<'_>>,
    account: &str,
    name: &str,
    description: &str,
    company: Option<&str>,
) -> Result<Value, ApiError> {
    let mut errors = Errors::new();
    errors.text("/name", name, 1, 100);
    if !description.is_empty() {
        errors.text("/description", description, 0, 500);
    }
    errors.finish()?;
    check_company_reach(m, company)?;
    let id = ids::new_id(Kind::ApiClient);
    db.write(|tx| {
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
            rusqlite::params![id, account, name.trim(), description.trim(), now(), company],
        )?;
        Ok(tx.query_row(
            &format!("SELECT {CLIENT_COLUMNS} FROM api_clients WHERE id = ?1"),
            [&id],
            client_json,
        )?)
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
    let rows = list_clients_db(&ctx.app.db, Some(&m), None, page.bound(), page.fetch())?;
    Ok(Response::page(rows, &page))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientCreate {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default, rename = "companyScope")]
    company_scope: Option<String>,
}

pub(super) fn create_client_route(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let input: ClientCreate = ctx.json()?;
    check_company_id(input.company_scope.as_deref())?;
    let p = ctx.principal()?;
    let m = Manager::of(p);
    Ok(Response::created(&create_client(
        &ctx.app.db,
        Some(&m),
        &p.account_id,
        &input.name,
        &input.description,
        input.company_scope.as_deref(),
    )?))
}

pub(super) fn get_client(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = ctx.param("id").to_string();
    let m = Manager::of(ctx.principal()?);
    let conn = ctx.app.db.conn()?;
    Ok(Response::ok(&load_client(&conn, Some(&m), &id)?.0))
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
