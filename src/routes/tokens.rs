//! Tokens: the pack catalogue, purchases, a company's balance and its ledger of transactions.
//! The bookkeeping itself lives in [`crate::ledger`], shared with promotion activation.

mod pack;
mod payloads;
mod runway;
mod summary;

use pack::TokenPack;
pub use payloads::payloads;

use crate::auth::{Action, Area, Level};
use crate::http::ctx::PageRequest;
use crate::http::router::{one_of_param, param, Param, Route, Tool};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{self, Kind, TokenPackId, TypedId};
use crate::jsonschema::component;
use crate::ledger::{self, TokenBalance, TokenTransaction, TX_COLUMNS, TX_KINDS};
use crate::routes::billing::Charge;
use crate::routes::crud;
use crate::validate::OneOf;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

const READ: Action = Action::Use(Area::Tokens, Level::Read);
const WRITE: Action = Action::Use(Area::Tokens, Level::Write);

const COMPANY_PARAM: &str = Kind::Company.schema();

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/token-packs", "listTokenPacks", READ, list_packs)
            .tool(Tool::read(
                "list_token_packs",
                "List token packs",
                &[],
                "Token packs for sale (tokens pay for promotion activations).",
            ))
            .tag("tokens")
            .summary("List the token packs on sale (the catalogue).")
            .describe("The token packs on sale: tokens and price of each.")
            .paged_by(Kind::TokenPack)
            .ok("TokenPackList"),
        pack::route(),
        Route::post(
            "/token-packs/{id}/purchase",
            "purchaseTokenPack",
            WRITE,
            purchase,
        )
        .tool(pack::PURCHASE_TOOL)
        .tag("tokens")
        .summary("Buy a token pack for a company: credits its balance and bills the price on its open invoice, in one transaction.")
        .describe("Buys a pack for a company: credits its token balance and adds the price to its open invoice, in one transaction. Emits `tokens.purchased`.")
        .body("TokenPackPurchase")
        .created("TokenPurchase"),
        Route::get("/tokens/balance", "getTokenBalance", READ, balance)
            .tool(Tool::read(
                "get_token_balance",
                "Get token balance",
                &[],
                "A company's current token balance: read it before activating a promotion, which costs tokens.",
            ))
            .tag("tokens")
            .summary("A company's token balance.")
            .describe("A company's current token balance, what activating promotions spends.")
            .query(&[Param {
                required: true,
                ..param("company_id", COMPANY_PARAM, "The company (`cmp_…`), as returned by list_companies.")
            }])
            .ok("TokenBalance"),
        summary::route(),
        runway::route(),
        Route::get(
            "/tokens/transactions",
            "listTokenTransactions",
            READ,
            list_transactions,
        )
        .tool(Tool::read(
            "list_token_transactions",
            "List token transactions",
            &[],
            "A company's token ledger: grants, purchases, spending, refunds.",
        ))
        .tag("tokens")
        .summary("List token transactions (the ledger), newest first.")
        .describe("The token ledger of the visible companies, newest first: purchases, spends and adjustments, each with the balance after it.")
        .paged_by(Kind::TokenTransaction)
        .query(&[
            crate::routes::date_range::FROM,
            crate::routes::date_range::TO,
            param("company_id", COMPANY_PARAM, "Only this company's transactions."),
            one_of_param(
                "kind",
                OneOf(TX_KINDS),
                "Only transactions of this kind.",
            ),
        ])
        .ok("TokenTransactionList"),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    use crate::jsonschema::{named_body, named_response};
    let mut schemas = vec![
        named_response::<TokenPack>(),
        named_body::<PurchaseInput>(),
        named_response::<TokenBalance>(),
        named_response::<TokenTransaction>(),
        named_response::<TokenPurchase>(),
    ];
    schemas.extend(summary::schemas());
    schemas.extend(runway::schemas());
    schemas
}

impl crate::http::response::Listed for TokenTransaction {
    fn list_key(&self) -> &str {
        &self.id
    }
}

