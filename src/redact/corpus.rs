//! The redaction corpus: every secret form the redactor must catch, each in every disguise that
//! applies to it, and ordinary signage text (`corpus/ordinary.txt`) that must come back unchanged.
//! The secrets are fixture-shaped (the documentation's examples and made-up values), not live
//! credentials.

use super::*;
use base64::Engine;
use serde_json::json;

/// One of our API keys (fixture-shaped).
pub const KEY: &str = "sgn_test_VECFOkBoPCcq3rfr_ssqf9Y9xxptbfgNOxP5rqItR2hoMjFvg2yaUNr";
/// Its secret part (32 characters and the 6 of its checksum).
pub const KEY_SECRET: &str = "ssqf9Y9xxptbfgNOxP5rqItR2hoMjFvg2yaUNr";
pub const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
pub const JWT: &str = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLXg";

/// A secret that is redacted whole wherever it stands: `(label, text, case-insensitive)`.
fn whole_secrets() -> Vec<(&'static str, String, bool)> {
    let pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----";
    vec![
        ("our API key", KEY.into(), true),
        ("our live key", KEY.replace("_test_", "_live_"), true),
        ("our key with dashes", KEY.replace('_', "-"), true),
        (
            "our key, prefix with dashes",
            KEY.replacen("sgn_test_", "sgn-test-", 1),
            true,
        ),
        ("a key's secret part alone", KEY_SECRET.into(), false),
        (
            "a key's secret without its checksum",
            KEY_SECRET[..32].into(),
            false,
        ),
        ("webhook signing secret", WHSEC.into(), true),
        (
            "webhook secret without its prefix",
            WHSEC[6..].into(),
            false,
        ),
        ("JWT", JWT.into(), false),
        (
            "argon2 hash",
            "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into(),
            false,
        ),
        ("Bearer value", "Bearer Zx81pQ0rT5u".into(), false),
        (
            "GitHub personal token",
            "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngOnly0a1b2".into(),
            false,
        ),
        (
            "GitHub OAuth token",
            "gho_16C7e42F292c6912E7710c838347Ae178B4a".into(),
            false,
        ),
        (
            "GitHub fine-grained token",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV"
                .into(),
            false,
        ),
        (
            "Stripe live secret key",
            "sk_live_51HxYzAbCdEfGhIjKlMnOpQrStUv".into(),
            false,
        ),
        (
            "Stripe test secret key",
            "sk_test_4eC39HqLyjWDarjtT1zdp7dc".into(),
            false,
        ),
        (
            "Stripe restricted key",
            "rk_live_51HxYzAbCdEfGhIjKlMnOp".into(),
            false,
        ),
        ("AWS access key id", "AKIAIOSFODNN7EXAMPLE".into(), false),
        ("AWS temporary key id", "ASIAQ3EGRP7LK2XMJ4NB".into(), false),
        (
            "AWS secret access key",
            "q8Xv2Lr9TzKp4Wm7Yb1Nc6Hd3Fg0Js5Qa/Rt+Ue8".into(),
            false,
        ),
        (
            "Slack bot token",
            "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx".into(),
            false,
        ),
        (
            "Google API key",
            "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW".into(),
            false,
        ),
        ("GitLab token", "glpat-AbCdEf1234567890GhIj".into(), false),
        (
            "npm token",
            "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789".into(),
            false,
        ),
        ("PEM private key", pem.into(), false),
        // Other vendors' tokens, by their documented formats.
        (
            "Twilio API key",
            "SK0123456789abcdef0123456789abcdef".into(),
            false,
        ),
        (
            "Mailgun API key",
            "key-3ax6xnjp29jd6fds4gc373sgvjxteol0".into(),
            false,
        ),
        (
            "Shopify access token",
            "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".into(),
            false,
        ),
        (
            "Shopify custom app token",
            "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".into(),
            false,
        ),
        (
            "Shopify private app password",
            "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".into(),
            false,
        ),
        (
            "Shopify shared secret",
            "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".into(),
            false,
        ),
        (
            "Hugging Face token",
            "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567".into(),
            false,
        ),
        (
            "Docker personal access token",
            "dckr_pat_2b3e36beeb386dfdaacb9b46004".into(),
            false,
        ),
        (
            "New Relic user key",
            "NRAK-ABCDEFGHIJ0123456789KLMNOPQ".into(),
            false,
        ),
        (
            "Slack app-level token",
            "xapp-1-A0123BCDEFG-1234567890123-0a1b2c3d4e5f60718293a4b5c6d7e8f9".into(),
            false,
        ),
        (
            "Azure AD client secret",
            "Xy28Q~aBcD3fGhIjK4mNo.PqR5tUvWxYz6AbC_dE".into(),
            false,
        ),
        (
            "OpenAI project key",
            "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv-wXyZ1a4b7c0d_3e6f9g2h5i8j1k4l7m0n3o6p9q2r5s8t1u4v7w0x3y6z9AbCdEfGhIj".into(),
            false,
        ),
        (
            "OpenAI legacy key",
            "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".into(),
            false,
        ),
        (
            "Anthropic API key",
            "sk-ant-api03-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXyZ4a7b0c3d6e9f2g5h8i1j4k7l0m3n6o9p2q5r8s1t4u7v0w3x6y9z2A5B8C1D4E7F0G3H6-_I9J2K5AA".into(),
            false,
        ),
    ]
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn b64url(s: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s)
}

