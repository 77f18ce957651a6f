//! Promotions, their activation (which spends tokens) and their QR codes.
//!
//! Rules:
//! - `state` is derived at read time from the `active` flag and the window `[starts_at, ends_at)`:
//!   `expired` once `ends_at` has passed (whatever the flag), `scheduled` when switched on but not
//!   started, `active` when switched on and inside the window, `inactive` otherwise.
//! - Activation spends `activation_cost_tokens` in the same transaction that switches the flag on,
//!   so a promotion is never on without having been paid for, nor paid for without being on.
//!   Re-activating an active promotion is a free no-op; an expired one cannot be activated (409).
//! - Deactivation never refunds: the cost buys the activation, not a duration.
//! - As time passes, a switched-on promotion's window opening records `promotion.started` and its
//!   closing `promotion.ended`, once each ([`timeline`]).
//! - QR codes: see [`qr_codes`] (the resource and its checks), [`scans`] (what scanning left) and
//!   `crate::routes::scan` (the public short link that records a scan).

mod activation;
mod fields;
mod handlers;
mod links;
mod payloads;
mod promotion;
pub mod qr_codes;
mod qr_image;
mod ranking;
pub mod scans;
mod timeline;

use crate::auth::{Action, Area, Level};
use crate::http::router::{one_of_param, param, Change, Route, Tool};
use crate::ids::Kind;
use crate::validate::OneOf;
use activation::{activate, deactivate};
use fields::QR_FORMATS;
pub use fields::{MAX_ACTIVATION_COST, STATES};
use handlers::{create, get, list, update};
pub use payloads::payloads;
pub use promotion::{state, Promotion};
use qr_codes::{create_qr_code, delete_qr_code, get_qr_code, list_qr_codes};
use qr_image::qr_image;
pub use qr_image::{qr_png, qr_svg};
use scans::{list_scans, report};
use serde_json::Value;
pub use timeline::PromotionWindows;

