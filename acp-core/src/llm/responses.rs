//! OpenAI Responses, streamed and stateless: OpenAI's newer API (`POST {base}/responses`),
//! and the servers that copy it.
//!
//! Owns: the request body and the stream's events as [`Event`]s.
//!
//! The request is stateless: `store: false`, the whole conversation each call (nothing is
//! kept on OpenAI's side, no `previous_response_id`). The system prompt is `instructions`;
//! the conversation is `input` items, in order: user and assistant text as `message` items,
//! tool calls as `function_call` items (their `call_id` is the [`Part::ToolCall`]'s id), tool
//! results as `function_call_output` items naming that `call_id` (first in their message, as
//! they answer the previous one). Tools are `function` tools with `strict: false` (strict,
//! the API's default, refuses any schema not written for it: optional properties, no
//! `additionalProperties: false`). `max_output_tokens`, and the session's `prompt_cache_key`
//! when prompt caching is on.
//!
//! Reasoning: with [`OpenAiResponses::with_reasoning`] (for a reasoning model: o-series,
//! gpt-5…) the request asks for reasoning summaries (`reasoning.summary: "auto"`), which
//! stream as [`Event::Reasoning`], and for the encrypted reasoning
//! (`include: ["reasoning.encrypted_content"]`): each reasoning item the model returns with
//! its encrypted content becomes the [`Event::ReasoningSignature`] of its summary, a JSON
//! object `{"type":"reasoning","id":…,"encrypted_content":…}`, and goes back as a `reasoning`
//! item (its summary with it) in the next calls, so that the model keeps its reasoning
//! across tool calls without anything stored. Reasoning without it (another provider's, or
//! none returned) is not sent back. Off (the default), neither parameter is sent: a model
//! that does not reason refuses them.
//!
//! The stream: `response.output_text.delta` (text), `response.refusal.delta` (text, and the
//! stop a refusal), `response.reasoning_summary_text.delta` (reasoning; summary parts apart
//! by a blank line) and `response.reasoning_text.delta` (raw reasoning, from servers that
//! show it), `response.output_item.added` / `response.function_call_arguments.delta` /
//! `.done` / `response.output_item.done` (tool calls; arguments sent whole at `.done` when
//! none streamed), `response.completed` / `response.incomplete` (usage, with
//! `input_tokens_details.cached_tokens` and `output_tokens_details.reasoning_tokens`; the
//! stop from `status` and `incomplete_details.reason`), `response.failed` and `error`
//! (errors, retried before any output when the code is `server_error` or
//! `rate_limit_exceeded`). Other events are skipped.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;

use reqwest::header::{AUTHORIZATION, HeaderMap};
use serde_json::{Value, json};
use sse_stream::Sse;

use super::http::{DecodeError, Decoder, Http, cut};
use super::openai::{API_KEY_VAR, BASE_URL_VAR, DEFAULT_BASE_URL};
use super::retry::Retry;
use super::{
    Api, Event, EventStream, Message, Part, Provider, Request, Role, Route, Stop, Usage, push_piece,
};
use crate::Result;

/// OpenAI's Responses API (or a compatible server's), stateless.
///
/// The base URL ends where `/responses` is appended (`https://api.openai.com/v1`), as for
/// [`OpenAi`](super::OpenAi), and the same variables configure it
/// ([`from_env`](Self::from_env)). The key goes as `Authorization: Bearer …`; it never
/// appears in an error, a log line or this type's `Debug` output.
///
/// ```no_run
/// use acp_core::llm::{Message, OpenAiResponses, Provider, Request};
///
/// # async fn demo() -> acp_core::Result<()> {
/// let model = OpenAiResponses::from_env()?.with_reasoning(true);
/// let messages = [Message::user("Say hello")];
/// let request = Request {
///     model: "gpt-5-mini",
///     system: Some("Be brief."),
///     messages: &messages,
///     tools: &[],
///     max_tokens: Some(1024),
///     cache_key: Some("session-1"),
///     prompt_caching: true,
///     temperature: None,
/// };
/// let _events = model.stream(request).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiResponses {
    http: Http,
    reasoning: bool,
}

impl OpenAiResponses {
    /// A client of the API at `base_url`, sending `api_key` if there is one.
    ///
    /// Fails when `base_url` is not a URL.
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Result<Self> {
        Ok(OpenAiResponses {
            http: Http::new("OpenAI", base_url, API_KEY_VAR, api_key)?,
            reasoning: false,
        })
    }

