//! The MCP server: Streamable HTTP at `/mcp`, in front of the same route table as the REST API.
//!
//! - [`transport`]: HTTP rules (origin/host, credential, content negotiation, sessions, batches).
//! - [`protocol`]: JSON-RPC messages, error codes, protocol versions of both eras.
//! - [`dispatch`]: `initialize`, `ping`, `tools/list`, `tools/call`, `prompts/list`,
//!   `prompts/get`, `server/discover`.
//! - [`prompts`]: the prompts for common jobs, each naming the tools to call in order.
//! - [`spec`]: what the tools are: those declared on routes (`Route::tool`), plus confirm/cancel.
//! - [`catalogue`]: each tool's routes, visibility and `tools/list` definition, built from the
//!   route table and the schemas the router carries (mcp never imports `routes`).
//! - [`call`]: each call as an internal REST request through the pipeline.
//! - [`fence`]: tenant text marked as data (the `<<<signage-data` lines) in results and resources.
//! - [`pending`]: two-step writes (prepare, confirm, cancel); [`confirm`] runs a change only while
//!   everything its preview showed holds; [`summary`] says the change in words a person decides on.
//! - [`elicitation`], [`mrtr`]: confirmation asked of the user through the client (2025-11-25
//!   `elicitation/create`; 2026-07-28 `input_required` round trip with a signed `requestState`).
//! - [`preview`]: what a prepare shows: the write run as a dry run, its answer and its cost.
//! - [`advice`]: what an error tells the assistant to do, naming only tools the key may call.
//! - [`sessions`]: legacy-era sessions, bound to the credential that opened them.
//! - [`config_cmd`]: `signage mcp-config`.
//!
//! The MCP layer holds no credential and decides no permission: tool calls carry the caller's own
//! credential headers through [`crate::http::pipeline::execute`], and tool visibility asks
//! [`crate::auth::authorize`] about the routes behind each tool.

use crate::auth::Action;
use crate::config::Settings;
use crate::http::router::{Route, Router};
use crate::http::App;
use std::sync::{Arc, OnceLock};

pub mod advice;
pub mod apps;
pub mod call;
pub mod catalogue;
pub mod compact;
pub mod completion;
pub mod config_cmd;
pub mod confirm;
pub mod dispatch;
pub mod elicitation;
pub mod expiry;
pub mod failure;
pub mod fence;
pub mod links;
pub mod mrtr;
pub mod pending;
pub mod preview;
pub mod prompts;
pub mod protocol;
pub mod rendered;
pub mod resources;
pub mod sessions;
pub mod spec;
pub mod sse;
pub mod summary;
pub mod toolsets;
pub mod transport;

pub struct McpState {
    pub sessions: sessions::Sessions,
    /// Confirmation questions waiting for the user's answer.
    pub elicitations: elicitation::Registry,
    /// Signs and checks the `requestState` of 2026-07-28 confirmation round trips.
    pub request_states: mrtr::Signer,
    /// Read-tool results rendered before, for answers seen again ([`rendered`]).
    pub results: rendered::Results,
    catalog: OnceLock<catalogue::Catalog>,
}

impl McpState {
    pub fn new(settings: &Settings) -> McpState {
        McpState {
            sessions: sessions::Sessions::default(),
            elicitations: Default::default(),
            request_states: mrtr::Signer::new(),
            results: rendered::Results::new(settings.mcp_result_cache_bytes),
            catalog: OnceLock::new(),
        }
    }

    /// The tool catalogue, built from the route table on first use.
    pub fn catalog(&self, router: &Router) -> &catalogue::Catalog {
        self.catalog
            .get_or_init(|| catalogue::Catalog::build(router))
    }

    /// Forgets sessions (sandbox reset). Pending changes live in the database, which the reset
    /// empties together with everything else.
    pub fn clear(&self) {
        self.sessions.clear();
    }
}

/// The MCP server's state inside the shared [`App`]. `app::App::build` always puts it there; an
/// `App` assembled without it (a unit test's) gets one process-wide state rather than a panic.
pub fn state(app: &App) -> &McpState {
    static FALLBACK: OnceLock<McpState> = OnceLock::new();
    match app.extensions.get::<Arc<McpState>>() {
        Some(state) => state,
        None => FALLBACK.get_or_init(|| McpState::new(&app.settings)),
    }
}

/// The `/mcp` routes; the app puts them in the route table beside the REST routes.
pub fn routes() -> Vec<Route> {
    // Public at the router: the MCP transport checks Origin/Host before the credential, then
    // authenticates every request itself with the same function the pipeline uses. The server
    // verifies the credential from the headers first all the same, so a body is only read for a
    // valid one, and hands the principal over (`Ctx::credential`).
    vec![
        Route::post("/mcp", "mcpMessage", Action::Public, transport::post)
            .authenticates_itself()
            .not_idempotent()
            // Each tool call is audited as the internal REST request it becomes, under the caller's
            // key; a row for the envelope would only double the writes (half the cost of a call).
            .not_audited()
            .tag("mcp")
            .summary("MCP Streamable HTTP endpoint: one JSON-RPC message per POST."),
        Route::delete("/mcp", "mcpEndSession", Action::Public, transport::delete)
            .authenticates_itself()
            .not_audited()
            .tag("mcp")
            .summary("End an MCP session (Mcp-Session-Id)."),
    ]
}
