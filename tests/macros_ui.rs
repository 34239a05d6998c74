//! Compile-time behaviour of `#[acp::agent]` and `#[acp::tool]`, with trybuild.
//!
//! - `tests/ui/fail/*.rs`: each misuse must fail to compile with the error in the matching
//!   `.stderr` file, at the author's own span, saying what to write instead.
//! - `tests/ui/pass/*.rs`: agents that must compile (and run their `main`).
//!
//! After changing a message on purpose, regenerate the expected output with
//! `TRYBUILD=overwrite cargo test --test macros_ui` and review the `.stderr` diff. The files
//! depend on the compiler's wording, so they are checked on the stable toolchain only.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
