//! Tests: credentials.
