//! Tests: promotions.
