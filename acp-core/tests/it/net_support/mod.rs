//! A small agent served on a loopback port, and real clients for it: WebSocket
//! (tokio-tungstenite) and Streamable HTTP (reqwest, with an SSE reader).

#![allow(dead_code)]

use std::time::Duration;

use acp_core::net::HttpConfig;
use acp_core::net::axum::body::Bytes;
use acp_core::net::axum::http;
use acp_core::schema::StopReason;
use acp_core::{Agent, Prompt, Result, Server, Session};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

pub const TOKEN: &str = "test-token-0123456789abcdef";

/// Echoes the prompt's text as one message chunk; a prompt of "wait" waits to be cancelled.
pub struct Echo;

impl Agent for Echo {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> Result<StopReason> {
        let text = prompt.text();
        if text == "wait" {
            cx.cancelled().await;
            return Ok(StopReason::Cancelled);
        }
        cx.message(format!("echo: {text}")).await?;
        Ok(StopReason::EndTurn)
    }
}

/// Serves `Echo` (no store) with `config` on a free loopback port; its `/acp` URL.
/// The network's mechanics, not what it grants: every directory is granted (`/`).
pub async fn start(config: HttpConfig) -> String {
    let config = config.roots(["/"]);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(Server::new(Echo).no_store().serve_http_on(listener, config));
    format!("http://{addr}/acp")
}

pub fn ws_url(url: &str) -> String {
    url.replacen("http://", "ws://", 1)
}

pub type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens a WebSocket with these extra headers: the socket, or the refusal's status and
/// headers.
pub async fn ws_connect(
    url: &str,
    headers: &[(&str, &str)],
) -> std::result::Result<(Ws, http::HeaderMap), (u16, http::HeaderMap)> {
    let mut request = ws_url(url).into_client_request().unwrap();
    for (k, v) in headers {
        request.headers_mut().insert(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    match tokio_tungstenite::connect_async(request).await {
        Ok((ws, response)) => Ok((ws, response.headers().clone())),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            Err((response.status().as_u16(), response.headers().clone()))
        }
        Err(e) => panic!("unexpected WebSocket error: {e}"),
    }
}

pub fn bearer() -> String {
    format!("Bearer {TOKEN}")
}

/// A WebSocket ACP client: one JSON-RPC message per text frame.
pub struct WsClient {
    pub ws: Ws,
    next_id: u64,
}

impl WsClient {
    pub async fn connect(url: &str) -> WsClient {
        WsClient::connect_with(url, &[("authorization", &bearer())]).await
    }

    /// A client sending these headers with its upgrade (its credentials).
    pub async fn connect_with(url: &str, headers: &[(&str, &str)]) -> WsClient {
        let (ws, _) = ws_connect(url, headers)
            .await
            .expect("a good client gets in");
        WsClient { ws, next_id: 0 }
    }

    pub async fn send(&mut self, message: Value) {
        self.ws
            .send(Message::Text(message.to_string().into()))
            .await
            .unwrap();
    }

    /// The next message from the agent (within 10 s).
    pub async fn recv(&mut self) -> Value {
        loop {
            let message = tokio::time::timeout(Duration::from_secs(10), self.ws.next())
                .await
                .expect("the agent answers in time")
                .expect("the socket is open")
                .unwrap();
            if let Message::Text(text) = message {
                return serde_json::from_str(text.as_str()).unwrap();
            }
        }
    }

    /// Sends a request and returns its answer, collecting what came before it.
    pub async fn request(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let mut before = Vec::new();
        loop {
            let message = self.recv().await;
            if message["id"] == json!(id) && message.get("method").is_none() {
                return (message, before);
            }
            before.push(message);
        }
    }

    /// `initialize` (v1) and `session/new`: the session id.
    pub async fn open_session(&mut self) -> String {
        let (init, _) = self
            .request("initialize", json!({"protocolVersion": 1}))
            .await;
        assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
        let (new, _) = self
            .request("session/new", json!({"cwd": "/tmp", "mcpServers": []}))
            .await;
        new["result"]["sessionId"].as_str().unwrap().to_owned()
    }

    /// A whole turn: the answer and the updates before it.
    pub async fn prompt(&mut self, session: &str, text: &str) -> (Value, Vec<Value>) {
        self.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
    }
}

/// Proves the server still serves a good client: a whole turn over WebSocket.
pub async fn still_serves(url: &str) {
    let mut client = WsClient::connect(url).await;
    let session = client.open_session().await;
    let (answer, updates) = client.prompt(&session, "still there?").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(
        updates[0]["params"]["update"]["content"]["text"], "echo: still there?",
        "{updates:?}"
    );
}

/// A Streamable HTTP request builder with the token.
pub fn http() -> reqwest::Client {
    reqwest::Client::new()
}

/// POSTs a JSON-RPC message with these headers (the token among them if wanted).
pub async fn post(url: &str, headers: &[(&str, &str)], body: Value) -> reqwest::Response {
    let mut request = http()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string());
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    request.send().await.unwrap()
}

