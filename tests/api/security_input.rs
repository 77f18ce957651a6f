//! Strict input (issue 8, items 10–13): cursors of the listed kind only, JSON bodies without
//! duplicate member names, one credential per request, JWT `nbf`, filters that respect visibility,
//! a well-formed `WWW-Authenticate`, webhook targets that are not internal endpoints, and `If-Match`
//! syntax.

use crate::helpers::*;
use serde_json::{json, Value};

/// The first id of a list, as the admin of Northwind sees it.
async fn first_id(app: &TestApp, path: &str) -> String {
    let page = app.get(path).key("northwind-admin").send().await.ok();
    page["data"][0]["id"].as_str().unwrap().to_string()
}

/// Every list route declares the kind of its cursor, documents exactly that id pattern, and
/// refuses any other cursor with 422 `invalid_cursor` (it used to serve the first page).
#[tokio::test]
async fn every_list_refuses_a_cursor_that_is_not_an_id_of_its_kind() {
    // About 150 requests with one key: past the default burst, so unthrottled.
    let app = TestApp::spawn_with(|l| l.rate_limit_per_second = Some(0.0)).await;
    let device = first_id(&app, "/devices?limit=1").await;
    let promotion = first_id(&app, "/promotions?limit=1").await;
    let grocers = company_id("Northwind Grocers");
    let qr_code: String = app.sql(|c| {
        c.query_row(
            "SELECT q.id FROM qr_codes q JOIN promotions p ON p.id = q.promotion_id WHERE p.company_id = ?1 ORDER BY 1 LIMIT 1",
            [&grocers],
            |r| r.get(0),
        )
    });
    let webhook = first_id(&app, "/webhooks?limit=1").await;
    let doc = app.get("/openapi.json").send().await.ok();
    let mut checked = 0;
    for route in app.app.router.routes() {
        let Some(cursor) = route.query.iter().find(|p| p.name == "cursor") else {
            continue;
        };
        let path = route
            .path
            .replace("/devices/{id}", &format!("/devices/{device}"))
            .replace("/promotions/{id}", &format!("/promotions/{promotion}"))
            .replace("/qr-codes/{id}", &format!("/qr-codes/{qr_code}"))
            .replace("/webhooks/{id}", &format!("/webhooks/{webhook}"));
        assert!(!path.contains('{'), "{path}: no fixture id for this path");
        let Some(kind) = route.cursor else {
            // The audit log has integer ids and its own numeric cursor; it binds its filters too.
            assert_cursor_binds_filters(
                &app,
                &path,
                if path.starts_with("/_sandbox/") {
                    "sandbox-operator"
                } else {
                    "northwind-admin"
                },
            )
            .await;
            assert!(
                [
                    "/audit-log",
                    "/requests",
                    "/requests/failures",
                    "/_sandbox/requests"
                ]
                .contains(&route.path),
                "{} declares no cursor kind",
                route.path
            );
            continue;
        };
        let prefix = kind.prefix();
        // The operator's lists (`/_sandbox/…`) are read with its key.
        let who = if path.starts_with("/_sandbox/") {
            "sandbox-operator"
        } else {
            "northwind-admin"
        };
        // The document states the pattern of exactly the ids the list returns.
        let documented = doc["paths"][route.path]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "cursor")
            .unwrap()["schema"]["pattern"]
            .clone();
        assert_eq!(
            documented,
            format!("^{prefix}_[0-9A-Za-z]{{1,64}}(\\.[0-9A-Za-z]{{8}})?$"),
            "{path}"
        );
        assert_eq!(cursor.schema, kind.cursor_schema());
        let other = if prefix == "dev" { "ad" } else { "dev" };
        for bad in [
            "garbage".to_string(),
            format!("{other}_0m5d4ruo5fepbn59k9ts"),
            format!("{prefix}_"),
            format!("{prefix}_a-b"),
            format!("{prefix}_{}", "a".repeat(65)),
            format!("{}_abc", prefix.to_uppercase()),
            "~".to_string(),
        ] {
            let r = app
                .get(&format!("{path}?cursor={bad}"))
                .key(who)
                .send()
                .await;
            let p = r.problem(422);
            assert_eq!(p["errors"][0]["field"], "cursor", "{path} {bad}");
            assert_eq!(p["errors"][0]["code"], "invalid_cursor", "{path} {bad}");
        }
        // Any id of the kind is a keyset bound: before everything, or after everything.
        for good in [
            format!("{prefix}_0"),
            format!("{prefix}_zzzzzzzzzzzzzzzzzzzz"),
        ] {
            let r = app
                .get(&format!("{path}?cursor={good}"))
                .key(who)
                .send()
                .await;
            assert_eq!(r.status, 200, "{path} {good}: {}", r.text());
        }
        // A real next_cursor matches the kind.
        let page = app
            .get(&format!("{path}?limit=1"))
            .key(who)
            .send()
            .await
            .ok();
        if let Some(next) = page["next_cursor"].as_str() {
            let (id, tag) = next
                .split_once('.')
                .expect("a next_cursor carries its filters' tag");
            assert!(signage::ids::is_valid(kind, id), "{path}: {next}");
            assert_eq!(tag.len(), 8, "{path}: {next}");
            let r = app
                .get(&format!("{path}?limit=1&cursor={next}"))
                .key(who)
                .send()
                .await;
            assert_eq!(r.status, 200, "{path}: {}", r.text());
        }
        assert_cursor_binds_filters(&app, &path, who).await;
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} lists checked");
}

