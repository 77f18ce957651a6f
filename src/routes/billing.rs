//! Billing: invoices (with their charges as lines) and the recent charges of visible companies.
//! Read-only here; charges are added by the token ledger when a pack is bought.

use crate::auth::{Action, Area, Level};
use crate::http::router::{one_of_param, param, Route, Tool};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{ChargeId, InvoiceId, Kind};
use crate::routes::crud::{self, Time};
use crate::validate::OneOf;
use rusqlite::Connection;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

const READ: Action = Action::Use(Area::Billing, Level::Read);

/// `overdue`: an `open` invoice past its `due_at`, moved there by the timeline
/// ([`super::invoice_due`]).
pub const INVOICE_STATUSES: &[&str] = &["draft", "open", "paid", "void", "overdue"];
pub const CHARGE_KINDS: &[&str] = &["subscription", "token_pack", "overage", "credit"];

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/invoices", "listInvoices", READ, list_invoices)
            .tool(Tool::read(
                "list_invoices",
                "List invoices",
                &[],
                "Invoices of the visible companies: period, status, due date, totals.",
            ))
            .tag("billing")
            .summary("List invoices of the visible companies, newest first, with their totals.")
            .describe("The invoices of the visible companies, newest first, with their status and totals.")
            .paged_by(Kind::Invoice)
            .query(&[
                crate::routes::date_range::FROM,
                crate::routes::date_range::TO,
                param(
                    "company_id",
                    Kind::Company.schema(),
                    "Only invoices of this company.",
                ),
                one_of_param(
                    "status",
                    OneOf(INVOICE_STATUSES),
                    "Only invoices in this status.",
                ),
            ])
            .ok("InvoiceList"),
        Route::get("/invoices/{id}", "getInvoice", READ, get_invoice)
            .tool(Tool::read(
                "get_invoice",
                "Get invoice",
                &[("invoice_id", "The invoice id (`inv_…`), as returned by list_invoices.")],
                "Get one invoice with its period, status, due date and totals.",
            ))
            .tag("billing")
            .summary("Get one invoice with its lines (charges) and total.")
            .describe("One invoice with its lines (the charges) and total.")
            .ok("InvoiceWithLines"),
        Route::get("/charges", "listCharges", READ, list_charges)
            .tool(Tool::read(
                "list_recent_charges",
                "List recent charges",
                &[],
                "Recent charges: subscription, token packs, overage, credits.",
            ))
            .tag("billing")
            .summary("List recent charges of the visible companies, newest first.")
            .describe("The individual charges (plan fees, token packs) of the visible companies, newest first.")
            .paged_by(Kind::Charge)
            .query(&[
                crate::routes::date_range::FROM,
                crate::routes::date_range::TO,
                param(
                    "company_id",
                    Kind::Company.schema(),
                    "Only charges of this company.",
                ),
                param(
                    "invoice_id",
                    Kind::Invoice.schema(),
                    "Only charges on this invoice.",
                ),
            ])
            .ok("ChargeList"),
    ]
}

/// Standard VAT rates (percent) by the company's country (ISO 3166-1 alpha-2). A country not
/// listed is invoiced without VAT (`vat_rate_percent` 0, no VAT line).
pub const VAT_RATES: &[(&str, i64)] = &[
    ("AT", 20),
    ("BE", 21),
    ("DE", 19),
    ("ES", 21),
    ("FR", 20),
    ("IE", 23),
    ("IT", 22),
    ("LU", 17),
    ("NL", 21),
    ("PT", 23),
];

/// VAT on `net` cents at `rate` percent, rounded half away from zero to whole cents (once per
/// invoice, on the sum of its lines).
pub fn vat_of(net: i64, rate: i64) -> i64 {
    let scaled = net * rate;
    let (q, r) = (scaled / 100, scaled % 100);
    if r.abs() * 2 >= 100 {
        q + scaled.signum()
    } else {
        q
    }
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    // One struct, two components: a listed invoice has no lines; one got by id has both lists.
    let with_lines = crate::jsonschema::response::<Invoice>();
    let mut invoice = with_lines.clone();
    let lists = ["lines", "vat_lines"];
    if let Some(properties) = invoice["properties"].as_object_mut() {
        properties.retain(|name, _| !lists.contains(&name.as_str()));
    }
    let mut with_lines = with_lines;
    with_lines["description"] = "An invoice with its lines (the charges).".into();
    for list in lists {
        with_lines["properties"][list]["type"] = "array".into();
    }
    if let Some(required) = with_lines["required"].as_array_mut() {
        required.extend(lists.map(Value::from));
    }
    vec![
        ("Invoice", invoice),
        ("InvoiceWithLines", with_lines),
        crate::jsonschema::named_response::<Charge>(),
    ]
}

