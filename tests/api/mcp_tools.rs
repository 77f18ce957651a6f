//! Tests: mcp_tools.
