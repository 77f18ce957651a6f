//! The authorization matrix: every authenticated route × every kind of credential, asserted
//! against one table of expectations. It walks the live route table, so a new route is covered
//! the day it is added (and fails here if it has no sample object).

use crate::helpers::*;
use crate::samples;
use hyper::Method;
use signage::auth::{Action, Level};
use signage::http::router::Route;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cred {
    NoCredential,
    Malformed,
    Unknown,
    Revoked,
    Expired,
    WrongClientId,
    ReadKey,
    WriteKey,
    OtherCompanyKey,
    Admin,
    /// The sandbox operator (scope `sandbox` only).
    Operator,
}

pub const CREDS: [Cred; 11] = [
    Cred::NoCredential,
    Cred::Malformed,
    Cred::Unknown,
    Cred::Revoked,
    Cred::Expired,
    Cred::WrongClientId,
    Cred::ReadKey,
    Cred::WriteKey,
    Cred::OtherCompanyKey,
    Cred::Admin,
    Cred::Operator,
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    Unauthenticated,
    Forbidden,
    Hidden,
    Allowed,
}

/// The headers a credential sends.
pub fn headers(cred: Cred) -> Vec<(&'static str, String)> {
    let k = |name: &str| {
        let k = key(name);
        vec![("x-api-key", k.raw), ("x-service-client-id", k.client_id)]
    };
    match cred {
        Cred::NoCredential => vec![],
        Cred::Malformed => vec![
            ("x-api-key", "sgn_test_short".into()),
            ("x-service-client-id", key("northwind-readonly").client_id),
        ],
        Cred::Unknown => vec![
            ("x-api-key", signage::auth::keys::generate(None).raw),
            ("x-service-client-id", key("northwind-readonly").client_id),
        ],
        Cred::Revoked => k("northwind-revoked"),
        Cred::Expired => k("northwind-expired"),
        Cred::WrongClientId => vec![
            ("x-api-key", key("northwind-readonly").raw),
            ("x-service-client-id", key("northwind-admin").client_id),
        ],
        Cred::ReadKey => k("northwind-readonly"),
        Cred::WriteKey => k("northwind-readwrite"),
        // Scoped to Northwind Grocers; the sample objects belong to Northwind Pharmacy.
        Cred::OtherCompanyKey => k("northwind-grocers-write"),
        Cred::Admin => k("northwind-admin"),
        Cred::Operator => k("sandbox-operator"),
    }
}

/// True when objects reached by id under this first path segment belong to a company (as opposed
/// to global catalogues and admin): the area registry says so.
fn company_owned(first_segment: &str) -> bool {
    signage::areas::Area::of_path_segment(first_segment).is_some_and(|a| a.spec().company_owned)
}

pub fn expected(route: &Route, cred: Cred) -> Expect {
    match cred {
        Cred::NoCredential
        | Cred::Malformed
        | Cred::Unknown
        | Cred::Revoked
        | Cred::Expired
        | Cred::WrongClientId => return Expect::Unauthenticated,
        _ => {}
    }
    let needs = route.action;
    let scope_ok = match cred {
        // `admin` implies everything of its account, not the operator's control of the instance.
        Cred::Admin => needs != Action::Sandbox,
        Cred::Operator => matches!(needs, Action::Sandbox | Action::Authenticated),
        Cred::ReadKey => matches!(needs, Action::Authenticated | Action::Use(_, Level::Read)),
        Cred::WriteKey | Cred::OtherCompanyKey => {
            matches!(needs, Action::Authenticated | Action::Use(..))
        }
        _ => false,
    };
    if !scope_ok {
        return Expect::Forbidden;
    }
    // A sink is read with `webhooks:read` and emptied with `webhooks:write` (or `sandbox`): its
    // route is open to every credential and the handler checks which.
    if route.path == "/_sandbox/sink/{name}"
        && route.method == Method::DELETE
        && cred == Cred::ReadKey
    {
        return Expect::Forbidden;
    }
    let first = route
        .path
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or("");
    if cred == Cred::OtherCompanyKey && route.path.contains('{') && company_owned(first) {
        return Expect::Hidden;
    }
    // The sample is a request of the account's admin: only an admin of that account sees it.
    if route.path == "/requests/{id}" && cred != Cred::Admin {
        return Expect::Hidden;
    }
    Expect::Allowed
}

