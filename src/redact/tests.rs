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

/// Every form of the marker issue 30 lists, and more: each is the marker once read.
const MARKER_FORMS: &[&str] = &[
    "[REDACTED]",
    "[redacted]",
    "%5BREDACTED%5D",
    "%5bREDACTED%5d",
    "%255BREDACTED%255D",
    "[ REDACTED ]",
    "[  R E D A C T E D  ]",
    "[RE-DACTED]",
    "[REDACTED",
    "\u{FF3B}REDACTED\u{FF3D}",
    "\u{FF3B}\u{FF32}\u{FF25}\u{FF24}\u{FF21}\u{FF23}\u{FF34}\u{FF25}\u{FF24}\u{FF3D}",
    "[R\u{0415}DACTED]",
    "[REDA\u{0421}TED]",
    "[R\u{0415}D\u{0410}\u{0421}\u{0422}\u{0415}D]",
    "[RED\u{0391}CTED]",
    "[RE\u{200B}DACTED]",
    "&#91;REDACTED&#93;",
    "&#x5B;REDACTED&#x5D;",
    "&lsqb;REDACTED&rsqb;",
    "&lbrack;REDACTED&rbrack;",
    "&amp;#91;REDACTED&amp;#93;",
    "\\u005BREDACTED\\u005D",
    "\\[REDACTED\\]",
    "[&#82;EDACTED]",
    "\u{27E6}REDACTED\u{27E7}",
    "\u{3010}REDACTED\u{3011}",
];

#[test]
fn the_marker_is_recognised_in_every_form() {
    for form in MARKER_FORMS {
        for text in [
            form.to_string(),
            format!("https://h.example/x?token={form}&v=2"),
        ] {
            assert!(marker::bracketed(&text), "{text}");
            assert!(marker::anywhere(&text), "{text}");
        }
    }
    // Without brackets, only where the stored value held a secret.
    for form in [
        "REDACTED",
        "redacted",
        "R.E.D.A.C.T.E.D",
        "REDACTED]",
        "%52EDACTED",
    ] {
        assert!(!marker::bracketed(form), "{form}");
        assert!(marker::anywhere(form), "{form}");
    }
    for text in [
        "REDACT",
        "[REDACT]",
        "redaction",
        "Shared acted",
        "[Redacted edition] sale",
        "Redacted edition: the director's cut",
        "[NEW] Summer menu",
        "100% sure",
    ] {
        assert!(!marker::bracketed(text), "{text}");
    }
    assert!(!marker::anywhere("Shared acted") && !marker::anywhere("redaction"));
    let v = json!({"changes": {"name": "x", "headline": "password: %5BREDACTED%5D"}});
    assert_eq!(
        marker::bracketed_path(&v, "").as_deref(),
        Some("changes.headline")
    );
    assert_eq!(marker::bracketed_path(&json!({"a": ["b", 1]}), ""), None);
}

#[test]
fn the_bare_word_is_refused_only_where_a_secret_was() {
    let current = json!({"url": "https://h.example/in?token=abc123XYZsecret", "description": "Orders feed",
        "password": "x", "tags": ["a", "pwd=hunter2"]});
    let changes = |v: Value| v.as_object().unwrap().clone();
    let refused = |c: Value| marker::restores_secret(&changes(c), &current, "changes");
    assert_eq!(
        refused(json!({"url": "https://h.example/in?token=REDACTED"})).as_deref(),
        Some("changes.url")
    );
    assert_eq!(
        refused(json!({"url": "https://h.example/in?token=%5BREDACTED"})).as_deref(),
        Some("changes.url")
    );
    assert_eq!(
        refused(json!({"password": "redacted"})).as_deref(),
        Some("changes.password")
    );
    assert_eq!(
        refused(json!({"tags": ["a", "pwd=R E D A C T E D"]})).as_deref(),
        Some("changes.tags[1]")
    );
    // A field that held no secret may say "redacted"; a new URL is a new URL.
    assert_eq!(refused(json!({"description": "Redacted edition"})), None);
    assert_eq!(
        refused(json!({"url": "https://h.example/in?token=new-token-1"})),
        None
    );
}

/// A company as its route's type declares it.
#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
struct Company {
    #[schemars(regex(pattern = "^cmp_"))]
    id: String,
    #[schemars(extend("const" = "company"))]
    object: &'static str,
    name: String,
    plan_id: String,
    extra: serde_json::Map<String, serde_json::Value>,
    #[schemars(extend("format" = "date-time"))]
    created_at: String,
}

/// A page of companies, as the list route declares it (the list envelope's members).
#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
struct Companies {
    #[schemars(extend("const" = "list"))]
    object: &'static str,
    data: Vec<Company>,
    has_more: bool,
    next_cursor: Option<String>,
}

