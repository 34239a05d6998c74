//! Anthropic Messages, streamed (Anthropic's API, and compatible servers: llama.cpp's
//! `/v1/messages`).
//!
//! Owns: the request body (`POST {base}/v1/messages`: `system` at the top, tool calls as
//! `tool_use` blocks, their results as `tool_result` blocks of a user message, reasoning sent
//! back as signed `thinking` blocks, `cache_control` breakpoints), and the stream's events as [`Event`]s: `message_start`,
//! `content_block_start` / `_delta` / `_stop`, `message_delta`, `message_stop`, `ping`,
//! `error`.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use sse_stream::Sse;

use super::http::{DecodeError, Decoder, Http, cut};
use super::retry::Retry;
use super::{
    Api, Event, EventStream, Message, Part, Provider, Request, Role, Route, Stop, Usage, push_piece,
};
use crate::Result;

/// The environment variable naming the API's base URL.
pub const BASE_URL_VAR: &str = "ANTHROPIC_BASE_URL";
/// The environment variable holding the API key.
pub const API_KEY_VAR: &str = "ANTHROPIC_API_KEY";
/// The base URL when [`BASE_URL_VAR`] is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` sent.
pub const API_VERSION: &str = "2023-06-01";
/// The `max_tokens` sent when the request has none (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The Anthropic Messages API, or a compatible server's.
///
/// The base URL is where `/v1/messages` is appended: `https://api.anthropic.com`, or
/// `http://127.0.0.1:8080` for llama.cpp's `llama-server`. The key goes as `x-api-key`; it
/// never appears in an error, a log line or this type's `Debug` output.
///
/// ```no_run
/// use acp_core::llm::{Anthropic, Message, Provider, Request};
///
/// # async fn demo() -> acp_core::Result<()> {
/// let model = Anthropic::from_env()?;
/// let messages = [Message::user("Say hello")];
/// let request = Request {
///     model: "claude-sonnet-4-5",
///     system: Some("Be brief."),
///     messages: &messages,
///     tools: &[],
///     max_tokens: Some(1024),
///     cache_key: None,
///     prompt_caching: true,
///     temperature: None,
/// };
/// let _events = model.stream(request).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Anthropic {
    http: Http,
}

impl Anthropic {
    /// A client of the API at `base_url`, sending `api_key` if there is one (Anthropic
    /// requires one; a local server may not).
    ///
    /// Fails when `base_url` is not a URL.
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Result<Self> {
        Ok(Anthropic {
            http: Http::new("Anthropic", base_url, API_KEY_VAR, api_key)?,
        })
    }

    /// A client configured as Anthropic's own SDKs are: the base URL in
    /// `ANTHROPIC_BASE_URL` (default `https://api.anthropic.com`), the key in
    /// `ANTHROPIC_API_KEY`.
    pub fn from_env() -> Result<Self> {
        let base_url = super::http::env_or(BASE_URL_VAR, DEFAULT_BASE_URL);
        Anthropic::new(base_url, std::env::var(API_KEY_VAR).ok())
    }

    /// The same client, retrying as `retry` says (see [`Retry`] for the default).
    pub fn with_retry(mut self, retry: Retry) -> Self {
        self.http.retry = retry;
        self
    }

    /// The same client, sending these headers with every request too (a gateway's routing
    /// or its own `Authorization`: one of the same name as the provider's replaces it).
    /// Values are treated as secrets: never logged or shown by `Debug`.
    ///
    /// Fails when a name or value cannot be an HTTP header.
    pub fn with_headers<'h>(
        mut self,
        headers: impl IntoIterator<Item = (&'h str, &'h str)>,
    ) -> Result<Self> {
        self.http.add_headers(headers)?;
        Ok(self)
    }
}

impl Provider for Anthropic {
    fn route(&self) -> Option<Route> {
        Some(Route {
            api: Api::Anthropic,
            base_url: self.http.base_url().to_owned(),
        })
    }

