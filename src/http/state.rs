//! The state every request shares: settings, database, signing keys, the route table, the rate
//! limiter, and the state of the services served above http.

use super::rate_limit::RateLimiter;
use super::router::Router;
use crate::auth::jwt::JwtKeys;
use crate::auth::throttle::LoginThrottle;
use crate::config::Settings;
use crate::db::Db;
use crate::random::Seeded;
use crate::time::Clock;
use std::sync::Arc;

pub struct App {
    pub settings: Settings,
    /// The database, which lives on the app's one clock and, in a seeded sandbox, its generator
    /// ([`App::clock`], [`App::seeded`]).
    pub db: Db,
    pub jwt: JwtKeys,
    /// The principals of verified API keys, checked against the database on every request.
    pub principals: crate::auth::cache::Principals,
    pub login_throttle: LoginThrottle,
    /// The connections held, and which are not yet authenticated ([`super::admission`]).
    pub admission: super::admission::Admission,
    /// Failed authentications per client address ([`super::auth_failures`]).
    pub auth_failures: super::auth_failures::AuthFailures,
    /// The memory all request bodies held at once may take ([`super::body`]).
    pub bodies: super::body::Buffered,
    /// The disk all uploads spooled at once may take ([`super::spool`]).
    pub spools: super::body::Buffered,
    pub router: Router,
    pub rate_limiter: RateLimiter,
    /// The sandbox operator's fault rules, in memory ([`super::faults`]).
    pub faults: super::faults::Faults,
    /// The state of the services above http (the MCP server's sessions and tool catalogue), kept
    /// by type: http carries it without naming it, so the layers run one way. `app::App::build`
    /// puts it in; the service reads it back (`mcp::state`).
    pub extensions: hyper::http::Extensions,
}

impl App {
    /// The one clock of this app (its database's): everything it does reads the time from here,
    /// passed down (a request's context, a write's handle, a step of background work).
    pub fn clock(&self) -> &Arc<Clock> {
        self.db.clock()
    }

    /// The seeded generator of a seeded sandbox (`sandbox.seed`), passed to every purposed draw;
    /// `None` draws from the OS.
    pub fn seeded(&self) -> Option<&Seeded> {
        self.db.seeded()
    }
}
