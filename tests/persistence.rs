//! What survives the agent's process: a built agent killed with SIGKILL in the middle of a
//! stream replays, after a restart on the same store, everything its client had received; the
//! model example keeps its conversation (a `Persist` value) across a kill and restart, a
//! cancelled turn's part of it included.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use acp::schema::SessionId;
use acp::store::{MemoryStore, SessionStore};
use acp::testing::{MemoryFs, TestClient};
use serde_json::{Value, json};

#[path = "../examples/model.rs"]
#[allow(dead_code)]
mod model;

/// Guards a test against hangs; generous, never a performance assertion.
async fn within<T>(fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), fut)
        .await
        .expect("the test hung")
}

/// A client of the agent `binary`, its sessions stored under `data`.
async fn spawn(binary: &std::path::Path, data: &std::path::Path) -> TestClient {
    let mut command = Command::new(binary);
    command.env("ACP_DATA_DIR", data);
    TestClient::builder()
        .fs(MemoryFs::new().with("/workspace/notes.txt", "milk"))
        .spawn(command)
        .await
        .unwrap()
}

/// The built echo agent streams 200,000 chunks; the client reads a few thousand, then the
/// agent gets SIGKILL, and the client reads what is left in the pipe to its end. Restarted on
/// the same store, the agent replays the session: the user's message first, then every
/// update the client received, in order — nothing it saw is missing. (The store may hold a
/// little more than was written when the kill came: the batch committed but not yet written,
/// which continues the same stream.)
#[tokio::test]
async fn echo_killed_mid_stream_replays_everything_its_client_received() {
    let data = tempfile::tempdir().unwrap();
    let echo = support::echo_binary();
    let mut agent = Command::new(&echo)
        .env("ACP_DATA_DIR", data.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = agent.stdin.take().unwrap();
    let mut output = BufReader::new(agent.stdout.take().unwrap());
    let mut send = |message: Value| {
        writeln!(input, "{message}").unwrap();
        input.flush().unwrap();
    };
    // A frame cut short by the kill (no newline) is not one the client received.
    let mut read = || -> Option<Value> {
        let mut line = String::new();
        output.read_line(&mut line).unwrap();
        line.ends_with('\n')
            .then(|| serde_json::from_str(&line).unwrap())
    };
    send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
    assert!(read().unwrap()["result"].is_object());
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
        "params": {"cwd": "/workspace", "mcpServers": []}}));
    let id = read().unwrap()["result"]["sessionId"].clone();
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {
        "sessionId": id, "prompt": [{"type": "text", "text": "stream 200000"}]}}),
    );

    let mut seen = Vec::new();
    while seen.len() < 3000 {
        let frame = read().expect("the stream ended early");
        assert_eq!(frame["method"], "session/update", "{frame}");
        seen.push(frame["params"]["update"].clone());
    }
    agent.kill().unwrap(); // SIGKILL
    while let Some(frame) = read() {
        assert_eq!(frame["method"], "session/update", "{frame}");
        seen.push(frame["params"]["update"].clone());
    }
    agent.wait().unwrap();
    assert!(seen.len() < 200_000, "the kill came after the whole stream");

    within(async {
        let client = spawn(&echo, data.path()).await;
        let id: SessionId = serde_json::from_value(id).unwrap();
        let loaded = client.load_session(&id).await.unwrap();
        let replayed: Vec<Value> = loaded.replayed.iter().map(|u| json!(u)).collect();
        assert_eq!(replayed[0]["sessionUpdate"], "user_message_chunk");
        assert_eq!(replayed[0]["content"]["text"], "stream 200000");
        let agent_said = &replayed[1..];
        assert!(
            agent_said.len() >= seen.len(),
            "{} updates replayed, {} received",
            agent_said.len(),
            seen.len()
        );
        assert_eq!(agent_said[..seen.len()], seen[..], "the replay differs");
        // Anything more goes on with the same stream, chunk after chunk.
        for (i, update) in agent_said.iter().enumerate() {
            let text = update["content"]["text"].as_str().unwrap_or_default();
            assert!(text.contains(&format!("{i}")), "chunk {i}: {update}");
        }
        client.close().await.unwrap();
    })
    .await;
}

