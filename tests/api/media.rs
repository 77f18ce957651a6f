//! Tests: media.
