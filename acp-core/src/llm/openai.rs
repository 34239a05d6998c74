//! OpenAI Chat Completions, streamed: OpenAI itself and every compatible server (llama.cpp,
//! vLLM, Ollama, LM Studio, OpenRouter, DeepSeek…).
//!
//! Owns: the request body (`POST {base}/chat/completions`, `stream: true` with
//! `stream_options.include_usage`, the session's `prompt_cache_key`), and the stream's chunks as [`Event`]s: `delta.content`,
//! `delta.reasoning_content` / `delta.reasoning` (how the compatible servers stream
//! reasoning), `delta.tool_calls` in pieces, the usage-only last chunk, `finish_reason`,
//! `[DONE]`.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;

use reqwest::header::{AUTHORIZATION, HeaderMap};
use serde::Deserialize;
use serde_json::{Value, json};
use sse_stream::Sse;

use super::http::{DecodeError, Decoder, Http, cut};
use super::retry::Retry;
use super::{
    Api, Event, EventStream, Message, Part, Provider, Request, Role, Route, Stop, Usage, push_piece,
};
use crate::Result;

/// The environment variable naming the API's base URL.
pub const BASE_URL_VAR: &str = "OPENAI_BASE_URL";
/// The environment variable holding the API key.
pub const API_KEY_VAR: &str = "OPENAI_API_KEY";
/// The base URL when [`BASE_URL_VAR`] is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// An OpenAI Chat Completions API: OpenAI's, or any compatible server's.
///
/// The base URL ends where `/chat/completions` is appended: `https://api.openai.com/v1`,
/// `http://127.0.0.1:8080/v1` for llama.cpp's `llama-server`, `http://localhost:11434/v1` for
/// Ollama. The key, when there is one, goes as `Authorization: Bearer …`; it never appears in
/// an error, a log line or this type's `Debug` output.
///
/// ```no_run
/// use acp_core::llm::{Message, OpenAi, Provider, Request};
/// use futures_util::StreamExt;
///
/// # async fn demo() -> acp_core::Result<()> {
/// let model = OpenAi::new("http://127.0.0.1:8080/v1", None)?;
/// let messages = [Message::user("Say hello")];
/// let request = Request {
///     model: "gemma",
///     system: None,
///     messages: &messages,
///     tools: &[],
///     max_tokens: None,
///     cache_key: None,
///     prompt_caching: true,
///     temperature: None,
/// };
/// let mut events = model.stream(request).await?;
/// while let Some(event) = events.next().await {
///     tracing::info!(?event);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct OpenAi {
    http: Http,
}

impl OpenAi {
    /// A client of the API at `base_url`, sending `api_key` if there is one (local servers
    /// need none).
    ///
    /// Fails when `base_url` is not a URL.
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Result<Self> {
        Ok(OpenAi {
            http: Http::new("OpenAI", base_url, API_KEY_VAR, api_key)?,
        })
    }

    /// A client configured as OpenAI's own SDKs are: the base URL in `OPENAI_BASE_URL`
    /// (default `https://api.openai.com/v1`), the key in `OPENAI_API_KEY` (optional).
    pub fn from_env() -> Result<Self> {
        let base_url = super::http::env_or(BASE_URL_VAR, DEFAULT_BASE_URL);
        OpenAi::new(base_url, std::env::var(API_KEY_VAR).ok())
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

impl Provider for OpenAi {
    fn route(&self) -> Option<Route> {
        Some(Route {
            api: Api::OpenAi,
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
            if let Some(key) = self.http.key() {
                headers.insert(AUTHORIZATION, Http::secret(&format!("Bearer {key}"))?);
            }
            self.http
                .stream::<Chunks>("/chat/completions", headers, body)
                .await
        })
    }
}

/// The request body of `request`.
fn body(request: &Request<'_>) -> Value {
    let mut messages = Vec::new();
    if let Some(system) = request.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    for message in request.messages {
        push_message(&mut messages, message);
    }
    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters,
                }})
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    if let Some(max) = request.max_tokens {
        body["max_tokens"] = json!(max);
    }
    if let Some(key) = request.cache_key.filter(|_| request.prompt_caching) {
        body["prompt_cache_key"] = json!(key);
    }
    if let Some(temperature) = request.temperature {
        body["temperature"] = json!(temperature);
    }
    body
}

/// `message` as Chat Completions messages: each tool result a `tool` message of its own
/// (first, as they answer the previous assistant message), the rest one user or assistant
/// message. Reasoning is not sent back (the format has no place for it).
fn push_message(messages: &mut Vec<Value>, message: &Message) {
    let mut text = String::new();
    let mut calls = Vec::new();
    for part in &message.content {
        match part {
            Part::Text { text: t } => text.push_str(t),
            Part::Reasoning { .. } => {}
            Part::ToolCall {
                id,
                name,
                arguments,
            } => calls.push(json!({
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()},
            })),
            Part::ToolResult {
                id,
                content,
                is_error,
            } => {
                let content = if *is_error {
                    format!("Error: {content}")
                } else {
                    content.clone()
                };
                messages.push(json!({"role": "tool", "tool_call_id": id, "content": content}));
            }
        }
    }
    match message.role {
        Role::Assistant => {
            let mut m = json!({"role": "assistant", "content": text});
            if !calls.is_empty() {
                if text.is_empty() {
                    m["content"] = Value::Null;
                }
                m["tool_calls"] = Value::Array(calls);
            }
            messages.push(m);
        }
        Role::User if !text.is_empty() => {
            messages.push(json!({"role": "user", "content": text}));
        }
        Role::User => {}
    }
}

