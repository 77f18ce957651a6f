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
//! - [`handover`]: a secret a confirmed change made goes to the person through a one-time link
//!   (shown by the client as a URL-mode elicitation, or passed on by the assistant), never to the
//!   model.
//! - [`preview`]: what a prepare shows: the write run as a dry run, its answer and its cost.
//! - [`advice`]: what an error tells the assistant to do, naming only tools the key may call.
//! - [`sessions`]: legacy-era sessions, bound to the credential that opened them.
//! - [`config_cmd`]: `signage mcp-config`.
//!
//! Files import each other downwards only. At the bottom, what every layer shares: [`tool`] (a
//! tool as served), [`call`] (the caller, REST paths, a REST answer as a tool outcome),
//! [`reply`] (a JSON-RPC reply), [`sessions`] (and the client's features), [`toolsets`] (the
//! request's view) and [`plan`] (the change a prepare tool describes). Above them the
//! [`catalogue`], then [`state`] (the server state, with its leaves [`questions`] and
//! [`request_state`]), which every layer above reads: advice, preview, pending changes,
//! confirmation, resources and prompts; at the top [`dispatch`] (method routing) and
//! [`transport`]. This file only declares the modules, re-exports [`state()`] and [`McpState`]
//! for the rest of the crate, and lists the routes.
//!
//! The MCP layer holds no credential and decides no permission: tool calls carry the caller's own
//! credential headers through [`crate::http::pipeline::execute`], and tool visibility asks
//! [`crate::auth::authorize`] about the routes behind each tool.

use crate::auth::Action;
use crate::http::router::Route;

pub mod advice;
pub mod apps;
pub mod brief;
pub mod call;
pub mod catalogue;
pub mod compact;
pub mod completion;
pub mod config_cmd;
pub mod confirm;
pub mod dispatch;
pub mod elicitation;
pub mod envelope;
pub mod expiry;
pub mod failure;
pub mod fence;
pub mod handover;
pub mod links;
pub mod mrtr;
pub mod pending;
pub mod plan;
pub mod preview;
pub mod prompts;
pub mod protocol;
pub mod questions;
pub mod rendered;
pub mod reply;
pub mod request_state;
pub mod resources;
pub mod sessions;
pub mod spec;
pub mod sse;
pub mod state;
pub mod summary;
pub mod tool;
pub mod toolsets;
pub mod transport;

pub use state::{state, McpState};

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
