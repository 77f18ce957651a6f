use super::*;
use serde_json::json;

#[test]
fn secret_names_are_redacted_and_token_domain_data_is_not() {
    for name in [
        "password",
        "password_hash",
        "secret",
        "secret_hash",
        "signing_secret",
        "webhookSecret",
        "rawKey",
        "api_key",
        "X-API-KEY",
        "authorization",
        "access_token",
        "refreshToken",
        "client_secret",
    ] {
        assert!(is_secret_field(name), "{name} should be secret");
    }
    for name in [
        "tokens",
        "token_balance",
        "balance",
        "token_pack_id",
        "activation_cost_tokens",
        "included_tokens_monthly",
        "brand_tokens",
        "kind",
        "amount",
        "key_id",
        "prefix",
        "client_id",
        "sha256",
        "secret_last_four",
        "name",
    ] {
        assert!(!is_secret_field(name), "{name} should be visible");
    }
}

#[test]
fn domain_token_objects_stay_visible() {
    let mut pack =
        json!({"object":"token_pack","name":"Starter pack","tokens":500,"price_cents":4900});
    let mut balance = json!({"object":"token_balance","company_id":"cmp_x","balance":1200});
    let mut tx = json!({"object":"token_transaction","kind":"spend","amount":-50,"balance_after":1150,
        "description":"Promotion activation tokens"});
    let mut branding = json!({"object":"branding","colors":{"primary":"#112233"},"fonts":{"heading":"Inter"},
        "brand_tokens":{"radius":8}});
    for v in [&mut pack, &mut balance, &mut tx, &mut branding] {
        let before = v.clone();
        redact_value(v);
        assert_eq!(*v, before);
    }
}

#[test]
fn secret_fields_and_values_are_replaced() {
    let mut v = json!({
        "rawKey": "sgn_test_abc",
        "secret": "whsec_xyz",
        "password_hash": null,
        "nested": [{"access_token": "x", "note": "use Bearer abc123.def456 please"}],
        "headline": "key sgn_test_VECFOkBoPCcq3rfr_ssqf9Y9xxptbfgNOxP5rqItR2hoMjFvg2yaUNr here",
        "jwt_in_text": "t=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.sig-_x; ok",
        "hash": "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA end",
        "hook": "whsec_abc123/+=",
    });
    redact_value(&mut v);
    assert_eq!(v["rawKey"], REDACTED);
    assert_eq!(v["secret"], REDACTED);
    assert_eq!(v["password_hash"], Value::Null);
    assert_eq!(v["nested"][0]["access_token"], REDACTED);
    assert_eq!(v["nested"][0]["note"], "use [REDACTED] please");
    assert_eq!(v["headline"], "key [REDACTED] here");
    assert_eq!(v["jwt_in_text"], "t=[REDACTED]; ok");
    assert_eq!(v["hash"], "[REDACTED] end");
    assert_eq!(v["hook"], REDACTED);
}

#[test]
fn the_fast_path_never_skips_a_redaction() {
    let samples = [
        json!({"id":"cmp_1","name":"Northwind Grocers","tokens":500,"balance":12}),
        json!({"rawKey":"x"}),
        json!({"Signing-Secret":"x"}),
        json!({"API_KEY":"x"}),
        json!({"x_api_key":"x"}),
        json!({"authorization":null}),
        json!({"note":"sgn_test_abc"}),
        json!({"note":"see whsec_1"}),
        json!({"note":"eyJa.eyJb.c"}),
        json!({"note":"$argon2id$v=19"}),
        json!({"note":"BEARER abc"}),
        json!({"refresh-token":"x"}),
        json!({"a":[{"b":{"session_token":"x"}}]}),
    ];
    for v in samples {
        let bytes = serde_json::to_vec(&v).unwrap();
        let mut redacted = v.clone();
        redact_value(&mut redacted);
        if redacted != v {
            assert!(needs_redaction(&bytes), "{v}");
        }
        let out = redact_json(&bytes).unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&out).unwrap(), redacted);
    }
    let clean = br#"{"object":"list","data":[{"name":"Caf\u00e9"}]}"#;
    assert!(
        needs_redaction(clean),
        "unicode escapes take the careful path"
    );
    let plain = br#"{"object":"list","data":[{"name":"Grocers","tokens":5}]}"#;
    assert!(!needs_redaction(plain));
    assert!(matches!(redact_json(plain), Some(Cow::Borrowed(_))));
    // Every secret name is found by some needle.
    for name in SECRET_NAMES {
        assert!(needs_redaction(name.as_bytes()), "{name}");
    }
}

