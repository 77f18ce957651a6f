//! The composition: builds the state every request shares ([`App`], defined in `http`) from the
//! settings, the database, the REST route registry and the MCP server.

use crate::auth::jwt::JwtKeys;
use crate::auth::throttle::LoginThrottle;
use crate::config::Settings;
use crate::db::WriteIntent;
use crate::db::{Db, DbError, OpenReport};
use crate::http::router::{Route, Router};
pub use crate::http::App;
use crate::random::Seeded;
use crate::time::Clock;
use crate::timeline::{Source, Timeline};
use base64::Engine;
use rusqlite::OptionalExtension;
use std::sync::Arc;

impl App {
    /// Builds the app on its own clock: the fixtures of a new database are anchored to the clock's
    /// start, so a frozen sandbox shows the same world whenever it starts.
    ///
    /// The database (opened, its world settled to the clock) and the rest (the route table with
    /// its schemas, the request journal) need nothing of each other, so a second thread makes the
    /// rest meanwhile: on two cores a cold start waits for the longer of the two only.
    pub fn build(settings: Settings) -> Result<(App, OpenReport), DbError> {
        let clock = Arc::new(match settings.sandbox_clock {
            Some(at) => Clock::frozen_at(at),
            None => Clock::system(),
        });
        let seeded = settings
            .sandbox_seed
            .map(|seed| Arc::new(Seeded::new(seed)));
        let settings = &settings;
        let (database, rest) = std::thread::scope(|scope| {
            let rest = std::thread::Builder::new()
                .name("start-up".into())
                .spawn_scoped(scope, || Rest::make(settings));
            let database = Database::open(settings, clock, seeded);
            let rest = match rest {
                Ok(handle) => handle
                    .join()
                    .map_err(|_| crate::timeline::failed("the start-up thread panicked"))?,
                // No second thread to be had: the rest is made here, after the database.
                Err(_) => Rest::make(settings),
            };
            Ok::<_, DbError>((database?, rest?))
        })?;
        let Database {
            db,
            report,
            jwt,
            outbox,
            scans,
            timeline,
        } = database;
        let Rest { router, journal } = rest;
        let settings = settings.clone();
        let faults = crate::http::faults::Faults::new(
            settings.sandbox_max_delayed_per_account,
            settings.max_connections,
        );
        let admission = crate::http::admission::Admission::new(
            settings.max_connections,
            settings.max_unauthenticated_per_address,
            std::time::Duration::from_millis(settings.unauthenticated_timeout_millis),
        );
        let auth_failures =
            crate::http::auth_failures::AuthFailures::new(settings.auth_failures_per_minute);
        let bodies = crate::http::body::Buffered::new(
            crate::http::body::BUFFERED_BYTES,
            settings.max_body_bytes,
        );
        let spools = crate::http::body::Buffered::new(
            crate::http::spool::DISK_BYTES,
            settings.max_body_bytes,
        );
        let mut app = App {
            router,
            rate_limiter: crate::http::rate_limit::RateLimiter::new(&settings),
            settings,
            db,
            jwt,
            principals: Default::default(),
            login_throttle: LoginThrottle::default(),
            admission,
            auth_failures,
            bodies,
            spools,
            faults,
            extensions: Default::default(),
        };
        app.extensions
            .insert(Arc::new(crate::mcp::McpState::new(&app.settings)));
        app.extensions
            .insert(Arc::new(crate::routes::retention::State::default()));
        // The payload catalogue, for the routes that list it (they cannot read the registry that
        // lists them).
        app.extensions.insert(crate::routes::payloads());
        app.extensions
            .insert(Arc::new(crate::routes::rendered::Rendered::<
                crate::routes::devices::device_json::DeviceJson,
            >::default()));
        app.extensions
            .insert(Arc::new(crate::routes::rendered::Rendered::<
                crate::routes::companies::CompanyJson,
            >::default()));
        app.extensions
            .insert(Arc::new(crate::routes::rendered::Rendered::<
                crate::routes::ads::AdJson,
            >::default()));
        app.extensions
            .insert(Arc::new(crate::routes::sign_in::SignInLinks::default()));
        app.extensions
            .insert(Arc::new(crate::http::reveals::Reveals::default()));
        app.extensions
            .insert(Arc::new(crate::routes::scan::ScanLimiter::new(
                app.settings.scan_rate_limit_per_minute,
            )));
        crate::sandbox::install(&mut app, journal);
        app.extensions.insert(scans);
        app.extensions.insert(timeline);
        app.extensions.insert(outbox);
        app.extensions
            .insert(Arc::new(crate::sandbox::sink::Sinks::default()));
        Ok((app, report))
    }
}

/// The database half of a start: opened (migrations, the demo world), the login secret, and every
/// timeline source settled to the clock.
struct Database {
    db: Db,
    report: OpenReport,
    jwt: JwtKeys,
    outbox: Arc<crate::webhooks::Outbox>,
    scans: crate::sandbox::simulated_scans::SimulatedScans,
    timeline: Arc<Timeline>,
}

