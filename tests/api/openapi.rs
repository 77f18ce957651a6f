//! Tests: openapi.
