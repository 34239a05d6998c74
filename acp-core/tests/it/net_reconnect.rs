//! A dropped connection is not a lost turn: over the network, a turn keeps running when its
//! client goes away, and the client that reconnects and reopens the session gets all of it —
//! over WebSocket (the socket dropped) and over Streamable HTTP (the connection deleted, or
//! one stream dropped and resumed with `Last-Event-ID`).

use crate::net_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use acp_core::net::HttpConfig;
use acp_core::schema::{SessionId, StopReason};
use acp_core::store::{MemoryStore, SessionStore};
use acp_core::testing::TestClient;
use acp_core::{Agent, Prompt, Result, Server, Session};
use net_support::*;
use serde_json::json;

/// Chunks each turn streams, one every `PAUSE`.
const CHUNKS: usize = 30;
const PAUSE: Duration = Duration::from_millis(20);

/// Streams `chunk 0` … `chunk 29`, pausing between them; counts the turns that ran to their
/// end and those cancelled.
#[derive(Clone, Default)]
struct Slow {
    finished: Arc<AtomicUsize>,
    cancelled: Arc<AtomicUsize>,
}

impl Agent for Slow {
    async fn prompt(&self, cx: &Session, _: Prompt) -> Result<StopReason> {
        for i in 0..CHUNKS {
            let sent = async {
                cx.message(format!("chunk {i};")).await?;
                tokio::time::sleep(PAUSE).await;
                Ok::<_, acp_core::Error>(())
            };
            tokio::select! {
                sent = sent => sent?,
                () = cx.cancelled() => {
                    self.cancelled.fetch_add(1, Ordering::SeqCst);
                    return Ok(StopReason::Cancelled);
                }
            }
        }
        self.finished.fetch_add(1, Ordering::SeqCst);
        Ok(StopReason::EndTurn)
    }
}

/// Serves `agent` on a free loopback port with a store of its own; its `/acp` URL.
async fn serve(agent: Slow, detach: Option<Duration>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/acp", listener.local_addr().unwrap());
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let mut server = Server::new(agent).shared_store(store);
    if let Some(limit) = detach {
        server = server.detached_turns(limit);
    }
    tokio::spawn(server.serve_http_on(listener, HttpConfig::bearer(TOKEN).roots(["/"])));
    url
}

/// Opens a session over a raw WebSocket, starts a turn, reads its first chunk, and drops
/// the socket without closing it; the session's id.
async fn leave_mid_turn_over_websocket(url: &str) -> String {
    let mut client = WsClient::connect(url).await;
    let session = client.open_session().await;
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 99, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}}),
        )
        .await;
    let first = client.recv().await;
    assert_eq!(
        first["params"]["update"]["content"]["text"], "chunk 0;",
        "{first}"
    );
    drop(client);
    session
}

fn every_chunk() -> String {
    (0..CHUNKS).map(|i| format!("chunk {i};")).collect()
}

#[tokio::test]
async fn a_turn_goes_on_when_its_websocket_drops_and_the_client_that_comes_back_gets_all_of_it() {
    let agent = Slow::default();
    let url = serve(agent.clone(), None).await;
    let session = leave_mid_turn_over_websocket(&url).await;
    // At once, while the turn still runs on the departed connection.
    let client = TestClient::builder().websocket(&url, TOKEN).await.unwrap();
    let loaded = client
        .load_session(&SessionId::new(session.as_str()))
        .await
        .unwrap();
    assert_eq!(
        agent.finished.load(Ordering::SeqCst),
        1,
        "the turn ran to its end"
    );
    assert_eq!(agent.cancelled.load(Ordering::SeqCst), 0);
    assert_eq!(
        loaded.text(),
        every_chunk(),
        "the reload waited for the turn, and replays every chunk in order"
    );
    // The session goes on, on the new connection.
    let turn = loaded.session.prompt("again").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert_eq!(turn.text(), every_chunk());
}

#[tokio::test]
async fn with_no_time_to_run_on_the_turn_is_cancelled_when_its_client_goes() {
    let agent = Slow::default();
    let url = serve(agent.clone(), Some(Duration::ZERO)).await;
    let session = leave_mid_turn_over_websocket(&url).await;
    let client = TestClient::builder().websocket(&url, TOKEN).await.unwrap();
    let loaded = client
        .load_session(&SessionId::new(session.as_str()))
        .await
        .unwrap();
    assert_eq!(agent.finished.load(Ordering::SeqCst), 0);
    assert_eq!(agent.cancelled.load(Ordering::SeqCst), 1);
    let text = loaded.text();
    assert!(
        text.starts_with("chunk 0;") && text.len() < every_chunk().len(),
        "{text}"
    );
}

#[tokio::test]
async fn a_turn_goes_on_when_its_streamable_http_connection_is_deleted() {
    let agent = Slow::default();
    let url = serve(agent.clone(), None).await;
    let mut open = HttpSession::open(&url).await;
    let session = open.session.clone();
    open.prompt("go").await;
    let first = open.session_stream.recv().await;
    assert_eq!(first["params"]["update"]["content"]["text"], "chunk 0;");
    let deleted = http()
        .delete(&url)
        .header("authorization", bearer())
        .header("acp-connection-id", &open.connection)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 202);
    drop(open);
    let client = TestClient::builder().websocket(&url, TOKEN).await.unwrap();
    let loaded = client
        .load_session(&SessionId::new(session.as_str()))
        .await
        .unwrap();
    assert_eq!(agent.finished.load(Ordering::SeqCst), 1);
    assert_eq!(loaded.text(), every_chunk());
}