pub fn initialize(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {"protocolVersion": 1}})
}

/// An SSE stream's messages.
pub struct Sse {
    body: std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<Bytes>> + Send>>,
    buffer: String,
}

impl Sse {
    pub async fn open(url: &str, connection: &str, session: Option<&str>) -> Sse {
        Sse::resume(url, connection, session, None).await
    }

    /// Opens the stream, resuming after event `last_event_id` when given.
    pub async fn resume(
        url: &str,
        connection: &str,
        session: Option<&str>,
        last_event_id: Option<&str>,
    ) -> Sse {
        Sse::from_response(Sse::get(url, connection, session, last_event_id).await)
    }

    /// A stream opened with these headers (its credentials).
    pub async fn open_with(
        url: &str,
        connection: &str,
        session: Option<&str>,
        headers: &[(&str, &str)],
    ) -> Sse {
        Sse::from_response(Sse::get_with(url, connection, session, None, headers).await)
    }

    fn from_response(response: reqwest::Response) -> Sse {
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Sse {
            body: Box::pin(response.bytes_stream()),
            buffer: String::new(),
        }
    }

    /// The GET that opens the stream with the token, as it is answered.
    pub async fn get(
        url: &str,
        connection: &str,
        session: Option<&str>,
        last_event_id: Option<&str>,
    ) -> reqwest::Response {
        let auth = bearer();
        Sse::get_with(
            url,
            connection,
            session,
            last_event_id,
            &[("authorization", &auth)],
        )
        .await
    }

    /// The GET that opens the stream with these headers, as it is answered.
    pub async fn get_with(
        url: &str,
        connection: &str,
        session: Option<&str>,
        last_event_id: Option<&str>,
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut request = http()
            .get(url)
            .header("accept", "text/event-stream")
            .header("acp-connection-id", connection);
        if let Some(session) = session {
            request = request.header("acp-session-id", session);
        }
        if let Some(last) = last_event_id {
            request = request.header("last-event-id", last);
        }
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        request.send().await.unwrap()
    }

    /// The next message (within 10 s).
    pub async fn recv(&mut self) -> Value {
        self.recv_event().await.1
    }

    /// The next message (within 10 s), with its event id.
    pub async fn recv_event(&mut self) -> (Option<String>, Value) {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                let field = |name: &str| -> String {
                    event
                        .lines()
                        .filter_map(|l| l.strip_prefix(name))
                        .map(str::trim_start)
                        .collect()
                };
                let (id, data) = (field("id:"), field("data:"));
                if !data.is_empty() {
                    let id = (!id.is_empty()).then_some(id);
                    return (id, serde_json::from_str(&data).unwrap());
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(10), self.body.next())
                .await
                .expect("the agent sends in time")
                .expect("the stream is open")
                .unwrap();
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

/// A Streamable HTTP connection: its id, from `initialize`.
pub async fn http_connect(url: &str) -> String {
    let response = post(url, &[("authorization", &bearer())], initialize(0)).await;
    assert_eq!(response.status(), 200);
    let id = response.headers()["acp-connection-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["result"]["protocolVersion"], 1, "{body}");
    id
}

/// A Streamable HTTP connection with one new session, its connection and session streams
/// open.
pub struct HttpSession {
    pub url: String,
    pub connection: String,
    pub session: String,
    pub stream: Sse,
    pub session_stream: Sse,
}

impl HttpSession {
    pub async fn open(url: &str) -> HttpSession {
        let connection = http_connect(url).await;
        let mut stream = Sse::open(url, &connection, None).await;
        let auth = bearer();
        let headers = [
            ("authorization", auth.as_str()),
            ("acp-connection-id", connection.as_str()),
        ];
        let new = json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
            "params": {"cwd": "/tmp", "mcpServers": []}});
        assert_eq!(post(url, &headers, new).await.status(), 202);
        let session = stream.recv().await["result"]["sessionId"]
            .as_str()
            .unwrap()
            .to_owned();
        let session_stream = Sse::open(url, &connection, Some(&session)).await;
        HttpSession {
            url: url.to_owned(),
            connection,
            session,
            stream,
            session_stream,
        }
    }

    /// POSTs `message` on the connection, in the session (its `Acp-Session-Id`).
    pub async fn post(&self, message: Value) -> reqwest::Response {
        let auth = bearer();
        let headers = [
            ("authorization", auth.as_str()),
            ("acp-connection-id", self.connection.as_str()),
            ("acp-session-id", self.session.as_str()),
        ];
        post(&self.url, &headers, message).await
    }

    /// Starts a turn (request id 3) with prompt `text`.
    pub async fn prompt(&self, text: &str) {
        let prompt = json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
            "params": {"sessionId": self.session, "prompt": [{"type": "text", "text": text}]}});
        assert_eq!(self.post(prompt).await.status(), 202);
    }
}
