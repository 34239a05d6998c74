//! The package's integration tests, in one test binary: each module is what was once a test
//! file of its own, named for the behaviour it checks; run one with
//! `cargo test --test it <module>::` (e.g. `cargo test --test it interop_v2::`).
//!
//! One binary links the framework once: 30 binaries each linking everything made most of the
//! build's time and disk. The tests share one process, so none may change process-wide state
//! (environment variables, signal handlers, the working directory, a global `tracing`
//! subscriber): an agent that needs its own environment runs as a child process
//! (`std::process::Command::env`, `acp::testing::TestClient::spawn`).
//!
//! `support` (first, for its `interop_scenarios!` macro) is what the modules share:
//! `crate::support`, and `support::v2` for the protocol v2 tests.
//!
//! Kept as binaries of their own:
//! - `tests/macros_ui.rs` (trybuild): it compiles its cases in a cargo project of its own and
//!   re-runs its own executable with `--ignored`, and it links none of the framework (a small
//!   binary): folded in here it would gain nothing.
//! - `tests/llm_llama.rs`: each test starts a llama.cpp server computing on every core; beside
//!   the other tests here, on a 2-core machine, its turns ran out of their 120 s hang guards.
//!   Alone (cargo runs test binaries one after another) they take about 40 s.

#[macro_use]
mod support;

mod boundary;
mod coder;
mod examples;
mod failover;
mod guarantees;
mod interop_coder;
mod interop_conformance;
mod interop_guarantees;
mod interop_history;
mod interop_net;
mod interop_py;
mod interop_surface;
mod interop_tools;
mod interop_ts;
mod interop_v2;
mod llm_agents;
mod llm_loop;
mod macros;
mod mcp;
mod net_grants;
mod net_limits;
mod persistence;
mod protocol_errors;
mod protocol_v2;
mod protocol_v2_sessions;
mod refused;
mod reports;
mod settings;
mod subagents;
mod surface;
mod system_prompt;
mod tools;
mod tour;
mod unstable_sessions;
mod zed_meta;