fn percent_all(s: &str) -> String {
    s.bytes().map(|b| format!("%{b:02X}")).collect()
}

fn fullwidth(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '!'..='~' => char::from_u32(c as u32 - 0x21 + 0xFF01).unwrap_or(c),
            c => c,
        })
        .collect()
}

/// `s` with U+200B inside it (after its first third).
fn zero_width(s: &str) -> String {
    let mut at = s.len() / 3;
    while !s.is_char_boundary(at) {
        at += 1;
    }
    format!("{}\u{200B}{}", &s[..at], &s[at..])
}

/// The disguises a whole secret is written in: `(label, text)`.
fn disguises(secret: &str, case_insensitive: bool) -> Vec<(&'static str, String)> {
    let first = secret.chars().next().unwrap_or('x');
    let rest = &secret[first.len_utf8()..];
    let mut out = vec![
        ("plain", secret.to_string()),
        ("U+200B inside", zero_width(secret)),
        ("fullwidth", fullwidth(secret)),
        ("percent-encoded", percent_all(secret)),
        (
            "percent-encoded punctuation",
            secret.replace('_', "%5F").replace('-', "%2D"),
        ),
        ("\\u escape", format!("\\u{:04x}{rest}", first as u32)),
        ("\\u{} escape", format!("\\u{{{:x}}}{rest}", first as u32)),
        ("HTML entity", format!("&#{};{rest}", first as u32)),
        ("HTML hex entity", format!("&#x{:x};{rest}", first as u32)),
        ("base64", b64(secret)),
        ("base64url", b64url(secret)),
    ];
    if case_insensitive {
        out.push(("upper case", secret.to_uppercase()));
    }
    out
}

