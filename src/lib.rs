//! # acp — Agent Client Protocol agents as plain async functions
//!
//! [ACP](https://agentclientprotocol.com) connects code editors (Zed, JetBrains, neovim, …) to
//! coding agents over JSON-RPC on stdio. This crate lets an agent be written as an ordinary
//! Rust type: implement [`Agent`] (or let `#[acp::agent]` do it), call [`serve_stdio`], and
//! the runtime handles framing, routing, capabilities, ordering, cancellation and tool-call
//! bookkeeping.
//!
//! ```no_run
//! use acp::{Agent, Prompt, Session, StopReason};
//!
//! struct Echo;
//!
//! impl Agent for Echo {
//!     async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
//!         cx.message(prompt.text()).await?;
//!         Ok(StopReason::EndTurn)
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> acp::Result<()> {
//!     acp::init_logging();
//!     acp::serve_stdio(Echo).await
//! }
//! ```
//!
//! Never print to stdout in an agent: stdout carries protocol frames only. Log with `tracing`
//! (see [`init_logging`]).
#![deny(missing_docs)]

pub use acp_core::{
    Agent, Error, Fs, Prompt, Result, Session, SessionSetup, Terminal, Terminals, ToolCallBuilder,
    ToolCallGuard, ToolDef, ToolOutput, schema, serve, serve_stdio, testing,
};

pub use acp_core::schema::{
    ContentBlock, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, StopReason,
    ToolCallContent, ToolKind,
};

/// Sends `tracing` logs to stderr, filtered by `RUST_LOG` (default `warn`).
///
/// Does nothing if a global subscriber is already installed, so it is safe to call from
/// `main` of every agent.
pub fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}