fn company_shape() -> Shape {
    Shape::of_schema(&crate::jsonschema::response::<Companies>())
}

#[test]
fn a_typed_answer_is_scanned_where_it_holds_text() {
    let shape = company_shape();
    let clean = br#"{"object":"list","data":[{"id":"cmp_0mhh4zb1k0000000000a1","object":"company","name":"Northwind \"Grocers\"","plan_id":"plan_growth","created_at":"2025-01-02T03:04:05Z"}],"has_more":false,"next_cursor":null}"#;
    let r = redact_json_as(clean, &shape).unwrap();
    assert!(matches!(r.json, Cow::Borrowed(_)) && r.fields.is_empty());

    // Secrets in text are replaced in place; every other byte stays as it was.
    let dirty = format!(
        r#"{{"object":"list","data":[{{"id":"cmp_1","object":"company","name":"Wi-Fi password: Grocer2026","plan_id":"plan_x","created_at":"2025-01-02T03:04:05Z"}},{{"id":"cmp_2","object":"company","name":"key {KEY}","plan_id":"plan_x","created_at":"2025-01-02T03:04:05Z"}}],"has_more":false,"next_cursor":null}}"#,
        KEY = super::corpus::KEY
    );
    let r = redact_json_as(dirty.as_bytes(), &shape).unwrap();
    assert_eq!(
        String::from_utf8(r.json.into_owned()).unwrap(),
        dirty
            .replace("Grocer2026", REDACTED)
            .replace(super::corpus::KEY, REDACTED)
    );
    assert_eq!(r.fields, ["data[0].name", "data[1].name"]);
}

#[test]
fn a_declaration_holds_only_for_values_of_its_shape() {
    let shape = company_shape();
    // An "id", an "instant" or an enum value holding text is scanned like text.
    let body = br#"{"object":"password=hunter2","data":[{"id":"sgn_test_VECFOkBoPCcq3rfr_ssqf9Y9xxptbfgNOxP5rqItR2hoMjFvg2yaUNr","object":"company","name":"n","plan_id":"pwd=x1!","created_at":"password is hunter2"}],"has_more":"token=abc1&","next_cursor":"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLXg"}"#;
    let r = redact_json_as(body, &shape).unwrap();
    let v: Value = serde_json::from_slice(&r.json).unwrap();
    assert_eq!(v["object"], "password=[REDACTED]");
    assert_eq!(v["data"][0]["id"], REDACTED);
    assert_eq!(v["data"][0]["plan_id"], "pwd=[REDACTED]");
    assert_eq!(v["data"][0]["created_at"], "password is [REDACTED]");
    assert_eq!(v["has_more"], "token=[REDACTED]&");
    assert_eq!(v["next_cursor"], REDACTED);
}

