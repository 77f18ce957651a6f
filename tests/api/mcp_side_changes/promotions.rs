//! Promotions and tokens: bound to the promotion, the balance and the clock.

use super::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promotion_and_token_tools_are_bound_to_the_promotion_the_balance_and_the_clock() {
    let app = spawn().await;
    let app = &app;
    let c = grocers();
    let buy = || {
        Side::Mcp(
            "prepare_token_purchase",
            json!({"token_pack_id": pack(app), "company_id": grocers()}),
        )
    };

    // prepare_promotion_change.
    let p = northwind_promotion(app, true);
    let change = |n: u32| json!({"promotion_id": p, "changes": {"discount_percent": 10 + n}});
    cell(
        app,
        "prepare_promotion_change",
        change(1),
        "the promotion edited (REST PATCH)",
        Side::rest(
            "PATCH",
            format!("/promotions/{p}"),
            Some(json!({"name": "Edited on the side"})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    cell(
        app,
        "prepare_promotion_change",
        change(3),
        "a QR code added (REST)",
        Side::rest(
            "POST",
            format!("/promotions/{p}/qr-codes"),
            Some(json!({"label": "Side"})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    let code = one(
        app,
        "SELECT max(id) FROM qr_codes WHERE promotion_id = ?1",
        &[&p],
    );
    cell(
        app,
        "prepare_promotion_change",
        change(5),
        "a QR code deleted (REST)",
        Side::rest("DELETE", format!("/qr-codes/{code}"), None),
        Expect::StaleWithFresh,
    )
    .await;
    // A promotion that starts in a minute: its state turns from scheduled to active by the clock.
    let starts = signage::time::rfc3339(signage::time::wall_now() + 90);
    let soon = app
        .post("/promotions")
        .key(ADMIN)
        .json(&json!({"company_id": c, "name": "Starts soon", "description": "x",
            "landing_url": "https://www.northwind-grocers.example/soon", "activation_cost_tokens": 1,
            "starts_at": starts, "ends_at": "2031-01-01T00:00:00Z"}))
        .send()
        .await
        .ok()["id"]
        .as_str()
        .unwrap()
        .to_string();
    // Switched on: `scheduled` until it starts.
    app.post(&format!("/promotions/{soon}/activate"))
        .key(ADMIN)
        .send()
        .await
        .ok();
    cell(
        app,
        "prepare_promotion_change",
        json!({"promotion_id": soon, "changes": {"name": "Starts soon!"}}),
        "the clock passes its start (state scheduled → active)",
        Side::Clock(120),
        Expect::StaleWithFresh,
    )
    .await;
    cell(
        app,
        "prepare_promotion_change",
        change(7),
        "nothing",
        Side::None,
        Expect::Applied,
    )
    .await;

    // prepare_promotion_activation: bound to the balance it showed.
    let p = new_promotion(app, 40).await;
    cell(
        app,
        "prepare_promotion_activation",
        json!({"promotion_id": p}),
        "the balance moved (a purchase, MCP)",
        buy(),
        Expect::StaleWithFresh,
    )
    .await;
    app.post(&format!("/promotions/{p}/deactivate"))
        .key(ADMIN)
        .send()
        .await
        .ok();
    let other = new_promotion(app, 25).await;
    cell(
        app,
        "prepare_promotion_activation",
        json!({"promotion_id": p}),
        "the balance moved (another activation, REST)",
        Side::rest("POST", format!("/promotions/{other}/activate"), None),
        Expect::StaleWithFresh,
    )
    .await;
    app.post(&format!("/promotions/{p}/deactivate"))
        .key(ADMIN)
        .send()
        .await
        .ok();
    cell(
        app,
        "prepare_promotion_activation",
        json!({"promotion_id": p}),
        "the promotion edited (REST PATCH)",
        Side::rest(
            "PATCH",
            format!("/promotions/{p}"),
            Some(json!({"description": "Reworded"})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    app.post(&format!("/promotions/{p}/deactivate"))
        .key(ADMIN)
        .send()
        .await
        .ok();
    cell(
        app,
        "prepare_promotion_activation",
        json!({"promotion_id": p}),
        "nothing",
        Side::None,
        Expect::Applied,
    )
    .await;

    // prepare_promotion_deactivation.
    let p = northwind_promotion(app, true);
    cell(
        app,
        "prepare_promotion_deactivation",
        json!({"promotion_id": p}),
        "the promotion edited (REST PATCH)",
        Side::rest(
            "PATCH",
            format!("/promotions/{p}"),
            Some(json!({"description": "Side"})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    app.post(&format!("/promotions/{p}/activate"))
        .key(ADMIN)
        .send()
        .await
        .ok();
    cell(
        app,
        "prepare_promotion_deactivation",
        json!({"promotion_id": p}),
        "deactivated on the side (REST)",
        Side::rest("POST", format!("/promotions/{p}/deactivate"), None),
        Expect::StaleNoFresh,
    )
    .await;
    app.post(&format!("/promotions/{p}/activate"))
        .key(ADMIN)
        .send()
        .await
        .ok();
    cell(
        app,
        "prepare_promotion_deactivation",
        json!({"promotion_id": p}),
        "nothing",
        Side::None,
        Expect::Applied,
    )
    .await;

    // prepare_qr_code_creation: the code's default target is the landing page it showed.
    let p = northwind_promotion(app, true);
    let qr = json!({"promotion_id": p, "label": "Door"});
    cell(
        app,
        "prepare_qr_code_creation",
        qr.clone(),
        "the landing page changed (REST PATCH)",
        Side::rest(
            "PATCH",
            format!("/promotions/{p}"),
            Some(json!({"landing_url": "https://www.northwind-grocers.example/moved"})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    cell(
        app,
        "prepare_qr_code_creation",
        qr.clone(),
        "another QR code added (REST)",
        Side::rest(
            "POST",
            format!("/promotions/{p}/qr-codes"),
            Some(json!({"label": "Side"})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    cell(
        app,
        "prepare_qr_code_creation",
        qr,
        "nothing",
        Side::None,
        Expect::Applied,
    )
    .await;

    // prepare_token_purchase: bound to the balance and the invoice it showed.
    let purchase = json!({"token_pack_id": pack(app), "company_id": c});
    cell(
        app,
        "prepare_token_purchase",
        purchase.clone(),
        "the balance moved (another purchase, MCP)",
        buy(),
        Expect::StaleWithFresh,
    )
    .await;
    let p = new_promotion(app, 30).await;
    cell(
        app,
        "prepare_token_purchase",
        purchase.clone(),
        "the balance moved (an activation, REST)",
        Side::rest("POST", format!("/promotions/{p}/activate"), None),
        Expect::StaleWithFresh,
    )
    .await;
    cell(
        app,
        "prepare_token_purchase",
        purchase,
        "nothing",
        Side::None,
        Expect::Applied,
    )
    .await;
}
