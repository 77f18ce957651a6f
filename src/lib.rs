//! signage: a local, pre-production sandbox of a digital-signage platform.
//!
//! One binary serves a REST API and an MCP server over the same embedded SQLite data. The major
//! components, in the order a request meets them:
//!
//! - [`cli`] parses the command line; [`config`] stacks defaults, `signage.toml`, `SIGNAGE_*`
//!   variables and flags; [`telemetry`] sets up logs; [`startup`] builds the [`app::App`] and binds.
//! - [`http`]: the hyper server ([`http::server`]), the one route table ([`http::router`]) shared by
//!   REST and `/mcp`, and the request pipeline ([`http::pipeline`]): authenticate, authorize,
//!   idempotency, handler, audit. Errors are one type mapped once to RFC 9457 problem+json; the
//!   errors of the layers below (`auth::AuthError`, `ledger::LedgerError`) map into it in
//!   [`http::error`].
//! - [`auth`]: credential -> [`auth::Principal`] -> [`auth::authorize`], the single function that
//!   decides every permission, for REST and (by dispatching through the same router) for MCP.
//! - [`routes`]: one module per REST area (a folder when large: routes and schemas in `mod.rs`,
//!   one file per concern), each listed once in [`routes::MODULES`] with its routes and OpenAPI
//!   schemas. Resources are typed `Serialize` structs; [`routes::crud`] holds what company-owned
//!   resources do alike.
//! - [`mcp`]: Streamable HTTP transport, JSON-RPC protocol, tools that become internal REST
//!   requests, two-step writes. [`redact`] scrubs secrets from everything MCP returns.
//! - [`sandbox`]: the instrument around the platform, which production would not run: the
//!   operator's `/_sandbox/` controls (clock, faults, snapshots, fleet) and the simulations the
//!   timeline runs. It sits above [`routes`] and [`mcp`] and drives them; they never import it.
//! - [`areas`]: the area registry, each data area declared once (scope name, paths, id kinds,
//!   event types, tables); scopes, events and the MCP instructions read it.
//! - [`db`]: SQLite connections, refinery migrations (`schema/`), the demo fixtures (`fixtures/`).
//! - [`ids`], [`time`], [`random`], [`jsonschema`], [`json_write`], [`validate`], [`markup`], [`events`], [`audit`], [`ledger`]: small shared
//!   pieces; [`opening_hours`] says when a company's stores are open (its screens play then);
//!   [`outbound`] decides which addresses webhooks may target; [`webhooks`] delivers
//!   events from the outbox (worker, signing, retries on the sandbox clock).
//!
//! Layers, lowest first; a module uses only its own layer and those below (`tests/layers.rs`):
//! `time`, `random`, `ids`, `areas`, `config` and the other leaf utilities -> `db`, `audit`,
//! `events`, `ledger`, `timeline`, `webhooks` -> `auth` -> `http` -> `routes`, `mcp` -> `sandbox` -> `app` -> `startup` -> `cli`.

pub mod app;
pub mod areas;
pub mod audit;
pub mod auth;
pub mod cli;
pub mod config;
pub mod db;
pub mod events;
pub mod http;
pub mod ids;
pub mod json_write;
pub mod jsonschema;
pub mod ledger;
pub mod markup;
pub mod mcp;
pub mod opening_hours;
pub mod outbound;
pub mod random;
pub mod redact;
pub mod routes;
pub mod sandbox;
pub mod startup;
pub mod telemetry;
pub mod time;
pub mod timeline;
pub mod validate;
pub mod webhooks;
