//! The `apiary` binary.
fn main() {}