impl Database {
    fn open(
        settings: &Settings,
        clock: Arc<Clock>,
        seeded: Option<Arc<Seeded>>,
    ) -> Result<Database, DbError> {
        let (db, report) = Db::open(&settings.database, settings.load_fixtures, clock, seeded)?;
        let secret = match &settings.jwt_secret {
            Some(s) => s.as_bytes().to_vec(),
            None => stored_jwt_secret(&db)?,
        };
        let jwt = JwtKeys::new(&secret, settings.login_token_ttl_secs);
        db.set_wal_limit(settings.wal_limit_bytes);
        let outbox = Arc::new(crate::webhooks::Outbox::new(settings));
        let waker = Arc::clone(&outbox);
        db.set_after_commit(Box::new(move || waker.wake()));
        let scans = crate::sandbox::simulated_scans::SimulatedScans::default();
        let timeline = Arc::new(Timeline::new(sources(&outbox, &scans)));
        db.snapshots_configure(settings.sandbox_snapshot_budget_bytes);
        // Every start settles the stored "last reported" states to the clock without recording
        // anything: fixtures just loaded (here, by `signage migrate` or `signage reset`) and what
        // fell due while the sandbox was stopped. A start never fires a burst of events.
        let env = crate::timeline::Env {
            db: db.unscoped(),
            settings,
            slice_rows: 0,
        };
        timeline.settle(&env, db.clock().now())?;
        Ok(Database {
            db,
            report,
            jwt,
            outbox,
            scans,
            timeline,
        })
    }
}

/// The other half: the route table with its schemas, and the request journal that knows the MCP
/// tools' names.
struct Rest {
    router: Router,
    journal: Arc<crate::sandbox::journal::Journal>,
}

impl Rest {
    fn make(settings: &Settings) -> Result<Rest, DbError> {
        let mut routes = routes();
        if !settings.sandbox_control {
            routes.retain(|r| !r.path.starts_with("/_sandbox/"));
        }
        if !settings.console_enabled {
            routes.retain(|r| {
                r.path != "/console"
                    && !r.path.starts_with("/console/")
                    && !r.path.starts_with("/player/")
            });
        }
        let router = Router::new(routes).with_schemas(schemas());
        let journal = crate::sandbox::open_journal(settings, &router)?;
        Ok(Rest { router, journal })
    }
}

/// The whole route table: every REST route of the platform's route registry, the sandbox's
/// controls around it, then the MCP endpoint.
pub fn routes() -> Vec<Route> {
    let mut routes = crate::routes::all();
    routes.extend(crate::sandbox::routes());
    routes.extend(crate::mcp::routes());
    routes
}

/// Every named schema the route table refers to: the platform's, then the sandbox's.
fn schemas() -> Vec<(&'static str, serde_json::Value)> {
    let mut schemas = crate::routes::schemas();
    schemas.extend(crate::sandbox::schemas());
    schemas
}

/// Everything that happens as the sandbox clock moves, each source beside the area it changes
/// ([`crate::timeline`]).
fn sources(
    outbox: &Arc<crate::webhooks::Outbox>,
    scans: &crate::sandbox::simulated_scans::SimulatedScans,
) -> Vec<Box<dyn Source>> {
    vec![
        // The demo world's past first: the other sources settle on top of it.
        Box::new(crate::sandbox::history::History),
        Box::new(crate::routes::promotions::PromotionWindows),
        Box::new(crate::routes::admin::KeyExpiry),
        Box::new(crate::routes::devices::DevicePresence),
        Box::new(crate::routes::subscriptions::Subscriptions),
        Box::new(crate::routes::invoice_due::InvoiceDue),
        Box::new(crate::mcp::expiry::ConfirmationExpiry),
        Box::new(scans.clone()),
        Box::new(crate::sandbox::simulator::Fleet),
        Box::new(crate::webhooks::Retries {
            outbox: Arc::clone(outbox),
        }),
    ]
}

/// The webhook worker's view of the app.
impl crate::webhooks::Host for App {
    fn db(&self) -> &Db {
        &self.db
    }
    fn settings(&self) -> &Settings {
        &self.settings
    }
}

/// The JWT signing secret: generated once (512 random bits) and kept in the database, so
/// login tokens survive restarts but never leave the machine.
fn stored_jwt_secret(db: &Db) -> Result<Vec<u8>, DbError> {
    db.write(&WriteIntent::sandbox(), |tx| {
        let existing: Option<String> = tx
            .query_row(
                "SELECT value FROM server_secrets WHERE name = 'jwt_hs256'",
                [],
                |r| r.get(0),
            )
            .optional()?;
        let encoded = match existing {
            Some(v) => v,
            None => {
                let v = base64::engine::general_purpose::STANDARD
                    .encode(crate::random::bytes::<64>(tx.seeded(), "jwt_secret"));
                tx.execute(
                    "INSERT INTO server_secrets (name, value) VALUES ('jwt_hs256', ?1)",
                    [&v],
                )?;
                v
            }
        };
        base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|e| DbError::Fixtures(format!("stored JWT secret is corrupt: {e}")))
    })
}
