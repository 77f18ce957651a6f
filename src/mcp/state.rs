//! The MCP server's state inside the shared [`App`] (sessions, questions waiting for an answer,
//! the `requestState` signer, rendered results, the tool catalogue) and [`state`], which finds
//! it. Every layer reads it; it imports none of the files that read it, only the leaves that
//! hold its parts.

use super::catalogue;
use super::questions;
use super::rendered;
use super::request_state;
use super::sessions;
use crate::config::Settings;
use crate::http::router::Router;
use crate::http::App;
use std::sync::{Arc, OnceLock};

pub struct McpState {
    pub sessions: sessions::Sessions,
    /// Confirmation questions waiting for the user's answer.
    pub elicitations: questions::Registry,
    /// Signs and checks the `requestState` of 2026-07-28 confirmation round trips.
    pub request_states: request_state::Signer,
    /// Read-tool results rendered before, for answers seen again ([`rendered`]).
    pub results: rendered::Results,
    catalog: OnceLock<catalogue::Catalog>,
}

impl McpState {
    pub fn new(settings: &Settings) -> McpState {
        McpState {
            sessions: sessions::Sessions::default(),
            elicitations: Default::default(),
            request_states: request_state::Signer::new(),
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
