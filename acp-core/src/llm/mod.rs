//! A language model in the loop (feature `llm`): the wire formats that cover nearly every
//! model, streamed, and the loop that runs a conversation through the session's tool table.
//!
//! - [`Provider`]: one model API. [`OpenAi`] speaks OpenAI Chat Completions
//!   (OpenAI itself and every compatible server: llama.cpp, vLLM, Ollama, LM Studio,
//!   OpenRouter…), [`OpenAiResponses`] OpenAI's Responses API (stateless), [`Anthropic`]
//!   the Anthropic Messages API. Each turns
//!   a [`Request`] into a stream of [`Event`]s: text, reasoning, tool calls (their arguments
//!   arriving in pieces, several at once), usage, and why the model stopped.
//! - The loop (`run.rs`): model text streams into message chunks and reasoning into thought
//!   chunks as they arrive; the model's tool calls run through the session's tool table by
//!   name; results go back to the model, until it answers.
//!
//! - The editor's endpoint (feature `llm-providers`, the unstable `providers/*` methods):
//!   an `Endpoint` is a provider the editor may point at its own gateway or disable.
//!
//! Where it sits: above `tools` and `mcp` (it uses the session's tool table), below `agent`;
//! the runtime uses only `providers` (the router answers `providers/*` from it).
//!
//! | file | owns |
//! | --- | --- |
//! | `mod.rs` | the provider-neutral types: [`Message`], [`Part`], [`ToolSpec`], [`Request`], [`Event`], [`Usage`], [`Stop`]; the [`Provider`] trait |
//! | `http.rs` | POSTing a request and reading its server-sent events; provider errors |
//! | `cost.rs` | what calls cost ([`Prices`]), added up per session |
//! | `retry.rs` | when a call is tried again ([`Retry`], `retry-after`), and the hooks its caller lends it ([`CallHooks`]) |
//! | `openai.rs` | OpenAI Chat Completions: the request body, the stream's chunks as [`Event`]s |
//! | `responses.rs` | OpenAI Responses, stateless: the request body (input items), the stream's events as [`Event`]s |
//! | `anthropic.rs` | Anthropic Messages: the request body (with its cache breakpoints), the stream's events as [`Event`]s |
//! | `env.rs` | which provider, model and settings the environment configures ([`from_env`], [`Model::from_env`]) |
//! | `run.rs` | the loop: [`Model`] and [`Model::run`] |
//! | `conversation.rs` | [`Conversation`], the session's history with its model (a `Persist` value) |
//! | `providers.rs` | `Endpoint`: a provider the editor may reroute or disable (`providers/*`) |
//! | `scripted.rs` | [`scripted::Scripted`], a provider answering from a script, for tests and offline examples |

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Result;

/// Who wrote a [`Message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The user, and the results of tools the model called (Anthropic's convention: an
    /// OpenAI request carries each [`Part::ToolResult`] as a `tool` message of its own).
    User,
    /// The model.
    Assistant,
}

/// One piece of a [`Message`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Part {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// The model's reasoning ("thinking"), kept so that a provider that signs it gets it back.
    Reasoning {
        /// The reasoning text.
        text: String,
        /// The provider's signature of it, if any: Anthropic's `signature`, or an OpenAI
        /// Responses reasoning item with its encrypted content, as a JSON object
        /// (`{"type":"reasoning","id":…,"encrypted_content":…}`; each provider sends back only
        /// its own kind).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// A tool the model called.
    ToolCall {
        /// The provider's id of the call, which its result names.
        id: String,
        /// The tool's name.
        name: String,
        /// Its arguments (a JSON object).
        arguments: Value,
    },
    /// What a tool call returned.
    ToolResult {
        /// The id of the [`Part::ToolCall`] it answers.
        id: String,
        /// The result, as text.
        content: String,
        /// Whether the tool failed (the text then says why).
        #[serde(default)]
        is_error: bool,
    },
}

