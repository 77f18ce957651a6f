//! Integration tests: each starts the real server on 127.0.0.1 (ephemeral port, throw-away
//! database) and talks HTTP to it. One binary, one module per area.

mod helpers;

mod ads;
mod appliance;
mod auth_matrix;
mod billing;
mod console;
mod credentials;
mod demo_world;
mod devices;
mod examples;
mod events_feed;
mod fuzz;
mod limits;
mod list_contract;
mod mcp_answers;
mod mcp_assist;
mod mcp_catalogue;
mod mcp_jobs;
mod mcp_prompts;
mod mcp_search;
mod mcp_tools;
mod mcp_transport;
mod mcp_writes;
mod media;
mod openapi;
mod promotions;
mod reference;
mod qr_codes;
mod qr_images;
mod qr_scans;
mod sandbox_clock;
mod sandbox_faults;
mod sandbox_snapshots;
mod sandbox_determinism;
mod sandbox_timeline;
mod sandbox_timeline_edges;
mod sandbox_fleet;
mod schemas;
mod security_credentials;
mod security_input;
mod tokens;
mod uploads;
mod webhooks;