    /// A client configured as OpenAI's own SDKs are: the base URL in `OPENAI_BASE_URL`
    /// (default `https://api.openai.com/v1`), the key in `OPENAI_API_KEY`.
    pub fn from_env() -> Result<Self> {
        let base_url = super::http::env_or(BASE_URL_VAR, DEFAULT_BASE_URL);
        OpenAiResponses::new(base_url, std::env::var(API_KEY_VAR).ok())
    }

    /// The same client, asking a reasoning model for its reasoning summaries and its
    /// encrypted reasoning (sent back in the next calls); see the module's documentation.
    /// Off by default: a model that does not reason refuses these parameters.
    pub fn with_reasoning(mut self, on: bool) -> Self {
        self.reasoning = on;
        self
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

impl Provider for OpenAiResponses {
    fn route(&self) -> Option<Route> {
        Some(Route {
            api: Api::OpenAiResponses,
            base_url: self.http.base_url().to_owned(),
        })
    }

    fn stream<'a>(
        &'a self,
        request: Request<'a>,
    ) -> Pin<Box<dyn Future<Output = Result<EventStream>> + Send + 'a>> {
        Box::pin(async move {
            let body = serde_json::to_vec(&body(&request, self.reasoning))?;
            let mut headers = HeaderMap::new();
            if let Some(key) = self.http.key() {
                headers.insert(AUTHORIZATION, Http::secret(&format!("Bearer {key}"))?);
            }
            self.http
                .stream::<Events>("/responses", headers, body)
                .await
        })
    }
}

/// The request body of `request`; `reasoning`: ask for summaries and encrypted reasoning.
fn body(request: &Request<'_>, reasoning: bool) -> Value {
    let mut input = Vec::new();
    for message in request.messages {
        push_items(&mut input, message);
    }
    let mut body = json!({
        "model": request.model,
        "input": input,
        "stream": true,
        "store": false,
    });
    if let Some(system) = request.system {
        body["instructions"] = json!(system);
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                    "strict": false,
                })
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    if let Some(max) = request.max_tokens {
        body["max_output_tokens"] = json!(max);
    }
    if let Some(temperature) = request.temperature {
        body["temperature"] = json!(temperature);
    }
    if let Some(key) = request.cache_key.filter(|_| request.prompt_caching) {
        body["prompt_cache_key"] = json!(key);
    }
    if reasoning {
        body["reasoning"] = json!({"summary": "auto"});
        body["include"] = json!(["reasoning.encrypted_content"]);
    }
    body
}

/// `message` as input items, in order: a user message's tool results first (they answer
/// the previous assistant message), then its text; an assistant message's reasoning (when
/// it is this API's, encrypted), text and tool calls as they come.
fn push_items(input: &mut Vec<Value>, message: &Message) {
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    let mut text = String::new();
    let flush = |input: &mut Vec<Value>, text: &mut String| {
        if !text.is_empty() {
            let content = std::mem::take(text);
            input.push(json!({"type": "message", "role": role, "content": content}));
        }
    };
    for part in &message.content {
        match part {
            Part::Text { text: t } => text.push_str(t),
            Part::Reasoning {
                text: summary,
                signature: Some(signature),
            } => {
                if let Some(item) = reasoning_item(summary, signature) {
                    flush(input, &mut text);
                    input.push(item);
                }
            }
            Part::Reasoning { .. } => {}
            Part::ToolCall {
                id,
                name,
                arguments,
            } => {
                flush(input, &mut text);
                let arguments = match arguments {
                    Value::String(raw) => raw.clone(),
                    other => other.to_string(),
                };
                input.push(json!({
                    "type": "function_call",
                    "call_id": id,
                    "name": name,
                    "arguments": arguments,
                }));
            }
            Part::ToolResult {
                id,
                content,
                is_error,
            } => {
                let output = if *is_error {
                    format!("Error: {content}")
                } else {
                    content.clone()
                };
                // Before the message's text: it answers the previous message.
                input
                    .push(json!({"type": "function_call_output", "call_id": id, "output": output}));
            }
        }
    }
    flush(input, &mut text);
}

/// The `reasoning` input item a signature of this API stands for (with `summary` as its
/// summary); `None` for another provider's signature.
fn reasoning_item(summary: &str, signature: &str) -> Option<Value> {
    if !signature.starts_with('{') {
        return None;
    }
    let signed: Value = serde_json::from_str(signature).ok()?;
    if signed.get("type").and_then(Value::as_str) != Some("reasoning") {
        return None;
    }
    let id = signed.get("id").and_then(Value::as_str)?;
    let encrypted = signed.get("encrypted_content").and_then(Value::as_str)?;
    let summary = if summary.is_empty() {
        json!([])
    } else {
        json!([{"type": "summary_text", "text": summary}])
    };
    Some(json!({
        "type": "reasoning",
        "id": id,
        "summary": summary,
        "encrypted_content": encrypted,
    }))
}

