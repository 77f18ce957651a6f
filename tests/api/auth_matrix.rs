//! Tests: auth_matrix.
