//! Nothing to link: the checks are the tests in `tests/tidy.rs`, run by `cargo test` like every
//! other test (rust-analyzer's `tidy.rs` is the model). They read the repository as text and
//! `cargo metadata`; each failure says which file breaks which rule.
