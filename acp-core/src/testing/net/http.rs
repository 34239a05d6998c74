//! The scripted client over Streamable HTTP (the transport RFD), as our server
//! (`net/stream.rs`) and the official TypeScript SDK's HTTP client speak it: `initialize` is
//! POSTed without a connection id and answered `200` with the connection's id; then one SSE
//! GET stream carries what the agent sends on the connection, and one per session what it
//! sends on that session; every other message of the client is POSTed (`202`), naming its
//! session when it has one; DELETE ends the connection.
//!
//! The bridge turns this back into the line-based wire: each line the client writes is one
//! POST; the frames of every stream are merged into the lines the client reads, each stream
//! in its own order. One place needs more than merging: the answer to `session/load` comes
//! on the connection stream while the updates it replays come on the session's, and the
//! scripted client counts as replayed what arrives before the answer. So before handing that
//! answer on, the bridge sends a request of its own on the session (`_acp_testing/barrier`,
//! which the agent answers as an unknown method, on the session stream after everything it
//! sent there before) and waits for its answer: the replay is then all in. The client never
//! sees the barrier.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use reqwest::{Response, Url};
use serde_json::{Value, json};
use sse_stream::SseStream;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::super::{TestClient, TestClientBuilder};
use crate::net::{CONNECTION_ID, SESSION_ID};
use crate::protocol::methods;
use crate::sync::lock;
use crate::{Error, Result};

/// The method of the bridge's own request that marks the end of a `session/load`'s replay.
const BARRIER: &str = "_acp_testing/barrier";

/// How long the bridge waits for a barrier's answer before handing the answer on anyway.
const BARRIER_WAIT: Duration = Duration::from_secs(10);

/// How long the DELETE that ends the connection may take.
const DELETE_WAIT: Duration = Duration::from_secs(5);

/// The JSON-RPC code of the answer the bridge gives, in the agent's place, to a request the
/// server refused (Internal error).
const REFUSED: i64 = -32603;

impl TestClientBuilder {
    /// Connects over Streamable HTTP to an agent served at `url` (`http://HOST:PORT/acp`)
    /// with the bearer `token`, and sends `initialize`: the agent is driven over the network
    /// with ACP's transport RFD, exactly as a remote editor without WebSocket drives it.
    ///
    /// `initialize` is POSTed without a connection id and its `200` answer names the
    /// connection; every later message is POSTed with that `Acp-Connection-Id` (and
    /// `Acp-Session-Id` when it names a session); what the agent sends arrives on SSE streams,
    /// one for the connection and one per session, each opened as soon as its session id is
    /// known (before `session/load` and `session/resume` are POSTed, so nothing replayed is
    /// missed). Dropping or [closing](TestClient::close) the client sends DELETE. Before
    /// handing on the answer to `session/load` (which comes on the connection's stream), the
    /// client sends the agent one request of its own on the session's stream
    /// (`_acp_testing/barrier`, answered as an unknown method, never shown to the test), so
    /// that every replayed update is in first, as over a pipe.
    ///
    /// A refused `initialize` is an error naming the status (`401` for a wrong token). A
    /// later request the server refuses (a non-`2xx` status) is answered in the agent's place
    /// with a JSON-RPC error (code `-32603`) naming the status. HTTP/1.1, no cookies.
    ///
    /// ```no_run
    /// # async fn demo() -> acp_core::Result<()> {
    /// use acp_core::testing::TestClient;
    /// let client = TestClient::builder()
    ///     .http("http://127.0.0.1:8080/acp", "s3cret-token")
    ///     .await?;
    /// let session = client.new_session().await?;
    /// let turn = session.prompt("hello").await?;
    /// # let _ = turn; Ok(()) }
    /// ```
    pub async fn http(self, url: &str, token: &str) -> Result<TestClient> {
        let parsed = Url::parse(url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| Error::msg(format!("not an HTTP URL: {url}")))?;
        let bearer = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| Error::msg("the token is not a valid header value"))?;
        let (client, bridge) = tokio::io::duplex(1 << 16);
        let (from_client, to_client) = tokio::io::split(bridge);
        let link = Arc::new(Link {
            http: reqwest::Client::new(),
            url: parsed,
            bearer,
            connection: OnceLock::new(),
            streams: tokio::sync::Mutex::default(),
            asked: Mutex::default(),
            loads: Mutex::default(),
            barriers: Mutex::default(),
            next_barrier: AtomicU64::new(0),
            out: tokio::sync::Mutex::new(Some(to_client)),
            ended: CancellationToken::new(),
            refused: Mutex::default(),
        });
        tokio::spawn(outbound(link.clone(), from_client));
        let (read, write) = tokio::io::split(client);
        match self.attach(read, write).await {
            Ok(client) => Ok(client),
            Err(e) => Err(lock(&link.refused).take().map_or(e, Error::msg)),
        }
    }
}

