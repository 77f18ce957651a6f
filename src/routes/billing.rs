//! Billing: invoices (with their charges as lines) and the recent charges of visible companies.
//! Read-only here; charges are added by the token ledger when a pack is bought.

use crate::auth::{Action, Area, Level};
use crate::http::router::{param, Route};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{self, Kind};
use crate::routes::fetch_page;
use crate::time::rfc3339;
use rusqlite::{Connection, OptionalExtension, Row};
use serde_json::{json, Value};

const READ: Action = Action::Use(Area::Billing, Level::Read);

const INVOICE_STATUSES: &[&str] = &["draft", "open", "paid", "void"];
pub const CHARGE_KINDS: &[&str] = &["subscription", "token_pack", "overage", "credit"];

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/invoices", "listInvoices", READ, list_invoices)
            .tag("billing")
            .summary("List invoices of the visible companies, newest first, with their totals.")
            .paged_by(Kind::Invoice)
            .query(&[
                param(
                    "company_id",
                    r#"{"type":"string","pattern":"^cmp_[0-9A-Za-z]{1,64}$"}"#,
                    "Only invoices of this company.",
                ),
                param(
                    "status",
                    r#"{"type":"string","enum":["draft","open","paid","void"]}"#,
                    "Only invoices in this status.",
                ),
            ])
            .ok("InvoiceList"),
        Route::get("/invoices/{id}", "getInvoice", READ, get_invoice)
            .tag("billing")
            .summary("Get one invoice with its lines (charges) and total.")
            .ok("InvoiceWithLines"),
        Route::get("/charges", "listCharges", READ, list_charges)
            .tag("billing")
            .summary("List recent charges of the visible companies, newest first.")
            .paged_by(Kind::Charge)
            .query(&[
                param(
                    "company_id",
                    r#"{"type":"string","pattern":"^cmp_[0-9A-Za-z]{1,64}$"}"#,
                    "Only charges of this company.",
                ),
                param(
                    "invoice_id",
                    r#"{"type":"string","pattern":"^inv_[0-9A-Za-z]{1,64}$"}"#,
                    "Only charges on this invoice.",
                ),
            ])
            .ok("ChargeList"),
    ]
}

fn invoice_properties() -> Value {
    let ts = json!({"type":"string","format":"date-time"});
    json!({"id":{"type":"string","pattern":"^inv_"},"object":{"const":"invoice"},
        "company_id":{"type":"string"},"number":{"type":"string"},
        "status":{"type":"string","enum":INVOICE_STATUSES},"currency":{"type":"string"},
        "period_start":ts,"period_end":ts,"issued_at":ts,"due_at":ts,
        "paid_at":{"type":["string","null"],"format":"date-time"},
        "total_cents":{"type":"integer"},"created_at":ts})
}

const INVOICE_REQUIRED: [&str; 13] = [
    "id",
    "object",
    "company_id",
    "number",
    "status",
    "currency",
    "period_start",
    "period_end",
    "issued_at",
    "due_at",
    "paid_at",
    "total_cents",
    "created_at",
];

pub fn schemas() -> Vec<(&'static str, Value)> {
    let mut with_lines = invoice_properties();
    with_lines["lines"] = json!({"type":"array","items":{"$ref":"#/components/schemas/Charge"}});
    let mut with_lines_required: Vec<&str> = INVOICE_REQUIRED.to_vec();
    with_lines_required.push("lines");
    vec![
        (
            "Invoice",
            json!({"type":"object","additionalProperties":false,"required":INVOICE_REQUIRED,
                "properties":invoice_properties()}),
        ),
        (
            "InvoiceWithLines",
            json!({"type":"object","additionalProperties":false,"required":with_lines_required,
                "properties":with_lines}),
        ),
        (
            "Charge",
            json!({"type":"object","additionalProperties":false,
                "required":["id","object","company_id","invoice_id","kind","description","amount_cents","currency","created_at"],
                "properties":{"id":{"type":"string","pattern":"^ch_"},"object":{"const":"charge"},
                    "company_id":{"type":"string"},"invoice_id":{"type":"string"},
                    "kind":{"type":"string","enum":CHARGE_KINDS},"description":{"type":"string"},
                    "amount_cents":{"type":"integer"},"currency":{"type":"string"},
                    "created_at":{"type":"string","format":"date-time"}}}),
        ),
    ]
}

const INVOICE_SELECT: &str = "SELECT i.id, i.company_id, i.number, i.status, i.currency,
    i.period_start, i.period_end, i.issued_at, i.due_at, i.paid_at, i.created_at,
    (SELECT coalesce(sum(c.amount_cents), 0) FROM charges c WHERE c.invoice_id = i.id)
    FROM invoices i";

