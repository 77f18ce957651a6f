//! Tests: appliance.