/// One client's connection: how to reach the agent, and what the bridge remembers.
struct Link {
    http: reqwest::Client,
    url: Url,
    bearer: HeaderValue,
    /// `Acp-Connection-Id`, once `initialize` is answered.
    connection: OnceLock<HeaderValue>,
    /// The sessions whose stream is open (held while one is being opened).
    streams: tokio::sync::Mutex<HashSet<String>>,
    /// The session each request of the agent's awaiting the client's answer named, by id.
    asked: Mutex<HashMap<String, String>>,
    /// The client's `session/load` requests awaiting their answer: their session, by id.
    loads: Mutex<HashMap<String, String>>,
    /// The barriers awaiting their answer, by id.
    barriers: Mutex<HashMap<String, oneshot::Sender<()>>>,
    next_barrier: AtomicU64,
    /// Where the agent's lines go to the client (`None` once the bridge has ended).
    out: tokio::sync::Mutex<Option<WriteHalf<DuplexStream>>>,
    /// Cancelled when the bridge ends: the streams stop being read.
    ended: CancellationToken,
    /// Why `initialize` failed, for [`TestClientBuilder::http`]'s error.
    refused: Mutex<Option<String>>,
}

/// Reads the client's lines and POSTs each one, in order; once the client closes its side,
/// ends the connection (DELETE) and the bridge.
async fn outbound(link: Arc<Link>, read: ReadHalf<DuplexStream>) {
    let mut read = BufReader::new(read);
    let mut line = Vec::new();
    loop {
        line.clear();
        tokio::select! {
            read = read.read_until(b'\n', &mut line) => match read {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            },
            () = link.ended.cancelled() => break,
        }
        let body = line.trim_ascii();
        if !body.is_empty() {
            link.forward(body.to_vec()).await;
        }
    }
    if let Some(connection) = link.connection.get() {
        let delete = link
            .http
            .delete(link.url.clone())
            .header(AUTHORIZATION, link.bearer.clone())
            .header(CONNECTION_ID, connection.clone())
            .send();
        let _ = tokio::time::timeout(DELETE_WAIT, delete).await;
    }
    link.end().await;
}

impl Link {
    /// POSTs one message of the client's.
    async fn forward(self: &Arc<Self>, body: Vec<u8>) {
        let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id").filter(|_| method.is_some());
        if method == Some(methods::INITIALIZE) && self.connection.get().is_none() {
            return self.initialize(body, id).await;
        }
        let session = match method {
            Some(_) => message
                .pointer("/params/sessionId")
                .and_then(Value::as_str)
                .map(str::to_owned),
            // An answer to the agent: on the session its request came on.
            None => message
                .get("id")
                .and_then(|id| lock(&self.asked).remove(&id_key(id))),
        };
        if let (Some(methods::SESSION_LOAD | methods::SESSION_RESUME), Some(session)) =
            (method, &session)
        {
            self.open(session).await;
        }
        if let (Some(methods::SESSION_LOAD), Some(id), Some(session)) = (method, id, &session) {
            lock(&self.loads).insert(id_key(id), session.clone());
        }
        let refusal = match self.post(body, session.as_deref()).await {
            Ok(response) if response.status().is_success() => return,
            Ok(response) => format!(
                "the agent at {} refused the POST: {}",
                self.url,
                response.status()
            ),
            Err(e) => format!("POSTing to {}: {e}", self.url),
        };
        match (method, id) {
            (Some(method), Some(id)) => {
                lock(&self.loads).remove(&id_key(id));
                self.answer_error(id, &format!("`{method}`: {refusal}"))
                    .await;
            }
            _ => warn!("{refusal}"),
        }
    }

