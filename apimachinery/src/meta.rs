//! Owned by the codegen/server work; see ARCHITECTURE.md.
