//! Placeholder crate root; filled in by the issue that owns this crate.