    /// POSTs `initialize` without a connection id: its answer names the connection, whose
    /// stream is opened before the answer is handed on.
    async fn initialize(self: &Arc<Self>, body: Vec<u8>, id: Option<&Value>) {
        let answer = async {
            let response = self
                .post(body, None)
                .await
                .map_err(|e| format!("POSTing `initialize` to {}: {e}", self.url))?;
            let status = response.status();
            if !status.is_success() {
                return Err(format!(
                    "the agent at {} refused `initialize`: {status}",
                    self.url
                ));
            }
            let connection = response
                .headers()
                .get(CONNECTION_ID)
                .cloned()
                .ok_or_else(|| "the answer to `initialize` has no Acp-Connection-Id".to_owned())?;
            let answer = first_message(response).await?;
            let _ = self.connection.set(connection);
            let stream = self.get(None).await?;
            tokio::spawn(inbound(self.clone(), stream, None));
            Ok::<_, String>(answer)
        };
        match answer.await {
            Ok(answer) => self.emit(&answer).await,
            Err(why) => {
                *lock(&self.refused) = Some(why.clone());
                match id {
                    Some(id) => self.answer_error(id, &why).await,
                    None => warn!("{why}"),
                }
            }
        }
    }

    /// Opens `session`'s stream unless it is open: what the agent sends on it from now on
    /// reaches the client. (Boxed: a stream's reader opens streams in turn.)
    fn open<'a>(self: &'a Arc<Self>, session: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let mut open = self.streams.lock().await;
            if open.contains(session) {
                return;
            }
            match self.get(Some(session)).await {
                Ok(stream) => {
                    open.insert(session.to_owned());
                    tokio::spawn(inbound(self.clone(), stream, Some(session.to_owned())));
                }
                Err(why) => warn!("{why}"),
            }
        })
    }

    /// POSTs `body` with the credentials, the connection (once there is one) and `session`.
    async fn post(&self, body: Vec<u8>, session: Option<&str>) -> reqwest::Result<Response> {
        let mut request = self
            .http
            .post(self.url.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .header(AUTHORIZATION, self.bearer.clone());
        if let Some(connection) = self.connection.get() {
            request = request.header(CONNECTION_ID, connection.clone());
        }
        if let Some(session) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
            request = request.header(SESSION_ID, session);
        }
        request.body(body).send().await
    }

    /// Opens the connection's SSE stream, or `session`'s.
    async fn get(&self, session: Option<&str>) -> std::result::Result<Response, String> {
        let mut request = self
            .http
            .get(self.url.clone())
            .header(ACCEPT, "text/event-stream")
            .header(AUTHORIZATION, self.bearer.clone());
        if let Some(connection) = self.connection.get() {
            request = request.header(CONNECTION_ID, connection.clone());
        }
        if let Some(session) = session {
            let value = HeaderValue::from_str(session)
                .map_err(|_| format!("the session id {session:?} is not a header value"))?;
            request = request.header(SESSION_ID, value);
        }
        let which = session.map_or("the connection's stream".to_owned(), |s| {
            format!("the stream of session {s}")
        });
        let response = request
            .send()
            .await
            .map_err(|e| format!("opening {which} at {}: {e}", self.url))?;
        if !response.status().is_success() {
            return Err(format!(
                "the agent at {} refused {which}: {}",
                self.url,
                response.status()
            ));
        }
        Ok(response)
    }

    /// Hands one frame of the agent's, from the stream of `stream` (`None`: the connection's),
    /// to the client, after what it needs first: the stream of a session it answers with,
    /// and the end of a `session/load`'s replay.
    async fn deliver(self: &Arc<Self>, data: String, stream: Option<&str>) {
        let message: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
        let method = message.get("method").and_then(Value::as_str);
        match (method, message.get("id")) {
            (None, Some(id)) => {
                let key = id_key(id);
                if let Some(barrier) = lock(&self.barriers).remove(&key) {
                    let _ = barrier.send(());
                    return;
                }
                let session = message.pointer("/result/sessionId").and_then(Value::as_str);
                if let Some(session) = session {
                    self.open(session).await;
                }
                let loaded = lock(&self.loads).remove(&key);
                if let Some(loaded) = loaded.filter(|s| Some(s.as_str()) != stream) {
                    self.barrier(&loaded).await;
                }
            }
            (Some(_), Some(id)) => {
                let session = message
                    .pointer("/params/sessionId")
                    .and_then(Value::as_str)
                    .or(stream);
                if let Some(session) = session {
                    lock(&self.asked).insert(id_key(id), session.to_owned());
                }
            }
            _ => {}
        }
        self.emit(&data).await;
    }

    /// Sends a request of the bridge's own on `session` and waits for its answer on the
    /// session's stream: everything the agent sent there before has then been handed on.
    async fn barrier(&self, session: &str) {
        let n = self.next_barrier.fetch_add(1, Ordering::Relaxed);
        let id = json!(format!("acp-testing-barrier-{n}"));
        let (tx, rx) = oneshot::channel();
        lock(&self.barriers).insert(id_key(&id), tx);
        let request = json!({"jsonrpc": "2.0", "id": id, "method": BARRIER});
        let posted = self.post(request.to_string().into_bytes(), Some(session));
        if posted.await.is_ok_and(|r| r.status().is_success()) {
            let _ = tokio::time::timeout(BARRIER_WAIT, rx).await;
        }
        lock(&self.barriers).remove(&id_key(&id));
    }

    /// Answers the client's request `id` with an error, in the agent's place.
    async fn answer_error(&self, id: &Value, message: &str) {
        let error = json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": REFUSED, "message": message}});
        self.emit(&error.to_string()).await;
    }

    /// Writes one line to the client.
    async fn emit(&self, message: &str) {
        let line = if message.contains('\n') {
            // One JSON-RPC message is one line on the wire.
            serde_json::from_str::<Value>(message)
                .map_or_else(|_| message.replace('\n', " "), |value| value.to_string())
        } else {
            message.to_owned()
        };
        let mut out = self.out.lock().await;
        if let Some(write) = out.as_mut() {
            let written = write.write_all(format!("{line}\n").as_bytes()).await;
            if written.is_err() {
                *out = None;
            }
        }
    }

    /// Ends the bridge: the client reads the end of the agent's output; the streams close.
    async fn end(&self) {
        self.ended.cancel();
        if let Some(mut write) = self.out.lock().await.take() {
            let _ = write.shutdown().await;
        }
    }
}

