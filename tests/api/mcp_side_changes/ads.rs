//! The ad tools: bound to the ad and its screens.

use super::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ad_tools_are_bound_to_the_ad_and_its_screens() {
    let app = spawn().await;
    let app = &app;
    println!("| tool | side change | result |\n|---|---|---|");

    // prepare_ad_change × every side change to the ad it shows.
    let change = |ad: &str, n: usize| json!({"ad_id": ad, "changes": {"headline": format!("Bound headline {n}")}});
    let (ad, on, free) = ad_and_free_screen(app);
    let cases: Vec<(&str, Side, Expect)> = vec![
        (
            "the ad edited (REST PATCH)",
            Side::rest(
                "PATCH",
                format!("/ads/{ad}"),
                Some(json!({"name": "Edited on the side"})),
            ),
            Expect::StaleWithFresh,
        ),
        (
            "a screen assigned (REST)",
            Side::rest(
                "POST",
                format!("/ads/{ad}/devices"),
                Some(json!({"device_id": free})),
            ),
            Expect::StaleWithFresh,
        ),
        (
            "a screen removed (REST)",
            Side::rest("DELETE", format!("/ads/{ad}/devices/{on}"), None),
            Expect::StaleWithFresh,
        ),
        (
            "a screen assigned (bulk route)",
            Side::rest(
                "POST",
                format!("/ads/{ad}/assignments"),
                Some(json!({"assign_device_ids": [on]})),
            ),
            Expect::StaleWithFresh,
        ),
        (
            "a screen removed (MCP, another key)",
            Side::Mcp(
                "prepare_ad_unassignment",
                json!({"ad_id": ad, "device_id": free}),
            ),
            Expect::StaleWithFresh,
        ),
        (
            "a screen of the ad deleted (REST DELETE /devices)",
            Side::rest("DELETE", format!("/devices/{on}"), None),
            Expect::StaleWithFresh,
        ),
        ("nothing", Side::None, Expect::Applied),
    ];
    for (n, (what, side, expect)) in cases.into_iter().enumerate() {
        cell(app, "prepare_ad_change", change(&ad, n), what, side, expect).await;
    }
    let (ad, _, _) = ad_and_free_screen(app);
    cell(
        app,
        "prepare_ad_change",
        change(&ad, 99),
        "the ad deleted",
        Side::rest("DELETE", format!("/ads/{ad}"), None),
        Expect::Refused("not_found"),
    )
    .await;

    // An ad shows whether it is on air, which needs its promotion switched on (issue 32's ad
    // dates and `on_air`): switching the promotion off moves what the ad's preview shows.
    let (ad, _, _) = ad_and_free_screen(app);
    let promotion = northwind_promotion(app, true);
    Side::rest(
        "PATCH",
        format!("/ads/{ad}"),
        Some(json!({"promotion_id": promotion, "status": "active"})),
    )
    .apply(app)
    .await;
    cell(
        app,
        "prepare_ad_change",
        change(&ad, 98),
        "its promotion switched off (REST)",
        Side::rest("POST", format!("/promotions/{promotion}/deactivate"), None),
        Expect::StaleWithFresh,
    )
    .await;

    // prepare_ad_assignment: one screen on.
    let (ad, on, free) = ad_and_free_screen(app);
    let assign = json!({"ad_id": ad, "device_id": free});
    cell(
        app,
        "prepare_ad_assignment",
        assign.clone(),
        "the ad edited (REST PATCH)",
        Side::rest(
            "PATCH",
            format!("/ads/{ad}"),
            Some(json!({"headline": "Side"})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    let free = another_free_screen(app, &ad, "");
    let other = another_free_screen(app, &ad, &free);
    cell(
        app,
        "prepare_ad_assignment",
        json!({"ad_id": ad, "device_id": free}),
        "another screen assigned (REST)",
        Side::rest(
            "POST",
            format!("/ads/{ad}/devices"),
            Some(json!({"device_id": other})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    let free = another_free_screen(app, &ad, "");
    cell(
        app,
        "prepare_ad_assignment",
        json!({"ad_id": ad, "device_id": free}),
        "the same screen assigned (MCP, another key)",
        Side::Mcp(
            "prepare_ad_assignment",
            json!({"ad_id": ad, "device_id": free}),
        ),
        Expect::StaleNoFresh,
    )
    .await;
    let free = another_free_screen(app, &ad, "");
    cell(
        app,
        "prepare_ad_assignment",
        json!({"ad_id": ad, "device_id": free}),
        "the screen deleted",
        Side::rest("DELETE", format!("/devices/{free}"), None),
        Expect::Refused("not_found"),
    )
    .await;
    let free = another_free_screen(app, &ad, "");
    cell(
        app,
        "prepare_ad_assignment",
        json!({"ad_id": ad, "device_id": free}),
        "a screen removed (bulk route)",
        Side::rest(
            "POST",
            format!("/ads/{ad}/assignments"),
            Some(json!({"unassign_device_ids": [on]})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    let free = another_free_screen(app, &ad, "");
    cell(
        app,
        "prepare_ad_assignment",
        json!({"ad_id": ad, "device_id": free}),
        "nothing",
        Side::None,
        Expect::Applied,
    )
    .await;

    // prepare_ad_unassignment: one screen off.
    let (ad, on, free) = ad_and_free_screen(app);
    cell(
        app,
        "prepare_ad_unassignment",
        json!({"ad_id": ad, "device_id": on}),
        "another screen assigned (REST)",
        Side::rest(
            "POST",
            format!("/ads/{ad}/devices"),
            Some(json!({"device_id": free})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    let (ad, on, _) = ad_and_free_screen(app);
    cell(
        app,
        "prepare_ad_unassignment",
        json!({"ad_id": ad, "device_id": on}),
        "the same screen removed (REST)",
        Side::rest("DELETE", format!("/ads/{ad}/devices/{on}"), None),
        Expect::StaleNoFresh,
    )
    .await;
    let (ad, on, _) = ad_and_free_screen(app);
    cell(
        app,
        "prepare_ad_unassignment",
        json!({"ad_id": ad, "device_id": on}),
        "the ad edited (REST PATCH)",
        Side::rest(
            "PATCH",
            format!("/ads/{ad}"),
            Some(json!({"duration_seconds": 17})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    let (ad, on, _) = ad_and_free_screen(app);
    cell(
        app,
        "prepare_ad_unassignment",
        json!({"ad_id": ad, "device_id": on}),
        "nothing",
        Side::None,
        Expect::Applied,
    )
    .await;

    // prepare_ad_assignments: many screens.
    let (ad, on, free) = ad_and_free_screen(app);
    let batch = json!({"ad_id": ad, "assign_device_ids": [free], "unassign_device_ids": [on]});
    cell(
        app,
        "prepare_ad_assignments",
        batch,
        "one of its screens assigned on the side (REST)",
        Side::rest(
            "POST",
            format!("/ads/{ad}/devices"),
            Some(json!({"device_id": free})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    let (ad, on, free) = ad_and_free_screen(app);
    let other = another_free_screen(app, &ad, &free);
    let batch = json!({"ad_id": ad, "assign_device_ids": [free], "unassign_device_ids": [on]});
    cell(
        app,
        "prepare_ad_assignments",
        batch,
        "another screen assigned (MCP, another key)",
        Side::Mcp(
            "prepare_ad_assignment",
            json!({"ad_id": ad, "device_id": other}),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    let (ad, on, free) = ad_and_free_screen(app);
    let batch = json!({"ad_id": ad, "assign_device_ids": [free], "unassign_device_ids": [on]});
    cell(
        app,
        "prepare_ad_assignments",
        batch,
        "the ad edited (REST PATCH)",
        Side::rest(
            "PATCH",
            format!("/ads/{ad}"),
            Some(json!({"status": "paused"})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    let (ad, on, free) = ad_and_free_screen(app);
    let batch = json!({"ad_id": ad, "assign_device_ids": [free], "unassign_device_ids": [on]});
    cell(
        app,
        "prepare_ad_assignments",
        batch,
        "nothing",
        Side::None,
        Expect::Applied,
    )
    .await;
}
