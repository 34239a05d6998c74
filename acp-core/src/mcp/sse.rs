//! The client side of MCP's legacy "HTTP with SSE" transport (MCP 2024-11-05; feature
//! `mcp-sse`), as an rmcp [`Transport`], since rmcp no longer has one.
//!
//! The protocol: the client GETs the SSE URL; the server's first event, `endpoint`, names the
//! URL (often relative: it is resolved against the SSE URL, and must be on the same origin)
//! that the client POSTs each of its JSON-RPC messages to; every `message` event that follows
//! carries one JSON-RPC message from the server. The configured headers go with every request.
//!
//! Owns: opening the stream and waiting for the endpoint ([`SseTransport::connect`], under the
//! runtime's start-up timeout), the bounds (one event at most [`MAX_EVENT`] bytes; no queue:
//! a message is read from the stream only when rmcp asks for the next one; a POST gets
//! [`POST_TIMEOUT`]), and the errors. The GET stream belongs to the transport: dropping or
//! closing it closes the connection, and no task is left behind.

use crate::error::chain;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Client, Response, StatusCode, Url};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use sse_stream::{Sse, SseStream};
use tracing::{debug, warn};

use crate::schema::HttpHeader;

/// The most bytes read from the stream for one event (its lines, comments between events
/// included) before the stream is given up on: about 16 MiB (a chunk of the HTTP body more,
/// at worst), as rmcp's streamable HTTP client allows.
pub(crate) const MAX_EVENT: usize = 16 * 1024 * 1024;

/// How long the server gets to accept one POSTed message (it answers `202 Accepted` at once;
/// the answer to a request comes on the stream).
pub(crate) const POST_TIMEOUT: Duration = Duration::from_secs(30);

/// At most this much of an error answer's body is read, and quoted in the error.
const ERROR_BODY: usize = 300;

/// Why the SSE transport could not connect, or could not send.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SseError {
    /// The configured URL or a header is not valid.
    #[error("{0}")]
    Config(String),
    /// The request could not be made (connection refused, TLS, a timeout, a broken body).
    #[error("{}", chain(.0))]
    Request(#[source] reqwest::Error),
    /// The server answered with an error status.
    #[error("the server answered {status}{}", quote(.body))]
    Status {
        /// The status.
        status: StatusCode,
        /// The start of the body, when it is text.
        body: String,
    },
    /// The GET was answered with something else than an event stream.
    #[error("the server answered with `{0}`, not an event stream")]
    NotEventStream(String),
    /// The stream ended before the server sent its `endpoint` event.
    #[error("the SSE stream ended before the server sent its `endpoint` event")]
    NoEndpoint,
    /// The `endpoint` event named a URL that is not valid, or on another origin.
    #[error("the server's message endpoint `{0}` is {1}")]
    BadEndpoint(String, &'static str),
    /// An event went over [`MAX_EVENT`].
    #[error("an SSE event was larger than {} bytes", MAX_EVENT)]
    TooLarge,
    /// The stream is not well-formed SSE.
    #[error("the SSE stream is malformed: {0}")]
    Malformed(String),
    /// The transport was closed.
    #[error("the SSE transport is closed")]
    Closed,
}

/// A failed request, without its URL (a token may be in it; the server's name says which).
fn request_error(error: reqwest::Error) -> SseError {
    SseError::Request(error.without_url())
}

fn quote(body: &str) -> String {
    if body.is_empty() {
        String::new()
    } else {
        format!(": {body}")
    }
}

/// The events of the GET stream, parsed by `sse-stream`.
type Events = BoxStream<'static, Result<Sse, sse_stream::Error>>;

/// A connected server over HTTP+SSE; see the module doc.
pub(crate) struct SseTransport {
    http: Client,
    /// Where messages are POSTed.
    endpoint: Url,
    headers: HeaderMap,
    /// The GET stream; `None` once it ended, failed or the transport was closed.
    events: Option<Events>,
    /// Bytes read from the stream since the last event came out of the parser.
    unread: Arc<AtomicUsize>,
}

impl std::fmt::Debug for SseTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseTransport")
            .field("endpoint", &self.endpoint.as_str())
            .field("open", &self.events.is_some())
            .finish_non_exhaustive()
    }
}