/// A company's invoice for a period, with its total.
// With `lines` only when got by id. Field order is the order of the JSON members.
#[derive(Serialize, JsonSchema)]
pub struct Invoice {
    #[schemars(transform = Kind::Invoice)]
    id: String,
    #[schemars(extend("const" = "invoice"))]
    object: &'static str,
    company_id: String,
    number: String,
    #[schemars(transform = &OneOf(INVOICE_STATUSES))]
    status: String,
    currency: String,
    period_start: Time,
    period_end: Time,
    issued_at: Time,
    due_at: Time,
    paid_at: Option<Time>,
    /// The sum of the lines (charges), before VAT.
    net_cents: i64,
    /// The standard VAT rate of the company's country.
    #[schemars(range(min = 0))]
    vat_rate_percent: i64,
    /// `net_cents` × rate, rounded half away from zero to whole cents.
    vat_cents: i64,
    /// `net_cents` + `vat_cents`.
    total_cents: i64,
    created_at: Time,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::jsonschema::items::<Charge>)]
    lines: Option<Vec<Charge>>,
    /// The VAT of the invoice, one line per rate (none when the rate is 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1))]
    vat_lines: Option<Vec<VatLine>>,
    #[serde(skip)]
    country: String,
}

/// The VAT of an invoice at one rate.
#[derive(Serialize, JsonSchema)]
pub struct VatLine {
    description: String,
    country: String,
    #[schemars(range(min = 1))]
    rate_percent: i64,
    net_cents: i64,
    vat_cents: i64,
}

const INVOICE_SELECT: &str = "SELECT i.id, i.company_id, i.number, i.status, i.currency,
    i.period_start, i.period_end, i.issued_at, i.due_at, i.paid_at, i.created_at,
    (SELECT coalesce(sum(c.amount_cents), 0) FROM charges c WHERE c.invoice_id = i.id)
        AS net_cents,
    (SELECT co.country FROM companies co WHERE co.id = i.company_id) AS country
    FROM invoices i";

impl Invoice {
    /// Reads a row of [`INVOICE_SELECT`] by column name.
    fn from_row(r: &crud::Named<'_, '_>) -> rusqlite::Result<Invoice> {
        let net: i64 = r.get("net_cents")?;
        let country: String = r.get::<Option<String>>("country")?.unwrap_or_default();
        let rate = VAT_RATES
            .iter()
            .find(|(c, _)| *c == country)
            .map_or(0, |(_, rate)| *rate);
        let vat = vat_of(net, rate);
        Ok(Invoice {
            id: r.get("id")?,
            object: "invoice",
            company_id: r.get("company_id")?,
            number: r.get("number")?,
            status: r.get("status")?,
            currency: r.get("currency")?,
            period_start: Time(r.get("period_start")?),
            period_end: Time(r.get("period_end")?),
            issued_at: Time(r.get("issued_at")?),
            due_at: Time(r.get("due_at")?),
            paid_at: r.get::<Option<i64>>("paid_at")?.map(Time),
            net_cents: net,
            vat_rate_percent: rate,
            vat_cents: vat,
            total_cents: net + vat,
            created_at: Time(r.get("created_at")?),
            lines: None,
            vat_lines: None,
            country,
        })
    }
}