#[test]
fn words_and_public_identifiers_are_not_secrets() {
    for s in [
        "Bearer of good news: 2-for-1",
        "Bearer bonds, bearer shares.",
        "sgn_test_VECFOkBoPCcq3rfr",
        "key prefix sgn_live_ABCdef1234567890 shown",
        "Our secret: fresh bread",
        "secret_last_four: 9f2a",
        "passwords must be long",
        "The api is fast",
    ] {
        assert_eq!(redact_str(s), s, "{s}");
    }
}

#[test]
fn secrets_in_free_text_are_caught() {
    let cases = [
        ("login password=hunter2 ok", "login password=[REDACTED] ok"),
        ("Password: hunter2", "Password: [REDACTED]"),
        ("db?user=a&pwd=s3cr3t&x=1", "db?user=a&pwd=[REDACTED]&x=1"),
        ("api_key=abc123;", "api_key=[REDACTED];"),
        ("client_secret:xyz", "client_secret:[REDACTED]"),
        (
            "Authorization: Bearer Zx81pQ0rT5u",
            "Authorization: [REDACTED]",
        ),
        (
            "key sgn_test_VECFOkBoPCcq3rfr_ssqf9Y9x here",
            "key [REDACTED] here",
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(redact_str(input), expected, "{input}");
        let bytes = serde_json::to_vec(&json!({ "note": input })).unwrap();
        assert!(needs_redaction(&bytes), "{input}");
    }
}

#[test]
fn ordinary_text_is_untouched() {
    for s in [
        "Spring sale: 20% off",
        "eyJ is not a token",
        "Send `Authorization: Bearer <key>`",
        "Café ünïcode — sgn_",
        "bearer",
    ] {
        assert!(matches!(redact_str(s), Cow::Borrowed(_)), "{s}");
    }
    assert_eq!(
        redact_str("Grüße Bearer x1y2z3w4 ünd"),
        "Grüße [REDACTED] ünd"
    );
}

/// A key of our format (fixture-shaped, not a live credential).
const KEY: &str = "sgn_test_VECFOkBoPCcq3rfr_ssqf9Y9xxptbfgNOxP5rqItR2hoMjFvg2yaUNr";
const JWT: &str = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLXg";

fn b64(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn b64url(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s)
}

fn percent_all(s: &str) -> String {
    s.bytes().map(|b| format!("%{b:02X}")).collect()
}

fn fullwidth(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '!'..='~' => char::from_u32(c as u32 - 0x21 + 0xFF01).unwrap(),
            c => c,
        })
        .collect()
}

