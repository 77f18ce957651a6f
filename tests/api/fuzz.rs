//! Tests: fuzz. Generated hostile input through real HTTP, against the parsers that face the
//! network: credential headers, query strings and cursors, JSON bodies, JSON-RPC messages.
//!
//! The property is the same everywhere: the server never fails (no 5xx, no dropped connection),
//! and every refusal is a well-formed answer: RFC 9457 problem+json on REST, a JSON-RPC error (or a
//! problem for the transport) on `/mcp`. Inputs come from a seeded generator, so a failure names
//! its seed and case and replays exactly; the case counts are bounded so the run stays short.

use crate::helpers::mcp::ACCEPT_BOTH;
use crate::helpers::{key, TestApp, TestResponse};
use serde_json::{json, Value};

/// SplitMix64: small, fast and good enough to spread inputs; seeded for replay.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
    /// A string of visible ASCII, spaces and the characters parsers trip on.
    fn header_text(&mut self, max: usize) -> String {
        const ALPHABET: &[u8] =
            b"abcXYZ019_-.=,;:\"' \t%+/\\sgn_test_key_cli_Bearer{}[]()<>@!?*&#~`^|$";
        let len = self.below(max + 1);
        (0..len)
            .map(|_| ALPHABET[self.below(ALPHABET.len())] as char)
            .collect()
    }
    /// Query text, sometimes percent-encoded garbage or bytes outside UTF-8.
    fn query_text(&mut self, max: usize) -> String {
        const PIECES: &[&str] = &[
            "a",
            "Z",
            "0",
            "9",
            "_",
            "-",
            "%",
            "%2",
            "%zz",
            "%00",
            "%FF",
            "%C3%A9",
            "%E2%80",
            "+",
            "&",
            "=",
            ";",
            "dev_",
            "ad_",
            "cmp_",
            "..",
            "'",
            "%27",
            "%22",
            "null",
            "true",
            "-1",
            "999999999999999999999",
        ];
        let n = self.below(max + 1);
        (0..n).map(|_| self.pick(PIECES)).collect()
    }
    fn json(&mut self, depth: u32) -> Value {
        let choice = if depth == 0 {
            self.below(6)
        } else {
            self.below(9)
        };
        match choice {
            0 => Value::Null,
            1 => json!(self.below(2) == 1),
            2 => json!(self.next() as i64),
            3 => json!((self.next() % 10_000) as f64 / 7.0),
            4 => json!(self.header_text(12)),
            5 => json!(self.pick(&["2.0", "tools/call", "initialize", "ping", "cmp_", ""])),
            6 | 7 => {
                let n = self.below(5);
                let mut obj = serde_json::Map::new();
                for _ in 0..n {
                    let name = self
                        .pick(&[
                            "jsonrpc",
                            "id",
                            "method",
                            "params",
                            "name",
                            "arguments",
                            "limit",
                            "cursor",
                            "company_id",
                            "x",
                        ])
                        .to_string();
                    obj.insert(name, self.json(depth - 1));
                }
                Value::Object(obj)
            }
            _ => {
                let n = self.below(4);
                Value::Array((0..n).map(|_| self.json(depth - 1)).collect())
            }
        }
    }
}

/// The rate limiter would answer most cases with 429 before they reach the parsers under test.
async fn spawn_unthrottled() -> TestApp {
    TestApp::spawn_with(|l| l.rate_limit_per_second = Some(0.0)).await
}

/// No 5xx, and a 4xx is a problem with the documented members.
#[track_caller]
fn assert_handled(r: &TestResponse, what: &str) {
    assert!(
        r.status.as_u16() < 500,
        "{what}: status {} {}",
        r.status,
        r.text()
    );
    if r.status.is_client_error() {
        assert_eq!(
            r.header("content-type"),
            Some("application/problem+json"),
            "{what}: {}",
            r.text()
        );
        let body = r.json();
        assert_eq!(body["status"], r.status.as_u16(), "{what}: {body}");
        assert!(body["detail"].is_string(), "{what}: {body}");
    }
}

#[tokio::test]
async fn credential_headers_never_break_authentication() {
    let app = spawn_unthrottled().await;
    let good = key("northwind-readonly");
    let mut g = Gen(0x5157_0001);
    let mut seen = std::collections::BTreeSet::new();
    for case in 0..400 {
        let mut req = app.get("/companies");
        let what = format!("seed 0x51570001 case {case}");
        // Each header independently: absent, garbage, or a real value (so one bad part among good
        // ones is exercised too).
        match g.below(4) {
            0 => {}
            1 => req = req.header("x-api-key", &g.header_text(80)),
            2 => req = req.header("x-api-key", &good.raw),
            _ => {
                let mut raw = good.raw.clone();
                let at = g.below(raw.len());
                raw.replace_range(at..at + 1, "Q");
                req = req.header("x-api-key", &raw)
            }
        }
        match g.below(4) {
            0 => {}
            1 => req = req.header("authorization", &g.header_text(80)),
            2 => {
                let scheme = g.pick(&["Bearer", "bearer", "Basic", "Token", ""]);
                req = req.header("authorization", &format!("{scheme} {}", good.raw))
            }
            _ => {
                let token = g.header_text(60);
                req = req.header("authorization", &format!("Bearer {token}"))
            }
        }
        if g.below(3) > 0 {
            let client = if g.below(2) == 0 {
                good.client_id.clone()
            } else {
                g.header_text(30)
            };
            req = req.header("x-service-client-id", &client);
        }
        let r = req.send().await;
        assert_handled(&r, &what);
        if r.status == 401 {
            assert!(r.header("www-authenticate").is_some(), "{what}");
        }
        seen.insert(r.status.as_u16());
    }
    // The generator reaches both sides of the parser: accepted and refused credentials.
    assert!(seen.contains(&200) && seen.contains(&401), "{seen:?}");
}

