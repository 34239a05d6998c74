//! `serve`'s own tests: a failing input, and the routes the runtime hands a message sink.

use std::pin::Pin;
use std::task::{Context, Poll};

use super::*;

/// Input that fails at once, as a reset connection does.
struct Reset;

impl AsyncRead for Reset {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        _: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Poll::Ready(Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset by peer",
        )))
    }
}

struct Idle;

impl Agent for Idle {
    async fn prompt(
        &self,
        _: &crate::Session,
        _: crate::Prompt,
    ) -> Result<crate::schema::StopReason> {
        Ok(crate::schema::StopReason::EndTurn)
    }
}

/// Streams one chunk, then asks for a file, then ends its turn.
struct Chatty;

impl Agent for Chatty {
    async fn prompt(
        &self,
        cx: &crate::Session,
        _: crate::Prompt,
    ) -> Result<crate::schema::StopReason> {
        cx.message("hi").await?;
        let _ = cx.fs().read_text_file("/x").await;
        Ok(crate::schema::StopReason::EndTurn)
    }
}

#[tokio::test]
async fn every_message_handed_to_a_message_sink_carries_what_the_runtime_knows_of_it() {
    use crate::schema::{RequestId, SessionId};
    use crate::transport::Route;
    use crate::transport::messages::Messages;

    let shared = Server::new(Chatty).no_store().into_shared();
    let (input, messages) = Messages::channel(1 << 20);
    let (sink, mut output) = Sink::messages();
    let serving = tokio::spawn(async move {
        shared
            .serve_on(messages, sink, None, Grant::host())
            .await
            .unwrap();
    });
    let send = |message: serde_json::Value| {
        let input = input.clone();
        async move { input.send(message.to_string().into_bytes()).await.unwrap() }
    };
    let caps = serde_json::json!({"fs": {"readTextFile": true}});
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": caps}}),
    )
    .await;
    let answer = output.next().await.unwrap();
    assert_eq!(
        answer.route,
        Route::Answer(RequestId::Number(1)),
        "{answer:?}"
    );
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": "new", "method": "session/new",
        "params": {"cwd": "/", "mcpServers": []}}),
    )
    .await;
    let answer = output.next().await.unwrap();
    assert_eq!(answer.route, Route::Answer(RequestId::Str("new".into())));
    let value: serde_json::Value = serde_json::from_str(&answer.text).unwrap();
    let session = SessionId::new(value["result"]["sessionId"].as_str().unwrap().to_owned());
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session.0, "prompt": [{"type": "text", "text": "x"}]}}),
    )
    .await;
    let update = output.next().await.unwrap();
    assert_eq!(update.route, Route::Session(session.clone()), "{update:?}");
    assert!(!update.text.ends_with('\n'));
    let read = output.next().await.unwrap();
    assert_eq!(read.route, Route::Session(session.clone()), "{read:?}");
    let value: serde_json::Value = serde_json::from_str(&read.text).unwrap();
    assert_eq!(value["method"], crate::protocol::methods::FS_READ_TEXT_FILE);
    send(serde_json::json!({"jsonrpc": "2.0", "id": value["id"],
        "result": {"content": ""}}))
    .await;
    let answer = output.next().await.unwrap();
    assert_eq!(
        answer.route,
        Route::Answer(RequestId::Number(3)),
        "{answer:?}"
    );
    drop(input);
    serving.await.unwrap();
}

#[tokio::test]
async fn the_answer_to_session_load_is_the_connections_its_replay_the_sessions() {
    use crate::schema::{RequestId, SessionId};
    use crate::transport::Route;
    use crate::transport::messages::Messages;

    let store: Arc<dyn SessionStore> = Arc::new(crate::store::MemoryStore::new());
    let connect = |store: Arc<dyn SessionStore>| {
        let shared = Server::new(Chatty).shared_store(store).into_shared();
        let (input, messages) = Messages::channel(1 << 20);
        let (sink, output) = Sink::messages();
        let serving = tokio::spawn(async move {
            let _ = shared.serve_on(messages, sink, None, Grant::host()).await;
        });
        (input, output, serving)
    };
    let send = |input: &crate::transport::messages::Input, message: serde_json::Value| {
        let input = input.clone();
        async move { input.send(message.to_string().into_bytes()).await.unwrap() }
    };
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}});
    // A session with one turn, on a first connection.
    let (input, mut output, serving) = connect(store.clone());
    send(&input, init.clone()).await;
    output.next().await.unwrap();
    send(
        &input,
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
        "params": {"cwd": "/", "mcpServers": []}}),
    )
    .await;
    let answer = output.next().await.unwrap();
    let value: serde_json::Value = serde_json::from_str(&answer.text).unwrap();
    let session = SessionId::new(value["result"]["sessionId"].as_str().unwrap().to_owned());
    send(
        &input,
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": {"sessionId": session.0, "prompt": [{"type": "text", "text": "x"}]}}),
    )
    .await;
    while output.next().await.unwrap().route != Route::Answer(RequestId::Number(2)) {}
    drop(input);
    serving.await.unwrap();
    // Loaded on a second: the replay is the session's, the answer the connection's.
    let (input, mut output, serving) = connect(store);
    send(&input, init).await;
    output.next().await.unwrap();
    send(
        &input,
        serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "session/load",
        "params": {"sessionId": session.0, "cwd": "/", "mcpServers": []}}),
    )
    .await;
    let mut replayed = 0;
    let answer = loop {
        let message = output.next().await.unwrap();
        match message.route {
            Route::Session(ref of) if *of == session => replayed += 1,
            _ => break message,
        }
    };
    assert_eq!(
        answer.route,
        Route::ConnectionAnswer(RequestId::Number(7)),
        "{answer:?}"
    );
    assert!(replayed >= 2, "the prompt and the chunk: {replayed}");
    drop(input);
    serving.await.unwrap();
}

#[tokio::test]
async fn a_failing_input_is_an_io_error_of_its_kind_saying_it_was_the_clients_input() {
    let e = serve(Idle, Reset, tokio::io::sink()).await.unwrap_err();
    assert!(
        matches!(&e, Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionReset),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "I/O error (ConnectionReset): reading the client's input: reset by peer"
    );
}
