//! acp-core's integration tests, in one test binary: each module is what was once a test file
//! of its own, named for the behaviour it checks; run one with `cargo test -p acp-core --test it
//! <module>::` (e.g. `cargo test -p acp-core --test it store::`). Modules that need a feature
//! are compiled with it only (`cargo test -p acp-core --features http,llm-providers`; the
//! workspace's `cargo test --workspace` turns on every feature they need).
//!
//! One binary links the runtime once instead of 15 times. The tests share one process, so none
//! may change process-wide state (environment variables, signal handlers, the working directory,
//! a global `tracing` subscriber: `llm_providers_errors` captures logs with a thread-local
//! `set_default`); an agent that needs its own environment is this binary run again as a child
//! (`store::sqlite_only::child_appending_until_killed`, `store::store_url::child_agent`: ignored
//! tests, chosen with `--exact`).
//!
//! The shared support: `net_support` (a network agent and its clients), `llm_support` (a
//! loopback server replaying the model streams recorded in `tests/llm_recordings/`), `pg_support` (a
//! PostgreSQL server for the store tests; the root package's `failover` tests use it too).

#[cfg(feature = "llm")]
mod llm_support;
#[cfg(feature = "http")]
mod net_support;
#[cfg(feature = "postgres")]
mod pg_support;

mod elicitation;
mod history;
#[cfg(feature = "llm-providers")]
mod llm_endpoint;
#[cfg(feature = "llm")]
mod llm_llama_recordings;
#[cfg(feature = "llm")]
mod llm_providers_anthropic;
#[cfg(feature = "llm")]
mod llm_providers_errors;
#[cfg(feature = "llm")]
mod llm_providers_openai;
#[cfg(feature = "llm")]
mod llm_providers_responses;
mod local;
#[cfg(feature = "http")]
mod net;
#[cfg(feature = "http")]
mod net_http_client;
#[cfg(feature = "http")]
mod net_reconnect;
#[cfg(feature = "http")]
mod net_users;
mod recording;
mod runtime;
mod store;