/// Secrets that take only part of their text: `(label, text, expected)`.
fn partial_secrets() -> Vec<(&'static str, String, String)> {
    let c = |label, text: &str, expected: &str| (label, text.to_string(), expected.to_string());
    vec![
        c(
            "password in a URL",
            "https://pos:Grocer2026@host.example/menu",
            "https://pos:[REDACTED]@host.example/menu",
        ),
        c(
            "password in an FTP URL",
            "ftp://admin:s3cr3t!@files.example",
            "ftp://admin:[REDACTED]@files.example",
        ),
        c(
            "password is X",
            "password is hunter2",
            "password is [REDACTED]",
        ),
        c(
            "the Wi-Fi password is X.",
            "The Wi-Fi password is Grocer2026.",
            "The Wi-Fi password is [REDACTED].",
        ),
        c(
            "password was X",
            "Old password was Summer2025",
            "Old password was [REDACTED]",
        ),
        c(
            "passcode is: X",
            "Door passcode is: 4711-ab",
            "Door passcode is: [REDACTED]",
        ),
        c(
            "password is \"X Y\"",
            "password is \"correct horse\"",
            "password is \"[REDACTED]\"",
        ),
        c(
            "password: X",
            "Free Wi-Fi in store - password: Grocer2026",
            "Free Wi-Fi in store - password: [REDACTED]",
        ),
        c(
            "zero-width inside a password",
            "password: Gro\u{200B}cer2026!",
            "password: [REDACTED]",
        ),
        c(
            "password = X",
            "password = hunter2 ok",
            "password = [REDACTED] ok",
        ),
        c("Password: X", "Password: hunter2", "Password: [REDACTED]"),
        c(
            "password=X",
            "login password=hunter2 ok",
            "login password=[REDACTED] ok",
        ),
        c(
            "fullwidth password word",
            "ｐａｓｓｗｏｒｄ： hunter2",
            "ｐａｓｓｗｏｒｄ： [REDACTED]",
        ),
        c(
            "JSON inside text",
            r#"cfg {"password":"hunter two"} end"#,
            r#"cfg {"password":"[REDACTED]"} end"#,
        ),
        c(
            "JSON with spaces inside text",
            r#"{"user": "a", "password": "x y"}"#,
            r#"{"user": "a", "password": "[REDACTED]"}"#,
        ),
        c(
            "escaped JSON inside text",
            r#"{\"api_key\":\"abc123\"}"#,
            r#"{\"api_key\":\"[REDACTED]\"}"#,
        ),
        c(
            "quoted token in JSON text",
            r#"{"token": "tok_9f8e7d"}"#,
            r#"{"token": "[REDACTED]"}"#,
        ),
        c(
            "a URL's token",
            "https://hooks.example/in?token=abc123XYZsecret",
            "https://hooks.example/in?token=[REDACTED]",
        ),
        c(
            "token= in a query",
            "https://x.test/?token=abc123&x=1",
            "https://x.test/?token=[REDACTED]&x=1",
        ),
        c(
            "pass= in a query",
            "ftp://files.example/?user=a&pass=SUMMER24",
            "ftp://files.example/?user=a&pass=[REDACTED]",
        ),
        c(
            "pwd= in a connection string",
            "db?user=a&pwd=s3cr3t&x=1",
            "db?user=a&pwd=[REDACTED]&x=1",
        ),
        c(
            "pass= that reads like a password",
            "ftp login pass=s3cret!",
            "ftp login pass=[REDACTED]",
        ),
        c("api_key=", "api_key=abc123;", "api_key=[REDACTED];"),
        c(
            "client_secret:",
            "client_secret:xyz",
            "client_secret:[REDACTED]",
        ),
        c(
            "aws_secret_access_key =",
            "aws_secret_access_key = abcdEFGH1234",
            "aws_secret_access_key = [REDACTED]",
        ),
        c(
            "Authorization: Basic",
            &format!("Authorization: Basic {}", b64("admin:Grocer2026")),
            "Authorization: Basic [REDACTED]",
        ),
        c(
            "Authorization: Bearer",
            "Authorization: Bearer Zx81pQ0rT5u",
            "Authorization: [REDACTED]",
        ),
        c(
            "percent-encoded query token",
            "https://x.test/?%74oken=abc123",
            "https://x.test/?%74oken=[REDACTED]",
        ),
        c(
            "a key split: its first part",
            "sgn_test_VECFOkBoPCcq3rfr_ssqf9Y",
            "[REDACTED]",
        ),
        c(
            "a key split: its last 32 characters",
            "9xxptbfgNOxP5rqItR2hoMjFvg2yaUNr",
            "[REDACTED]",
        ),
        c(
            "a key split at its key id",
            "_ssqf9Y9xxptbfgNOxP5rqItR2hoMjFvg2yaUNr",
            "[REDACTED]",
        ),
        c(
            "an AWS key pair",
            "AKIAIOSFODNN7EXAMPLE / q8Xv2Lr9TzKp4Wm7Yb1Nc6Hd3Fg0Js5Qa/Rt+Ue8",
            "[REDACTED] / [REDACTED]",
        ),
        c(
            "a MongoDB URI with a %40-encoded user",
            "mongodb+srv://user%40corp:Mongo2026pw@cluster0.example.net/db",
            "mongodb+srv://user%40corp:[REDACTED]@cluster0.example.net/db",
        ),
        c(
            "a URL password holding #",
            "https://user:pa#ss99@host.example/feed",
            "https://user:[REDACTED]@host.example/feed",
        ),
        c(
            "an S3 presigned URL's signature",
            "https://b.s3.amazonaws.com/a.mp4?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20260301T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "https://b.s3.amazonaws.com/a.mp4?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20260301T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=[REDACTED]",
        ),
        c(
            "a webhook secret split by a line break",
            "whsec_MfKQ9r8GKYqrTwj\nUPD8ILPZIo2LaLaSw",
            "[REDACTED]",
        ),
        c(
            "a webhook secret split by a space",
            "whsec_MfKQ9r8GKYqr TwjUPD8ILPZIo2LaLaSw",
            "[REDACTED]",
        ),
        c(
            "a Twilio auth token after its account SID",
            "Twilio AC0123456789abcdef0123456789abcdef / 9f8e7d6c5b4a39281706f5e4d3c2b1a0",
            "Twilio AC0123456789abcdef0123456789abcdef / [REDACTED]",
        ),
        c(
            "a Twilio SID:token pair",
            "AC0123456789abcdef0123456789abcdef:9f8e7d6c5b4a39281706f5e4d3c2b1a0",
            "AC0123456789abcdef0123456789abcdef:[REDACTED]",
        ),
        c(
            "a random id in a Drive link",
            "https://drive.example.com/file/d/1A2b3C4d5E6f7G8h9I0jKlMnOpQrStUv/view",
            "https://drive.example.com/file/d/[REDACTED]/view",
        ),
    ]
}

