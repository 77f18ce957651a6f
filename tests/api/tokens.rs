//! Tests: tokens.