/// A tool call of the answer being streamed.
struct Call {
    /// Its output item's index, and id, as the events name it.
    output_index: Option<u64>,
    item_id: Option<String>,
    /// Whether its arguments were handed on (in pieces or whole).
    argued: bool,
}

/// The stream's state.
#[derive(Default)]
struct Events {
    /// The tool calls started, in order: each one's position is its index here.
    calls: Vec<Call>,
    /// The output index and summary index of the last reasoning summary piece.
    summary: Option<(u64, u64)>,
    /// The model refused (a `refusal` piece).
    refused: bool,
}

const NAME: &str = "OpenAI";

impl Decoder for Events {
    fn event(&mut self, sse: Sse, out: &mut VecDeque<Event>) -> Result<bool, DecodeError> {
        let Some(data) = sse.data else {
            return Ok(false);
        };
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(false);
        }
        let event: Value =
            serde_json::from_str(data).map_err(|e| DecodeError::malformed(NAME, data, e))?;
        if !event.is_object() {
            return Err(DecodeError::malformed(NAME, data, "not a JSON object"));
        }
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .or(sse.event.as_deref())
            .ok_or_else(|| DecodeError::malformed(NAME, data, "no `type`"))?;
        let str_at = |pointer: &str| event.pointer(pointer).and_then(Value::as_str);
        let output_index = event.get("output_index").and_then(Value::as_u64);
        let item_id = str_at("/item_id");
        match kind {
            "response.output_text.delta" => {
                push_piece(out, false, str_at("/delta").unwrap_or_default())
            }
            "response.refusal.delta" => {
                self.refused = true;
                push_piece(out, false, str_at("/delta").unwrap_or_default());
            }
            "response.reasoning_summary_text.delta" => {
                let at = (
                    output_index.unwrap_or(0),
                    event
                        .get("summary_index")
                        .and_then(Value::as_u64)
                        .unwrap_or(0),
                );
                let piece = str_at("/delta").unwrap_or_default();
                if piece.is_empty() {
                    return Ok(false);
                }
                // The next part of the same item's summary: a paragraph of its own.
                if matches!(self.summary, Some((item, part)) if item == at.0 && part != at.1) {
                    push_piece(out, true, "\n\n");
                }
                self.summary = Some(at);
                push_piece(out, true, piece);
            }
            "response.reasoning_text.delta" => {
                push_piece(out, true, str_at("/delta").unwrap_or_default())
            }
            "response.output_item.added" => {
                if let Some(item) = event.get("item") {
                    self.item(item, output_index, out);
                }
            }
            "response.function_call_arguments.delta" => {
                let piece = str_at("/delta").filter(|p| !p.is_empty());
                if let (Some(index), Some(piece)) = (self.call(output_index, item_id), piece) {
                    self.calls[index].argued = true;
                    out.push_back(Event::ToolCallArguments {
                        index,
                        delta: piece.to_owned(),
                    });
                }
            }
            "response.function_call_arguments.done" => {
                if let Some(index) = self.call(output_index, item_id) {
                    self.whole_arguments(index, str_at("/arguments"), out);
                }
            }
            "response.output_item.done" => {
                if let Some(item) = event.get("item") {
                    self.item_done(item, output_index, out);
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = event.get("response").unwrap_or(&Value::Null);
                if let Some(usage) = response.get("usage").filter(|u| u.is_object()) {
                    out.push_back(Event::Usage(usage_of(usage)));
                }
                out.push_back(Event::Stop(self.stop(kind, response)));
                return Ok(true);
            }
            "response.failed" => {
                let error = event.pointer("/response/error").unwrap_or(&Value::Null);
                return Err(error_of(error, "the response failed"));
            }
            "error" => {
                // `{code, message}` at the top (OpenAI), or under `error` (some servers).
                let error = match event.get("error") {
                    Some(error) if error.is_object() => error,
                    _ => &event,
                };
                return Err(error_of(error, "no message"));
            }
            // `response.created`, `.in_progress`, `.content_part.*`, `.output_text.done`,
            // `.reasoning_summary_part.*`, and event types added later.
            _ => {}
        }
        Ok(false)
    }

    fn end(&mut self, _out: &mut VecDeque<Event>) -> Result<(), DecodeError> {
        Err(cut())
    }
}

impl Events {
    /// The position of the tool call these events name, if one started.
    fn call(&self, output_index: Option<u64>, item_id: Option<&str>) -> Option<usize> {
        self.calls.iter().position(|call| {
            (output_index.is_some() && call.output_index == output_index)
                || (item_id.is_some() && call.item_id.as_deref() == item_id)
        })
    }

