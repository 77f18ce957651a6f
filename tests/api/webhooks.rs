//! Tests: webhooks.
