//! The scripted client over WebSocket: one text message per JSON-RPC line, both ways.

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

use super::super::{TestClient, TestClientBuilder};
use crate::{Error, Result};

impl TestClientBuilder {
    /// Connects over WebSocket to an agent served at `url` (`ws://HOST:PORT/acp`, or the
    /// `http://` URL of the same endpoint) with the bearer `token`, and sends `initialize`:
    /// the agent is driven over the network, exactly as a remote editor drives it. A refused
    /// connection is an error naming the status (`401` for a wrong token). No TLS (`wss://`).
    ///
    /// ```no_run
    /// # async fn demo() -> acp_core::Result<()> {
    /// use acp_core::testing::TestClient;
    /// let client = TestClient::builder()
    ///     .websocket("ws://127.0.0.1:8080/acp", "s3cret-token")
    ///     .await?;
    /// let session = client.new_session().await?;
    /// let turn = session.prompt("hello").await?;
    /// # let _ = turn; Ok(()) }
    /// ```
    pub async fn websocket(self, url: &str, token: &str) -> Result<TestClient> {
        let url = url.replacen("http://", "ws://", 1);
        let mut request = url
            .as_str()
            .into_client_request()
            .map_err(|e| Error::msg(format!("not a WebSocket URL: {url}: {e}")))?;
        let bearer = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| Error::msg("the token is not a valid header value"))?;
        request.headers_mut().insert("authorization", bearer);
        let (socket, _) = tokio_tungstenite::connect_async(request)
            .await
            .map_err(|e| match e {
                tokio_tungstenite::tungstenite::Error::Http(response) => Error::msg(format!(
                    "the agent at {url} refused the WebSocket: {}",
                    response.status()
                )),
                e => Error::msg(format!("connecting to {url}: {e}")),
            })?;
        let (client, bridge) = tokio::io::duplex(1 << 16);
        tokio::spawn(pump(socket, bridge));
        let (read, write) = tokio::io::split(client);
        self.attach(read, write).await
    }
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Lines the client writes go out as text messages; text messages in come back as lines.
/// Ends (closing both) when either side does.
async fn pump(socket: Socket, bridge: DuplexStream) {
    let (mut to_agent, mut from_agent) = socket.split();
    let (read, mut write) = tokio::io::split(bridge);
    let outbound = async {
        let mut lines = BufReader::new(read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if to_agent.send(Message::Text(line.into())).await.is_err() {
                return;
            }
        }
        let _ = to_agent.send(Message::Close(None)).await;
    };
    let inbound = async {
        while let Some(Ok(message)) = from_agent.next().await {
            match message {
                Message::Text(text) => {
                    let written = async {
                        write.write_all(text.as_bytes()).await?;
                        write.write_all(b"\n").await
                    };
                    if written.await.is_err() {
                        return;
                    }
                }
                Message::Close(_) => return,
                _ => {}
            }
        }
    };
    tokio::select! {
        () = outbound => {}
        () = inbound => {}
    }
}