#[tokio::test]
async fn query_strings_and_cursors_are_answered_or_refused() {
    let app = spawn_unthrottled().await;
    let mut g = Gen(0x5157_0002);
    let mut seen = std::collections::BTreeSet::new();
    let lists = [
        "/companies",
        "/devices",
        "/ads",
        "/promotions",
        "/media",
        "/webhooks",
        "/tokens/transactions",
        "/invoices",
        "/audit-log",
    ];
    let names = [
        "limit",
        "cursor",
        "company_id",
        "status",
        "order",
        "x",
        "",
        "limit%00",
    ];
    for case in 0..400 {
        let path = g.pick(&lists);
        let n = g.below(4);
        let query: Vec<String> = (0..n)
            .map(|_| {
                let name = g.pick(&names);
                format!("{name}={}", g.query_text(6))
            })
            .collect();
        let url = format!("{path}?{}", query.join("&"));
        let key_name = if path == "/audit-log" {
            "northwind-admin"
        } else {
            "northwind-readonly"
        };
        let r = app.get(&url).key(key_name).send().await;
        assert_handled(&r, &format!("seed 0x51570002 case {case}: GET {url}"));
        seen.insert(r.status.as_u16());
    }
    assert!(
        seen.contains(&200) && seen.iter().any(|s| (400..500).contains(s)),
        "{seen:?}"
    );
}

#[tokio::test]
async fn json_bodies_never_break_a_write() {
    let app = spawn_unthrottled().await;
    let mut g = Gen(0x5157_0003);
    let writes = ["/ads", "/devices", "/promotions", "/webhooks", "/api-keys"];
    for case in 0..300 {
        let path = g.pick(&writes);
        let body = match g.below(4) {
            // Raw bytes that are not JSON, or JSON cut short.
            0 => g.header_text(40).into_bytes(),
            1 => {
                let full = serde_json::to_vec(&g.json(3)).unwrap_or_default();
                let cut = g.below(full.len() + 1);
                full[..cut].to_vec()
            }
            _ => serde_json::to_vec(&g.json(3)).unwrap_or_default(),
        };
        let key_name = if path == "/api-keys" || path == "/webhooks" {
            "northwind-admin"
        } else {
            "northwind-readwrite"
        };
        let r = app
            .post(path)
            .key(key_name)
            .raw("application/json", body.clone())
            .send()
            .await;
        let what = format!(
            "seed 0x51570003 case {case}: POST {path} {}",
            String::from_utf8_lossy(&body)
        );
        assert_handled(&r, &what);
    }
}

#[tokio::test]
async fn jsonrpc_messages_get_jsonrpc_answers() {
    let app = spawn_unthrottled().await;
    let k = key("northwind-readonly");
    let mut g = Gen(0x5157_0004);
    let (mut results, mut errors) = (0, 0);
    for case in 0..400 {
        // Mostly message-shaped objects with random members, sometimes batches or scalars.
        let msg = match g.below(6) {
            0 => g.json(3),
            1 => Value::Array((0..g.below(4)).map(|_| g.json(2)).collect()),
            _ => {
                let mut m = json!({"jsonrpc": "2.0"});
                if g.below(4) > 0 {
                    m["id"] = if g.below(3) == 0 {
                        g.json(1)
                    } else {
                        json!(case)
                    };
                }
                m["method"] = json!(g.pick(&[
                    "tools/call",
                    "tools/list",
                    "initialize",
                    "ping",
                    "resources/list",
                    "prompts/get",
                    "notifications/initialized",
                    "nonsense",
                ]));
                if g.below(4) > 0 {
                    let mut params = g.json(2);
                    if g.below(2) == 0 {
                        params = json!({
                            "name": g.pick(&["list_devices", "get_ad", "list_companies", "prepare_ad_change", "nope"]),
                            "arguments": g.json(2),
                        });
                    }
                    m["params"] = params;
                }
                m
            }
        };
        let version = g.pick(&["2025-11-25", "2025-03-26", "2025-06-18", "1999-01-01"]);
        let r = app
            .post("/mcp")
            .bearer(&k.raw)
            .header("x-service-client-id", &k.client_id)
            .header("accept", ACCEPT_BOTH)
            .header("mcp-protocol-version", version)
            .json(&msg)
            .send()
            .await;
        let what = format!("seed 0x51570004 case {case}: {msg}");
        assert!(r.status.as_u16() < 500, "{what}: {} {}", r.status, r.text());
        match r.status.as_u16() {
            // Notifications and responses only.
            202 => assert!(r.body.is_empty(), "{what}"),
            _ if r.header("content-type") == Some("application/problem+json") => {
                assert!(r.status.is_client_error(), "{what}");
            }
            _ => {
                let body = r.json();
                let answers: Vec<&Value> = match &body {
                    Value::Array(items) => items.iter().collect(),
                    one => vec![one],
                };
                for a in answers {
                    assert_eq!(a["jsonrpc"], "2.0", "{what}: {body}");
                    assert!(
                        a.get("result").is_some() != a.get("error").is_some(),
                        "{what}: exactly one of result and error: {body}"
                    );
                    if let Some(e) = a.get("error") {
                        assert!(e["code"].is_i64() && e["message"].is_string(), "{what}");
                        errors += 1;
                    } else {
                        results += 1;
                    }
                }
            }
        }
    }
    assert!(
        results > 0 && errors > 0,
        "results {results}, errors {errors}"
    );
}
