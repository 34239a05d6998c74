//! POSTing a model request and reading its server-sent events, for both providers.
//!
//! Owns: the HTTP client of a provider ([`Http`]: its base URL, its API key, kept out of every
//! message, log line and `Debug` output), the provider errors in words a user can act on (a
//! refused key names the variable that holds it; a rejected request quotes the provider's own
//! message; a refused connection names the base URL; a stream cut before the model finished
//! says so), and which failures are tried again, as [`Retry`] says (`retry.rs`): `429`,
//! `500`, `502`, `503`, `504`, `529`, an error event the provider marks as passing
//! (Anthropic's `overloaded_error`), an attempt silent past the caller's first-event timeout
//! ([`CallHooks`]) — only before the model produced anything, so a retried call never
//! repeats what the caller already received.
//!
//! The wire format of each provider is a [`Decoder`] (`openai.rs`, `anthropic.rs`): it turns
//! each server-sent event into [`Event`]s.

use crate::error::chain;
use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use futures_util::stream::BoxStream;
use futures_util::{Stream, StreamExt};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Client, Response};
use sse_stream::{Sse, SseStream};
use tracing::{debug, warn};

use super::retry::{CallHooks, Retry, RetryWait, retry_after};
use super::{Event, EventStream, JOIN_LIMIT};
use crate::{Error, Result};

/// The value of the environment variable `var`, or `default` when it is unset or empty.
pub(crate) fn env_or(var: &str, default: &str) -> String {
    std::env::var(var)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_owned())
}

/// What a [`Decoder`] found wrong in an event.
#[derive(Debug)]
pub(crate) struct DecodeError {
    /// What to tell the user (the key is scrubbed from it before it is shown).
    pub(crate) message: String,
    /// Whether the provider says the call may pass if made again.
    pub(crate) retryable: bool,
}

impl DecodeError {
    /// An error that retrying will not fix.
    pub(crate) fn fatal(message: impl Into<String>) -> Self {
        DecodeError {
            message: message.into(),
            retryable: false,
        }
    }

    /// An event whose data is not what the format says, quoting the start of it.
    pub(crate) fn malformed(provider: &str, data: &str, why: impl std::fmt::Display) -> Self {
        DecodeError::fatal(format!(
            "{provider} sent a malformed event ({why}): `{}`",
            excerpt(data, 120)
        ))
    }
}

/// One provider's stream format: server-sent events in, [`Event`]s out.
pub(crate) trait Decoder: Default + Send + Unpin + 'static {
    /// Decodes one server-sent event into `out`; `Ok(true)` when the call is finished (its
    /// [`Event::Stop`] pushed): nothing more is read.
    fn event(&mut self, sse: Sse, out: &mut VecDeque<Event>) -> Result<bool, DecodeError>;

    /// The body ended without the event that finishes the call: pushes what the model did
    /// finish (a stop it already announced), or fails with [`cut`].
    fn end(&mut self, out: &mut VecDeque<Event>) -> Result<(), DecodeError>;
}

/// The error of a stream that ended before the model finished.
pub(crate) fn cut() -> DecodeError {
    DecodeError::fatal("the model's stream ended before it finished")
}

/// The HTTP side of one provider: where it is, its key, how it retries.
#[derive(Clone)]
pub(crate) struct Http {
    client: Client,
    /// The base URL, without a trailing `/`.
    base_url: String,
    /// The provider's name, for messages: `OpenAI`, `Anthropic`.
    provider: &'static str,
    /// The environment variable that holds the key, for messages.
    key_var: &'static str,
    key: Option<String>,
    pub(crate) retry: Retry,
    /// Headers sent with every request, after (and over) the provider's own.
    extra: HeaderMap,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http")
            .field("base_url", &self.base_url)
            .field("api_key", &self.key.as_ref().map(|_| "[redacted]"))
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

/// At most this much of an error answer's body is read.
const ERROR_BODY: usize = 16 * 1024;

/// The events of a response body, parsed.
type SseEvents = BoxStream<'static, Result<Sse, sse_stream::Error>>;

/// Why one attempt failed.
enum Failure {
    /// Retrying may pass: after the provider's `retry-after`, if it said.
    Retry {
        message: String,
        after: Option<Duration>,
        rate_limited: bool,
    },
    /// Retrying will not help.
    Fatal(String),
}

impl Failure {
    /// A passing failure for which the provider named no wait.
    fn passing(message: String) -> Self {
        Failure::Retry {
            message,
            after: None,
            rate_limited: false,
        }
    }
}

impl Http {
    /// A client for `base_url`; `key` is the API key, `key_var` the variable that holds it.
    pub(crate) fn new(
        provider: &'static str,
        base_url: impl Into<String>,
        key_var: &'static str,
        key: Option<String>,
    ) -> Result<Self> {
        let base_url = base_url.into().trim_end_matches('/').to_owned();
        reqwest::Url::parse(&base_url).map_err(|e| {
            Error::msg(format!(
                "the {provider} base URL `{base_url}` is not valid: {e}"
            ))
        })?;
        let client = Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| Error::msg(format!("could not create the HTTP client: {}", chain(&e))))?;
        Ok(Http {
            client,
            base_url,
            provider,
            key_var,
            key: key.filter(|k| !k.is_empty()),
            retry: Retry::default(),
            extra: HeaderMap::new(),
        })
    }

