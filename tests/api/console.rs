//! The console and the player pages: served from the binary with a strict policy, and nothing else.

use crate::helpers::TestApp;

/// The console's ES modules (console.js imports them).
const MODULES: [&str; 9] = [
    "/console/ui.js",
    "/console/live.js",
    "/console/charts.js",
    "/console/fleet.js",
    "/console/adsview.js",
    "/console/promotions.js",
    "/console/dashboard.js",
    "/console/feed.js",
    "/console/sandbox.js",
];

const PAGES: [(&str, &str); 7] = [
    ("/console", "text/html; charset=utf-8"),
    ("/console/console.js", "text/javascript; charset=utf-8"),
    ("/console/common.js", "text/javascript; charset=utf-8"),
    ("/console/console.css", "text/css; charset=utf-8"),
    ("/console/player.js", "text/javascript; charset=utf-8"),
    ("/console/player.css", "text/css; charset=utf-8"),
    (
        "/player/dev_0m5d4rurirl5am60ejs7",
        "text/html; charset=utf-8",
    ),
];

#[tokio::test]
async fn pages_are_served_with_a_strict_policy_and_no_credential() {
    let app = TestApp::spawn().await;
    let mut total = 0;
    let modules = MODULES.map(|m| (m, "text/javascript; charset=utf-8"));
    for (path, content_type) in PAGES.into_iter().chain(modules) {
        let r = app.get(path).send().await;
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.header("content-type"), Some(content_type), "{path}");
        let csp = r.header("content-security-policy").unwrap_or_default();
        for directive in [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "connect-src 'self'",
            "frame-ancestors 'none'",
        ] {
            assert!(csp.contains(directive), "{path}: {csp}");
        }
        assert!(!csp.contains("unsafe"), "{path}: {csp}");
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
        total += r.body.len();
        if content_type.starts_with("text/html") {
            let html = r.text();
            // No inline script or style for the policy to refuse: every script has a src.
            assert!(
                !html.contains("<script>") && !html.contains(" style="),
                "{path}"
            );
            assert!(
                !html.contains("http://") && !html.contains("https://"),
                "{path}: no third party"
            );
        }
    }
    // Issue 13's target: the embedded assets add at most 300 KB to the binary.
    assert!(total <= 300 * 1024, "{total} bytes of console assets");
}

#[tokio::test]
async fn the_scripts_never_parse_api_values_as_html() {
    let app = TestApp::spawn().await;
    for path in [
        "/console/console.js",
        "/console/common.js",
        "/console/player.js",
    ]
    .into_iter()
    .chain(MODULES)
    {
        let js = app.get(path).send().await.text();
        // Every module console.js and the others import is served.
        for import in js.split("from \"./").skip(1) {
            let file = import.split('"').next().unwrap_or_default();
            let served = app.get(&format!("/console/{file}")).send().await;
            assert_eq!(served.status, 200, "{path} imports {file}");
        }
        for sink in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
        ] {
            assert!(!js.contains(sink), "{path} uses {sink}");
        }
    }
}

#[tokio::test]
async fn a_player_needs_a_device_id_and_checks_its_query() {
    let app = TestApp::spawn().await;
    app.get("/player/not-a-device").send().await.problem(404);
    app.get("/player/dev_0m5d4rurirl5am60ejs7?slot=0")
        .send()
        .await
        .problem(422);
    let r = app
        .get("/player/dev_0m5d4rurirl5am60ejs7?slot=5")
        .send()
        .await;
    assert_eq!(r.status, 200);
    app.get("/console/nothing.js").send().await.problem(404);
}

#[tokio::test]
async fn console_enabled_false_removes_both_pages() {
    let app = TestApp::spawn_with(|l| l.console_enabled = Some(false)).await;
    for (path, _) in PAGES {
        app.get(path).send().await.problem(404);
    }
}
