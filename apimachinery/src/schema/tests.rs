//! Tests of the schema engine through its public API.
