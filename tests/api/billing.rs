//! Tests: billing.