/// Every disguise of a secret the redactor must see through: (label, input, expected output).
/// Whatever the disguise, the whole secret goes and the text around it stays.
fn disguised() -> Vec<(&'static str, String, String)> {
    let (kid_end, _) = KEY.match_indices('_').nth(2).unwrap();
    let w = |s: &str| format!("see {s} now");
    let gone = || "see [REDACTED] now".to_string();
    let jwt_parts: Vec<&str> = JWT.split('.').collect();
    vec![
        ("plain key", w(KEY), gone()),
        (
            "U+200B after the prefix",
            w(&KEY.replacen("sgn_test_", "sgn_test_\u{200B}", 1)),
            gone(),
        ),
        (
            "U+200B inside the secret, tail included",
            w(&format!(
                "{}\u{200B}{}",
                &KEY[..kid_end + 8],
                &KEY[kid_end + 8..]
            )),
            gone(),
        ),
        (
            "bidi override inside",
            w(&format!("{}\u{202E}{}", &KEY[..20], &KEY[20..])),
            gone(),
        ),
        ("uppercase key", w(&KEY.to_uppercase()), gone()),
        (
            "uppercase prefix",
            w(&KEY.replace("sgn_test_", "SGN_TEST_")),
            gone(),
        ),
        (
            "fullwidth underscores",
            w(&KEY.replace('_', "\u{FF3F}")),
            gone(),
        ),
        ("fullwidth everything", w(&fullwidth(KEY)), gone()),
        (
            "percent-encoded underscore",
            w(&KEY.replace('_', "%5F")),
            gone(),
        ),
        ("percent-encoded whole", w(&percent_all(KEY)), gone()),
        ("base64 key", w(&b64(KEY)), gone()),
        ("base64url key", w(&b64url(KEY)), gone()),
        (
            "base64 of a sentence with the key",
            w(&b64(&format!("key: {KEY}"))),
            gone(),
        ),
        ("webhook secret", w("whsec_c2VjcmV0LWJ5dGVz"), gone()),
        ("uppercase WHSEC_", w("WHSEC_c2VjcmV0LWJ5dGVz"), gone()),
        (
            "base64 webhook secret",
            w(&b64("whsec_c2VjcmV0LWJ5dGVz")),
            gone(),
        ),
        ("JWT", w(JWT), gone()),
        (
            "JWT with U+200B at the dots",
            w(&jwt_parts.join("\u{200B}.\u{200B}")),
            gone(),
        ),
        (
            "JWT with U+2024 at the dots",
            w(&jwt_parts.join("\u{2024}")),
            gone(),
        ),
        (
            "JWT with fullwidth dots",
            w(&jwt_parts.join("\u{FF0E}")),
            gone(),
        ),
        (
            "argon2 hash",
            w("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA"),
            gone(),
        ),
        ("bearer", w("Bearer Zx81pQ0rT5u"), gone()),
        (
            "the issue's headline",
            "Free Wi-Fi in store - password: Grocer2026".into(),
            "Free Wi-Fi in store - password: [REDACTED]".into(),
        ),
        (
            "zero-width inside a password",
            "password: Gro\u{200B}cer2026!".into(),
            "password: [REDACTED]".into(),
        ),
        (
            "password = x",
            "password = hunter2 ok".into(),
            "password = [REDACTED] ok".into(),
        ),
        (
            "Password: x",
            "Password: hunter2".into(),
            "Password: [REDACTED]".into(),
        ),
        (
            "JSON inside text",
            r#"cfg {"password":"hunter two"} end"#.into(),
            r#"cfg {"password":"[REDACTED]"} end"#.into(),
        ),
        (
            "JSON with spaces inside text",
            r#"{"user": "a", "password": "x y"}"#.into(),
            r#"{"user": "a", "password": "[REDACTED]"}"#.into(),
        ),
        (
            "escaped JSON inside text",
            r#"{\"api_key\":\"abc123\"}"#.into(),
            r#"{\"api_key\":\"[REDACTED]\"}"#.into(),
        ),
        (
            "pass=",
            "ftp login pass=s3cret!".into(),
            "ftp login pass=[REDACTED]".into(),
        ),
        (
            "token=",
            "https://x.test/?token=abc123&x=1".into(),
            "https://x.test/?token=[REDACTED]&x=1".into(),
        ),
        (
            "pwd=",
            "db?user=a&pwd=s3cr3t&x=1".into(),
            "db?user=a&pwd=[REDACTED]&x=1".into(),
        ),
        (
            "api_key=",
            "api_key=abc123;".into(),
            "api_key=[REDACTED];".into(),
        ),
        (
            "client_secret:",
            "client_secret:xyz".into(),
            "client_secret:[REDACTED]".into(),
        ),
        (
            "fullwidth password word",
            "ｐａｓｓｗｏｒｄ： hunter2".into(),
            "ｐａｓｓｗｏｒｄ： [REDACTED]".into(),
        ),
        (
            "Authorization: Basic",
            format!("Authorization: Basic {}", b64("admin:Grocer2026")),
            "Authorization: Basic [REDACTED]".into(),
        ),
        (
            "Authorization: Bearer",
            "Authorization: Bearer Zx81pQ0rT5u".into(),
            "Authorization: [REDACTED]".into(),
        ),
    ]
}