/// One message of a conversation, whatever the provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// What it says, in order.
    pub content: Vec<Part>,
}

impl Message {
    /// A user message of plain text.
    pub fn user(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: vec![Part::Text { text: text.into() }],
        }
    }

    /// An assistant message of plain text.
    pub fn assistant(text: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: vec![Part::Text { text: text.into() }],
        }
    }

    /// Its text parts, joined (no reasoning, tool calls or tool results).
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|part| match part {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Its name, as the model calls it.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments (an object).
    pub parameters: Value,
}

/// One call of a model: what is sent.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The model's name, e.g. `gpt-4.1` or `claude-sonnet-4-5`.
    pub model: &'a str,
    /// The system prompt, if any.
    pub system: Option<&'a str>,
    /// The conversation so far, oldest first.
    pub messages: &'a [Message],
    /// The tools the model may call (none: it can only answer).
    pub tools: &'a [ToolSpec],
    /// The most tokens the answer may have (a provider default when `None`; Anthropic
    /// requires one, and its client fills in a default).
    pub max_tokens: Option<u32>,
    /// A stable key naming the conversation (the session's id), sent as OpenAI's
    /// `prompt_cache_key` (Chat Completions and Responses) when [`prompt_caching`] is on, so
    /// that the calls of one conversation land where its prefix is cached. `None`: no key.
    ///
    /// [`prompt_caching`]: Self::prompt_caching
    pub cache_key: Option<&'a str>,
    /// Whether to ask the provider to cache the prompt: Anthropic's `cache_control`
    /// breakpoints (on the system prompt, the last tool and the last message), OpenAI's
    /// [`cache_key`](Self::cache_key). OpenAI caches long prompts whatever is sent; off, no
    /// breakpoint and no key are sent.
    pub prompt_caching: bool,
    /// The sampling temperature (a provider default when `None`).
    pub temperature: Option<f32>,
}

impl<'a> Request<'a> {
    /// The same request, naming its conversation `key` for the provider's prompt cache
    /// ([`cache_key`](Self::cache_key)).
    #[must_use]
    pub fn cached_as(mut self, key: &'a str) -> Self {
        self.cache_key = Some(key);
        self
    }
}

/// Tokens one model call used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens read (the prompt, the conversation, the tools), cached ones included.
    pub input_tokens: u64,
    /// Tokens written (the answer, reasoning included).
    pub output_tokens: u64,
    /// Of the input, tokens read from the provider's cache, if it says.
    pub cached_input_tokens: Option<u64>,
    /// Of the input, tokens written to the provider's cache (Anthropic's
    /// `cache_creation_input_tokens`), if it says.
    pub cache_write_tokens: Option<u64>,
    /// Of the output, reasoning tokens, if it says.
    pub reasoning_tokens: Option<u64>,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stop {
    /// It answered.
    EndTurn,
    /// It wants the tools it called to run.
    ToolUse,
    /// It reached `max_tokens`.
    MaxTokens,
    /// It refused.
    Refusal,
    /// Another reason, as the provider named it.
    Other(String),
}

/// One event of a streamed model call, in the order the model produced it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// More of the answer's text.
    Text(String),
    /// More of the model's reasoning.
    Reasoning(String),
    /// The signature of the reasoning so far (Anthropic's; OpenAI Responses' encrypted
    /// reasoning item, see [`Part::Reasoning`]), to send back with it.
    ReasoningSignature(String),
    /// The model started a tool call: `index` tells its later [`Event::ToolCallArguments`]
    /// apart from those of other calls of the same answer.
    ToolCallStart {
        /// The call's position among this answer's tool calls.
        index: usize,
        /// The provider's id of the call.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// More of a started tool call's JSON arguments (pieces of one JSON text, in order).
    ToolCallArguments {
        /// The call's position, as in its [`Event::ToolCallStart`].
        index: usize,
        /// The next piece.
        delta: String,
    },
    /// Tokens used so far by this call (the latest one counts).
    Usage(Usage),
    /// The model stopped; nothing follows.
    Stop(Stop),
}