impl Invoice {
    /// A row of [`INVOICE_SELECT`] as its JSON object, byte for byte a listed `Invoice`'s (no
    /// lines).
    fn write_row(r: &crud::Named<'_, '_>, out: &mut Vec<u8>) -> rusqlite::Result<()> {
        use crate::json_write as w;
        out.extend_from_slice(br#"{"id":"#);
        w::plain(out, r.str("id")?);
        out.extend_from_slice(br#","object":"invoice","company_id":"#);
        w::plain(out, r.str("company_id")?);
        out.extend_from_slice(br#","number":"#);
        w::text(out, r.str("number")?);
        out.extend_from_slice(br#","status":"#);
        w::text(out, r.str("status")?);
        out.extend_from_slice(br#","currency":"#);
        w::text(out, r.str("currency")?);
        for (name, member) in [
            ("period_start", &br#","period_start":"#[..]),
            ("period_end", br#","period_end":"#),
            ("issued_at", br#","issued_at":"#),
            ("due_at", br#","due_at":"#),
        ] {
            out.extend_from_slice(member);
            w::time(out, r.get(name)?);
        }
        out.extend_from_slice(br#","paid_at":"#);
        w::opt_time(out, r.get("paid_at")?);
        let created_at: i64 = r.get("created_at")?;
        let net: i64 = r.get("net_cents")?;
        let country = r.opt_str("country")?.unwrap_or_default();
        let rate = VAT_RATES
            .iter()
            .find(|(c, _)| *c == country)
            .map_or(0, |(_, rate)| *rate);
        let vat = vat_of(net, rate);
        out.extend_from_slice(br#","net_cents":"#);
        w::int(out, net);
        out.extend_from_slice(br#","vat_rate_percent":"#);
        w::int(out, rate);
        out.extend_from_slice(br#","vat_cents":"#);
        w::int(out, vat);
        out.extend_from_slice(br#","total_cents":"#);
        w::int(out, net + vat);
        out.extend_from_slice(br#","created_at":"#);
        w::time(out, created_at);
        out.push(b'}');
        Ok(())
    }
}

impl crate::http::response::Listed for Invoice {
    fn list_key(&self) -> &str {
        &self.id
    }
}

/// One billed amount: subscription, token pack, overage or credit.
// Field order is the order of the JSON members.
#[derive(Serialize, JsonSchema)]
pub struct Charge {
    #[schemars(transform = Kind::Charge)]
    id: String,
    #[schemars(extend("const" = "charge"))]
    object: &'static str,
    company_id: String,
    invoice_id: String,
    #[schemars(transform = &OneOf(CHARGE_KINDS))]
    kind: String,
    description: String,
    amount_cents: i64,
    currency: String,
    created_at: Time,
}

const CHARGE_SELECT: &str = "SELECT c.id, c.company_id, c.invoice_id, c.kind, c.description,
    c.amount_cents, c.currency, c.created_at FROM charges c";

impl Charge {
    /// Reads a row of [`CHARGE_SELECT`] by column name.
    fn from_row(r: &crud::Named<'_, '_>) -> rusqlite::Result<Charge> {
        Ok(Charge {
            id: r.get("id")?,
            object: "charge",
            company_id: r.get("company_id")?,
            invoice_id: r.get("invoice_id")?,
            kind: r.get("kind")?,
            description: r.get("description")?,
            amount_cents: r.get("amount_cents")?,
            currency: r.get("currency")?,
            created_at: Time(r.get("created_at")?),
        })
    }
}

impl Charge {
    /// A row of [`CHARGE_SELECT`] as its JSON object, byte for byte `Charge`'s.
    fn write_row(r: &crud::Named<'_, '_>, out: &mut Vec<u8>) -> rusqlite::Result<()> {
        use crate::json_write as w;
        out.extend_from_slice(br#"{"id":"#);
        w::plain(out, r.str("id")?);
        out.extend_from_slice(br#","object":"charge","company_id":"#);
        w::plain(out, r.str("company_id")?);
        out.extend_from_slice(br#","invoice_id":"#);
        w::plain(out, r.str("invoice_id")?);
        out.extend_from_slice(br#","kind":"#);
        w::text(out, r.str("kind")?);
        out.extend_from_slice(br#","description":"#);
        w::text(out, r.str("description")?);
        out.extend_from_slice(br#","amount_cents":"#);
        w::int(out, r.get("amount_cents")?);
        out.extend_from_slice(br#","currency":"#);
        w::text(out, r.str("currency")?);
        out.extend_from_slice(br#","created_at":"#);
        w::time(out, r.get("created_at")?);
        out.push(b'}');
        Ok(())
    }
}

impl crate::http::response::Listed for Charge {
    fn list_key(&self) -> &str {
        &self.id
    }
}

/// The subject of the events about an invoice (`resource_type` `invoice`).
pub const INVOICE: crate::routes::payload::SubjectKind = crate::routes::payload::SubjectKind {
    kind: Kind::Invoice,
    resource: "invoice",
    table: "invoices o",
    company: "o.company_id",
};

/// One invoice by id, without its lines (no authorization: the caller has already checked its
/// company).
/// The billing area's event payloads ([`crate::routes::payloads`]): the invoice as `GET
/// /invoices/{id}` shows it.
pub fn payloads() -> Vec<crate::routes::payload::Payload> {
    vec![crate::routes::payload::Payload::new(
        "invoice.overdue",
        "An invoice passed its due date unpaid (sandbox clock): the invoice, `status` `overdue`.",
        &INVOICE,
        crate::routes::payload::schema_ref("Invoice"),
        |s| crate::routes::payload::to_data(&load_invoice(s.conn, s.id)?),
    )
    .example_where("o.status = 'overdue' OR o.status = 'open'")]
}

pub fn load_invoice(conn: &Connection, id: &str) -> Result<Invoice, ApiError> {
    let id = InvoiceId::parse(id).ok_or_else(|| ApiError::not_found("invoice", id))?;
    crud::load(
        conn,
        &format!("{INVOICE_SELECT} WHERE i.id = ?1"),
        &id,
        Invoice::from_row,
    )
}

/// One charge by id (no authorization: the caller has already checked its company).
pub fn load_charge(conn: &Connection, id: &str) -> Result<Charge, ApiError> {
    let id = ChargeId::parse(id).ok_or_else(|| ApiError::not_found("charge", id))?;
    crud::load(
        conn,
        &format!("{CHARGE_SELECT} WHERE c.id = ?1"),
        &id,
        Charge::from_row,
    )
}

fn list_invoices(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let companies = ctx.list_companies()?;
    let mut filters: Vec<(&str, rusqlite::types::Value)> = Vec::new();
    if let Some(status) = ctx.query_enum("status", INVOICE_STATUSES)? {
        filters.push(("i.status = ?", status.into()));
    }
    // An invoice is in the window when its billing period overlaps it.
    let window = crate::routes::date_range::window(ctx)?;
    if let Some(from) = window.from {
        filters.push(("i.period_end > ?", from.into()));
    }
    if let Some(to) = window.to {
        filters.push(("i.period_start < ?", to.into()));
    }
    let conn = ctx.conn()?;
    crate::routes::page_rows::written_page(
        &conn,
        crate::routes::page_rows::PageQuery {
            select: INVOICE_SELECT,
            owner: crate::routes::queries::Owner::with_account("i.company_id", "i.account_id"),
            id_col: "i.id",
            companies: &companies,
            filters: &filters,
        },
        &page,
        Invoice::write_row,
        Invoice::from_row,
    )
}

fn get_invoice(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: InvoiceId = ctx.path()?;
    let conn = ctx.conn()?;
    let mut invoice = crud::load(
        &conn,
        &format!("{INVOICE_SELECT} WHERE i.id = ?1"),
        &id,
        Invoice::from_row,
    )?;
    ctx.authorize_company(&invoice.company_id, "invoice", &id)?;
    let lines = crud::query_all(
        &conn,
        &format!("{CHARGE_SELECT} WHERE c.invoice_id = ?1 ORDER BY c.id"),
        [&id],
        Charge::from_row,
    )?;
    invoice.lines = Some(lines);
    invoice.vat_lines = Some(if invoice.vat_rate_percent > 0 {
        vec![VatLine {
            description: format!("VAT {}% ({})", invoice.vat_rate_percent, invoice.country),
            country: invoice.country.clone(),
            rate_percent: invoice.vat_rate_percent,
            net_cents: invoice.net_cents,
            vat_cents: invoice.vat_cents,
        }]
    } else {
        Vec::new()
    });
    Ok(Response::ok(&invoice))
}

fn list_charges(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let companies = ctx.list_companies()?;
    let mut filters: Vec<(&str, rusqlite::types::Value)> = Vec::new();
    let window = crate::routes::date_range::window(ctx)?;
    if let Some(from) = window.from {
        filters.push(("c.created_at >= ?", from.into()));
    }
    if let Some(to) = window.to {
        filters.push(("c.created_at < ?", to.into()));
    }
    let conn = ctx.conn()?;
    let invoice = ctx.query_id("invoice_id", Kind::Invoice)?;
    if let Some(invoice) = invoice.as_deref().and_then(InvoiceId::parse) {
        crud::authorized_row(
            ctx,
            &conn,
            "SELECT company_id FROM invoices WHERE id = ?1",
            &invoice,
            |_| Ok(()),
        )?;
        filters.push(("c.invoice_id = ?", invoice.into_string().into()));
    }
    crate::routes::page_rows::written_page(
        &conn,
        crate::routes::page_rows::PageQuery {
            select: CHARGE_SELECT,
            owner: crate::routes::queries::Owner::with_account("c.company_id", "c.account_id"),
            id_col: "c.id",
            companies: &companies,
            filters: &filters,
        },
        &page,
        Charge::write_row,
        Charge::from_row,
    )
}

#[cfg(test)]
mod tests {
    use super::vat_of;

    #[test]
    fn vat_rounds_half_away_from_zero() {
        assert_eq!(vat_of(14900, 21), 3129);
        assert_eq!(vat_of(150, 21), 32); // 31.5
        assert_eq!(vat_of(149, 21), 31); // 31.29
        assert_eq!(vat_of(-150, 21), -32);
        assert_eq!(vat_of(50, 23), 12); // 11.5
        assert_eq!(vat_of(0, 23), 0);
    }
}
