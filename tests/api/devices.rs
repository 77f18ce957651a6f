//! Tests: devices.
