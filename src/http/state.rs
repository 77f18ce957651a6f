//! The state every request shares: settings, database, signing keys, the route table, the rate
//! limiter, and the state of the services served above http.

use super::rate_limit::RateLimiter;
use super::router::Router;
use crate::auth::jwt::JwtKeys;
use crate::auth::throttle::LoginThrottle;
use crate::config::Settings;
use crate::db::Db;

pub struct App {
    pub settings: Settings,
    pub db: Db,
    pub jwt: JwtKeys,
    pub login_throttle: LoginThrottle,
    pub router: Router,
    pub rate_limiter: RateLimiter,
    /// The state of the services above http (the MCP server's sessions and tool catalogue), kept
    /// by type: http carries it without naming it, so the layers run one way. `app::App::build`
    /// puts it in; the service reads it back (`mcp::state`).
    pub extensions: hyper::http::Extensions,
}