/// Reads one SSE stream (the connection's, or `session`'s) and hands its frames on, in
/// order. The end of the connection's stream is the end of the connection.
async fn inbound(link: Arc<Link>, response: Response, session: Option<String>) {
    let mut events = SseStream::from_bytes_stream(response.bytes_stream());
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            () = link.ended.cancelled() => break,
        };
        match event {
            Some(Ok(event)) => {
                if let Some(data) = event.data.filter(|d| !d.trim().is_empty()) {
                    link.deliver(data, session.as_deref()).await;
                }
            }
            Some(Err(e)) => {
                warn!("reading the agent's SSE stream: {e}");
                break;
            }
            None => break,
        }
    }
    if session.is_none() {
        link.end().await;
    }
}

/// The JSON-RPC message a `200` answer carries: its JSON body, or its first SSE event.
async fn first_message(response: Response) -> std::result::Result<String, String> {
    let sse = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream"));
    let text = if sse {
        let mut events = SseStream::from_bytes_stream(response.bytes_stream());
        loop {
            match events.next().await {
                Some(Ok(event)) => match event.data {
                    Some(data) if !data.trim().is_empty() => break data,
                    _ => {}
                },
                Some(Err(e)) => return Err(format!("reading the answer to `initialize`: {e}")),
                None => return Err("the answer to `initialize` is an empty stream".to_owned()),
            }
        }
    } else {
        let body = response.text().await;
        body.map_err(|e| format!("reading the answer to `initialize`: {e}"))?
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(answer) if answer.is_object() => Ok(text.trim().to_owned()),
        _ => Err(format!(
            "the answer to `initialize` is not JSON-RPC: {text}"
        )),
    }
}

/// A JSON-RPC id as a map key (as the server keys them).
fn id_key(id: &Value) -> String {
    match id {
        Value::String(s) => format!("s:{s}"),
        other => format!("v:{other}"),
    }
}
