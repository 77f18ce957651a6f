//! `signage mcp-config`: prints the MCP registration for a key and client id. (Filled in by the MCP issue.)

use argh::FromArgs;

#[derive(FromArgs)]
/// Print the MCP client registration (Claude Desktop, Cursor, VS Code, generic) for a key.
#[argh(subcommand, name = "mcp-config")]
pub struct McpConfig {
    /// base URL of the server (default http://127.0.0.1:8080)
    #[argh(option, default = "String::from(\"http://127.0.0.1:8080\")")]
    pub url: String,
}

pub fn run(_cmd: McpConfig) -> Result<(), String> {
    Err("mcp-config is not available yet".into())
}
