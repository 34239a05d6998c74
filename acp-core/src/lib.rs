//! The runtime of [`acp-framework`](https://docs.rs/acp-framework) (the `acp` library): serve
//! an Agent Client Protocol agent over newline-delimited JSON-RPC 2.0.
//!
//! Agent authors normally use the `acp` facade and its `#[acp::agent]` macro; this crate holds
//! everything the macro's expansion calls into, and can be used by hand:
//!
//! - [`Agent`]: what an agent implements; [`serve`] / [`serve_stdio`] / [`Server`] run it;
//! - [`store`]: where sessions are recorded ([`store::SqliteStore`] by default under
//!   `serve_stdio`, [`store::MemoryStore`], or any [`store::SessionStore`]);
//! - [`Session`]: the per-session handle (updates, fs, terminals, permissions, cancellation);
//! - [`ToolCallGuard`]: the low-level tool-call lifecycle; [`ToolDef`] / [`ToolOutput`]: tools
//!   by name, the agent's own and those of the client's MCP servers ([`Session::tools`],
//!   [`Session::call_tool`], [`Session::mcp_status`]);
//! - [`Error`]: the one error type;
//! - [`testing`]: a scripted client for tests, in process or over a child's pipes.
//!
//! Inside, one module per concern, each using only the ones listed before it (no cycles):
//!
//! | module | owns |
//! | --- | --- |
//! | `error` | [`Error`], [`Result`] and their JSON-RPC error codes |
//! | `sync` | the one way the runtime takes its locks (recovering from a panic elsewhere) |
//! | `jsonrpc` | classifying incoming lines, encoding frames, our requests awaiting answers |
//! | `transport` | newline framing with its limits; the process's stdio |
//! | `protocol` | ACP method names (from the schema crate); the account of a session (v1's update types); every frame the runtime sends, in v1 or v2 (negotiated per connection) |
//! | `store` | recorded sessions: the [`store::SessionStore`] trait, in memory and SQLite |
//! | `peer` | the output queue and writer task (which journals records before writing), the reader loop and its admissions, requests to the client |
//! | `turn` | one prompt turn: cancellation, grace, the end-of-turn sweep and answer |
//! | `session` | [`Session`], fs, terminals (the client's, or local: `session/local`), tool-call guards, per-session state, the registry; what the operator granted a connection's client (`session/grant`: directories, processes, endpoints, the children's environment) |
//! | `tools` | tool definitions and output, the tool-call lifecycle, calls by name, schemas |
//! | `mcp` | the client's MCP servers: connected per session, their tools in the session's table, stopped with it |
//! | `llm` | a language model in the loop (feature `llm`): providers (OpenAI Chat Completions, Anthropic Messages), streamed; the loop through the session's tool table |
//! | `agent` | the [`Agent`] trait, [`Prompt`], [`SessionSetup`] |
//! | `router` | the method tables (v1's, v2's): method → capability gate → inline or spawned → handler; the history methods; v2's prompt lifecycle and agent-owned terminals |
//! | `serve` | [`Server`] and its limits and store: wiring it all together; shutdown |
//! | `net` | the agent as a network service (feature `http`): WebSocket and Streamable HTTP on `/acp`, one `serve` per connection, behind a bearer token; each user's grant and share of the limits |
//! | `testing` | the scripted client (feature `testing`) |
//! | `__private` | the ABI of the macros' expansion |
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![warn(missing_debug_implementations)]

#[doc(hidden)]
pub mod __private;
mod agent;
mod error;
mod jsonrpc;
mod launch;
#[cfg(feature = "llm")]
#[cfg_attr(docsrs, doc(cfg(feature = "llm")))]
pub mod llm;
mod mcp;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod net;
mod peer;
mod protocol;
mod router;
mod serve;
mod session;
pub mod store;
mod sync;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;
mod tools;
mod transport;
mod turn;

pub use agent::{Agent, CommandInput, Prompt, SessionSetup};
pub use error::{Error, Result};
pub use launch::serve_main;
pub use mcp::{McpPermission, McpState, McpStatus};
pub use serve::{DEFAULT_DETACHED_TURNS, Server, serve, serve_stdio};
pub use session::Elicited;
pub use session::{
    Choice, Client, ConfigKind, ConfigOption, ConfigSpec, ConfigValue, Fs, Modes, Persist,
    Persisted, Session, Settings, Terminal, Terminals, ToolCallBuilder, ToolCallGuard,
    in_tool_call,
};
pub use tools::{IntoToolOutput, Json, Requirement, ToolDef, ToolLocations, ToolOutput};

/// The ACP wire types, from the official `agent-client-protocol-schema` crate: protocol v1 at
/// the top (the types the author API uses), protocol v2's in [`schema::v2`] (feature `v2`).
pub mod schema {
    pub use agent_client_protocol_schema::ProtocolVersion;
    pub use agent_client_protocol_schema::v1::*;
    /// Protocol v2 (Preview) wire types: what a v2 connection's frames are checked against.
    #[cfg(feature = "v2")]
    pub use agent_client_protocol_schema::v2;
}