fn invoice_json(r: &Row<'_>) -> rusqlite::Result<Value> {
    Ok(json!({
        "id": r.get::<_, String>(0)?,
        "object": "invoice",
        "company_id": r.get::<_, String>(1)?,
        "number": r.get::<_, String>(2)?,
        "status": r.get::<_, String>(3)?,
        "currency": r.get::<_, String>(4)?,
        "period_start": rfc3339(r.get(5)?),
        "period_end": rfc3339(r.get(6)?),
        "issued_at": rfc3339(r.get(7)?),
        "due_at": rfc3339(r.get(8)?),
        "paid_at": r.get::<_, Option<i64>>(9)?.map(rfc3339),
        "total_cents": r.get::<_, i64>(11)?,
        "created_at": rfc3339(r.get(10)?),
    }))
}

const CHARGE_SELECT: &str = "SELECT c.id, c.company_id, c.invoice_id, c.kind, c.description,
    c.amount_cents, c.currency, c.created_at FROM charges c";

fn charge_json(r: &Row<'_>) -> rusqlite::Result<Value> {
    Ok(json!({
        "id": r.get::<_, String>(0)?,
        "object": "charge",
        "company_id": r.get::<_, String>(1)?,
        "invoice_id": r.get::<_, String>(2)?,
        "kind": r.get::<_, String>(3)?,
        "description": r.get::<_, String>(4)?,
        "amount_cents": r.get::<_, i64>(5)?,
        "currency": r.get::<_, String>(6)?,
        "created_at": rfc3339(r.get(7)?),
    }))
}

/// One charge by id (no authorization: the caller has already checked its company).
pub fn load_charge(conn: &Connection, id: &str) -> Result<Value, ApiError> {
    conn.prepare_cached(&format!("{CHARGE_SELECT} WHERE c.id = ?1"))?
        .query_row([id], charge_json)
        .optional()?
        .ok_or_else(|| ApiError::not_found("charge", id))
}

fn list_invoices(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let companies = ctx.list_companies()?;
    let mut filters: Vec<(&str, rusqlite::types::Value)> = Vec::new();
    if let Some(status) = ctx.query_enum("status", INVOICE_STATUSES)? {
        filters.push(("i.status = ?", status.into()));
    }
    let conn = ctx.app.db.conn()?;
    let rows = fetch_page(
        &conn,
        INVOICE_SELECT,
        "i.company_id",
        "i.id",
        &companies,
        &filters,
        &page,
        invoice_json,
    )?;
    Ok(Response::page(rows, &page))
}

fn get_invoice(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = ctx.param("id").to_string();
    if !ids::is_valid(Kind::Invoice, &id) {
        return Err(ApiError::not_found("invoice", &id));
    }
    let conn = ctx.app.db.conn()?;
    let mut invoice = conn
        .prepare_cached(&format!("{INVOICE_SELECT} WHERE i.id = ?1"))?
        .query_row([&id], invoice_json)
        .optional()?
        .ok_or_else(|| ApiError::not_found("invoice", &id))?;
    ctx.authorize_company(invoice["company_id"].as_str().unwrap_or(""), "invoice", &id)?;
    let lines = conn
        .prepare_cached(&format!(
            "{CHARGE_SELECT} WHERE c.invoice_id = ?1 ORDER BY c.id"
        ))?
        .query_map([&id], charge_json)?
        .collect::<Result<Vec<_>, _>>()?;
    invoice["lines"] = json!(lines);
    Ok(Response::ok(&invoice))
}

fn list_charges(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let companies = ctx.list_companies()?;
    let mut filters: Vec<(&str, rusqlite::types::Value)> = Vec::new();
    let conn = ctx.app.db.conn()?;
    if let Some(invoice) = ctx.query_id("invoice_id", Kind::Invoice)? {
        let owner: Option<String> = conn
            .prepare_cached("SELECT company_id FROM invoices WHERE id = ?1")?
            .query_row([&invoice], |r| r.get(0))
            .optional()?;
        let owner = owner.ok_or_else(|| ApiError::not_found("invoice", &invoice))?;
        ctx.authorize_company(&owner, "invoice", &invoice)?;
        filters.push(("c.invoice_id = ?", invoice.into()));
    }
    let rows = fetch_page(
        &conn,
        CHARGE_SELECT,
        "c.company_id",
        "c.id",
        &companies,
        &filters,
        &page,
        charge_json,
    )?;
    Ok(Response::page(rows, &page))
}
