//! The runtime of [`acp`](https://docs.rs/acp): serve an Agent Client Protocol agent over
//! newline-delimited JSON-RPC 2.0.
//!
//! Agent authors normally use the `acp` facade and its `#[acp::agent]` macro; this crate holds
//! everything the macro's expansion calls into, and can be used by hand:
//!
//! - [`Agent`]: what an agent implements; [`serve`] / [`serve_stdio`] run it;
//! - [`Session`]: the per-session handle (updates, fs, terminals, permissions, cancellation);
//! - [`ToolCallGuard`]: the low-level tool-call lifecycle; [`ToolDef`] / [`ToolOutput`]: tools
//!   by name;
//! - [`Error`]: the one error type;
//! - [`testing`]: an in-process client for tests.
//!
//! Internally: `rpc` holds JSON-RPC framing (classifying lines, encoding frames), `connection`
//! the reader, the writer and routing, `session`/`terminal`/`tool`/`tools` what their names
//! say.
#![deny(missing_docs)]
#![warn(missing_debug_implementations)]

mod agent;
mod connection;
mod error;
mod rpc;
mod session;
mod terminal;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;
mod tool;
mod tools;

pub use agent::{Agent, Prompt, SessionSetup};
pub use connection::{serve, serve_stdio};
pub use error::{Error, Result};
pub use session::{Fs, Session};
pub use terminal::{Terminal, Terminals};
pub use tool::{ToolCallBuilder, ToolCallGuard, in_tool_call};
#[doc(hidden)]
pub use tools::expand as __tools;
pub use tools::{IntoToolOutput, Json, ToolDef, ToolLocations, ToolOutput};

/// The ACP wire types, from the official `agent-client-protocol-schema` crate (protocol v1).
pub mod schema {
    pub use agent_client_protocol_schema::ProtocolVersion;
    pub use agent_client_protocol_schema::v1::*;
}
