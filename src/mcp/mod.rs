//! The MCP server (Streamable HTTP at `/mcp`). Placeholder until the MCP issue lands.

use crate::config::Settings;
use crate::http::router::Route;

pub mod config_cmd;

pub struct McpState {}

impl McpState {
    pub fn new(_settings: &Settings) -> McpState {
        McpState {}
    }

    /// Forgets pending changes and sessions (sandbox reset).
    pub fn clear(&self) {}
}

pub fn routes() -> Vec<Route> {
    Vec::new()
}
