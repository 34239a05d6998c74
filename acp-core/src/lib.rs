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
//! | `transport` | messages in (`Source`: newline framing with its limits, or the network's channel) and out (`Sink`, each message with its `Route`); the process's stdio |
//! | `protocol` | ACP method names (from the schema crate); the account of a session (v1's update types); the connection's [codec](#the-protocol-seam): every frame the runtime sends, in v1 or v2 (negotiated per connection) |
//! | `store` | recorded sessions: the [`store::SessionStore`] trait, in memory and SQLite |
//! | `peer` | JSON-RPC with the client, knowing no session and no version: the output queue and writer task (which journals records before writing), the reader loop and its admissions, requests to the client and their answers |
//! | `turn` | one prompt turn: cancellation, grace, the end-of-turn sweep and answer |
//! | `session` | [`Session`], fs, terminals (the client's, or local: `session/local`), tool-call guards, per-session state, the registry; what the operator granted a connection's client (`session/grant`: directories, processes, endpoints, the children's environment) |
//! | `tools` | tool definitions and output, the tool-call lifecycle, calls by name, schemas |
//! | `mcp` | the client's MCP servers: connected per session, their tools in the session's table, stopped with it |
//! | `llm` | a language model in the loop (feature `llm`): providers (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages), streamed; the loop through the session's tool table |
//! | `agent` | the [`Agent`] trait, [`Prompt`], [`SessionSetup`] |
//! | `router` | the one method table (each method's v1 and v2 names → capability gate → inline or spawned → handler); the one prompt-turn driver; the history methods; v2's own handlers and agent-owned terminals |
//! | `serve` | [`Server`] and its limits and store: wiring it all together; shutdown |
//! | `net` | the agent as a network service (feature `http`): WebSocket and Streamable HTTP on `/acp`, one `serve` per connection, behind a bearer token; each user's grant and share of the limits |
//! | `testing` | the scripted client (feature `testing`) |
//! | `__private` | the ABI of the macros' expansion |
//!
//! # The protocol seam
//!
//! The protocol version is known in two places only: the connection's **codec**
//! (`protocol::Codec`, chosen once by `initialize`), which writes every frame the runtime
//! sends, and the router's **method table** (`router::routes`), where each method has its
//! name in each version, its gate and its handler. Below them the peer moves JSON-RPC
//! messages and knows neither sessions nor versions, and the transport knows only messages:
//! the runtime reads a `transport::Source` (stdio's lines, or the network's messages) and
//! hands a `transport::Sink` each message with its `Route` (the connection, a session, or
//! the answer to a request), set where the frame is made, so the network service routes
//! without reading a frame. Above them sessions, tools, MCP, the model loop and the store
//! speak one account, the schema crate's v1 types, and never ask which version is spoken.
//! The next protocol method is one row of the table; the next update type is one arm of
//! each version's encoder.
//!
//! A v1 prompt, `session/prompt` on a connection that said `protocolVersion: 1`:
//!
//! 1. the reader hands the request to the router, which finds the table's row whose v1
//!    name is `session/prompt` and whose gate passes, and calls its handler;
//! 2. the prompt-turn driver (`router::prompt::start`) finds the session and asks the codec
//!    its policy: v1 does not queue, so a busy session is refused `-32600` on the reader's
//!    task, in the order the client sent its prompts;
//! 3. in the turn's task, the codec has no acknowledgement to send (`accepted` is `None`)
//!    and no echo (`user_message` is `None`): the prompt is only recorded;
//! 4. the author's `prompt` runs; every `cx.message(..)` becomes an account update that the
//!    codec writes as v1's `session/update` (the journal records the same bytes);
//! 5. the turn ends (`Turn::end`): open tool calls are failed and the codec writes the end
//!    as the answer to the request, with the stop reason and usage.
//!
//! The same prompt on a v2 connection: the row whose v2 name is `session/prompt` takes the
//! `idempotencyKey` apart and calls the same driver. The codec's policy queues the prompt
//! (bounded) behind the running turn; when its turn comes the codec acknowledges it with its
//! user message id, echoes the message (`user_message`), reports `state_update: running`;
//! the author's updates are the same account, which the codec translates to v2's frames
//! (the journal records the account, not the translation, so a session recorded on one
//! version replays on the other); and the end is an `idle` state update carrying the stop
//! reason.
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
    Choice, Client, Compaction, ConfigKind, ConfigOption, ConfigSpec, ConfigValue, Fs, Modes,
    Persist, PersistLog, Persisted, SESSION_PLAN, Session, Settings, Subagent, Terminal, Terminals,
    ToolCallBuilder, ToolCallGuard, in_tool_call,
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
