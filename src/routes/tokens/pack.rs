//! One token pack of the catalogue.

use crate::auth::{Action, Area, Level};
use crate::http::router::{Change, Route, Tool};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{TokenPackId, TypedId};
use crate::routes::crud::{self, Time};
use schemars::JsonSchema;
use serde::Serialize;

/// A pack of tokens on sale.
// Field order is the order of the JSON members.
#[derive(Serialize, JsonSchema)]
pub(super) struct TokenPack {
    #[schemars(transform = crate::ids::Kind::TokenPack)]
    id: String,
    #[schemars(extend("const" = "token_pack"))]
    object: &'static str,
    name: String,
    #[schemars(range(min = 1))]
    tokens: i64,
    #[schemars(range(min = 0))]
    price_cents: i64,
    currency: String,
    created_at: Time,
}

impl TokenPack {
    pub(super) fn from_row(r: &crud::Named<'_, '_>) -> rusqlite::Result<TokenPack> {
        Ok(TokenPack {
            id: r.get("id")?,
            object: "token_pack",
            name: r.get("name")?,
            tokens: r.get("tokens")?,
            price_cents: r.get("price_cents")?,
            currency: r.get("currency")?,
            created_at: Time(r.get("created_at")?),
        })
    }
}

impl crate::http::response::Listed for TokenPack {
    fn list_key(&self) -> &str {
        &self.id
    }
}

pub(super) fn route() -> Route {
    Route::get(
        "/token-packs/{id}",
        "getTokenPack",
        Action::Use(Area::Tokens, Level::Read),
        get_pack,
    )
    .describe("One token pack of the catalogue: tokens, price and currency. Any credential may read the catalogue.")
    .tool(Tool::read(
        "get_token_pack",
        "Get token pack",
        &[(
            "token_pack_id",
            "The pack id (`tpk_…`), as returned by list_token_packs.",
        )],
        "Get one token pack of the catalogue: how many tokens it gives and its price.",
    ))
    .tag("tokens")
    .summary("Get one token pack of the catalogue: its tokens and price.")
    .ok("TokenPack")
}

/// The MCP tool of `POST /token-packs/{id}/purchase`, declared on that route.
pub(super) const PURCHASE_TOOL: Tool = Tool::prepare(
    "prepare_token_purchase",
    "Prepare a token pack purchase",
    &[
        (
            "token_pack_id",
            "The token pack (`tpk_…`).",
        ),
        (
            "company_id",
            "The company credited and billed (`cmp_…`).",
        ),
    ],
    Change::Creates("company_id"),
    "Prepare buying a token pack: tokens credited to the company's balance, price billed on its open invoice. This executes NOTHING: it checks the purchase as the write would and returns a preview (the purchase it would make: tokens, balance after, charge) and a `confirmation_id`. Show the preview, including the price, to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id.",
)
.asking("Buy the token pack {target} for {company}; the tokens are credited at once. Webhooks subscribed to tokens.purchased are notified.");

fn get_pack(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: TokenPackId = ctx.path()?;
    let conn = ctx.conn()?;
    let pack = crud::query_all(
        &conn,
        "SELECT id, name, tokens, price_cents, currency, created_at FROM token_packs WHERE id = ?1",
        [id.as_str()],
        TokenPack::from_row,
    )?
    .pop()
    .ok_or_else(|| ApiError::not_found("token pack", id.as_str()))?;
    Ok(Response::ok(&pack))
}
