//! What a screen plays is defined once (`routes::on_air`, the views of
//! `V40__what_a_screen_plays.sql`): the simulated fleet, a heartbeat's `current_ad_id`, a reported
//! play, the device's ads list and the ad's `on_air` all read it. Each rule input changed here
//! (the ad paused, unassigned, past its end, its promotion switched off) must flip every one of
//! them together: a place that kept its own copy of the rule falls out of step.

use crate::helpers::{company_id, TestApp};
use crate::sandbox_clock::{frozen, FROZEN_AT};
use serde_json::{json, Value};

const HOUR: i64 = 3_600;
const KEY: &str = "northwind-readwrite";

/// The places that answer "does this screen play the ad now", as each answers it.
#[derive(Debug, PartialEq)]
struct Verdicts {
    /// The simulated screen played it in the hour just simulated.
    simulator: bool,
    /// The device's ads list shows it on air (on both screens).
    device_ads: bool,
    /// A play of it, started now, is accepted from the real screen.
    playback: bool,
    /// A heartbeat naming it as the ad on screen is accepted from the real screen.
    heartbeat: bool,
}

impl Verdicts {
    fn all(v: bool) -> Verdicts {
        Verdicts {
            simulator: v,
            device_ads: v,
            playback: v,
            heartbeat: v,
        }
    }
}

struct World {
    app: TestApp,
    ad: String,
    promotion: String,
    simulated: String,
    real: String,
    now: i64,
}

impl World {
    async fn simulated_plays(&self) -> i64 {
        let rows = self
            .app
            .collect_all(
                &format!(
                    "/devices/{}/playbacks?source=simulator&ad_id={}",
                    self.simulated, self.ad
                ),
                KEY,
                100,
            )
            .await;
        rows.iter().map(|r| r["plays"].as_i64().unwrap()).sum()
    }

    /// Moves the clock an hour (the fleet plays it), then asks every place; also returns the ad's
    /// own `on_air`.
    async fn verdicts(&mut self) -> (Verdicts, bool) {
        let before = self.simulated_plays().await;
        self.app
            .post("/_sandbox/clock/advance")
            .key("sandbox-operator")
            .json(&json!({ "seconds": HOUR }))
            .send()
            .await
            .ok();
        self.now += HOUR;
        let simulator = self.simulated_plays().await > before;
        let mut shown = Vec::new();
        for device in [&self.simulated, &self.real] {
            let ads = self
                .app
                .collect_all(&format!("/devices/{device}/ads"), KEY, 100)
                .await;
            shown.push(
                ads.iter()
                    .any(|a| a["id"] == self.ad.as_str() && a["on_air"] == true),
            );
        }
        assert_eq!(shown[0], shown[1], "both screens' lists agree");
        let played = self
            .app
            .post(&format!("/devices/{}/playbacks", self.real))
            .key(KEY)
            .json(&json!({"ad_id": self.ad, "started_at": signage::time::rfc3339(self.now), "duration_seconds": 10}))
            .send()
            .await;
        let beat = self
            .app
            .post(&format!("/devices/{}/heartbeat", self.real))
            .key(KEY)
            .json(&json!({"current_ad_id": self.ad}))
            .send()
            .await;
        for (what, r) in [("playback", &played), ("heartbeat", &beat)] {
            assert!(
                r.status.is_success() || r.status == 409,
                "{what}: {} {}",
                r.status,
                r.text()
            );
        }
        let on_air = self
            .app
            .get(&format!("/ads/{}", self.ad))
            .key(KEY)
            .send()
            .await
            .ok()["on_air"]
            == true;
        (
            Verdicts {
                simulator,
                device_ads: shown[0],
                playback: played.status.is_success(),
                heartbeat: beat.status.is_success(),
            },
            on_air,
        )
    }

    async fn patch_ad(&self, body: Value) {
        self.app
            .patch(&format!("/ads/{}", self.ad))
            .key(KEY)
            .json(&body)
            .send()
            .await
            .ok();
    }

    async fn assign(&self, on: bool) {
        for device in [&self.simulated, &self.real] {
            let r = if on {
                self.app
                    .post(&format!("/ads/{}/devices", self.ad))
                    .key(KEY)
                    .json(&json!({ "device_id": device }))
                    .send()
                    .await
            } else {
                self.app
                    .delete(&format!("/ads/{}/devices/{device}", self.ad))
                    .key(KEY)
                    .send()
                    .await
            };
            assert!(r.status.is_success(), "{}", r.text());
        }
    }
}

#[tokio::test]
async fn every_place_agrees_on_what_a_screen_plays() {
    let app = frozen().await;
    let grocers = company_id("Northwind Grocers");
    let (simulated, promotion): (String, String) = app.sql(|c| {
        c.query_row(
            "SELECT s.device_id, p.id FROM device_simulations s
             JOIN devices d ON d.id = s.device_id
             JOIN promotions p ON p.company_id = d.company_id
             WHERE s.profile = 'steady' AND d.company_id = ?1
               AND p.active = 1 AND p.starts_at <= ?2 AND ?2 + 86400 < p.ends_at
             ORDER BY 1, 2 LIMIT 1",
            rusqlite::params![&grocers, FROZEN_AT],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    });
    let real = app
        .post("/devices")
        .key(KEY)
        .json(&json!({"company_id": grocers, "name": "Real player", "platform": "linux"}))
        .send()
        .await
        .ok()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let ad = app
        .post("/ads")
        .key(KEY)
        .json(
            &json!({"company_id": grocers, "name": "Agreed", "headline": "Agreed",
                      "status": "active", "duration_seconds": 10, "promotion_id": promotion}),
        )
        .send()
        .await
        .ok()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut w = World {
        app,
        ad,
        promotion,
        simulated,
        real,
        now: FROZEN_AT,
    };
    w.assign(true).await;

    // Assigned, active, no dates, its promotion switched on and running: every place plays it.
    assert_eq!(w.verdicts().await, (Verdicts::all(true), true));

    // Paused: none does.
    w.patch_ad(json!({"status": "paused"})).await;
    assert_eq!(w.verdicts().await, (Verdicts::all(false), false));
    w.patch_ad(json!({"status": "active"})).await;
    assert_eq!(w.verdicts().await, (Verdicts::all(true), true));

    // Unassigned: no screen plays it (the ad itself is still on air, for a screen that has it).
    w.assign(false).await;
    assert_eq!(w.verdicts().await, (Verdicts::all(false), true));
    w.assign(true).await;
    assert_eq!(w.verdicts().await, (Verdicts::all(true), true));

    // At its own end: none does.
    let ends = signage::time::rfc3339(w.now);
    w.patch_ad(json!({ "ends_at": ends })).await;
    assert_eq!(w.verdicts().await, (Verdicts::all(false), false));
    w.patch_ad(json!({ "ends_at": null })).await;
    assert_eq!(w.verdicts().await, (Verdicts::all(true), true));

    // Its promotion switched off: none does.
    w.app
        .post(&format!("/promotions/{}/deactivate", w.promotion))
        .key(KEY)
        .send()
        .await
        .ok();
    assert_eq!(w.verdicts().await, (Verdicts::all(false), false));
}