/// A password stated in words, in a language or a phrasing of its own: `(label, before, password,
/// after)`; the password goes, the words stay.
const WORDED: &[(&str, &str, &str, &str)] = &[
    // English, beyond `password is x`.
    ("login: user / password", "login: admin / ", "Hunter22", ""),
    (
        "login: user/password",
        "Login: pos/",
        "Grocer2026",
        " (till 3)",
    ),
    ("mysql -p", "mysql -u root -p", "S3cretPass", " shop"),
    (
        "mysqldump -p",
        "mysqldump -h db -uadmin -p",
        "Dump2026x",
        " --all",
    ),
    ("the wifi pass is X", "the wifi pass is ", "guest2024", ""),
    (
        "password for … is X",
        "Password for the guest network is ",
        "Lobby2026",
        "",
    ),
    ("Wi-Fi pass: X", "Wi-Fi pass: ", "Lobby77!", ""),
    ("pw = X", "router pw = ", "Xyz123abc", ""),
    ("pw: X", "pw: ", "corner42", ""),
    (
        "Wi-Fi QR payload",
        "WIFI:T:WPA;S:MyNet;P:",
        "secret123",
        ";;",
    ),
    (
        "Wi-Fi QR payload, P first",
        "WIFI:P:",
        "Cafe2026",
        ";S:Cafe;T:WPA;;",
    ),
    (
        "Wi-Fi QR payload, escaped ;",
        "WIFI:S:Bar;T:WPA;P:",
        r"ab\;cd99",
        ";H:false;;",
    ),
    (
        "Wi-Fi QR payload, quoted password",
        "WIFI:S:Guest;T:WPA2;P:\"",
        "Lobby 2026",
        "\";;",
    ),
    ("Wi-Fi code: X", "Wi-Fi code: ", "Lobby2026", ""),
    // German.
    (
        "German: lautet",
        "Das WLAN-Passwort lautet ",
        "Sommer2024!",
        "",
    ),
    ("German: ist", "Das Passwort ist ", "Hafen#77", "."),
    ("German: Kennwort", "Kennwort: ", "Brezel2026", ""),
    (
        "German: WLAN-Schlüssel",
        "WLAN-Schlüssel: ",
        "Alster2026",
        "",
    ),
    ("German: no joiner", "WLAN Passwort ", "Sommer2024!", ""),
    (
        "German: Zugangscode",
        "Der Zugangscode lautet ",
        "Tor2026x",
        "",
    ),
    // French.
    ("French: est", "le mot de passe est ", "Soleil2024", ""),
    (
        "French: du WiFi est :",
        "Le mot de passe du WiFi est : ",
        "Croissant#9",
        "",
    ),
    ("French: mdp", "mdp wifi : ", "Baguette75", ""),
    ("French: code Wi-Fi", "Code Wi-Fi : ", "Soleil2024", ""),
    // Dutch.
    ("Dutch: is", "het wachtwoord is ", "Tulp2024!", ""),
    ("Dutch: Wachtwoord:", "Wachtwoord: ", "Gracht88", ""),
    // Spanish.
    ("Spanish: es", "la contraseña es ", "Playa2024", ""),
    (
        "Spanish: del wifi es:",
        "La contraseña del wifi es: ",
        "Tapas#55",
        "",
    ),
    ("Spanish: clave", "La clave del WiFi es ", "Sol2026x", ""),
    // Italian.
    ("Italian: la password è", "la password è ", "Pizza2024!", ""),
    (
        "Italian: parola d'ordine",
        "La parola d'ordine è ",
        "Gelato77",
        "",
    ),
    // Portuguese.
    ("Portuguese: a senha é", "a senha é ", "Praia2024", ""),
    (
        "Portuguese: do Wi-Fi",
        "A senha do Wi-Fi é ",
        "Sardinha#3",
        ".",
    ),
    (
        "Portuguese: palavra-passe",
        "A palavra-passe é ",
        "Lisboa2024",
        "",
    ),
    // Polish.
    ("Polish: hasło to", "hasło to ", "Pierogi2024", ""),
    ("Polish: Hasło do WiFi:", "Hasło do WiFi: ", "Wisla77!", ""),
    // Russian.
    ("Russian: пароль:", "пароль: ", "Zima2024!", ""),
    (
        "Russian: Пароль от Wi-Fi —",
        "Пароль от Wi-Fi — ",
        "Moskva77",
        "",
    ),
    // Japanese.
    (
        "Japanese: は … です",
        "WiFiのパスワードは ",
        "Sakura2024",
        " です",
    ),
    ("Japanese: no spaces", "パスワードは", "Sakura2024", "です"),
    ("Japanese: fullwidth colon", "パスワード：", "Fuji77x", ""),
    // Chinese.
    ("Chinese: 密码是", "密码是 ", "Panda2024", ""),
    ("Chinese: Wi-Fi密码：", "Wi-Fi密码：", "Dragon88", ""),
    (
        "Chinese (traditional): 密碼是",
        "WiFi 密碼是 ",
        "Taipei101x",
        "",
    ),
    // Arabic.
    ("Arabic: كلمة المرور هي", "كلمة المرور هي ", "Cairo2024", ""),
    ("Arabic: كلمة السر:", "كلمة السر: ", "Nile77!", ""),
    (
        "Arabic: كلمة مرور الواي فاي",
        "كلمة مرور الواي فاي هي ",
        "Dubai2026",
        "",
    ),
    // Turkish, Swedish, Danish/Norwegian, Korean.
    ("Turkish: şifre", "Wi-Fi şifresi: ", "Bogaz2024", ""),
    ("Swedish: lösenordet är", "lösenordet är ", "Kanel2024", ""),
    ("Norwegian: passordet er", "passordet er ", "Fjord2024", ""),
    (
        "Korean: 비밀번호는",
        "와이파이 비밀번호는 ",
        "Kimchi2024",
        "",
    ),
];

