//! Property tests of the parsers that face the network, called directly (no server): the query
//! string, percent-decoding, the API key format, id shapes and JSON-RPC message classification.
//!
//! Each property runs a bounded number of generated cases (see `config`), so the suite stays fast
//! and deterministic enough for CI; proptest shrinks any failure to the smallest input that breaks
//! it. The properties are "never panics" plus what a correct answer must satisfy. The same parsers
//! are fuzzed end to end over HTTP in `tests/api/fuzz.rs`.

use proptest::prelude::*;
use serde_json::{json, Value};
use signage::auth::keys;
use signage::http::query;
use signage::ids::{self, Kind};
use signage::mcp::protocol::{classify, Message};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 2_000,
        // Keep the checkout clean: a failure is reported with its shrunk input, not written to disk.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Percent-encodes every byte outside the unreserved set, as a client library would.
fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Arbitrary JSON values, nested a few levels deep, with the member names JSON-RPC cares about
/// over-represented so that near-valid messages are common.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("2.0"),
            Just("1.0"),
            Just("tools/call"),
            Just("initialize")
        ]
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(3, 32, 6, |inner| {
        let name = prop_oneof![
            Just("jsonrpc".to_string()),
            Just("id".to_string()),
            Just("method".to_string()),
            Just("params".to_string()),
            Just("result".to_string()),
            Just("error".to_string()),
            "[a-z]{1,6}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(name, inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(config())]

    /// Any query string: no panic; a success has no repeated name.
    #[test]
    fn query_parse_never_panics(raw in ".{0,200}") {
        if let Ok(pairs) = query::parse(&raw) {
            let mut names: Vec<&String> = pairs.iter().map(|(k, _)| k).collect();
            let before = names.len();
            names.sort();
            names.dedup();
            prop_assert_eq!(before, names.len());
        }
    }

    /// Query strings built from bytes a client may send, including `%`, `+`, `&` and `=`.
    #[test]
    fn query_parse_handles_hostile_bytes(raw in "[a-z0-9%+&=;#?/ \\x00-\\x1f\\u{80}-\\u{10FFFF}]{0,80}") {
        let _ = query::parse(&raw);
    }

    /// What a client encodes, the parser gives back, in order.
    #[test]
    fn query_round_trips(pairs in prop::collection::btree_map(".{1,16}", ".{0,24}", 0..8)) {
        let raw = pairs
            .iter()
            .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
            .collect::<Vec<_>>()
            .join("&");
        let parsed = query::parse(&raw).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        let expected: Vec<(String, String)> = pairs.into_iter().collect();
        prop_assert_eq!(parsed, expected);
    }

    #[test]
    fn percent_decode_round_trips(s in ".{0,64}") {
        prop_assert_eq!(query::percent_decode(&encode(&s), true), Some(s.clone()));
        prop_assert_eq!(query::percent_decode(&encode(&s), false), Some(s));
    }

    /// Any string offered as an API key: no panic, and only well-formed keys parse.
    #[test]
    fn key_parse_never_panics(raw in ".{0,120}") {
        if let Some(parsed) = keys::parse(&raw) {
            prop_assert!(raw.starts_with(keys::PREFIX));
            prop_assert_eq!(raw.len(), keys::RAW_LEN);
            prop_assert!(parsed.key_id().starts_with("key_"));
        }
    }

    /// A generated key parses; changing any one character of it is caught without the database
    /// (shape or checksum), so a typo never costs a query.
    #[test]
    fn key_typos_are_caught(pos in 0usize..keys::RAW_LEN, replacement in "[0-9A-Za-z_]") {
        let key = keys::generate(None);
        prop_assert!(keys::parse(&key.raw).is_some());
        let mut typo: Vec<char> = key.raw.chars().collect();
        let replacement = replacement.chars().next().unwrap_or('x');
        prop_assume!(typo[pos] != replacement);
        typo[pos] = replacement;
        let typo: String = typo.into_iter().collect();
        prop_assert!(keys::parse(&typo).is_none(), "{} was accepted", typo);
    }

    /// Id shapes: no panic on any input; ids the service makes are valid for their kind only.
    #[test]
    fn id_shapes(raw in ".{0,80}") {
        for kind in [Kind::Device, Kind::Ad, Kind::Company, Kind::TokenTransaction] {
            if ids::is_valid(kind, &raw) {
                prop_assert!(raw.starts_with(kind.prefix()));
                prop_assert!(raw.len() <= kind.prefix().len() + 1 + 64);
            }
        }
        let made = ids::new_id(&signage::time::Clock::system(), None, Kind::Ad);
        prop_assert!(ids::is_valid(Kind::Ad, &made));
        prop_assert!(!ids::is_valid(Kind::Device, &made));
    }

    /// Any JSON value: classification never panics, and what it calls a request really is one.
    #[test]
    fn jsonrpc_classification(v in json_value()) {
        match classify(&v) {
            Message::Request { id, method, params } => {
                prop_assert_eq!(&v["jsonrpc"], "2.0");
                prop_assert!(id.is_string() || id.is_number());
                prop_assert_eq!(v["method"].as_str(), Some(method));
                prop_assert!(params.is_none_or(|p| p.is_object() || p.is_array()));
            }
            Message::Notification { method } => {
                prop_assert_eq!(&v["jsonrpc"], "2.0");
                prop_assert!(v.get("id").is_none());
                prop_assert_eq!(v["method"].as_str(), Some(method));
            }
            Message::Response => {
                prop_assert!(v.get("method").is_none());
                prop_assert!(v.get("result").is_some() || v.get("error").is_some());
            }
            Message::Invalid { id, reason } => {
                prop_assert!(!reason.is_empty());
                prop_assert!(id.is_none_or(|id| id.is_string() || id.is_number()));
            }
        }
    }
}

/// A multipart part's bytes, with the boundary's characters over-represented.
fn form_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            Just(b"--B".to_vec()),
            Just(b"\r\n".to_vec()),
            Just(b"Content-Disposition: form-data; name=\"f\"".to_vec()),
            Just(b"Content-Type: image/png".to_vec()),
            prop::collection::vec(any::<u8>(), 0..4),
        ],
        0..24,
    )
    .prop_map(|chunks| chunks.concat())
}

proptest! {
    #![proptest_config(config())]

    /// Uploads: any body parses or is refused without a panic, and every part it yields lies
    /// inside the body and contains no delimiter.
    #[test]
    fn multipart_never_panics_and_parts_hold_no_delimiter(body in form_bytes()) {
        use signage::http::multipart;
        if let Ok(parts) = multipart::parse(&body, "B") {
            for p in parts {
                prop_assert!(p.body.end <= body.len());
                let bytes = &body[p.body];
                prop_assert!(!bytes.windows(5).any(|w| w == b"\r\n--B"));
            }
        }
    }

    #[test]
    fn multipart_boundary_never_panics(s in ".{0,120}") {
        if let Some(b) = signage::http::multipart::boundary(&s) {
            prop_assert!(!b.is_empty() && b.len() <= 70);
        }
    }
}