#[tokio::test]
async fn a_session_stream_dropped_mid_turn_resumes_after_its_last_event_id_with_nothing_missing() {
    let url = serve(Slow::default(), None).await;
    let open = HttpSession::open(&url).await;
    open.prompt("go").await;
    let HttpSession {
        connection,
        session,
        mut session_stream,
        ..
    } = open;
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(session_stream.recv_event().await);
    }
    let ids: Vec<u64> = seen
        .iter()
        .map(|(id, _)| id.as_deref().unwrap().parse().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
    // The stream drops; the turn goes on meanwhile.
    drop(session_stream);
    tokio::time::sleep(PAUSE * 5).await;
    // A cursor the stream never sent, or a bogus one: 409, and the stream still resumes.
    for bogus in ["999999", "not-a-cursor"] {
        let refused = Sse::get(&url, &connection, Some(&session), Some(bogus)).await;
        assert_eq!(refused.status(), 409, "{bogus}");
    }
    // Resumed after the second event: the third comes again, the same, then everything else.
    let last = seen[1].0.clone().unwrap();
    let mut resumed = Sse::resume(&url, &connection, Some(&session), Some(&last)).await;
    let again = resumed.recv_event().await;
    assert_eq!(again, seen[2], "the same event, with its id");
    let mut text: String = seen[..2]
        .iter()
        .map(|(_, m)| m["params"]["update"]["content"]["text"].as_str().unwrap())
        .collect();
    let mut next_id = ids[1] + 1;
    loop {
        let (id, message) = if next_id == ids[2] {
            again.clone()
        } else {
            resumed.recv_event().await
        };
        assert_eq!(id, Some(next_id.to_string()), "no event skipped: {message}");
        next_id += 1;
        if message["id"] == 3 {
            assert_eq!(message["result"]["stopReason"], "end_turn");
            break;
        }
        text.push_str(
            message["params"]["update"]["content"]["text"]
                .as_str()
                .unwrap(),
        );
    }
    assert_eq!(text, every_chunk());
}

#[tokio::test]
async fn a_session_stream_is_404_for_a_session_the_agent_does_not_have() {
    let url = serve(Slow::default(), None).await;
    // A session recorded on an earlier connection.
    let mut earlier = WsClient::connect(&url).await;
    let stored = earlier.open_session().await;
    drop(earlier);
    let connection = http_connect(&url).await;
    let bogus = "sess_00000000000000000000000000000000";
    let refused = Sse::get(&url, &connection, Some(bogus), None).await;
    assert_eq!(refused.status(), 404);
    // The stream of a stored session opens before the client loads it (as the official
    // TypeScript client does), and the load's replay and answer come.
    let mut session_stream = Sse::open(&url, &connection, Some(&stored)).await;
    let mut stream = Sse::open(&url, &connection, None).await;
    let auth = bearer();
    let in_session = [
        ("authorization", auth.as_str()),
        ("acp-connection-id", connection.as_str()),
        ("acp-session-id", stored.as_str()),
    ];
    let load = json!({"jsonrpc": "2.0", "id": 5, "method": "session/load",
        "params": {"sessionId": stored, "cwd": "/tmp", "mcpServers": []}});
    assert_eq!(post(&url, &in_session, load).await.status(), 202);
    assert_eq!(
        stream.recv().await["id"],
        5,
        "answered on the connection stream"
    );
    let prompt = json!({"jsonrpc": "2.0", "id": 6, "method": "session/prompt",
        "params": {"sessionId": stored, "prompt": [{"type": "text", "text": "go"}]}});
    assert_eq!(post(&url, &in_session, prompt).await.status(), 202);
    let first = session_stream.recv().await;
    assert_eq!(first["params"]["update"]["content"]["text"], "chunk 0;");
}

#[tokio::test]
async fn the_client_that_comes_back_can_cancel_the_turn_it_left_running() {
    let agent = Slow::default();
    let url = serve(agent.clone(), None).await;
    let session = leave_mid_turn_over_websocket(&url).await;
    let mut back = WsClient::connect(&url).await;
    back.request("initialize", json!({"protocolVersion": 1}))
        .await;
    back.send(json!({"jsonrpc": "2.0", "method": "session/cancel",
        "params": {"sessionId": session}}))
        .await;
    let (loaded, replayed) = back
        .request(
            "session/load",
            json!({"sessionId": session, "cwd": "/tmp", "mcpServers": []}),
        )
        .await;
    assert!(loaded["result"].is_object(), "{loaded}");
    assert_eq!(agent.cancelled.load(Ordering::SeqCst), 1, "cancelled");
    assert_eq!(agent.finished.load(Ordering::SeqCst), 0);
    let chunks = replayed
        .iter()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .count();
    assert!(chunks < CHUNKS, "the turn stopped early: {chunks} chunks");
}
