//! Integration tests: each starts the real server on 127.0.0.1 (ephemeral port, throw-away
//! database) and talks HTTP to it. One binary, one module per area.

mod helpers;

mod ads;
mod appliance;
mod auth_matrix;
mod billing;
mod credentials;
mod devices;
mod fuzz;
mod limits;
mod list_contract;
mod mcp_catalogue;
mod mcp_tools;
mod mcp_transport;
mod mcp_writes;
mod media;
mod openapi;
mod promotions;
mod sandbox_clock;
mod schemas;
mod security_credentials;
mod security_input;
mod tokens;
mod webhook_crash;
mod webhook_delivery;
mod webhook_https;
mod webhook_receiver;
mod webhook_retries;
mod webhooks;