/// Members are looked for in their declared order first: a member out of that order, a name that
/// only starts like a declared one, or an id-shaped secret under a text name is still judged by
/// what its own name declares.
#[test]
fn a_member_is_judged_by_its_own_name_in_any_order() {
    let shape = company_shape();
    let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    let body = format!(
        r#"{{"data":[{{"name":"{secret}","object":"company","id":"cmp_0mhh4zb1k0000000000a1","idx":"{secret}","created_at":"2025-01-02T03:04:05Z","plan_id":"plan_x"}},{{"id":"{secret}","object":"company","name":"{secret}"}}],"object":"list","has_more":false,"next_cursor":null}}"#
    );
    let r = redact_json_as(body.as_bytes(), &shape).unwrap();
    let text = String::from_utf8(r.json.into_owned()).unwrap();
    assert!(!text.contains("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), "{text}");
    // A token with an id's shape where an id is declared is not one of our ids: scanned too.
    assert_eq!(
        r.fields,
        ["data[0].name", "data[0].idx", "data[1].id", "data[1].name"]
    );
    // The tree redactor, which knows no order, agrees on what is text.
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["data"][0]["id"], "cmp_0mhh4zb1k0000000000a1");
    assert_eq!(v["data"][0]["created_at"], "2025-01-02T03:04:05Z");
}

/// A whole-document scan saw `"pwd":"hunter2"` in the text of an answer; the type now says what
/// the name of an undeclared member means: a name that announces a secret hides its value.
#[test]
fn a_key_next_to_its_value_is_redacted_by_declaration() {
    let shape = company_shape();
    let body = br#"{"object":"list","data":[{"id":"cmp_1","object":"company","name":"n","extra":{"wifi_password":"Grocer2026","pwd":"hunter2","pass":true,"token":"tok_1","api-key":{"v":1},"note":"fine","nested":{"client_secret":null}},"surprise":"Bearer Zx81pQ0rT5u"}],"has_more":false,"next_cursor":null}"#;
    let r = redact_json_as(body, &shape).unwrap();
    let v: Value = serde_json::from_slice(&r.json).unwrap();
    let extra = &v["data"][0]["extra"];
    assert_eq!(extra["wifi_password"], REDACTED);
    assert_eq!(extra["pwd"], REDACTED);
    assert_eq!(extra["token"], REDACTED);
    assert_eq!(extra["api-key"], REDACTED);
    assert_eq!(extra["pass"], true, "a flag is not a password");
    assert_eq!(extra["note"], "fine");
    assert_eq!(extra["nested"]["client_secret"], Value::Null);
    assert_eq!(v["data"][0]["surprise"], REDACTED);
    assert_eq!(
        r.fields,
        [
            "data[0].extra.wifi_password",
            "data[0].extra.pwd",
            "data[0].extra.token",
            "data[0].extra.api-key",
            "data[0].surprise"
        ]
    );
    // The tree redactor agrees, and reports the same fields.
    let mut tree: Value = serde_json::from_slice(body).unwrap();
    assert_eq!(redact_value_fields(&mut tree), r.fields);
    assert_eq!(tree, v);
}

#[test]
fn the_typed_and_the_tree_redactor_agree_on_the_corpus() {
    for (label, text, _) in super::corpus::secret_forms() {
        let doc = json!({"a": [{"note": text, "n": 1}], "api_key": "k", "b": null});
        let bytes = serde_json::to_vec(&doc).unwrap();
        let walked: Value =
            serde_json::from_slice(&redact_json_as(&bytes, &Shape::Any).unwrap().json).unwrap();
        let mut tree = doc.clone();
        redact_value(&mut tree);
        assert_eq!(walked, tree, "{label}");
    }
    assert!(redact_json(b"{\"a\":").is_none() && redact_json(b"[1] x").is_none());
}

/// The tree redactor as it was before numbers and booleans were judged by a secret name alone:
/// every member's shape from its whole name, every path written out as the walk goes.
fn tree_redactor_in_full(
    v: &mut Value,
    shape: &Shape,
    path: &mut String,
    fields: &mut Vec<String>,
) {
    match (v, shape) {
        (Value::Null, _) => {}
        (v @ Value::String(_), Shape::Announced) | (v, Shape::Secret) => {
            *v = Value::String(REDACTED.into());
            fields.push(path.clone());
        }
        (Value::String(s), _) => {
            if let Cow::Owned(clean) = redact_str(s) {
                *s = clean;
                fields.push(path.clone());
            }
        }
        (Value::Array(items), _) => {
            for (i, x) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                tree_redactor_in_full(x, &Shape::Any, path, fields);
                path.truncate(len);
            }
        }
        (Value::Object(map), _) => {
            for (k, x) in map.iter_mut() {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
                tree_redactor_in_full(x, &shape::by_name(k), path, fields);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

#[test]
fn the_tree_redactor_judges_a_scalar_as_it_did_by_its_whole_shape() {
    let names = [
        "limit",
        "password",
        "pass",
        "pwd",
        "token",
        "tokens",
        "api_key",
        "x-api-key",
        "rawKey",
        "secret_last4",
        "client_secret",
        "authorization",
        "note",
        "",
        "a.b",
        "wifi_password",
    ];
    let values = [
        json!(null),
        json!(true),
        json!(false),
        json!(4),
        json!(-1.5e3),
        json!(""),
        json!("plain"),
        json!("hunter2"),
        json!("Bearer Zx81pQ0rT5u"),
        json!("sgn_test_VECFOkBoPCcq3rfr_ssqf9Y9xxptbfgNOxP5rqItR2hoMjFvg2yaUNr"),
        json!([1, "x", null, {"pwd": 2}]),
        json!({"inner": 7, "pwd": "x", "password": false}),
    ];
    let mut changed = 0;
    for name in names {
        for value in &values {
            let docs = [
                json!({ name: value }),
                json!({"outer": [{ name: value, "n": 1 }], name: { name: value }}),
                json!([{ "": { name: value } }, value]),
            ];
            for doc in docs {
                let mut tree = doc.clone();
                let fields = redact_value_fields(&mut tree);
                let mut reference = doc.clone();
                let mut expected = Vec::new();
                tree_redactor_in_full(
                    &mut reference,
                    &Shape::Any,
                    &mut String::new(),
                    &mut expected,
                );
                assert_eq!(tree, reference, "{doc}");
                assert_eq!(fields, expected, "{doc}");
                changed += fields.len();
            }
        }
    }
    assert!(changed > 100, "{changed}");
}
