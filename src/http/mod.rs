//! HTTP: the server, the route table, the request pipeline, and the one error shape.
//!
//! - [`server`]: hyper accept loop, limits, timeouts, graceful shutdown.
//! - [`site`]: which `Host` and `Origin` a request may carry (no page of another site drives us).
//! - [`admission`]: which connections are held; the unauthenticated ones bounded per address.
//! - [`auth_failures`]: failed authentication, rate-limited per client address.
//! - [`body`]: reading a request body within its limits and the server's memory budget.
//! - [`spool`]: uploads streamed to a temporary file instead of memory.
//! - [`router`]: the route table shared by REST and `/mcp`.
//! - [`request`]: a request as the pipeline takes it, from the server or an MCP tool call.
//! - [`pipeline`]: authenticate -> rate limit -> authorize -> idempotency -> handler -> audit.
//! - [`faults`]: injected faults (`/_sandbox/faults`, `Prefer: code=`), applied by the pipeline.
//! - [`delay_holds`]: the per-credential bound on requests held back by an injected delay.
//! - [`rate_limit`]: one token bucket per credential, and the RateLimit headers.
//! - [`ctx`]: what handlers receive, and input validation helpers.
//! - [`page`]: keyset pagination: a page request and its cursor.
//! - [`reach`]: whose rows a list may hold: some companies, or a whole account.
//! - [`reveals`]: secrets held for a one-time reveal to a person (never to an assistant).
//! - [`error`]: [`error::ApiError`] and its RFC 9457 rendering.
//! - [`json`]: strict parsing of JSON bodies (no duplicate member names).
//! - [`state`]: [`App`], the state every request shares.
//! - [`stream`]: bodies written after the handler returned (event streams).

pub mod admission;
pub mod auth_failures;
pub mod body;
pub mod ctx;
pub mod delay_holds;
pub mod error;
pub mod exchange;
pub mod faults;
pub mod idempotency;
pub mod json;
pub mod multipart;
pub mod observation;
pub mod observe;
pub mod page;
pub mod pipeline;
pub mod query;
pub mod rate_limit;
pub mod reach;
pub mod request;
pub mod response;
pub mod reveals;
pub mod router;
pub mod server;
pub mod site;
pub mod spool;
pub mod state;
pub mod stream;

pub use ctx::Ctx;
pub use error::ApiError;
pub use response::Response;
pub use state::App;
