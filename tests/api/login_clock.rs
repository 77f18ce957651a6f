//! Issue 31 item 3: one clock for login tokens. A login token is issued and checked on the wall
//! clock, whatever the sandbox clock shows, and never lives longer in real time than its stated
//! life: not after a restart on another clock, not on a clock moved to 2031, and a clock set back
//! to 2020 does not refuse every token at once.

use crate::helpers::*;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

const SECRET: &str = "a-login-secret-shared-by-two-runs-of-one-sandbox";
const Y2031: i64 = 1_924_992_000; // 2031-01-01T00:00:00Z
const Y2020: i64 = 1_577_836_800; // 2020-01-01T00:00:00Z

async fn on_clock(clock: Option<i64>) -> TestApp {
    TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(clock);
        l.jwt_secret = Some(SECRET.into());
    })
    .await
}

async fn login(app: &TestApp) -> (String, Value) {
    let (user, password) = demo().users[0].clone();
    let body = app
        .post("/auth/login")
        .json(&json!({"username": user, "password": password}))
        .send()
        .await
        .ok();
    let token = body["access_token"].as_str().unwrap().to_string();
    (token.clone(), claims_of(&token))
}

fn claims_of(token: &str) -> Value {
    use base64::Engine;
    let payload = token.split('.').nth(1).unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn wall() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn sign(sub: &str, iat: i64, exp: i64) -> String {
    let claims = json!({"iss": "signage-sandbox", "aud": "signage-api", "sub": sub,
        "iat": iat, "exp": exp, "typ": "user_session"});
    encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .unwrap()
}

#[tokio::test]
async fn a_token_is_issued_and_checked_on_the_wall_clock_whatever_the_sandbox_clock() {
    for clock in [Some(Y2031), Some(Y2020), None] {
        let app = on_clock(clock).await;
        let (token, claims) = login(&app).await;
        let iat = claims["iat"].as_i64().unwrap();
        let exp = claims["exp"].as_i64().unwrap();
        assert!((iat - wall()).abs() <= 5, "{clock:?}: iat {iat} is not now");
        assert_eq!(exp - iat, 3600, "{clock:?}: the stated life");
        // Valid at once (a clock in 2020 refused every token), and it says when it ends.
        let me = app.get("/me").bearer(&token).send().await.ok();
        assert_eq!(me["type"], "user", "{clock:?}");
        assert_eq!(
            me["expires_at"],
            json!(signage::time::rfc3339(exp)),
            "{clock:?}"
        );
    }
}

#[tokio::test]
async fn a_token_never_outlives_its_stated_life_across_clocks_and_restarts() {
    // Issued by a run on 2031, then the sandbox restarts on the system clock with the same secret.
    let future = on_clock(Some(Y2031)).await;
    let (token, claims) = login(&future).await;
    let user = claims["sub"].as_str().unwrap().to_string();
    drop(future);
    let system = on_clock(None).await;
    // Its stated life is an hour of real time: valid now, on either clock.
    system.get("/me").bearer(&token).send().await.ok();
    // What the old server issued on its 2031 clock (exp four years ahead) is refused: its iat is
    // ahead of the wall clock.
    let from_2031 = sign(&user, Y2031, Y2031 + 3600);
    let p = system
        .get("/me")
        .bearer(&from_2031)
        .send()
        .await
        .problem(401);
    assert_eq!(p["code"], "invalid_token");
    // A token whose hour of real time is over is refused, on a clock moved ahead or set back, to
    // the second (no leeway).
    let now = wall();
    let lapsed = sign(&user, now - 3601, now - 1);
    // From the second `exp` names on, not a second later: a token whose `exp` is now.
    let ending = sign(&user, now - 60, now);
    let p = system.get("/me").bearer(&ending).send().await.problem(401);
    assert_eq!(p["code"], "expired_token");
    for clock in [None, Some(Y2031), Some(Y2020)] {
        let app = on_clock(clock).await;
        let p = app.get("/me").bearer(&lapsed).send().await.problem(401);
        assert_eq!(p["code"], "expired_token", "{clock:?}");
        // A life longer than the configured one is not this server's token.
        let long = sign(&user, now - 10, now + 7200);
        let p = app.get("/me").bearer(&long).send().await.problem(401);
        assert_eq!(p["code"], "invalid_token", "{clock:?}");
    }
    // Freezing the clock and advancing it does not stretch or cut a token either.
    let frozen = on_clock(Some(Y2020)).await;
    let (token, _) = login(&frozen).await;
    let r = frozen
        .post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&json!({"seconds": 30 * 86_400}))
        .send()
        .await;
    assert!(r.status.is_success(), "{}", r.text());
    frozen.get("/me").bearer(&token).send().await.ok();
}

/// A wrong password for `user`, `n` times: each is 401.
async fn fail_logins(app: &TestApp, user: &str, n: usize) {
    for _ in 0..n {
        let r = app
            .post("/auth/login")
            .json(&json!({"username": user, "password": "wrong-password"}))
            .send()
            .await;
        assert_eq!(r.problem(401)["code"], "invalid_credentials");
    }
}

/// The seconds a throttled login is told to wait, with the right password.
async fn throttled(app: &TestApp, user: &str, password: &str, context: &str) -> u64 {
    let r = app
        .post("/auth/login")
        .json(&json!({"username": user, "password": password}))
        .send()
        .await;
    assert_eq!(r.status, 429, "{context}: {}", r.text());
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=300).contains(&retry), "{context}: {retry}");
    retry
}

#[tokio::test]
async fn moving_the_sandbox_clock_neither_unlocks_nor_stretches_a_login_throttle() {
    // The failed-login window is real time: advancing the sandbox clock past it (or an hour past)
    // does not let the right password in, on a running clock or on a frozen one, and the wait
    // announced does not grow either.
    for clock in [None, Some(Y2020)] {
        let app = on_clock(clock).await;
        let (user, password) = demo().users[1].clone();
        fail_logins(&app, &user, 5).await;
        let before = throttled(&app, &user, &password, &format!("{clock:?}")).await;
        for seconds in [301, 3_600] {
            let r = app
                .post("/_sandbox/clock/advance")
                .key("sandbox-operator")
                .json(&json!({"seconds": seconds}))
                .send()
                .await;
            assert!(r.status.is_success(), "{}", r.text());
            let after = throttled(&app, &user, &password, &format!("{clock:?} +{seconds}s")).await;
            assert!(after <= before, "{clock:?} +{seconds}s: {after} > {before}");
        }
        // Another user is not locked by this one's failures, whatever the clock shows.
        let (other, other_password) = demo().users[0].clone();
        app.login(&other, &other_password).await;
    }
}