/// A delivery of Northwind Pharmacy's first webhook (made once: the fixtures have none), settled so
/// that nothing sends it.
fn sample_delivery(app: &TestApp, pharmacy: &str) -> String {
    let now = app.app.clock().now();
    app.sql(|c| {
        let hook: String = c.query_row(
            "SELECT id FROM webhooks WHERE company_id = ?1 ORDER BY id LIMIT 1",
            [pharmacy],
            |r| r.get(0),
        )?;
        // Dated now: retention prunes finished deliveries (and events) older than its bound.
        c.execute(
            "INSERT OR IGNORE INTO events (id, company_id, type, resource_type, resource_id, payload, created_at)
             VALUES ('evt_matrixsample', ?1, 'webhook.test', 'webhook', ?2, '{}', ?3)",
            rusqlite::params![pharmacy, hook.as_str(), now],
        )?;
        c.execute(
            "INSERT OR IGNORE INTO webhook_deliveries (id, company_id, webhook_id, event_id, event_type,
                 status, attempts, created_at, updated_at)
             VALUES ('whd_matrixsample', ?1, ?2, 'evt_matrixsample', 'webhook.test', 'succeeded', 0, ?3, ?3)",
            rusqlite::params![pharmacy, hook.as_str(), now],
        )?;
        Ok("whd_matrixsample".to_string())
    })
}