/// The most text one joined event carries.
pub(crate) const JOIN_LIMIT: usize = 64 * 1024;

/// Adds a piece of the model's text (or reasoning) to `out`: joined to the last event when
/// that is of the same kind and not handed out yet (one event and one allocation per batch
/// of tokens that arrived together, instead of one per token), else as an event of its own.
/// An empty piece adds nothing.
pub(crate) fn push_piece(out: &mut VecDeque<Event>, reasoning: bool, piece: &str) {
    if piece.is_empty() {
        return;
    }
    match (out.back_mut(), reasoning) {
        (Some(Event::Text(text)), false) | (Some(Event::Reasoning(text)), true)
            if text.len() < JOIN_LIMIT =>
        {
            text.push_str(piece);
        }
        (_, false) => out.push_back(Event::Text(piece.to_owned())),
        (_, true) => out.push_back(Event::Reasoning(piece.to_owned())),
    }
}

/// The events of one model call.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<Event>> + Send>>;

/// A model API: turns a [`Request`] into a stream of [`Event`]s.
///
/// Dropping the stream drops the HTTP request (a cancelled turn stops paying for tokens at
/// once). Errors say what went wrong in words a user can act on (a missing or refused key, a
/// rate limit, the provider down, a stream cut mid-way), never with the key in them.
pub trait Provider: Send + Sync + 'static {
    /// Starts one streamed call: resolves once the provider accepted it (after retries where
    /// the provider asked for them), with its events.
    fn stream<'a>(
        &'a self,
        request: Request<'a>,
    ) -> Pin<Box<dyn Future<Output = Result<EventStream>> + Send + 'a>>;

    /// Where its requests go, when it is an HTTP API: shown to an editor that asks
    /// (`providers/list`). `None` (the default) for anything else.
    fn route(&self) -> Option<Route> {
        None
    }
}

impl<P: Provider + ?Sized> Provider for Arc<P> {
    fn stream<'a>(
        &'a self,
        request: Request<'a>,
    ) -> Pin<Box<dyn Future<Output = Result<EventStream>> + Send + 'a>> {
        (**self).stream(request)
    }

    fn route(&self) -> Option<Route> {
        (**self).route()
    }
}

/// A model API's wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Api {
    /// OpenAI's Chat Completions, and every server compatible with it ([`OpenAi`]).
    OpenAi,
    /// OpenAI's Responses API ([`OpenAiResponses`]). An editor sees it as `openai`
    /// (`providers/list`); pointed elsewhere with `openai`, the endpoint speaks Chat
    /// Completions.
    OpenAiResponses,
    /// Anthropic's Messages API ([`Anthropic`]).
    Anthropic,
}

/// Where a provider sends its requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The wire format.
    pub api: Api,
    /// The base URL.
    pub base_url: String,
}

pub mod anthropic;
mod env;
mod http;
pub mod openai;
pub mod responses;
mod retry;

pub use anthropic::Anthropic;
pub use env::{
    CONTEXT_WINDOW_VAR, DEFAULT_MAX_TOKENS, MAX_TOKENS_VAR, MODEL_VAR, PROVIDER_VAR,
    TEMPERATURE_VAR, from_env,
};
pub use openai::OpenAi;
pub use responses::OpenAiResponses;
pub use retry::{CallHooks, Retry, RetryWait};

mod compact;
mod conversation;
mod cost;
#[cfg(feature = "llm-providers")]
pub mod providers;
mod run;
pub mod scripted;
mod task;

pub use conversation::Conversation;
pub use cost::Prices;
#[cfg(feature = "llm-providers")]
pub use providers::Endpoint;
pub use run::{DEFAULT_PARALLEL_TOOL_CALLS, Model};
pub use task::read_only;
