//! Tests: ads.