/// A concrete path for a route, with every parameter naming an object of Northwind Pharmacy: by
/// default its first object (by id) of the area the previous path segment names
/// (`samples::objects_after`, from the area registry and the schema), so a new area needs no line
/// here. The arms below are the objects that rule would get wrong. A parameter without a sample
/// panics, naming its (area, parameter).
pub fn sample_path(app: &TestApp, route: &Route) -> String {
    let pharmacy = company_id("Northwind Pharmacy");
    // `DELETE /ads/{id}/devices/{device_id}` needs a device the ad is assigned to.
    let (ad, assigned_device): (String, String) = app.sql(|c| {
        c.query_row(
            "SELECT a.ad_id, a.device_id FROM ad_assignments a JOIN ads ON ads.id = a.ad_id WHERE ads.company_id = ?1 ORDER BY 1, 2 LIMIT 1",
            [&pharmacy],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    });
    let mut out = String::new();
    let mut previous = "";
    for seg in route.path.trim_start_matches('/').split('/') {
        out.push('/');
        if !seg.starts_with('{') {
            out.push_str(seg);
            previous = seg;
            continue;
        }
        let id = match previous {
            "ads" => ad.clone(),
            "devices" => assigned_device.clone(),
            // The fixtures have no deliveries: one is made.
            "deliveries" => sample_delivery(app, &pharmacy),
            // The fixtures have no events either: the sample delivery's is one.
            "events" => {
                sample_delivery(app, &pharmacy);
                "evt_matrixsample".to_string()
            }
            // Credentials of the platform, not objects of an area.
            "api-clients" => key("northwind-readonly").client_id,
            "api-keys" => key("northwind-ads-editor").key_id,
            // The operator's controls name an account (`/_sandbox/accounts/{id}/companies`).
            "accounts" => key("northwind-readonly").account_id,
            // Sandbox objects live in memory: made here, so the operator's call finds one.
            "faults" => sample_fault(app),
            "snapshots" => sample_snapshot(app),
            "sink" => "matrix".to_string(),
            "requests" => sample_request(app),
            _ => samples::objects_after(app, previous, seg)
                .and_then(|objects| objects.first_of(app, &pharmacy, seg))
                .unwrap_or_else(|missing| {
                    panic!(
                        "the matrix has no sample object for {missing}, in {}",
                        route.path
                    )
                }),
        };
        out.push_str(&id);
    }
    out
}

/// A fault rule that matches no real request.
fn sample_fault(app: &TestApp) -> String {
    let rule: signage::http::faults::NewRule = serde_json::from_value(
        serde_json::json!({"match": {"path": "/nowhere"}, "action": {"type": "drop"}}),
    )
    .unwrap();
    let clock = app.app.clock();
    app.app
        .faults
        .add(rule, clock, app.app.seeded(), clock.now())
        .unwrap()
        .id
}

/// The newest journaled request of `northwind-admin` (the matrix and the examples make many before
/// they reach `/requests/{id}`), or an id nobody made.
fn sample_request(app: &TestApp) -> String {
    use signage::sandbox::journal::{store, Journal};
    let admin = key("northwind-admin");
    let journal = app
        .app
        .extensions
        .get::<std::sync::Arc<Journal>>()
        .expect("the journal");
    let filter = store::Filter {
        accounts: Some(store::Accounts::One(Some(admin.account_id))),
        key_id: Some(admin.key_id),
        ..store::Filter::default()
    };
    journal
        .read(|c| store::page(c, &filter, None, 1))
        .unwrap()
        .first()
        .map(|e| e.request_id.clone())
        .unwrap_or_else(|| "req_000000000000000000000000".into())
}

/// A snapshot of the state as it is now (made once per app).
fn sample_snapshot(app: &TestApp) -> String {
    let name = "matrix";
    if !app.app.db.snapshot_list().iter().any(|s| s.name == name) {
        let world = signage::sandbox::world::capture(&app.app);
        let world = serde_json::to_value(world).unwrap();
        app.app.db.unscoped().snapshot_save(name, 0, world).unwrap();
    }
    name.to_string()
}

pub fn classify(status: u16) -> Option<Expect> {
    match status {
        401 => Some(Expect::Unauthenticated),
        403 => Some(Expect::Forbidden),
        404 => Some(Expect::Hidden),
        s if s >= 500 => None,
        _ => Some(Expect::Allowed),
    }
}

/// The routes the matrix covers: every route that needs a credential, except the MCP endpoint
/// (which has its own transport rules and runs this same matrix through its tools).
pub fn covered_routes(app: &TestApp) -> Vec<Route> {
    app.app
        .router
        .routes()
        .iter()
        .filter(|r| r.action != Action::Public && !r.path.starts_with("/mcp"))
        .cloned()
        .collect()
}

#[tokio::test]
async fn every_route_answers_every_credential_as_the_table_says() {
    // Hundreds of refused credentials from one address in a few seconds: the per-address limit on
    // failed authentication (tested in `edge_auth`) would answer most of them 429.
    let app = TestApp::spawn_with(|l| l.auth_failures_per_minute = Some(0)).await;
    let routes = covered_routes(&app);
    assert!(routes.len() >= 10, "the route table looks empty");
    let mut failures = Vec::new();
    let mut cases = 0;
    for route in &routes {
        for cred in CREDS {
            let path = sample_path(&app, route);
            let mut req = app.request(route.method.clone(), &path);
            for (h, v) in headers(cred) {
                req = req.header(h, &v);
            }
            if route.method != Method::GET && route.method != Method::DELETE {
                req = req.json(&serde_json::json!({}));
            }
            let r = req.send().await;
            cases += 1;
            let want = expected(route, cred);
            let got = classify(r.status.as_u16());
            if got != Some(want) {
                failures.push(format!(
                    "{} {} as {:?}: expected {:?}, got {} {}",
                    route.method,
                    route.path,
                    cred,
                    want,
                    r.status,
                    r.text()
                ));
            }
            if want == Expect::Unauthenticated && r.header("www-authenticate").is_none() {
                failures.push(format!(
                    "{} {} as {cred:?}: 401 without WWW-Authenticate",
                    route.method, route.path
                ));
            }
            if route.method != Method::GET && r.status.is_success() {
                app.app.db.reset().unwrap();
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {cases} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