impl SseTransport {
    /// Opens the SSE stream at `url` with `headers` and waits for the server's `endpoint`
    /// event. Waits as long as the server takes: the caller bounds it (the runtime's start-up
    /// timeout); dropping the future closes the connection.
    pub(crate) async fn connect(url: &str, headers: &[HttpHeader]) -> Result<Self, SseError> {
        let base =
            Url::parse(url).map_err(|e| SseError::Config(format!("bad URL `{url}`: {e}")))?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(SseError::Config(format!("`{url}` is not an http(s) URL")));
        }
        let headers = header_map(headers)?;
        let http = Client::builder().build().map_err(request_error)?;
        let response = http
            .get(base.clone())
            .header(ACCEPT, "text/event-stream")
            .headers(headers.clone())
            .send()
            .await
            .map_err(request_error)?;
        let response = success(response).await?;
        if let Some(kind) = response.headers().get(CONTENT_TYPE) {
            let kind = String::from_utf8_lossy(kind.as_bytes()).into_owned();
            let essence = kind.split(';').next().unwrap_or_default().trim();
            if !essence.eq_ignore_ascii_case("text/event-stream") {
                return Err(SseError::NotEventStream(kind));
            }
        }
        let unread = Arc::new(AtomicUsize::new(0));
        let mut events = events(response, unread.clone());
        let endpoint = loop {
            let event = match events.next().await {
                Some(Ok(event)) => event,
                Some(Err(e)) => return Err(stream_error(e)),
                None => return Err(SseError::NoEndpoint),
            };
            unread.store(0, Ordering::Relaxed);
            if event.event.as_deref() == Some("endpoint") {
                break resolve(&base, event.data.as_deref().unwrap_or_default())?;
            }
            debug!(event = ?event.event, "an SSE event before `endpoint`; ignored");
        };
        debug!(%endpoint, "SSE MCP server connected");
        Ok(SseTransport {
            http,
            endpoint,
            headers,
            events: Some(events),
            unread,
        })
    }

    /// The next JSON-RPC message of a `message` event (other events and messages that are not
    /// JSON-RPC are skipped); `None` once the stream ended. The stream is dropped once it
    /// ended or failed.
    async fn next_message(&mut self) -> Result<Option<ServerJsonRpcMessage>, SseError> {
        loop {
            let Some(events) = self.events.as_mut() else {
                return Ok(None);
            };
            let event = match events.next().await {
                Some(Ok(event)) => event,
                Some(Err(e)) => {
                    self.events = None;
                    return Err(stream_error(e));
                }
                None => {
                    self.events = None;
                    return Ok(None);
                }
            };
            self.unread.store(0, Ordering::Relaxed);
            match event.event.as_deref() {
                None | Some("message") => {}
                Some(other) => {
                    debug!(event = other, "an SSE event that is not a message; ignored");
                    continue;
                }
            }
            let data = event.data.unwrap_or_default();
            match serde_json::from_str(&data) {
                Ok(message) => return Ok(Some(message)),
                Err(e) => warn!("an SSE MCP server sent a message that is not JSON-RPC: {e}"),
            }
        }
    }
}

/// The configured headers, checked.
fn header_map(headers: &[HttpHeader]) -> Result<HeaderMap, SseError> {
    let mut map = HeaderMap::new();
    for header in headers {
        let name = HeaderName::from_bytes(header.name.as_bytes())
            .map_err(|e| SseError::Config(format!("bad header name `{}`: {e}", header.name)))?;
        let value = HeaderValue::from_str(&header.value).map_err(|e| {
            SseError::Config(format!("bad value for header `{}`: {e}", header.name))
        })?;
        map.append(name, value);
    }
    Ok(map)
}

/// `response` if its status is a success; its status (and the start of a text body) if not.
async fn success(mut response: Response) -> Result<Response, SseError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let text = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/plain") || v.starts_with("application/json"));
    let mut body = Vec::new();
    while text && body.len() < ERROR_BODY {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(ERROR_BODY);
    let body = String::from_utf8_lossy(&body).trim().to_owned();
    Err(SseError::Status { status, body })
}

/// The events of `response`'s body, counting the bytes read into `unread` (which the reader
/// resets at every event) and failing once they go over [`MAX_EVENT`].
fn events(response: Response, unread: Arc<AtomicUsize>) -> Events {
    let bytes = response.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(request_error)?;
        let read = unread.fetch_add(chunk.len(), Ordering::Relaxed) + chunk.len();
        if read > MAX_EVENT {
            Err(SseError::TooLarge)
        } else {
            Ok(chunk)
        }
    });
    SseStream::from_bytes_stream(bytes).boxed()
}

/// What a failed stream says, with our own errors (from the body) unwrapped.
fn stream_error(error: sse_stream::Error) -> SseError {
    match error {
        sse_stream::Error::Body(e) => match e.downcast::<SseError>() {
            Ok(e) => *e,
            Err(e) => SseError::Malformed(e.to_string()),
        },
        other => SseError::Malformed(other.to_string()),
    }
}

/// The message endpoint the `endpoint` event's `data` names, resolved against the SSE URL;
/// it must be on the same origin (the configured headers, credentials maybe, go to it).
fn resolve(base: &Url, data: &str) -> Result<Url, SseError> {
    let data = data.trim();
    if data.is_empty() {
        return Err(SseError::BadEndpoint(data.to_owned(), "empty"));
    }
    let endpoint = base
        .join(data)
        .map_err(|_| SseError::BadEndpoint(data.to_owned(), "not a valid URL"))?;
    if endpoint.origin() != base.origin() {
        return Err(SseError::BadEndpoint(
            data.to_owned(),
            "not on the SSE URL's origin",
        ));
    }
    Ok(endpoint)
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), SseError>> + Send + 'static {
        let request = match (&self.events, serde_json::to_vec(&item)) {
            (None, _) => Err(SseError::Closed),
            (Some(_), Err(e)) => Err(SseError::Config(format!("unserializable message: {e}"))),
            (Some(_), Ok(body)) => Ok(self
                .http
                .post(self.endpoint.clone())
                .headers(self.headers.clone())
                .header(CONTENT_TYPE, "application/json")
                .timeout(POST_TIMEOUT)
                .body(body)),
        };
        async move {
            let response = request?.send().await.map_err(request_error)?;
            success(response).await.map(drop)
        }
    }

    /// The next JSON-RPC message of a `message` event; `None` once the stream ended or
    /// failed. Cancel-safe: all its state is in the stream.
    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        match self.next_message().await {
            Ok(Some(message)) => Some(message),
            Ok(None) => {
                debug!("an MCP server closed its SSE stream");
                None
            }
            Err(e) => {
                warn!("the SSE stream of an MCP server failed: {e}");
                None
            }
        }
    }

    /// Ends the GET stream (the server sees its connection close).
    async fn close(&mut self) -> Result<(), SseError> {
        self.events = None;
        Ok(())
    }
}

#[cfg(test)]
#[path = "sse_tests.rs"]
mod tests;