/// The stream's state: which tool calls started, the stop announced.
#[derive(Default)]
struct Chunks {
    /// The provider's tool call index → its position among this answer's calls.
    calls: HashMap<u64, usize>,
    /// The `finish_reason` seen, sent as [`Event::Stop`] at `[DONE]` (after the usage chunk).
    stop: Option<Stop>,
}

const NAME: &str = "OpenAI";

impl Decoder for Chunks {
    fn event(&mut self, sse: Sse, out: &mut VecDeque<Event>) -> Result<bool, DecodeError> {
        let Some(data) = sse.data else {
            return Ok(false);
        };
        let data = data.trim();
        if data == "[DONE]" {
            out.push_back(Event::Stop(self.stop.take().unwrap_or(Stop::EndTurn)));
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        if !data.starts_with('{') {
            return Err(DecodeError::malformed(NAME, data, "not a JSON object"));
        }
        // Parsed in place: the hot path of a stream (one chunk per token) allocates only the
        // text it hands on.
        let chunk: Chunk<'_> =
            serde_json::from_str(data).map_err(|e| DecodeError::malformed(NAME, data, e))?;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| error.to_string());
            return Err(DecodeError::fatal(format!(
                "{NAME} reported an error: {message}"
            )));
        }
        if let Some(choice) = chunk.choices.unwrap_or_default().into_iter().next() {
            if let Some(delta) = choice.delta {
                self.delta(delta, out);
            }
            if let Some(reason) = choice.finish_reason {
                self.stop = Some(match &*reason {
                    "stop" => Stop::EndTurn,
                    "tool_calls" | "function_call" => Stop::ToolUse,
                    "length" => Stop::MaxTokens,
                    "content_filter" => Stop::Refusal,
                    other => Stop::Other(other.to_owned()),
                });
            }
        }
        if let Some(usage) = chunk.usage.filter(|u| u.is_object()) {
            out.push_back(Event::Usage(usage_of(&usage)));
        }
        Ok(false)
    }

    fn end(&mut self, out: &mut VecDeque<Event>) -> Result<(), DecodeError> {
        // Some servers end without `[DONE]`: the announced stop is enough.
        match self.stop.take() {
            Some(stop) => {
                out.push_back(Event::Stop(stop));
                Ok(())
            }
            None => Err(cut()),
        }
    }
}

impl Chunks {
    fn delta(&mut self, delta: Delta<'_>, out: &mut VecDeque<Event>) {
        let text = |t: Option<Cow<'_, str>>| t.filter(|t| !t.is_empty()).map(Cow::into_owned);
        for reasoning in [delta.reasoning_content, delta.reasoning]
            .into_iter()
            .flatten()
        {
            push_piece(out, true, &reasoning);
        }
        if let Some(content) = delta.content {
            push_piece(out, false, &content);
        }
        for call in delta.tool_calls.into_iter().flatten() {
            let raw = call.index.unwrap_or(0);
            let function = call.function.unwrap_or_default();
            let next = self.calls.len();
            let index = match self.calls.get(&raw) {
                Some(index) => *index,
                None => {
                    self.calls.insert(raw, next);
                    let id = call
                        .id
                        .map(Cow::into_owned)
                        .unwrap_or_else(|| format!("call_{raw}"));
                    let name = function.name.map(Cow::into_owned).unwrap_or_default();
                    out.push_back(Event::ToolCallStart {
                        index: next,
                        id,
                        name,
                    });
                    next
                }
            };
            if let Some(delta) = text(function.arguments) {
                out.push_back(Event::ToolCallArguments { index, delta });
            }
        }
    }
}

/// One chunk of the stream: what the decoder reads of it.
#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

/// What a chunk adds to the answer (strings borrowed from the event unless escaped).
#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    /// llama.cpp, DeepSeek, vLLM.
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    /// OpenRouter.
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<CallDelta<'a>>>,
}

#[derive(Deserialize)]
struct CallDelta<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize, Default)]
struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

/// A `usage` object as [`Usage`].
fn usage_of(usage: &Value) -> Usage {
    let n = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64);
    Usage {
        input_tokens: n("/prompt_tokens").unwrap_or(0),
        output_tokens: n("/completion_tokens").unwrap_or(0),
        cached_input_tokens: n("/prompt_tokens_details/cached_tokens"),
        cache_write_tokens: None,
        reasoning_tokens: n("/completion_tokens_details/reasoning_tokens"),
    }
}