/// The built model example: two turns, SIGKILL (the client dropped), a new process on the
/// same store loads the session, and the model still has the conversation.
#[tokio::test]
async fn the_model_keeps_its_conversation_across_a_kill_and_restart() {
    let data = tempfile::tempdir().unwrap();
    let model = support::example_binary("model");
    let id = within(async {
        let client = spawn(&model, data.path()).await;
        let session = client.new_session().await.unwrap();
        assert_eq!(
            session.prompt("hello").await.unwrap().text(),
            "You said: hello"
        );
        let turn = session.prompt("read notes.txt").await.unwrap();
        assert_eq!(turn.text(), "Done. The tool returned:\nmilk");
        session.id().clone()
        // Dropped: the agent is killed (SIGKILL), not closed.
    })
    .await;

    within(async {
        let client = spawn(&model, data.path()).await;
        let loaded = client.load_session(&id).await.unwrap();
        let turn = loaded.session.prompt("history").await.unwrap();
        assert_eq!(turn.text(), "You said before: hello | read notes.txt");
        client.close().await.unwrap();
    })
    .await;
}

/// A model whose `wait` never answers (until the turn is cancelled); the rest is scripted.
struct Waiting;

impl model::Model for Waiting {
    async fn complete(
        &self,
        history: &[model::Message],
        tools: &[acp::ToolDef],
    ) -> acp::Result<model::Reply> {
        if history.last() == Some(&model::Message::User("wait".into())) {
            std::future::pending::<()>().await;
        }
        model::Model::complete(&model::ScriptedModel, history, tools).await
    }
}

/// A turn cancelled while the model is thinking (and dropped by the runtime after its grace)
/// still saves what it added to the conversation.
#[tokio::test(start_paused = true)]
async fn a_cancelled_turn_still_saves_the_conversation() {
    within(async {
        let store = Arc::new(MemoryStore::default());
        let serve =
            || acp::Server::new(model::ModelAgent::new(Waiting)).shared_store(store.clone());
        let first = TestClient::builder().serve(serve()).await.unwrap();
        let session = first.new_session().await.unwrap();
        session.prompt("hello").await.unwrap();
        // The model never answers `wait`: the turn is still running when the cancel comes
        // (the runtime drops it after its grace).
        let turn = session.start_prompt("wait");
        session.cancel();
        let answer = first.wait_for_response(&turn).await.unwrap();
        assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
        let id = session.id().clone();
        first.close().await.unwrap();

        let second = TestClient::builder().serve(serve()).await.unwrap();
        let loaded = second.load_session(&id).await.unwrap();
        let turn = loaded.session.prompt("history").await.unwrap();
        assert_eq!(turn.text(), "You said before: hello | wait");
        second.close().await.unwrap();
    })
    .await;
}

/// A saved value that no longer reads as its type (the type changed) starts from its default,
/// and the session still loads.
#[tokio::test]
async fn a_saved_value_of_another_shape_starts_from_the_default() {
    within(async {
        let store = Arc::new(MemoryStore::default());
        let serve = || {
            acp::Server::new(model::ModelAgent::new(model::ScriptedModel))
                .shared_store(store.clone())
        };
        let first = TestClient::builder().serve(serve()).await.unwrap();
        let session = first.new_session().await.unwrap();
        session.prompt("hello").await.unwrap();
        let id = session.id().clone();
        first.close().await.unwrap();
        let saved = store.state(&id).await.unwrap();
        assert!(saved["model.history"].is_array(), "{saved:?}");
        store
            .put_state(&id, "model.history", &json!({"not": "a list"}))
            .await
            .unwrap();

        let second = TestClient::builder().serve(serve()).await.unwrap();
        let loaded = second.load_session(&id).await.unwrap();
        let turn = loaded.session.prompt("history").await.unwrap();
        assert_eq!(turn.text(), "You said before: ");
        second.close().await.unwrap();
    })
    .await;
}