    fn stream<'a>(
        &'a self,
        request: Request<'a>,
    ) -> Pin<Box<dyn Future<Output = Result<EventStream>> + Send + 'a>> {
        Box::pin(async move {
            let body = serde_json::to_vec(&body(&request))?;
            let mut headers = HeaderMap::new();
            headers.insert(
                HeaderName::from_static("anthropic-version"),
                HeaderValue::from_static(API_VERSION),
            );
            if let Some(key) = self.http.key() {
                headers.insert(HeaderName::from_static("x-api-key"), Http::secret(key)?);
            }
            self.http
                .stream::<Events>("/v1/messages", headers, body)
                .await
        })
    }
}

/// The request body of `request`. With [`Request::prompt_caching`], three of the four
/// `cache_control` breakpoints the API allows: the system prompt, the last tool, and the
/// last block of the last message (the prefix up to each is cached for the next call).
fn body(request: &Request<'_>) -> Value {
    let cache = request.prompt_caching;
    let mut messages: Vec<Value> = request
        .messages
        .iter()
        .map(message)
        .filter(|m| m["content"].as_array().is_some_and(|c| !c.is_empty()))
        .collect();
    if cache {
        // The last block that can carry a breakpoint (a `thinking` block cannot).
        let last = messages
            .last_mut()
            .and_then(|m| m["content"].as_array_mut())
            .and_then(|blocks| blocks.iter_mut().rev().find(|b| b["type"] != "thinking"));
        if let Some(block) = last {
            block["cache_control"] = ephemeral();
        }
    }
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
        "stream": true,
    });
    if let Some(system) = request.system {
        body["system"] = if cache {
            json!([{"type": "text", "text": system, "cache_control": ephemeral()}])
        } else {
            json!(system)
        };
    }
    if let Some(temperature) = request.temperature {
        body["temperature"] = json!(temperature);
    }
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        if let (true, Some(last)) = (cache, tools.last_mut()) {
            last["cache_control"] = ephemeral();
        }
        body["tools"] = Value::Array(tools);
    }
    body
}

/// A `cache_control` breakpoint: the prefix up to it is cached (for five minutes).
fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// `message` as a Messages API message. Empty text is left out (the API refuses it), and
/// so is reasoning without an Anthropic signature (it came from another provider: the API
/// would refuse it; OpenAI's encrypted reasoning is a JSON object, an Anthropic signature
/// never is).
fn message(message: &Message) -> Value {
    let mut content = Vec::new();
    for part in &message.content {
        match part {
            Part::Text { text } if text.is_empty() => {}
            Part::Text { text } => content.push(json!({"type": "text", "text": text})),
            Part::Reasoning {
                text,
                signature: Some(signature),
            } if !signature.starts_with('{') => {
                content.push(json!({"type": "thinking", "thinking": text, "signature": signature}))
            }
            Part::Reasoning { .. } => {}
            Part::ToolCall {
                id,
                name,
                arguments,
            } => {
                let input = if arguments.is_object() {
                    arguments.clone()
                } else {
                    json!({})
                };
                content.push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
            }
            Part::ToolResult {
                id,
                content: text,
                is_error,
            } => {
                let mut block = json!({"type": "tool_result", "tool_use_id": id, "content": text});
                if *is_error {
                    block["is_error"] = json!(true);
                }
                content.push(block);
            }
        }
    }
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    json!({"role": role, "content": content})
}

/// The stream's state.
#[derive(Default)]
struct Events {
    /// A content block's index → its tool call's position among this answer's calls.
    calls: HashMap<u64, usize>,
    usage: Usage,
    /// The `stop_reason` of `message_delta`, sent as [`Event::Stop`] at `message_stop`.
    stop: Option<Stop>,
}

const NAME: &str = "Anthropic";