    /// An output item that started (or ended without having started): a function call
    /// starts a tool call, its arguments too if it has them already.
    fn item(&mut self, item: &Value, output_index: Option<u64>, out: &mut VecDeque<Event>) {
        if item.get("type").and_then(Value::as_str) != Some("function_call") {
            return;
        }
        let str_of = |key: &str| item.get(key).and_then(Value::as_str);
        let item_id = str_of("id");
        if self.call(output_index, item_id).is_some() {
            return;
        }
        let index = self.calls.len();
        let id = str_of("call_id")
            .or(item_id)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("call_{index}"));
        self.calls.push(Call {
            output_index,
            item_id: item_id.map(str::to_owned),
            argued: false,
        });
        out.push_back(Event::ToolCallStart {
            index,
            id,
            name: str_of("name").unwrap_or_default().to_owned(),
        });
        if let Some(arguments) = str_of("arguments").filter(|a| !a.is_empty()) {
            self.whole_arguments(index, Some(arguments), out);
        }
    }

    /// An output item that ended: a function call not seen before starts (with its
    /// arguments, unless they streamed); a reasoning item's encrypted content is the
    /// signature of its summary.
    fn item_done(&mut self, item: &Value, output_index: Option<u64>, out: &mut VecDeque<Event>) {
        let str_of = |key: &str| item.get(key).and_then(Value::as_str);
        match str_of("type") {
            Some("function_call") => {
                self.item(item, output_index, out);
                if let Some(index) = self.call(output_index, str_of("id")) {
                    self.whole_arguments(index, str_of("arguments"), out);
                }
            }
            Some("reasoning") => {
                let encrypted = str_of("encrypted_content").filter(|e| !e.is_empty());
                if let (Some(id), Some(encrypted)) = (str_of("id"), encrypted) {
                    let signed = json!({
                        "type": "reasoning",
                        "id": id,
                        "encrypted_content": encrypted,
                    });
                    out.push_back(Event::ReasoningSignature(signed.to_string()));
                }
            }
            _ => {}
        }
    }

    /// The call's arguments, whole, unless pieces of them were handed on already.
    fn whole_arguments(
        &mut self,
        index: usize,
        arguments: Option<&str>,
        out: &mut VecDeque<Event>,
    ) {
        let call = &mut self.calls[index];
        if call.argued {
            return;
        }
        if let Some(arguments) = arguments.filter(|a| !a.is_empty()) {
            call.argued = true;
            out.push_back(Event::ToolCallArguments {
                index,
                delta: arguments.to_owned(),
            });
        }
    }

    /// Why the model stopped: the response's `status` (else the event's), and why it is
    /// incomplete.
    fn stop(&self, kind: &str, response: &Value) -> Stop {
        let status = response.get("status").and_then(Value::as_str).unwrap_or(
            if kind == "response.incomplete" {
                "incomplete"
            } else {
                "completed"
            },
        );
        match status {
            "completed" if !self.calls.is_empty() => Stop::ToolUse,
            "completed" if self.refused => Stop::Refusal,
            "completed" => Stop::EndTurn,
            "incomplete" => match response
                .pointer("/incomplete_details/reason")
                .and_then(Value::as_str)
            {
                Some("max_output_tokens") => Stop::MaxTokens,
                Some("content_filter") => Stop::Refusal,
                Some(other) => Stop::Other(other.to_owned()),
                None => Stop::Other("incomplete".to_owned()),
            },
            other => Stop::Other(other.to_owned()),
        }
    }
}

/// An error object (`{code, message}`) as the error ending the stream; retryable when its
/// code says the call may pass later.
fn error_of(error: &Value, otherwise: &str) -> DecodeError {
    let str_of = |key: &str| error.get(key).and_then(Value::as_str);
    let code = str_of("code").or(str_of("type"));
    let message = str_of("message").unwrap_or(otherwise);
    DecodeError {
        message: match code {
            Some(code) => format!("{NAME} reported an error ({code}): {message}"),
            None => format!("{NAME} reported an error: {message}"),
        },
        retryable: matches!(code, Some("server_error" | "rate_limit_exceeded")),
    }
}

/// A Responses `usage` object as [`Usage`].
fn usage_of(usage: &Value) -> Usage {
    let n = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64);
    Usage {
        input_tokens: n("/input_tokens").unwrap_or(0),
        output_tokens: n("/output_tokens").unwrap_or(0),
        cached_input_tokens: n("/input_tokens_details/cached_tokens"),
        cache_write_tokens: None,
        reasoning_tokens: n("/output_tokens_details/reasoning_tokens"),
    }
}
