//! Tests: mcp_transport.