impl Decoder for Events {
    fn event(&mut self, sse: Sse, out: &mut VecDeque<Event>) -> Result<bool, DecodeError> {
        let Some(data) = sse.data else {
            return Ok(false);
        };
        let event: Value =
            serde_json::from_str(&data).map_err(|e| DecodeError::malformed(NAME, &data, e))?;
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .or(sse.event.as_deref())
            .ok_or_else(|| DecodeError::malformed(NAME, &data, "no `type`"))?;
        let str_at = |pointer: &str| event.pointer(pointer).and_then(Value::as_str);
        match kind {
            "message_start" => {
                if let Some(usage) = event.pointer("/message/usage") {
                    self.add_usage(usage);
                    out.push_back(Event::Usage(self.usage));
                }
            }
            "content_block_start" => {
                let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
                match str_at("/content_block/type") {
                    Some("text") => push_piece(
                        out,
                        false,
                        str_at("/content_block/text").unwrap_or_default(),
                    ),
                    Some("thinking") => push_piece(
                        out,
                        true,
                        str_at("/content_block/thinking").unwrap_or_default(),
                    ),
                    Some("tool_use") => {
                        let position = self.calls.len();
                        self.calls.insert(index, position);
                        out.push_back(Event::ToolCallStart {
                            index: position,
                            id: str_at("/content_block/id").unwrap_or_default().to_owned(),
                            name: str_at("/content_block/name").unwrap_or_default().to_owned(),
                        });
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
                match str_at("/delta/type") {
                    Some("text_delta") => {
                        push_piece(out, false, str_at("/delta/text").unwrap_or_default())
                    }
                    Some("thinking_delta") => {
                        push_piece(out, true, str_at("/delta/thinking").unwrap_or_default())
                    }
                    Some("signature_delta") => {
                        push_text(out, str_at("/delta/signature"), Event::ReasoningSignature)
                    }
                    Some("input_json_delta") => {
                        let piece = str_at("/delta/partial_json").filter(|p| !p.is_empty());
                        if let (Some(index), Some(piece)) = (self.calls.get(&index), piece) {
                            out.push_back(Event::ToolCallArguments {
                                index: *index,
                                delta: piece.to_owned(),
                            });
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = str_at("/delta/stop_reason") {
                    self.stop = Some(match reason {
                        "end_turn" | "stop_sequence" => Stop::EndTurn,
                        "tool_use" => Stop::ToolUse,
                        "max_tokens" => Stop::MaxTokens,
                        "refusal" => Stop::Refusal,
                        other => Stop::Other(other.to_owned()),
                    });
                }
                if let Some(usage) = event.get("usage") {
                    self.add_usage(usage);
                    out.push_back(Event::Usage(self.usage));
                }
            }
            "message_stop" => {
                out.push_back(Event::Stop(self.stop.take().unwrap_or(Stop::EndTurn)));
                return Ok(true);
            }
            "error" => {
                let kind = str_at("/error/type").unwrap_or("error");
                let message = str_at("/error/message").unwrap_or("no message");
                return Err(DecodeError {
                    message: format!("{NAME} reported an error ({kind}): {message}"),
                    retryable: kind == "overloaded_error",
                });
            }
            // `ping`, `content_block_stop`, and event types added later.
            _ => {}
        }
        Ok(false)
    }

    fn end(&mut self, _out: &mut VecDeque<Event>) -> Result<(), DecodeError> {
        Err(cut())
    }
}

impl Events {
    /// Takes the counts `usage` has (`message_start` has them all, `message_delta` the
    /// output's, and on some servers the input's again).
    fn add_usage(&mut self, usage: &Value) {
        let n = |key: &str| usage.get(key).and_then(Value::as_u64);
        let (input, read, written) = (
            n("input_tokens"),
            n("cache_read_input_tokens"),
            n("cache_creation_input_tokens"),
        );
        if input.is_some() || read.is_some() || written.is_some() {
            // A count missing from a later event is the earlier one (the cache's are given
            // once, at `message_start`, by some servers).
            let (read_before, written_before) = (
                self.usage.cached_input_tokens,
                self.usage.cache_write_tokens,
            );
            let input = input.unwrap_or_else(|| {
                self.usage.input_tokens.saturating_sub(
                    read_before
                        .unwrap_or(0)
                        .saturating_add(written_before.unwrap_or(0)),
                )
            });
            let read = read.or(read_before);
            let written = written.or(written_before);
            self.usage.input_tokens = input
                .saturating_add(read.unwrap_or(0))
                .saturating_add(written.unwrap_or(0));
            self.usage.cached_input_tokens = read;
            self.usage.cache_write_tokens = written;
        }
        if let Some(output) = n("output_tokens") {
            self.usage.output_tokens = output;
        }
    }
}

/// Pushes `make(text)` unless `text` is missing or empty.
fn push_text(out: &mut VecDeque<Event>, text: Option<&str>, make: fn(String) -> Event) {
    if let Some(text) = text.filter(|t| !t.is_empty()) {
        out.push_back(make(text.to_owned()));
    }
}