#[test]
fn every_disguise_of_a_secret_is_redacted_whole() {
    for (label, input, expected) in disguised() {
        assert_eq!(redact_str(&input), expected, "{label}: {input:?}");
        assert!(holds_secret(&input), "{label}");
        // A REST body holding it never takes the fast path.
        let body = serde_json::to_vec(&json!({ "note": input })).unwrap();
        assert!(needs_redaction(&body), "{label}");
        let out = redact_json(&body).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["note"], expected, "{label}");
    }
}

#[test]
fn look_alikes_stay_readable() {
    for s in [
        "Bearer of good news: 2-for-1",
        "Bearer bonds, bearer shares.",
        "sgn_test_VECFOkBoPCcq3rfr",
        "SGN_TEST_VECFOKBOPCCQ3RFR",
        "key prefix sgn_live_ABCdef1234567890 shown",
        "ad_0mhh4zb1k0000000000a1",
        "key_0mhh4zb1k0000000000a1 and cli_0mhh4zb1k0000000000a1",
        "dev_0mhh4zb1k0000000000a1,promo_0mhh4zb1k0000000000a1",
        "Brand tokens: primary #112233, radius 8",
        "Token packs from 500 tokens; token pack: Starter",
        "token: thanks for scanning",
        "Day pass: 5 EUR",
        "Compass: north",
        "Our secret: fresh bread",
        "secret_last_four: 9f2a",
        "Basic plan: 3 screens",
        "passwords must be long",
        "The api is fast",
        "Spring sale: 20% off, 100%25 sure",
        "https://example.com/spring?utm_source=qr&utm_campaign=spring_2026",
        "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "Café ünïcode — ＳＡＬＥ ５０％",
        "Free Wi-Fi in store",
        "Send `Authorization: Bearer <key>`",
    ] {
        assert_eq!(redact_str(s), s, "{s}");
        assert!(!holds_secret(s), "{s}");
    }
}

#[test]
fn the_marker_is_found_in_any_case_or_width() {
    for s in [
        "[REDACTED]",
        "password: [redacted]",
        "x ［REDACTED］ y",
        "[RE\u{200B}DACTED]",
    ] {
        assert!(contains_marker(s), "{s}");
    }
    for s in ["REDACTED", "[REDACT]", "redacted text"] {
        assert!(!contains_marker(s), "{s}");
    }
    let v = json!({"changes": {"name": "x", "headline": "password: [REDACTED]"}});
    assert_eq!(marker_path(&v, "").as_deref(), Some("changes.headline"));
    assert_eq!(marker_path(&json!({"a": ["b", 1]}), ""), None);
}

#[test]
fn odd_text_never_breaks_the_redactor() {
    let long = "é".repeat(300);
    for s in [
        format!("password=\"{long}\""),
        format!("password='{long}"),
        format!("token={long}"),
        format!("%{long}%4"),
        format!("{}{long}", "A".repeat(40)),
        "%".into(),
        "%Z".into(),
        "password:".into(),
        "\"password\":".into(),
        "Basic ====".into(),
        "eyJ.eyJ.".into(),
        "\u{200B}\u{200B}".into(),
    ] {
        let out = redact_str(&s);
        assert!(out.len() <= s.len() + REDACTED.len());
        let _ = holds_secret(&s);
    }
    assert_eq!(
        redact_str(&format!("password=\"{long}\" end")),
        "password=\"[REDACTED]\" end"
    );
}