/// A JSON body that names a member twice is 400 `duplicate_member`, at any depth and however the
/// name is escaped, and nothing is written. It used to be "last one wins", so a check could look at
/// one value while the write used another.
#[tokio::test]
async fn a_body_with_a_duplicate_member_name_is_400_and_writes_nothing() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let devices_before = app
        .collect_all("/devices", "northwind-admin", 100)
        .await
        .len();
    let device = |extra: &str| {
        format!(
            r#"{{"company_id":"{grocers}","name":"Dup","platform":"tizen","orientation":"portrait","resolution":"1080x1920"{extra}}}"#
        )
    };
    for (path, method, body, pointer, name) in [
        ("/devices".to_string(), "POST", device(r#","name":"Other""#), "", "name"),
        ("/devices".to_string(), "POST", device(r#","n\u0061me":"Other""#), "", "name"),
        ("/devices".to_string(), "POST", device(r#","company_id":"cmp_0m5d4ruo7267avfgnhvw""#), "", "company_id"),
        (
            format!("/companies/{grocers}/branding"),
            "PATCH",
            r##"{"colors":{"primary":"#000000","primary":"#ffffff"}}"##.to_string(),
            "/colors",
            "primary",
        ),
        (
            "/auth/login".to_string(),
            "POST",
            r#"{"username":"demo@northwind.example","password":"x","password":"northwind-demo-2026"}"#.to_string(),
            "",
            "password",
        ),
    ] {
        let method: hyper::Method = method.parse().unwrap();
        let r = app
            .request(method, &path)
            .key("northwind-admin")
            .raw("application/json", body.clone())
            .send()
            .await;
        let p = r.problem(400);
        assert_eq!(p["code"], "duplicate_member", "{body}");
        let detail = p["detail"].as_str().unwrap();
        assert!(detail.contains(&format!("`{name}`")), "{detail}");
        if !pointer.is_empty() {
            assert!(detail.contains(&format!("`{pointer}`")), "{detail}");
        }
    }
    let devices_after = app
        .collect_all("/devices", "northwind-admin", 100)
        .await
        .len();
    assert_eq!(devices_before, devices_after);
    let branding = app
        .get(&format!("/companies/{grocers}/branding"))
        .key("northwind-admin")
        .send()
        .await
        .ok();
    assert_ne!(branding["colors"]["primary"], "#ffffff");
    // The same name in two different objects is not a duplicate.
    let r = app
        .post("/devices")
        .key("northwind-admin")
        .json(
            &json!({"company_id": grocers, "name": "Twin", "platform": "tizen",
            "orientation": "portrait", "resolution": "1080x1920"}),
        )
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
}

/// JSON-RPC messages are parsed by the same strict parser: a tool call whose arguments name
/// `company_id` twice is refused as an invalid request and runs nothing, instead of "last wins".
#[tokio::test]
async fn a_jsonrpc_message_with_a_duplicate_member_is_refused() {
    let app = TestApp::spawn().await;
    let k = key("northwind-readwrite");
    for body in [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_devices","arguments":{"company_id":"cmp_a","company_id":"cmp_b"}}}"#,
    ] {
        let r = app
            .post("/mcp")
            .bearer(&k.raw)
            .header("x-service-client-id", &k.client_id)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .raw("application/json", body)
            .send()
            .await;
        assert_eq!(r.status, 400, "{}", r.text());
        let v = r.json();
        assert_eq!(v["error"]["code"], -32600, "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("more than once"),
            "{v}"
        );
    }
}

/// A request carries one credential. Two (`X-API-KEY` twice, `Authorization` twice, a client id
/// twice, or `X-API-KEY` next to a different `Authorization`) is 400 `conflicting_credentials`, on
/// REST and on `/mcp` alike; it used to be "the first one wins". The same key in `X-API-KEY` and
/// `Authorization: Bearer` is one credential and is accepted.
#[tokio::test]
async fn two_credentials_in_one_request_are_400() {
    let app = TestApp::spawn().await;
    let admin = key("northwind-admin");
    let reader = key("northwind-readonly");
    let harbor = key("harborview-admin");
    let (user, password) = demo().users[0].clone();
    let token = app.login(&user, &password).await;
    let bearer = |v: &str| format!("Bearer {v}");
    let cases: Vec<(&str, Vec<(&str, String)>)> = vec![
        (
            "X-API-KEY twice, same key",
            vec![
                ("x-api-key", admin.raw.clone()),
                ("x-api-key", admin.raw.clone()),
            ],
        ),
        (
            "X-API-KEY twice, two keys",
            vec![
                ("x-api-key", reader.raw.clone()),
                ("x-api-key", admin.raw.clone()),
            ],
        ),
        (
            "X-API-KEY and a Bearer of another key",
            vec![
                ("x-api-key", reader.raw.clone()),
                ("authorization", bearer(&harbor.raw)),
            ],
        ),
        (
            "X-API-KEY and a login token",
            vec![
                ("x-api-key", reader.raw.clone()),
                ("authorization", bearer(&token)),
            ],
        ),
        (
            "X-API-KEY and Basic",
            vec![
                ("x-api-key", admin.raw.clone()),
                ("authorization", "Basic YTpi".into()),
            ],
        ),
        (
            "Authorization twice",
            vec![
                ("authorization", bearer(&token)),
                ("authorization", bearer(&admin.raw)),
            ],
        ),
        (
            "Authorization twice, same token",
            vec![
                ("authorization", bearer(&token)),
                ("authorization", bearer(&token)),
            ],
        ),
        (
            "client id twice",
            vec![
                ("x-api-key", admin.raw.clone()),
                ("x-service-client-id", reader.client_id.clone()),
            ],
        ),
    ];
    for (what, headers) in &cases {
        for path in ["/companies", "/mcp"] {
            let mut req = if path == "/mcp" {
                app.post(path)
                    .header("accept", "application/json, text/event-stream")
                    .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            } else {
                app.get(path)
            };
            req = req.header("x-service-client-id", &admin.client_id);
            for (h, v) in headers {
                req = req.header(h, v);
            }
            let r = req.send().await;
            let p = r.problem(400);
            assert_eq!(p["code"], "conflicting_credentials", "{what} on {path}");
            let detail = p["detail"].as_str().unwrap();
            assert!(
                !detail.contains(&admin.raw[12..]),
                "no secret echoed: {detail}"
            );
        }
    }
    // One key, in both headers: one credential.
    let r = app
        .get("/companies")
        .header("x-api-key", &admin.raw)
        .bearer(&admin.raw)
        .header("x-service-client-id", &admin.client_id)
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    // Each header alone still works.
    for req in [
        app.get("/companies").key("northwind-admin"),
        app.get("/companies")
            .bearer(&admin.raw)
            .header("x-service-client-id", &admin.client_id),
        app.get("/companies").bearer(&token),
    ] {
        assert_eq!(req.send().await.status, 200);
    }
}

/// A login token whose `nbf` (not before) is in the future is refused (401 `invalid_token`); one
/// whose `nbf` has passed is accepted. There is no leeway: one machine's clock issues and checks.
#[tokio::test]
async fn a_login_token_is_refused_before_its_nbf() {
    let app = TestApp::spawn().await;
    let (user, password) = demo().users[0].clone();
    let token = app.login(&user, &password).await;
    let user_id = app.get("/me").bearer(&token).send().await.ok()["user_id"]
        .as_str()
        .unwrap()
        .to_string();
    let secret = app.jwt_secret();
    let now = signage::time::wall_now();
    let sign = |nbf: Value| {
        let claims = json!({"iss": "signage-sandbox", "aud": "signage-api", "sub": user_id,
            "iat": now - 10, "exp": now + 600, "typ": "user_session", "nbf": nbf});
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(&secret),
        )
        .unwrap()
    };
    for nbf in [
        json!(now + 30),
        json!(now + 86_400),
        json!(i64::MAX),
        json!("soon"),
    ] {
        let r = app.get("/me").bearer(&sign(nbf.clone())).send().await;
        assert_eq!(r.problem(401)["code"], "invalid_token", "nbf {nbf}");
    }
    for nbf in [json!(now - 60), json!(now)] {
        let r = app.get("/me").bearer(&sign(nbf.clone())).send().await;
        assert_eq!(r.status, 200, "nbf {nbf}: {}", r.text());
    }
}

/// `GET /ads?promotion_id=` of a promotion the credential cannot see is 404, like `device_id` and
/// `company_id`; it used to answer an empty list, which told a caller nothing was linked there.
#[tokio::test]
async fn filtering_ads_by_an_invisible_promotion_is_404() {
    let app = TestApp::spawn().await;
    let harbor_promo = app
        .get("/promotions?limit=1")
        .key("harborview-readwrite")
        .send()
        .await
        .ok()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let pharmacy = company_id("Northwind Pharmacy");
    let pharmacy_promo = app
        .get(&format!("/promotions?company_id={pharmacy}&limit=1"))
        .key("northwind-readonly")
        .send()
        .await
        .ok()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    for (key_name, promo) in [
        ("northwind-readonly", harbor_promo.as_str()),
        ("northwind-readonly", "promo_doesnotexist0000000"),
        ("northwind-grocers-write", pharmacy_promo.as_str()),
    ] {
        let r = app
            .get(&format!("/ads?promotion_id={promo}"))
            .key(key_name)
            .send()
            .await;
        assert!(r.problem(404)["detail"].as_str().unwrap().contains(promo));
    }
    // Visible: a list (those ads, possibly none).
    let r = app
        .get(&format!("/ads?promotion_id={pharmacy_promo}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    for ad in r["data"].as_array().unwrap() {
        assert_eq!(ad["promotion_id"], json!(pharmacy_promo));
    }
}

/// One challenge of a `WWW-Authenticate` value: its scheme, and its token68 or its parameters.
#[derive(Debug)]
struct Challenge {
    scheme: String,
    token68: Option<String>,
    params: Vec<(String, String)>,
}

/// A strict parser of RFC 9110's `WWW-Authenticate = #challenge` (§11.6.1, §11.2, §5.6):
/// `challenge = auth-scheme [ 1*SP ( token68 / #auth-param ) ]`,
/// `auth-param = token BWS "=" BWS ( token / quoted-string )`, list elements separated by
/// `OWS "," OWS` (empty elements tolerated, as recipients must). Also refuses what the RFC forbids
/// a sender: a parameter name twice in one challenge, and `realm` not as a quoted-string.
fn parse_challenges(s: &str) -> Result<Vec<Challenge>, String> {
    fn is_tchar(c: u8) -> bool {
        c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c)
    }
    fn is_token68(c: u8) -> bool {
        c.is_ascii_alphanumeric() || b"-._~+/".contains(&c)
    }
    struct P<'a> {
        b: &'a [u8],
        i: usize,
    }
    impl P<'_> {
        fn peek(&self) -> Option<u8> {
            self.b.get(self.i).copied()
        }
        fn ows(&mut self) {
            while matches!(self.peek(), Some(b' ' | b'\t')) {
                self.i += 1;
            }
        }
        fn token(&mut self) -> Option<String> {
            let start = self.i;
            while self.peek().is_some_and(is_tchar) {
                self.i += 1;
            }
            (self.i > start).then(|| String::from_utf8_lossy(&self.b[start..self.i]).into())
        }
        fn quoted(&mut self) -> Result<String, String> {
            self.i += 1; // the opening DQUOTE
            let mut out = Vec::new();
            loop {
                match self.peek() {
                    None => return Err("unterminated quoted-string".into()),
                    Some(b'"') => {
                        self.i += 1;
                        return Ok(String::from_utf8_lossy(&out).into());
                    }
                    Some(b'\\') => {
                        let c = self
                            .b
                            .get(self.i + 1)
                            .copied()
                            .ok_or("dangling backslash")?;
                        if !(c == b'\t' || c == b' ' || (0x21..=0x7e).contains(&c) || c >= 0x80) {
                            return Err(format!("bad quoted-pair {c:#x}"));
                        }
                        out.push(c);
                        self.i += 2;
                    }
                    Some(c)
                        if c == b'\t'
                            || c == b' '
                            || c == 0x21
                            || (0x23..=0x5b).contains(&c)
                            || (0x5d..=0x7e).contains(&c)
                            || c >= 0x80 =>
                    {
                        out.push(c);
                        self.i += 1;
                    }
                    Some(c) => return Err(format!("bad qdtext {c:#x}")),
                }
            }
        }
        /// After `token`: is `BWS "=" BWS` and a value next (an auth-param, rather than a token68
        /// such as `abc==`, or a new challenge)?
        fn at_param(&self) -> bool {
            let skip = |mut j: usize| {
                while matches!(self.b.get(j), Some(b' ' | b'\t')) {
                    j += 1;
                }
                j
            };
            let j = skip(self.i);
            self.b.get(j) == Some(&b'=')
                && self
                    .b
                    .get(skip(j + 1))
                    .is_some_and(|&c| c == b'"' || is_tchar(c))
        }
        /// `OWS ("," OWS)*`: skips list separators, and says whether there was at least one comma.
        fn separators(&mut self) -> bool {
            let mut comma = false;
            loop {
                self.ows();
                if self.peek() == Some(b',') {
                    self.i += 1;
                    comma = true;
                } else {
                    return comma;
                }
            }
        }
    }
    let mut p = P {
        b: s.as_bytes(),
        i: 0,
    };
    let mut out: Vec<Challenge> = Vec::new();
    p.separators();
    while p.peek().is_some() {
        let scheme = p
            .token()
            .ok_or_else(|| format!("expected an auth-scheme at {}", p.i))?;
        let mut ch = Challenge {
            scheme,
            token68: None,
            params: Vec::new(),
        };
        if p.peek() == Some(b' ') {
            while p.peek() == Some(b' ') {
                p.i += 1;
            }
            let save = p.i;
            let name = p.token();
            if name.is_some() && p.at_param() {
                p.i = save;
                // #auth-param
                loop {
                    let name = p
                        .token()
                        .ok_or_else(|| format!("expected a parameter name at {}", p.i))?;
                    p.ows();
                    if p.peek() != Some(b'=') {
                        return Err(format!("expected `=` after `{name}` at {}", p.i));
                    }
                    p.i += 1;
                    p.ows();
                    let value = if p.peek() == Some(b'"') {
                        p.quoted()?
                    } else {
                        if name.eq_ignore_ascii_case("realm") {
                            return Err("realm must be a quoted-string".into());
                        }
                        p.token()
                            .ok_or_else(|| format!("expected a value for `{name}`"))?
                    };
                    if ch.params.iter().any(|(n, _)| n.eq_ignore_ascii_case(&name)) {
                        return Err(format!("`{name}` twice in one challenge"));
                    }
                    ch.params.push((name.to_ascii_lowercase(), value));
                    let save = p.i;
                    let comma = p.separators();
                    if p.peek().is_none() {
                        break;
                    }
                    if !comma {
                        return Err(format!("expected `,` at {}", p.i));
                    }
                    // A parameter, or the next challenge?
                    let at = p.i;
                    if p.token().is_some() && p.at_param() {
                        p.i = at;
                        continue;
                    }
                    p.i = save;
                    break;
                }
            } else {
                p.i = save;
                let start = p.i;
                while p.peek().is_some_and(is_token68) {
                    p.i += 1;
                }
                if p.i == start {
                    return Err(format!("expected token68 or auth-param at {}", p.i));
                }
                while p.peek() == Some(b'=') {
                    p.i += 1;
                }
                ch.token68 = Some(s[start..p.i].to_string());
            }
        }
        out.push(ch);
        let comma = p.separators();
        if p.peek().is_some() && !comma {
            return Err(format!("expected `,` between challenges at {}", p.i));
        }
    }
    if out.is_empty() {
        return Err("no challenge".into());
    }
    Ok(out)
}

#[test]
fn the_challenge_parser_is_strict() {
    let ok = parse_challenges(r#"Basic realm="a b", Bearer, Newauth realm="apps", type=1, title="Login to \"apps\"", Token abc=="#).unwrap();
    assert_eq!(ok.len(), 4);
    assert_eq!(
        ok[2].params[2],
        ("title".into(), r#"Login to "apps""#.into())
    );
    assert_eq!(ok[3].token68.as_deref(), Some("abc=="));
    for bad in [
        r#"ApiKey realm="signage" header="X-API-KEY""#,
        r#"Bearer realm=signage"#,
        r#"Bearer realm="a", realm="b""#,
        r#"Bearer realm="unterminated"#,
        r#"Bearer realm="x", error="#,
        r#"Bearer realm="x" error="y""#,
        "",
        r#"="x""#,
        r#"Bearer realm="a"b"#,
    ] {
        assert!(parse_challenges(bad).is_err(), "{bad}");
    }
}

/// Every kind of 401, on REST, on login and on `/mcp`, carries a `WWW-Authenticate` that RFC 9110's
/// challenge grammar accepts: a `Bearer` and an `ApiKey` challenge, both with `realm="signage"`.
/// It used to be `ApiKey realm="signage" header="X-API-KEY"` (no comma between parameters).
#[tokio::test]
async fn every_401_has_a_well_formed_www_authenticate() {
    let app = TestApp::spawn().await;
    let secret = app.jwt_secret();
    let now = signage::time::wall_now();
    let forge = |sub: &str, exp: i64| {
        let claims = json!({"iss": "signage-sandbox", "aud": "signage-api", "sub": sub,
            "iat": exp - 3600, "exp": exp, "typ": "user_session"});
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(&secret),
        )
        .unwrap()
    };
    let admin = key("northwind-admin");
    let reader = key("northwind-readonly");
    let with_key = |k: &DemoKey| {
        vec![
            ("x-api-key", k.raw.clone()),
            ("x-service-client-id", k.client_id.clone()),
        ]
    };
    let bearer = |t: String| vec![("authorization", format!("Bearer {t}"))];
    let cases: Vec<(&str, Vec<(&str, String)>)> = vec![
        ("missing_credential", vec![]),
        ("missing_client_id", vec![("x-api-key", admin.raw.clone())]),
        (
            "malformed_key",
            vec![
                ("x-api-key", "sgn_test_nope".into()),
                ("x-service-client-id", admin.client_id.clone()),
            ],
        ),
        (
            "malformed_key",
            vec![("authorization", "Basic YTpi".into())],
        ),
        (
            "unknown_key",
            // Well-formed, checksum included, but never issued.
            vec![
                ("x-api-key", signage::auth::keys::generate(None).raw),
                ("x-service-client-id", admin.client_id.clone()),
            ],
        ),
        ("revoked_key", with_key(&key("northwind-revoked"))),
        ("expired_key", with_key(&key("northwind-expired"))),
        (
            "client_mismatch",
            vec![
                ("x-api-key", admin.raw.clone()),
                ("x-service-client-id", reader.client_id.clone()),
            ],
        ),
        (
            "invalid_token",
            bearer("eyJhbGciOiJIUzI1NiJ9.e30.abc".into()),
        ),
        (
            "expired_token",
            bearer(forge("usr_doesnotexist", now - 3600)),
        ),
        ("unknown_user", bearer(forge("usr_doesnotexist", now + 600))),
    ];
    let mut seen = std::collections::BTreeSet::new();
    for (code, headers) in &cases {
        for path in ["/companies", "/mcp"] {
            let mut req = if path == "/mcp" {
                app.post(path)
                    .header("accept", "application/json, text/event-stream")
                    .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            } else {
                app.get(path)
            };
            for (h, v) in headers {
                req = req.header(h, v);
            }
            let r = req.send().await;
            let p = r.problem(401);
            assert_eq!(p["code"], *code, "{path} {headers:?}");
            seen.insert(code.to_string());
            check_challenges(r.header("www-authenticate"), code);
        }
    }
    let (user, _) = demo().users[0].clone();
    let r = app
        .post("/auth/login")
        .json(&json!({"username": user, "password": "wrong"}))
        .send()
        .await;
    assert_eq!(r.problem(401)["code"], "invalid_credentials");
    check_challenges(r.header("www-authenticate"), "invalid_credentials");
    seen.insert("invalid_credentials".into());
    assert!(seen.len() >= 10, "{seen:?}");
}

#[track_caller]
fn check_challenges(header: Option<&str>, code: &str) {
    let header = header.unwrap_or_else(|| panic!("{code}: 401 without WWW-Authenticate"));
    let challenges =
        parse_challenges(header).unwrap_or_else(|e| panic!("{code}: `{header}` is malformed: {e}"));
    let get = |scheme: &str| {
        challenges
            .iter()
            .find(|c| c.scheme.eq_ignore_ascii_case(scheme))
            .unwrap_or_else(|| panic!("{code}: no {scheme} challenge in `{header}`"))
    };
    let param = |c: &Challenge, name: &str| {
        c.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let bearer = get("Bearer");
    assert_eq!(
        param(bearer, "realm").as_deref(),
        Some("signage"),
        "{header}"
    );
    let api_key = get("ApiKey");
    assert_eq!(
        param(api_key, "realm").as_deref(),
        Some("signage"),
        "{header}"
    );
    assert_eq!(
        param(api_key, "header").as_deref(),
        Some("X-API-KEY"),
        "{header}"
    );
    match code {
        "missing_credential" | "invalid_credentials" => {
            assert_eq!(param(bearer, "error"), None, "{header}")
        }
        _ => assert_eq!(
            param(bearer, "error_description").as_deref(),
            Some(code),
            "{header}"
        ),
    }
}

/// `If-Match` that is not `*` or a list of entity tags is 400 `invalid_if_match` (the README said
/// so; the server answered 412). A well-formed tag that does not match stays 412, a weak tag never
/// matches, several field lines form one list, and nothing is written unless it matches.
#[tokio::test]
async fn a_malformed_if_match_is_400_and_a_stale_one_412() {
    let app = TestApp::spawn().await;
    let device = first_id(&app, "/devices?limit=1").await;
    let path = format!("/devices/{device}");
    let etag = app
        .get(&path)
        .key("northwind-readwrite")
        .send()
        .await
        .header("etag")
        .unwrap()
        .to_string();
    assert_eq!(etag, "\"v1\"");
    let patch = |values: Vec<&'static str>| {
        let mut r = app
            .patch(&path)
            .key("northwind-readwrite")
            .json(&json!({"name": "Renamed"}));
        for v in values {
            r = r.header("if-match", v);
        }
        r.send()
    };
    for bad in [
        vec!["v1"],
        vec!["\"v1"],
        vec!["W/ \"v1\""],
        vec!["w/\"v1\""],
        vec!["\"v1\" \"v2\""],
        vec!["*, \"v1\""],
        vec!["*", "\"v1\""],
        vec![""],
        vec![" , "],
        vec!["\"v 1\""],
    ] {
        let r = patch(bad.clone()).await;
        let p = r.problem(400);
        assert_eq!(p["code"], "invalid_if_match", "{bad:?}");
    }
    for stale in [
        vec!["\"v9\""],
        vec!["W/\"v1\""],
        vec!["\"v2\", \"V1\""],
        vec!["\"\""],
    ] {
        let r = patch(stale.clone()).await;
        assert_eq!(r.problem(412)["current_etag"], "\"v1\"", "{stale:?}");
        assert_eq!(r.header("etag"), Some("\"v1\""));
    }
    let name_now =
        || async { app.get(&path).key("northwind-readwrite").send().await.ok()["name"].clone() };
    assert_ne!(name_now().await, "Renamed");
    // A tag that matches, in a list over two field lines.
    let r = patch(vec!["\"v9\", W/\"v1\"", "\"v1\""]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("etag"), Some("\"v2\""));
    let r = patch(vec!["*"]).await;
    assert_eq!(r.status, 200, "{}", r.text());

    // A non-ASCII (obs-text) tag is well-formed and does not match: 412. It used to be read as
    // "no If-Match" (the header was not valid UTF-8 text), so the write went through.
    let k = key("northwind-readwrite");
    let body = r#"{"name":"Sneaky"}"#;
    let mut raw = format!(
        "PATCH {path} HTTP/1.1\r\nHost: localhost\r\nX-API-KEY: {}\r\nX-Service-Client-Id: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\nIf-Match: \"",
        k.raw,
        k.client_id,
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(b"\xe9\"\r\n\r\n");
    raw.extend_from_slice(body.as_bytes());
    let addr = app.base_url.trim_start_matches("http://").to_string();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    stream.write_all(&raw).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 412"), "{answer}");
    assert_ne!(name_now().await, "Sneaky");
}

async fn create_webhook(app: &TestApp, url: &str) -> TestResponse {
    app.post("/webhooks")
        .key("northwind-readwrite")
        .json(
            &json!({"company_id": company_id("Northwind Grocers"), "url": url,
            "event_types": ["device.created"]}),
        )
        .send()
        .await
}

/// Webhook URLs cannot target link-local, multicast, unspecified, broadcast or cloud-metadata
/// addresses, however the address is spelled; loopback and private ranges are allowed by default.
#[tokio::test]
async fn webhook_urls_cannot_target_internal_endpoints() {
    let app = TestApp::spawn().await;
    let refused = [
        (
            "https://169.254.169.254/latest/meta-data/",
            "metadata_target",
        ),
        ("https://2852039166/", "metadata_target"),
        ("https://0xa9fea9fe/", "metadata_target"),
        ("https://0XA9FEA9FE/", "metadata_target"),
        ("https://0251.0376.0251.0376/", "metadata_target"),
        ("https://169.254.43518/", "metadata_target"),
        ("https://100.100.100.200/", "metadata_target"),
        (
            "https://metadata.google.internal/computeMetadata/v1/",
            "metadata_target",
        ),
        ("https://Metadata/", "metadata_target"),
        ("https://169.254.1/", "link_local_target"),
        ("https://169.254.1.1:8443/hook", "link_local_target"),
        ("https://224.0.0.1/", "multicast_target"),
        ("https://239.255.255.250:1900/", "multicast_target"),
        ("https://0.0.0.0/", "unspecified_target"),
        ("https://0/", "unspecified_target"),
        ("https://255.255.255.255/", "broadcast_target"),
        ("https://240.1.2.3/", "reserved_target"),
        ("https://1.2.3.999/", "invalid_address"),
        ("https://1.2.3.4.5/", "invalid_address"),
        // IP literals in brackets, and http:// beyond this machine, were refused already.
        ("https://[::ffff:169.254.169.254]/", "invalid_url"),
        ("https://[fe80::1]/", "invalid_url"),
        ("https://[fd00:ec2::254]/", "invalid_url"),
        ("http://169.254.169.254/", "invalid_url"),
        ("https://user@169.254.169.254/", "invalid_url"),
    ];
    for (url, code) in refused {
        let p = create_webhook(&app, url).await.problem(422);
        assert_eq!(p["errors"][0]["field"], "/url", "{url}");
        assert_eq!(p["errors"][0]["code"], code, "{url}");
    }
    let hook = create_webhook(&app, "https://hooks.example/in").await.ok();
    let path = format!("/webhooks/{}", hook["id"].as_str().unwrap());
    for (url, code) in refused {
        let r = app
            .patch(&path)
            .key("northwind-readwrite")
            .json(&json!({"url": url}))
            .send()
            .await;
        assert_eq!(r.problem(422)["errors"][0]["code"], code, "{url}");
    }
    let now = app.get(&path).key("northwind-readonly").send().await.ok();
    assert_eq!(now["url"], "https://hooks.example/in");
    for url in [
        "https://hooks.example/in",
        "http://127.0.0.1:9000/hook",
        "http://localhost:9000/hook",
        "https://10.0.0.5/hook",
        "https://192.168.1.10:8443/x",
        "https://172.16.0.1/",
        "https://100.64.0.1/",
        "https://0x7f.1/",
        "https://93.184.216.34/",
        "https://169.254.example/",
    ] {
        let r = create_webhook(&app, url).await;
        assert_eq!(r.status, 201, "{url}: {}", r.text());
    }
}

/// With `webhooks.allow_private_targets = false`, loopback, RFC 1918, CGNAT and `localhost` are
/// refused too.
#[tokio::test]
async fn private_webhook_targets_can_be_refused() {
    let app = TestApp::spawn_with(|l| l.webhook_allow_private_targets = Some(false)).await;
    for (url, code) in [
        ("http://127.0.0.1:9000/hook", "loopback_target"),
        ("http://localhost:9000/hook", "loopback_target"),
        ("https://api.localhost/", "loopback_target"),
        ("https://0x7f.1/", "loopback_target"),
        ("https://2130706433/", "loopback_target"),
        ("https://10.0.0.5/hook", "private_target"),
        ("https://172.31.255.255/", "private_target"),
        ("https://192.168.1.10/", "private_target"),
        ("https://100.64.0.1/", "private_target"),
        ("https://169.254.169.254/", "metadata_target"),
    ] {
        let p = create_webhook(&app, url).await.problem(422);
        assert_eq!(p["errors"][0]["code"], code, "{url}");
    }
    for url in [
        "https://hooks.example/in",
        "https://172.32.0.1/",
        "https://100.128.0.1/",
    ] {
        let r = create_webhook(&app, url).await;
        assert_eq!(r.status, 201, "{url}: {}", r.text());
    }
}

/// A list's `next_cursor` is refused (400 `cursor_mismatch`) with other filters than its page's:
/// here its tag is changed, as a client that rebuilt the query differently would change it.
async fn assert_cursor_binds_filters(app: &TestApp, path: &str, who: &str) {
    let page = app
        .get(&format!("{path}?limit=1"))
        .key(who)
        .send()
        .await
        .ok();
    let Some(next) = page["next_cursor"].as_str() else {
        return;
    };
    let (bound, tag) = next.rsplit_once('.').expect("a tagged cursor");
    let flipped: String = tag
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i == 0 {
                if c == 'a' {
                    'b'
                } else {
                    'a'
                }
            } else {
                c
            }
        })
        .collect();
    let r = app
        .get(&format!("{path}?limit=1&cursor={bound}.{flipped}"))
        .key(who)
        .send()
        .await;
    assert_eq!(r.problem(400)["code"], "cursor_mismatch", "{path}");
    // A changed `limit` is not another filter.
    let r = app
        .get(&format!("{path}?limit=2&cursor={next}"))
        .key(who)
        .send()
        .await;
    assert_eq!(r.status, 200, "{path}: {}", r.text());
}

/// Text that cannot disguise itself: a name made of nothing visible, or one that reorders the text
/// shown around it (a bidi override turns "costs 900 tokens" into "009 stsoc" in a confirmation
/// summary), is refused where it is written, through REST and through MCP's prepare, and nothing
/// is written.
#[tokio::test]
async fn a_name_that_disguises_itself_is_refused() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let devices_before =
        app.sql(|c| c.query_row("SELECT count(*) FROM devices", [], |r| r.get::<_, i64>(0)));
    for (name, code) in [
        ("\u{200b}\u{3164}", "blank"),
        ("\u{200d}\u{2060}\u{ad}", "blank"),
        ("Lobby \u{202e}009 stsoc", "invalid_characters"),
        ("Lobby \u{2067}A\u{2069}", "invalid_characters"),
    ] {
        let r = app
            .post("/devices")
            .key("northwind-admin")
            .json(
                &json!({"company_id": grocers, "name": name, "location": "Utrecht",
                "platform": "tizen", "orientation": "landscape", "resolution": "1920x1080"}),
            )
            .send()
            .await;
        let p = r.problem(422);
        assert_eq!(p["errors"][0]["field"], "/name", "{name:?}: {p}");
        assert_eq!(p["errors"][0]["code"], code, "{name:?}: {p}");
    }
    let devices_after =
        app.sql(|c| c.query_row("SELECT count(*) FROM devices", [], |r| r.get::<_, i64>(0)));
    assert_eq!(devices_before, devices_after);

    // A file name cannot hide its type behind an override either (`photo\u{202e}gvs.exe`).
    let r = app
        .post(&format!(
            "/media?company_id={grocers}&filename=photo%E2%80%AEgvs.exe"
        ))
        .key("northwind-admin")
        .raw(
            "image/svg+xml",
            br#"<svg xmlns="http://www.w3.org/2000/svg"/>"#.to_vec(),
        )
        .send()
        .await;
    assert_eq!(r.status, 422, "{}", r.text());

    // Through MCP: the prepare is a tool error, and no pending change holds the name.
    let ad: String = app.sql(|c| {
        c.query_row(
            "SELECT id FROM ads WHERE company_id = ?1 ORDER BY id LIMIT 1",
            [&grocers],
            |r| r.get(0),
        )
    });
    let text = crate::helpers::mcp::call_err(
        &app,
        "northwind-readwrite",
        "prepare_ad_change",
        json!({"ad_id": ad, "changes": {"name": "Spring \u{202e}009 stsoc"}}),
    )
    .await;
    assert!(
        text.contains("bidirectional") || text.contains("invalid_characters"),
        "{text}"
    );
    // Names in mixed scripts keep their direction marks, and emoji their joiners.
    let r = app
        .patch(&format!("/ads/{ad}"))
        .key("northwind-admin")
        .json(&json!({"name": "מבצע\u{200f} 2 👩\u{200d}💻"}))
        .send()
        .await;
    r.ok();
}

/// Every answer is `nosniff`, and every document (HTML, SVG, XML) has a Content-Security-Policy
/// that runs no script from elsewhere and lets no other site frame it: walked over every GET route
/// of the table, with the sample object of each, as the operator and as an admin, so a new page
/// is held to it the day it is added.
#[tokio::test]
async fn every_document_the_server_answers_carries_its_security_headers() {
    let app = TestApp::spawn().await;
    let routes: Vec<signage::http::router::Route> = app
        .app
        .router
        .routes()
        .iter()
        .filter(|r| r.method == hyper::Method::GET && r.path != "/mcp")
        .cloned()
        .collect();
    let mut documents = Vec::new();
    let code: String = app.sql(|c| {
        c.query_row("SELECT code FROM qr_codes ORDER BY id LIMIT 1", [], |r| {
            r.get(0)
        })
    });
    let device: String = app.sql(|c| {
        c.query_row("SELECT id FROM devices ORDER BY id LIMIT 1", [], |r| {
            r.get(0)
        })
    });
    for route in &routes {
        let path = if route.action == signage::auth::Action::Public && route.path.contains('{') {
            // Public pages are not in the authorization matrix: one real object each.
            let (head, param) = route.path.rsplit_once('/').unwrap_or_default();
            let value = match param {
                "{file}" => "app.css".to_string(),
                "{slug}" => "not-found".to_string(),
                "{code}" => code.clone(),
                "{device_id}" => device.clone(),
                other => panic!("no sample for {other} in the public route {}", route.path),
            };
            format!("{head}/{value}")
        } else {
            crate::auth_matrix::sample_path(&app, route)
        };
        for who in ["sandbox-operator", "northwind-admin"] {
            let r = app.get(&path).key(who).send().await;
            assert_eq!(
                r.header("x-content-type-options"),
                Some("nosniff"),
                "{path} as {who}"
            );
            let ct = r.header("content-type").unwrap_or_default().to_string();
            if ["text/html", "image/svg+xml", "application/xml", "text/xml"]
                .iter()
                .any(|d| ct.starts_with(d))
            {
                let csp = r.header("content-security-policy").unwrap_or_default();
                assert!(
                    csp.contains("default-src 'none'"),
                    "{path} as {who} ({ct}): {csp:?}"
                );
                documents.push(format!("{path} {ct}"));
            }
        }
    }
    // The walk reached the documents it is for: pages, QR SVGs and a JUnit report.
    for wanted in ["text/html", "image/svg+xml", "xml"] {
        assert!(
            documents.iter().any(|d| d.contains(wanted)),
            "no {wanted} document among {documents:?}"
        );
    }
}

/// A secret the client sent by mistake is not echoed back, nor kept: a raw API key sent as a JSON
/// member name made the 422 quote it (detail, pointer and message), and the idempotency store kept
/// that answer whole, so the key reached the database file.
#[tokio::test]
async fn a_secret_sent_as_a_member_name_is_neither_echoed_nor_kept() {
    let app = TestApp::spawn().await;
    let k = key("northwind-admin");
    let secret_part = &k.raw[k.raw.len() - 24..];
    let r = app
        .post("/devices")
        .key("northwind-admin")
        .header("idempotency-key", "echo-of-a-secret")
        .json(&json!({ k.raw.clone(): 1 }))
        .send()
        .await;
    let p = r.problem(422);
    assert!(!r.text().contains(secret_part), "{}", r.text());
    assert_eq!(p["errors"][0]["code"], "invalid");
    let stored: Vec<String> = app.sql(|c| {
        let mut stmt = c.prepare("SELECT * FROM idempotency_keys")?;
        let n = stmt.column_count();
        let mut rows = stmt.query([])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            for i in 0..n {
                out.push(match row.get_ref(i)? {
                    rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                        String::from_utf8_lossy(t).into_owned()
                    }
                    _ => String::new(),
                });
            }
        }
        Ok(out)
    });
    assert!(
        stored.iter().any(|s| s.contains("validation-failed")),
        "the answer is kept for replay: {stored:?}"
    );
    assert!(
        stored.iter().all(|s| !s.contains(secret_part)),
        "the store keeps the secret: {stored:?}"
    );
}
