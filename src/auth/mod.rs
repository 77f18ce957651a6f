//! Authentication and authorization: credential -> [`Principal`] -> [`authorize`].
//!
//! - [`keys`]: the API key format, generation and hashing.
//! - [`authenticate`]: headers -> principal (API key + client id, or the login JWT); refusals are
//!   [`failure::AuthFailure`] / [`failure::AuthError`], which `http::error` maps into responses.
//! - [`cache`]: the principals behind verified API keys, checked on every request against the
//!   database's credentials generation.
//! - [`scopes`]: scope names and what each grants.
//! - [`authorize`]: the single decision function every route and MCP tool goes through.
//! - [`reach`]: which credentials an admin may create, see, revoke and rotate.
//! - [`jwt`], [`password`], [`throttle`]: the internal-testing login.

pub mod authenticate;
pub mod authorize;
pub mod cache;
pub mod failure;
pub mod jwt;
pub mod jwt_crypto;
pub mod keys;
pub mod password;
pub mod principal;
pub mod reach;
pub mod scopes;
pub mod throttle;

pub use authorize::{authorize, Denial, Target};
pub use failure::{AuthError, AuthFailure};
pub use principal::{Actor, Principal};
pub use scopes::{Action, Area, Level, Scopes};