/// What a purchase returns: the ledger row, the charge on the invoice and the new balance.
#[derive(Serialize, JsonSchema)]
struct TokenPurchase {
    #[schemars(extend("const" = "token_purchase"))]
    object: &'static str,
    /// The ledger entry.
    #[schemars(transform = component::<TokenTransaction>)]
    transaction: TokenTransaction,
    /// The charge billed for it.
    #[schemars(transform = component::<Charge>)]
    charge: Charge,
    /// Tokens available.
    #[schemars(transform = component::<TokenBalance>)]
    balance: TokenBalance,
}

fn list_packs(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let conn = ctx.conn()?;
    let rows = crud::query_all(
        &conn,
        "SELECT id, name, tokens, price_cents, currency, created_at FROM token_packs
         WHERE id < ?1 ORDER BY id DESC LIMIT ?2",
        rusqlite::params![page.bound(), page.fetch()],
        TokenPack::from_row,
    )?;
    Ok(Response::page(rows, &page))
}

/// The company to buy a token pack for.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "TokenPackPurchase")]
struct PurchaseInput {
    #[schemars(transform = Kind::Company)]
    company_id: String,
}

fn purchase(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let input: PurchaseInput = ctx.json()?;
    if !ids::is_valid(Kind::Company, &input.company_id) {
        return Err(ApiError::invalid(
            "/company_id",
            "invalid_id",
            "Must be a company id (`cmp_…`).",
        ));
    }
    let company = input.company_id;
    ctx.authorize_company(&company, "company", &company)?;
    // Checked after the body and the company, as before the id was typed: a bad body is 422
    // and an invisible company 404 whatever the path says.
    let pack_id: TokenPackId = ctx.path()?;
    let now = ctx.now();
    ctx.db.write(ctx.intent, |tx| {
        let bought = ledger::purchase_pack(tx, &company, pack_id.as_str(), now)?
            .ok_or_else(|| ApiError::not_found("token pack", pack_id.as_str()))?;
        let charge = crate::routes::billing::load_charge(tx, &bought.charge_id)?;
        let balance = ledger::balance(tx, &company)?;
        Ok(Response::created(&TokenPurchase {
            object: "token_purchase",
            transaction: bought.transaction,
            charge,
            balance,
        }))
    })
}

fn balance(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    // `company_id` is required (the pipeline enforces it); list_companies checks it is visible.
    let company = ctx.list_companies()?.first().cloned().unwrap_or_default();
    let conn = ctx.conn()?;
    Ok(Response::ok(&ledger::balance(&conn, &company)?))
}

/// Newest-first page of one company's ledger: an index range scan of
/// `token_transactions_by_company (company_id, id)` that stops after `page.fetch()` rows, however
/// long the ledger is.
fn company_page(
    conn: &rusqlite::Connection,
    company: &str,
    kind: Option<&str>,
    window: crate::routes::date_range::Window,
    page: &PageRequest,
) -> Result<Vec<TokenTransaction>, ApiError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {TX_COLUMNS} FROM token_transactions t
         WHERE t.company_id = ?1 AND t.id < ?2 AND (?3 IS NULL OR t.kind = ?3)
           AND (?5 IS NULL OR t.created_at >= ?5) AND (?6 IS NULL OR t.created_at < ?6)
         ORDER BY t.id DESC LIMIT ?4"
    ))?;
    let rows = stmt.query_map(
        rusqlite::params![
            company,
            page.bound(),
            kind,
            page.fetch(),
            window.from,
            window.to
        ],
        TokenTransaction::from_row,
    )?;
    Ok(rows.collect::<Result<Vec<_>, _>>()?)
}

fn list_transactions(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let companies = ctx.list_companies()?;
    let kind = ctx.query_enum("kind", TX_KINDS)?;
    let window = crate::routes::date_range::window(ctx)?;
    let conn = ctx.conn()?;
    // Several companies: one bounded range scan each, merged, instead of an `IN` list that would
    // make SQLite sort every matching row before it could apply the limit.
    let mut rows = Vec::new();
    for company in &companies {
        rows.extend(company_page(
            &conn,
            company,
            kind.as_deref(),
            window,
            &page,
        )?);
    }
    rows.sort_by(|a, b| b.id.cmp(&a.id));
    rows.truncate(page.fetch() as usize);
    Ok(Response::page(rows, &page))
}
