//! The readiness scenarios' tools: a seeded random source (so every jittered run can be replayed
//! by its seed), back-off policies as real clients write them, a client that creates with
//! retries, and the report's accessors.

use crate::helpers::{company_id, key, TestApp, TestResponse};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::Duration;

pub const OP: &str = "sandbox-operator";

/// SplitMix64: a seeded source of jitter, replayable by its seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `[0, max)` milliseconds.
    pub fn below(&mut self, max: u64) -> u64 {
        if max == 0 {
            0
        } else {
            self.next() % max
        }
    }
}

/// How a client waits before its `n`th retry (n from 0).
#[derive(Clone, Copy, Debug)]
pub enum Backoff {
    /// AWS "full jitter": random(0, base · 2^n).
    FullJitter { base_ms: u64 },
    /// The same wait every time.
    Constant { ms: u64 },
    /// `Retry-After` when the answer has one (plus a little jitter), else full jitter.
    RetryAfterThenJitter { base_ms: u64 },
    /// At once.
    Immediate,
    /// stamina's defaults: 0.1 s · 2ⁿ plus a uniform jitter of up to 1 s.
    Stamina,
    /// A library's own waits, exactly (the last one repeated), plus `path_ms` of per-request
    /// overhead: the answer's and the retry's travel over a real network, which a local test
    /// lacks and which moves the measured ratio of 1 s then 2 s under 2.
    Waits { ms: &'static [u64], path_ms: u64 },
}

impl Backoff {
    pub fn wait(&self, rng: &mut Rng, n: u32, answer: &TestResponse) -> Duration {
        let ms = match *self {
            Backoff::FullJitter { base_ms } => rng.below(base_ms << n),
            Backoff::Constant { ms } => ms,
            Backoff::Immediate => 0,
            Backoff::Stamina => (100 << n) + rng.below(1000),
            Backoff::Waits { ms, path_ms } => {
                let i = usize::try_from(n).unwrap_or(usize::MAX).min(ms.len() - 1);
                ms[i] + path_ms
            }
            Backoff::RetryAfterThenJitter { base_ms } => {
                match answer
                    .header("retry-after")
                    .and_then(|v| v.parse::<u64>().ok())
                {
                    Some(secs) => secs * 1000 + 20 + rng.below(100),
                    None => rng.below(base_ms << n),
                }
            }
        };
        Duration::from_millis(ms)
    }
}

pub fn rid(r: &TestResponse) -> String {
    r.header("request-id").unwrap().to_string()
}

/// A frozen sandbox without the simulated fleet: what the journal holds is the client's doing.
pub async fn sandbox() -> TestApp {
    TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(crate::sandbox_clock::FROZEN_AT));
        l.sandbox_simulate_fleet = Some(false);
    })
    .await
}

/// An ad body of the Grocers.
pub fn ad(name: &str) -> Value {
    json!({"company_id": company_id("Northwind Grocers"), "name": name, "headline": "Fresh today"})
}

/// Makes the next `times` creates of ads answer `status` (with `Retry-After` when given).
pub async fn fail_creates(app: &TestApp, status: u16, retry_after: Option<u32>, times: u32) {
    let mut action = json!({"type": "status", "status": status});
    if let Some(s) = retry_after {
        action["retry_after"] = json!(s);
    }
    app.post("/_sandbox/faults")
        .key(OP)
        .json(&json!({"match": {"operation_id": "createAd"}, "action": action, "times": times}))
        .send()
        .await
        .ok();
}

/// Makes the next `times` requests of `operation_id` answer `status` (with `Retry-After` when
/// given).
pub async fn fail_operation(
    app: &TestApp,
    operation_id: &str,
    status: u16,
    retry_after: Option<u32>,
    times: u32,
) {
    let mut action = json!({"type": "status", "status": status});
    if let Some(s) = retry_after {
        action["retry_after"] = json!(s);
    }
    app.post("/_sandbox/faults")
        .key(OP)
        .json(&json!({"match": {"operation_id": operation_id}, "action": action, "times": times}))
        .send()
        .await
        .ok();
}

/// Creates `body` as `key_name`, with `Idempotency-Key: idem` (when given), retrying answers of
/// 5xx and 429 with `backoff` until one is below 500 (at most `tries`); every answer, in order.
pub async fn create_with_retries(
    app: &TestApp,
    key_name: &str,
    body: &Value,
    idem: Option<&str>,
    backoff: Backoff,
    rng: &mut Rng,
    tries: u32,
) -> Vec<TestResponse> {
    let mut answers = Vec::new();
    for n in 0..tries {
        let mut req = app.post("/ads").key(key_name).json(body);
        if let Some(k) = idem {
            req = req.header("idempotency-key", k);
        }
        let r = req.send().await;
        let again = r.status.as_u16() >= 500 || r.status.as_u16() == 429;
        let wait = backoff.wait(rng, n, &r);
        answers.push(r);
        if !again {
            break;
        }
        tokio::time::sleep(wait).await;
    }
    answers
}

/// The report of the demo account (Northwind), as the operator reads it.
pub async fn report(app: &TestApp) -> Value {
    report_after(app, None).await
}

pub async fn report_after(app: &TestApp, after: Option<&str>) -> Value {
    let account = key("northwind-admin").account_id;
    let after = after.map(|a| format!("&after={a}")).unwrap_or_default();
    app.get(&format!("/_sandbox/readiness?account_id={account}{after}"))
        .key(OP)
        .send()
        .await
        .ok()
}

pub fn check<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id}: {report}"))
}

pub fn status<'a>(report: &'a Value, id: &str) -> &'a str {
    check(report, id)["status"].as_str().unwrap()
}

pub fn evidence(report: &Value, id: &str) -> HashSet<String> {
    check(report, id)["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().to_string())
        .collect()
}

/// A journal mark, taken as a harness takes it before a test.
pub async fn mark(app: &TestApp) -> String {
    let m = app.get("/requests/mark").key(OP).send().await.ok();
    assert_eq!(m["object"], "request_mark");
    m["after"].as_str().unwrap().to_string()
}

/// The wall clock as a client stamps its requests (milliseconds, RFC 3339).
pub fn now_rfc3339() -> String {
    signage::sandbox::journal::store::rfc3339_ms(signage::http::observe::wall_millis())
}