const READ: Action = Action::Use(Area::Promotions, Level::Read);
const WRITE: Action = Action::Use(Area::Promotions, Level::Write);

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/promotions", "listPromotions", READ, list)
            .tool(Tool::read(
                "list_promotions",
                "List promotions",
                &[],
                "List promotions with their dates, discount and derived state.",
            ))
            .tag("promotions")
            .summary("List promotions of the visible companies, newest first.")
            .describe("The promotions of the visible companies, newest first, with their derived state (`active`, `inactive`, `scheduled`, `expired`).")
            .paged_by(Kind::Promotion)
            .query(&[
                crate::routes::search::Q,
                param(
                    "company_id",
                    Kind::Company.schema(),
                    "Only promotions of this company.",
                ),
                param(
                    "active",
                    r#"{"type":"string","enum":["true","false"]}"#,
                    "`true`: switched on and running now (state `active`); `false`: everything else.",
                ),
                one_of_param(
                    "state",
                    OneOf(STATES),
                    "Only promotions in this derived state.",
                ),
            ])
            .ok("PromotionList"),
        Route::post("/promotions", "createPromotion", WRITE, create)
            .tag("promotions")
            .summary("Create a promotion. It starts inactive; activating it spends its token cost.")
            .tool(
                Tool::prepare(
                    "prepare_promotion_creation",
                    "Prepare a new promotion",
                    &[("company_id", "The company (`cmp_…`).")],
                    Change::Body(&["company_id", "name", "description", "landing_url", "discount_percent", "activation_cost_tokens", "starts_at", "ends_at"]),
                    "Prepare a new promotion, inactive until prepare_promotion_activation; QR codes: prepare_qr_code_creation. This executes NOTHING: it checks the promotion as the write would and returns a preview and a `confirmation_id`. Show the preview to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id.",
                )
                .reading("getCompany")
                .asking("Create a promotion in {company}; it starts inactive and costs nothing until it is activated. Webhooks subscribed to promotion.created are notified."),
            )
            .describe("Creates a promotion with its QR codes; it starts inactive and costs nothing until activated. Emits `promotion.created`.")
            .etag()
            .body("PromotionCreate")
            .created("Promotion"),
        Route::get("/promotions/{id}", "getPromotion", READ, get)
            .tool(Tool::read(
                "get_promotion",
                "Get promotion",
                &[("promotion_id", "The promotion id (`promo_…`), as returned by list_promotions.")],
                "One promotion: dates, discount, landing page, whether it is active, and its activation cost in tokens.",
            ))
            .tag("promotions")
            .summary("Get one promotion with its derived state and QR code count.")
            .describe("One promotion with its derived state, QR code count and `ETag`.")
            .etag()
            .ok("Promotion"),
        Route::patch("/promotions/{id}", "updatePromotion", WRITE, update)
            .tool(Tool::prepare(
                "prepare_promotion_change",
                "Prepare a promotion change",
                &[("promotion_id", "The promotion (`promo_…`).")],
                Change::Fields(&["name", "description", "landing_url", "discount_percent", "starts_at", "ends_at"]),
                "Prepare a change to a promotion. Moving `ends_at` to the future makes an expired promotion activatable again. This executes NOTHING: it checks the change as the write would and returns a preview (current, proposed, differences) and a `confirmation_id`. Show the preview to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id.",
            ).asking("Change the promotion {target} of {company}. Webhooks subscribed to promotion.updated are notified."))
            .tag("promotions")
            .summary("Update a promotion's details. Use activate/deactivate to switch it. Honours If-Match.")
            .describe("Changes a promotion's details; switching it on or off is done with activate and deactivate. Emits `promotion.updated`.")
            .etag()
            .body("PromotionUpdate")
            .ok("Promotion"),
        Route::post(
            "/promotions/{id}/activate",
            "activatePromotion",
            WRITE,
            activate,
        )
        .tool(Tool::prepare(
            "prepare_promotion_activation",
            "Prepare a promotion activation",
            &[("promotion_id", "The promotion (`promo_…`).")],
            Change::Sets("active", true),
            "Prepare activating a promotion, which costs its `activation_cost_tokens` (the preview shows the cost and balance). This executes NOTHING: it returns a preview with the token cost of the activation and the company's current balance, and a `confirmation_id`. Show the preview (including the cost) to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id.",
        ).asking("Activate the promotion {target} of {company}: its QR codes and the ads linked to it promote it while it runs. The tokens are spent at once and not refunded on deactivation. Webhooks subscribed to promotion.activated and tokens.spent are notified."))
        .tag("promotions")
        .summary("Activate a promotion, spending its `activation_cost_tokens` from the company's balance (402 if too low). Already active: no-op, no charge. Expired: 409. Honours If-Match.")
        .describe("Switches a promotion on and spends its `activation_cost_tokens` from the company's balance in the same transaction (402 when the balance is too low). Already active: answers the promotion, charges nothing. Emits `promotion.activated` and `tokens.spent`.")
        .etag()
        .conditional()
        .may_return(&[402])
        .ok("Promotion"),
        Route::post(
            "/promotions/{id}/deactivate",
            "deactivatePromotion",
            WRITE,
            deactivate,
        )
        .tool(Tool::prepare(
            "prepare_promotion_deactivation",
            "Prepare a promotion deactivation",
            &[("promotion_id", "The promotion (`promo_…`).")],
            Change::Sets("active", false),
            "Prepare deactivating a promotion; the tokens spent to activate it are not refunded. This executes NOTHING: it returns a preview and a `confirmation_id`. Show the preview to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id.",
        ).asking("Deactivate the promotion {target} of {company}; the tokens spent to activate it are not refunded. Webhooks subscribed to promotion.deactivated are notified."))
        .tag("promotions")
        .summary("Deactivate a promotion. Tokens spent on activation are not refunded. Honours If-Match.")
        .describe("Switches a promotion off; the tokens spent on activation are not refunded. Emits `promotion.deactivated`.")
        .etag()
        .conditional()
        .ok("Promotion"),
        Route::get(
            "/promotions/{id}/qr-codes",
            "listPromotionQrCodes",
            READ,
            list_qr_codes,
        )
        .tool(Tool::read(
            "get_promotion_qr_codes",
            "Get promotion QR codes",
            &[("promotion_id", "The promotion id (`promo_…`), as returned by list_promotions.")],
            "List the QR codes of a promotion, with their target URLs and scan counts.",
        ))
        .tag("promotions")
        .summary("List a promotion's QR codes, each with an inline SVG image and the URL of its PNG.")
        .describe("The QR codes of one promotion, each with its target URL, an inline SVG and the URL of its image.")
        .paged_by(Kind::QrCode)
        .ok("QrCodeList"),
        Route::post(
            "/promotions/{id}/qr-codes",
            "createQrCode",
            WRITE,
            create_qr_code,
        )
        .tool(Tool::prepare(
            "prepare_qr_code_creation",
            "Prepare a new QR code",
            &[("promotion_id", "The promotion (`promo_…`).")],
            Change::Body(&["label", "target_url", "utm"]),
            "Prepare a QR code for a promotion: a short link that counts scans and redirects. This executes NOTHING: it checks the code as the write would and returns a preview and a `confirmation_id`. Show the preview to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id.",
        )
        .withholding(
            "image_svg",
            "the code's image is not carried here (it would double the result's size): read it with resources/read `signage://qr-codes/{id}/image` (SVG), or REST `GET /qr-codes/{id}/image`.",
        )
        .asking("Make a QR code for the promotion {target} of {company}; it encodes a short link that counts scans and redirects to the landing page. Webhooks subscribed to qr_code.created are notified."))
        .describe("Make a QR code for a promotion. The target must be the promotion's landing URL or on its host (no open redirect); a promotion without a landing URL lands on the sandbox's landing page `/l/{code}`; optional UTM parameters and a placement label. The code encodes a short sandbox link (`short_url`, `GET /q/{code}`) that counts scans and redirects. Needs `promotions:write`. Emits `qr_code.created`; 409 `qr_code_limit` past 100 codes.")
        .tag("promotions")
        .summary("Create a QR code for a promotion. `target_url` (default: the landing URL) must be on the landing URL's host; optional `utm` parameters are appended on redirect. The code's images encode its short URL `/q/{code}`. At most 100 codes per promotion (409 `qr_code_limit`).")
        .body("QrCodeCreate")
        .created("QrCode"),
        // Before `/qr-codes/{id}`: a literal route declared first owns its path.
        ranking::route(),
        Route::get("/qr-codes/{id}", "getQrCode", READ, get_qr_code)
        .no_tool("get_promotion_qr_codes returns every code with the same fields")
        .describe("One QR code: its short link, target and redirect URLs, label, scan count and last scan, and an inline SVG. Needs `promotions:read`. The `ETag` serves `If-Match` on delete.")
            .etag()
            .tag("promotions")
            .summary("Get one QR code: short URL, target, UTM parameters, scan count and images.")
            .ok("QrCode"),
        Route::delete("/qr-codes/{id}", "deleteQrCode", WRITE, delete_qr_code)
        .describe("Delete a QR code; its short link answers 404 from then on and its scans go with it. Needs `promotions:write`; honours `If-Match`. Emits `qr_code.deleted`.")
            .tag("promotions")
            .summary("Delete a QR code and its scans; its short URL answers 404 from then on. Honours If-Match."),
        Route::get("/qr-codes/{id}/scans", "listQrCodeScans", READ, list_scans)
        .no_tool("single scans; get_promotion_report gives the totals per day, class and code")
        .describe("The scans of one QR code, newest first by cursor: when (sandbox clock) and the user-agent class (ios, android, desktop, bot, other). No IP address is stored. Needs `promotions:read`.")
            .tag("promotions")
            .summary("List a QR code's scans, newest first: when (sandbox clock) and the user-agent class. No address is stored.")
            .paged_by(Kind::QrScan)
            .ok("QrScanList"),
        Route::get("/promotions/{id}/report", "getPromotionReport", READ, report)
        .describe("A promotion's scan report: total scans, scans per UTC day over the last 90 days, per user-agent class and per code. Needs `promotions:read`.")
            .tool(Tool::read(
                "get_promotion_report",
                "Get promotion report",
                &[("promotion_id", "The promotion id (`promo_…`), as returned by list_promotions.")],
                "A promotion's QR scans: total, per UTC day (last 90 days), per user-agent class (ios, android, desktop, bot, other) and per code.",
            ))
            .tag("promotions")
            .summary("The promotion's scan report: totals, scans per UTC day (last 90 days, days without scans left out), per user-agent class and per QR code.")
            .ok("PromotionReport"),
        Route::get("/qr-codes/{id}/image", "getQrCodeImage", READ, qr_image)
            .no_tool("an SVG or PNG image, not JSON")
            .tag("promotions")
            .summary("The QR code as an image: `format=svg` (default, image/svg+xml) or `format=png` (image/png, 8 px per module with a 4-module quiet zone).")
            .describe("The QR code as an image to print or display: SVG by default, PNG with `format=png`.")
            .query(&[one_of_param(
                "format",
                OneOf(QR_FORMATS),
                "`svg` (image/svg+xml) or `png` (image/png).",
            )
            .default("svg")])
            .produces("image/svg+xml")
            .produces("image/png"),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    use crate::jsonschema::{named_body, named_response};
    let mut all = vec![
        named_response::<promotion::Promotion>(),
        named_body::<handlers::PromotionCreate>(),
        named_body::<handlers::PromotionUpdate>(),
        named_response::<qr_codes::QrCode>(),
        named_body::<qr_codes::QrCodeCreate>(),
        named_response::<scans::QrScan>(),
        named_response::<scans::Report>(),
    ];
    all.extend(ranking::schemas());
    all
}