    /// The base URL, without a trailing `/`.
    pub(crate) fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Adds headers sent with every request, replacing the provider's own of the same name
    /// (e.g. an `Authorization` of a gateway). Their values may be secrets: none is ever
    /// shown by `Debug`, logs or errors.
    pub(crate) fn add_headers<'h>(
        &mut self,
        headers: impl IntoIterator<Item = (&'h str, &'h str)>,
    ) -> Result<()> {
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| Error::msg(format!("`{name}` is not a valid header name")))?;
            let mut value = HeaderValue::from_str(value).map_err(|_| {
                Error::msg(format!(
                    "the value of header `{name}` is not a valid header value"
                ))
            })?;
            value.set_sensitive(true);
            self.extra.insert(name, value);
        }
        Ok(())
    }

    /// The API key, if one is set.
    pub(crate) fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// A header value holding a secret: marked sensitive, so that no `Debug` shows it.
    pub(crate) fn secret(value: &str) -> Result<HeaderValue> {
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| Error::msg("the API key contains characters a header cannot carry"))?;
        value.set_sensitive(true);
        Ok(value)
    }

    /// POSTs `body` (JSON) to `{base_url}{path}` and streams the answer's events through a
    /// `D`, retrying as [`Retry`] says. Resolves once the model produced its first text,
    /// reasoning, tool call or stop (so that a failure before it can still be retried).
    pub(crate) async fn stream<D: Decoder>(
        &self,
        path: &str,
        headers: HeaderMap,
        body: Vec<u8>,
    ) -> Result<EventStream> {
        let url = format!("{}{path}", self.base_url);
        let mut headers = headers;
        for (name, value) in &self.extra {
            headers.insert(name, value.clone());
        }
        let hooks = CallHooks::current().unwrap_or_default();
        let mut retries = 0;
        loop {
            let attempt = self.attempt::<D>(&url, &headers, &body);
            let outcome = match hooks.first_event_timeout {
                Some(limit) => match tokio::time::timeout(limit, attempt).await {
                    Ok(outcome) => outcome,
                    Err(_) => Err(Failure::passing(format!(
                        "{} did not start answering within {} s",
                        self.provider,
                        limit.as_secs_f64()
                    ))),
                },
                None => attempt.await,
            };
            let failure = match outcome {
                Ok(events) => return Ok(events),
                Err(failure) => failure,
            };
            match failure {
                Failure::Retry {
                    message,
                    after,
                    rate_limited,
                } if retries < self.retry.max_retries => {
                    retries += 1;
                    let wait = self.retry.wait(retries, after);
                    let reason = self.scrub(&message);
                    warn!(
                        provider = self.provider,
                        retry = retries,
                        wait_ms = wait.as_millis() as u64,
                        "{reason}; retrying"
                    );
                    if let Some(on_retry) = &hooks.on_retry {
                        on_retry(RetryWait {
                            retry: retries,
                            wait,
                            rate_limited,
                            reason,
                        })
                        .await;
                    }
                    tokio::time::sleep(wait).await;
                }
                Failure::Retry { message, .. } if retries > 0 => {
                    return Err(self.error(format!("{message} (gave up after {retries} retries)")));
                }
                Failure::Retry { message, .. } | Failure::Fatal(message) => {
                    return Err(self.error(message));
                }
            }
        }
    }

    /// One attempt: the request, its status, and the events up to the model's first output.
    async fn attempt<D: Decoder>(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<EventStream, Failure> {
        debug!(provider = self.provider, url, "POST");
        let response = self
            .client
            .post(url)
            .headers(headers.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(body.to_vec())
            .send()
            .await
            .map_err(|e| self.request_failure(e))?;
        let status = response.status();
        debug!(
            provider = self.provider,
            status = status.as_u16(),
            "answered"
        );
        if !status.is_success() {
            return Err(self.status_failure(response).await);
        }
        let json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        if json {
            let body = read_body(response).await;
            return Err(Failure::Fatal(format!(
                "{} answered with JSON, not an event stream: {}",
                self.provider,
                error_message(&body)
            )));
        }
        let mut reader = Reader::<D> {
            events: Some(SseStream::from_bytes_stream(response.bytes_stream()).boxed()),
            decoder: D::default(),
            out: VecDeque::new(),
            failed: None,
            provider: self.provider,
            http: self.clone(),
            yielded: false,
        };
        // Read up to the model's first output: until then, a passing error is retried.
        while reader.events.is_some() && !reader.out.iter().any(|e| !matches!(e, Event::Usage(_))) {
            if let Err(e) = reader.read().await {
                return Err(if e.retryable {
                    Failure::passing(e.message)
                } else {
                    Failure::Fatal(e.message)
                });
            }
        }
        Ok(reader.into_stream())
    }

    /// A request that got no answer.
    fn request_failure(&self, error: reqwest::Error) -> Failure {
        let error = error.without_url();
        if error.is_connect() {
            Failure::Fatal(format!(
                "could not connect to {} at {}: {}",
                self.provider,
                self.base_url,
                chain(&error)
            ))
        } else {
            Failure::Fatal(format!(
                "the request to {} at {} failed: {}",
                self.provider,
                self.base_url,
                chain(&error)
            ))
        }
    }

    /// An error status, in words.
    async fn status_failure(&self, response: Response) -> Failure {
        let code = response.status().as_u16();
        let status = match (response.status().canonical_reason(), code) {
            (Some(reason), _) => format!("{code} {reason}"),
            (None, 529) => "529 Overloaded".to_owned(),
            (None, _) => code.to_string(),
        };
        let after = retry_after(response.headers(), SystemTime::now());
        let message = error_message(&read_body(response).await);
        let provider = self.provider;
        let said = if message.is_empty() {
            String::new()
        } else {
            format!(": {message}")
        };
        match code {
            401 | 403 => {
                let hint = match self.key {
                    Some(_) => format!("check the API key in {}", self.key_var),
                    None => format!("no API key was sent: set {}", self.key_var),
                };
                Failure::Fatal(format!(
                    "{provider} refused the API key ({status}{said}); {hint}"
                ))
            }
            429 => Failure::Retry {
                message: format!("{provider} rate-limited the request ({status}{said})"),
                after,
                rate_limited: true,
            },
            500 | 502 | 503 | 504 | 529 => Failure::Retry {
                message: format!("{provider} is unavailable or overloaded ({status}{said})"),
                after,
                rate_limited: false,
            },
            400 | 404 | 422 => {
                Failure::Fatal(format!("{provider} rejected the request ({status}{said})"))
            }
            _ => Failure::Fatal(format!("{provider} answered {status}{said}")),
        }
    }

    /// An [`Error`] whose message never holds the key.
    fn error(&self, message: String) -> Error {
        Error::msg(self.scrub(&message))
    }

    /// `text` with every occurrence of the key replaced.
    fn scrub(&self, text: &str) -> String {
        match &self.key {
            Some(key) if text.contains(key.as_str()) => text.replace(key.as_str(), "[redacted]"),
            _ => text.to_owned(),
        }
    }
}

/// Reads a response's events through its decoder.
struct Reader<D> {
    /// `None` once the call finished or failed (the connection is then dropped).
    events: Option<SseEvents>,
    decoder: D,
    /// Events decoded, not yet handed out.
    out: VecDeque<Event>,
    /// The error that ended the stream, handed out after the events decoded before it.
    failed: Option<Error>,
    provider: &'static str,
    http: Http,
    /// Whether the text waiting in `out` has already let the runtime run once (see
    /// [`Reader::poll_next`]).
    yielded: bool,
}

impl<D: Decoder> Reader<D> {
    /// Reads the next server-sent event into `out`; after a failure or the end, `events` is
    /// `None`.
    async fn read(&mut self) -> Result<(), DecodeError> {
        let Some(events) = self.events.as_mut() else {
            return Ok(());
        };
        let next = events.next().await;
        self.take(next)
    }

    /// Decodes what the event stream gave next (`None`: its end).
    fn take(&mut self, next: Option<Result<Sse, sse_stream::Error>>) -> Result<(), DecodeError> {
        let result = match next {
            Some(Ok(sse)) => self.decoder.event(sse, &mut self.out),
            Some(Err(sse_stream::Error::Body(e))) => Err(DecodeError::fatal(format!(
                "{} ({})",
                cut().message,
                chain(e.as_ref())
            ))),
            Some(Err(e)) => Err(DecodeError::fatal(format!(
                "{} sent a malformed event stream: {e}",
                self.provider
            ))),
            None => self.decoder.end(&mut self.out).map(|()| true),
        };
        if !matches!(result, Ok(false)) {
            self.events = None;
        }
        result.map(|_| ())
    }

    /// The events, those already read first; an error ends them.
    fn into_stream(self) -> EventStream {
        Box::pin(self)
    }
}

/// Polled in place (the reader is never moved between events: this is the hot path of a
/// stream, one event per token). Every server-sent event that has already arrived is decoded
/// before any is handed out, so that text pieces arriving together join into one event of at
/// most 64 KiB ([`push_piece`]); "arrived" includes bytes the HTTP connection's task has not
/// handed on yet, which it is let to do before text goes out. Text waits for nothing that has
/// not arrived.
impl<D: Decoder + Unpin> Stream for Reader<D> {
    type Item = Result<Event>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Event>>> {
        let reader = self.get_mut();
        loop {
            // Text last in line may still grow by what has arrived behind it.
            let joinable = reader.events.is_some()
                && reader.out.len() == 1
                && matches!(reader.out.back(),
                    Some(Event::Text(t) | Event::Reasoning(t)) if t.len() < JOIN_LIMIT);
            if !joinable && let Some(event) = reader.out.pop_front() {
                reader.yielded = false;
                return Poll::Ready(Some(Ok(event)));
            }
            if let Some(error) = reader.failed.take() {
                return Poll::Ready(Some(Err(error)));
            }
            let Some(events) = reader.events.as_mut() else {
                return Poll::Ready(None);
            };
            match events.poll_next_unpin(cx) {
                Poll::Pending if joinable && !reader.yielded => {
                    // Bytes may have arrived that the connection's task (woken when its last
                    // piece was taken) has not handed on: let it run once, then look again.
                    reader.yielded = true;
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                Poll::Pending => {
                    reader.yielded = false;
                    return match reader.out.pop_front() {
                        Some(event) => Poll::Ready(Some(Ok(event))),
                        None => Poll::Pending,
                    };
                }
                Poll::Ready(next) => {
                    // Something came: the next time the body has nothing, yield again.
                    reader.yielded = false;
                    if let Err(e) = reader.take(next) {
                        reader.failed = Some(reader.http.error(e.message));
                    }
                }
            }
        }
    }
}

/// The start of an error answer's body.
async fn read_body(mut response: Response) -> String {
    let mut body = Vec::new();
    while body.len() < ERROR_BODY {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    String::from_utf8_lossy(&body).trim().to_owned()
}

/// The provider's own message in an error body: `error.message` (OpenAI, Anthropic,
/// llama.cpp), `error` or `message` or `detail` as text; else the start of the body.
fn error_message(body: &str) -> String {
    let json: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let found = json.as_ref().and_then(|v| {
        [
            v.pointer("/error/message"),
            v.get("error"),
            v.get("message"),
            v.get("detail"),
        ]
        .into_iter()
        .flatten()
        .find_map(|v| v.as_str())
    });
    match found {
        Some(message) => excerpt(message, 500),
        None => excerpt(body, 300),
    }
}

/// At most `max` bytes of `text` (cut on a character boundary), `…` marking a cut.
pub(crate) fn excerpt(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_message_finds_the_providers_words() {
        let openai = r#"{"error":{"message":"The model `x` does not exist","type":"invalid_request_error"}}"#;
        assert_eq!(error_message(openai), "The model `x` does not exist");
        assert_eq!(error_message(r#"{"detail":"bad"}"#), "bad");
        assert_eq!(error_message("plain text"), "plain text");
        assert_eq!(excerpt("ééé", 3), "é…");
    }
}