/// Every secret form: `(label, text, expected)`.
pub fn secret_forms() -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for (label, secret, ci) in whole_secrets() {
        for (how, text) in disguises(&secret, ci) {
            out.push((
                format!("{label}, {how}"),
                format!("see {text} now"),
                "see [REDACTED] now".to_string(),
            ));
        }
    }
    for (label, text, expected) in partial_secrets() {
        out.push((label.to_string(), text, expected));
    }
    for &(label, before, password, after) in WORDED {
        let expected = format!("{before}{REDACTED}{after}");
        out.push((
            label.to_string(),
            format!("{before}{password}{after}"),
            expected.clone(),
        ));
        out.push((
            format!("{label}, U+200B inside"),
            format!("{before}{}{after}", zero_width(password)),
            expected,
        ));
        // `-P` is mysql's port, not its password.
        if before.ends_with("-p") {
            continue;
        }
        out.push((
            format!("{label}, upper case"),
            format!("{}{password}{after}", before.to_uppercase()),
            format!("{}{REDACTED}{after}", before.to_uppercase()),
        ));
    }
    out
}

pub fn ordinary() -> Vec<&'static str> {
    include_str!("corpus/ordinary.txt")
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

#[test]
fn every_secret_form_is_redacted_whole() {
    let forms = secret_forms();
    assert!(forms.len() >= 300, "{} forms", forms.len());
    let mut failures = Vec::new();
    for (label, text, expected) in &forms {
        let out = redact_str(text);
        if out != *expected || !holds_secret(text) {
            failures.push(format!(
                "{label}: {text:?} -> {out:?}, expected {expected:?}"
            ));
        }
        // The same inside an answer, however it is redacted.
        let body = serde_json::to_vec(&json!({ "note": text })).unwrap();
        for shape in [
            Shape::Any,
            Shape::Object(vec![("note".into(), Shape::Text)]),
        ] {
            let r = redact_json_as(&body, &shape).unwrap();
            let v: Value = serde_json::from_slice(&r.json).unwrap();
            if v["note"] != json!(expected) || r.fields != ["note"] {
                failures.push(format!("{label} in JSON: {v}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn ordinary_signage_text_is_untouched() {
    let lines = ordinary();
    assert!(lines.len() >= 200, "{} lines", lines.len());
    let mut failures = Vec::new();
    for line in &lines {
        let out = redact_str(line);
        if !matches!(out, Cow::Borrowed(_)) || holds_secret(line) {
            failures.push(format!("{line:?} -> {out:?}"));
        }
        let body = serde_json::to_vec(&json!({ "headline": line })).unwrap();
        let r = redact_json_as(&body, &Shape::Any).unwrap();
        if !matches!(r.json, Cow::Borrowed(_)) {
            failures.push(format!("{line:?} in JSON"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A small deterministic generator (xorshift), for the statistics below.
struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn base62(&mut self, n: usize) -> String {
        const A: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        (0..n)
            .map(|_| A[(self.next() % 62) as usize] as char)
            .collect()
    }
}

/// How often a random secret of ours (32 base62 characters, as `random::base62` makes a webhook
/// secret's or a key's) is caught with no prefix at all: at least 99 % of 10,000.
#[test]
fn random_secrets_without_a_prefix_are_caught() {
    let mut rng = Xorshift(0x5EED_1234_ABCD_0001);
    for (len, least) in [(32, 9_900), (38, 9_900), (24, 9_500)] {
        let caught = (0..10_000)
            .filter(|_| holds_secret(&format!("see {} now", rng.base62(len))))
            .count();
        assert!(caught >= least, "{len} characters: {caught} of 10000");
    }
}
