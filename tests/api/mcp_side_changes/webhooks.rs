//! The webhook tools: bound to the webhook and its delivery log.

use super::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_tools_are_bound_to_the_webhook_and_its_log() {
    let app = spawn().await;
    let app = &app;
    let c = grocers();
    let webhook = || {
        one(
            app,
            "SELECT min(id) FROM webhooks WHERE company_id = ?1 AND enabled = 1",
            &[&grocers()],
        )
    };
    let new_webhook = || async {
        app.post("/webhooks")
            .key(ADMIN)
            .json(
                &json!({"company_id": c, "url": "http://127.0.0.1:0/_sandbox/sink/side-hooks",
                "event_types": ["ad.created"]}),
            )
            .send()
            .await
            .ok()["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let w = webhook();
    let n = std::cell::Cell::new(0);
    for tool in [
        "prepare_webhook_change",
        "prepare_webhook_secret_rotation",
        "prepare_webhook_test",
        "prepare_webhook_deletion",
    ] {
        let args = |w: &str| {
            n.set(n.get() + 1);
            match tool {
                "prepare_webhook_change" => {
                    json!({"webhook_id": w, "changes": {"description": format!("Bound {}", n.get())}})
                }
                _ => json!({"webhook_id": w}),
            }
        };
        let w = if tool == "prepare_webhook_deletion" {
            new_webhook().await
        } else {
            w.clone()
        };
        cell(
            app,
            tool,
            args(&w),
            "the webhook edited (REST PATCH)",
            Side::rest(
                "PATCH",
                format!("/webhooks/{w}"),
                Some(json!({"description": format!("Side {tool}")})),
            ),
            Expect::StaleWithFresh,
        )
        .await;
        if tool != "prepare_webhook_deletion" {
            cell(
                app,
                tool,
                args(&w),
                "its secret rotated (REST)",
                Side::rest("POST", format!("/webhooks/{w}/rotate-secret"), None),
                Expect::StaleWithFresh,
            )
            .await;
            let gone = new_webhook().await;
            cell(
                app,
                tool,
                args(&gone),
                "the webhook deleted (REST)",
                Side::rest("DELETE", format!("/webhooks/{gone}"), None),
                Expect::Refused("not_found"),
            )
            .await;
        }
        let w = if tool == "prepare_webhook_deletion" {
            new_webhook().await
        } else {
            w
        };
        cell(app, tool, args(&w), "nothing", Side::None, Expect::Applied).await;
    }

    // prepare_webhook_redelivery: bound to the delivery's log as it showed it.
    let w = webhook();
    let delivery = || async {
        app.post(&format!("/webhooks/{w}/test"))
            .key(ADMIN)
            .send()
            .await
            .ok()["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let d = delivery().await;
    let args = json!({"webhook_id": w, "delivery_id": d});
    cell(
        app,
        "prepare_webhook_redelivery",
        args.clone(),
        "sent again on the side (REST retry)",
        Side::rest("POST", format!("/webhooks/{w}/deliveries/{d}/retry"), None),
        Expect::StaleWithFresh,
    )
    .await;
    cell(
        app,
        "prepare_webhook_redelivery",
        args.clone(),
        "its webhook's URL changed (REST PATCH)",
        Side::rest(
            "PATCH",
            format!("/webhooks/{w}"),
            Some(json!({"url": "http://127.0.0.1:0/_sandbox/sink/moved"})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    cell(
        app,
        "prepare_webhook_redelivery",
        args,
        "nothing",
        Side::None,
        Expect::Applied,
    )
    .await;
    let gone = new_webhook().await;
    let d = app
        .post(&format!("/webhooks/{gone}/test"))
        .key(ADMIN)
        .send()
        .await
        .ok()["id"]
        .as_str()
        .unwrap()
        .to_string();
    cell(
        app,
        "prepare_webhook_redelivery",
        json!({"webhook_id": gone, "delivery_id": d}),
        "the webhook deleted (REST)",
        Side::rest("DELETE", format!("/webhooks/{gone}"), None),
        Expect::Refused("not_found"),
    )
    .await;
}
