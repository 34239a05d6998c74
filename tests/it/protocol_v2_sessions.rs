//! Protocol v2, in process: sessions recorded on one version resumed on the other, and the
//! agent's commands shown as v2's agent-owned terminals (real processes, real clock).
#![cfg(feature = "v2")]

use crate::support::v2 as common;

use acp::store::MemoryStore;
use acp::testing::TestClient;
use common::{
    Two, connect, new_session, new_session_in, prompt, unread_for, until_idle, update,
    v2_initialize,
};
use serde_json::{Value, json};

/// A session recorded on one version's connection resumes on the other's: the store keeps
/// the account, not one version's frames.
#[tokio::test(start_paused = true)]
async fn a_session_recorded_on_v1_resumes_on_v2_and_the_other_way_round() {
    use std::sync::Arc;

    let store: Arc<dyn acp::store::SessionStore> = Arc::new(MemoryStore::new());
    let serve = || acp::Server::new(Two).shared_store(store.clone());

    // v1 records, v2 replays.
    let v1 = TestClient::builder().serve(serve()).await.unwrap();
    let recorded = {
        let session = v1.new_session().await.unwrap();
        session.prompt("stream 2").await.unwrap();
        session.id().0.to_string()
    };
    let v2_client = TestClient::builder()
        .skip_initialize()
        .serve(serve())
        .await
        .unwrap();
    v2_client
        .request("initialize", v2_initialize())
        .await
        .unwrap();
    v2_client
        .request(
            "session/resume",
            json!({"sessionId": recorded, "cwd": "/w", "replayFrom": {"type": "start"}}),
        )
        .await
        .unwrap();
    let replayed: Vec<Value> = v2_client.take_unread().iter().filter_map(update).collect();
    let texts: Vec<&str> = replayed
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert_eq!(texts, ["stream 2", "chunk 0 ", "chunk 1 "], "{replayed:?}");

    // v2 records, v1 replays.
    let fresh = new_session(&v2_client).await;
    prompt(&v2_client, &fresh, "stream 1");
    until_idle(&v2_client).await;
    let v1 = TestClient::builder().serve(serve()).await.unwrap();
    let loaded = v1
        .load_session(&acp::schema::SessionId::new(fresh.as_str()))
        .await
        .unwrap();
    let texts: Vec<String> = loaded
        .replayed
        .iter()
        .filter_map(|u| match u {
            acp::schema::SessionUpdate::UserMessageChunk(c)
            | acp::schema::SessionUpdate::AgentMessageChunk(c) => match &c.content {
                acp::schema::ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["stream 1", "chunk 0 "]);
}

/// A command runs on the agent's machine and is shown as v2's agent-owned terminal: the tool
/// call refers to it, `terminal_update` gives its command, cwd and exit status, and its output
/// arrives as `terminal_output_chunk`s, all before the tool call completes.
#[tokio::test]
async fn a_command_is_shown_as_an_agent_owned_terminal_before_its_tool_call_completes() {
    use base64::Engine as _;
    let client = connect().await;
    let dir = tempfile::tempdir().unwrap();
    let session = new_session_in(&client, dir.path().to_str().unwrap()).await;
    prompt(&client, &session, "run printf 'one\\ntwo\\n'; exit 3");
    let (kinds, frames) = until_idle(&client).await;
    let updates: Vec<Value> = frames.iter().filter_map(update).collect();
    let completed = updates
        .iter()
        .position(|u| u["status"] == "completed")
        .unwrap_or_else(|| panic!("no completed tool call: {kinds:?}"));
    let reference = &updates[completed]["content"][0];
    assert_eq!(reference["type"], "terminal", "{reference}");
    let id = reference["terminalId"].as_str().unwrap();
    let before = &updates[..completed];
    let started = before
        .iter()
        .find(|u| u["sessionUpdate"] == "terminal_update" && u["command"].is_string())
        .unwrap_or_else(|| panic!("no terminal_update with the command: {kinds:?}"));
    assert_eq!(started["terminalId"], id);
    assert!(started["cwd"].as_str().unwrap().starts_with('/'));
    let output: Vec<u8> = before
        .iter()
        .filter(|u| u["sessionUpdate"] == "terminal_output_chunk")
        .flat_map(|u| {
            base64::engine::general_purpose::STANDARD
                .decode(u["data"].as_str().unwrap())
                .unwrap()
        })
        .collect();
    assert_eq!(String::from_utf8(output).unwrap(), "one\ntwo\n");
    assert!(
        before
            .iter()
            .any(|u| u["sessionUpdate"] == "terminal_update" && u["exitStatus"]["exitCode"] == 3),
        "{kinds:?}"
    );
}

/// A turn cancelled while its command runs: the command is killed, and the client is shown
/// its exit before the turn's `idle`, then nothing more for the session.
#[tokio::test]
async fn a_cancelled_command_shows_its_exit_before_the_idle_and_nothing_after() {
    let client = connect().await;
    let dir = tempfile::tempdir().unwrap();
    let session = new_session_in(&client, dir.path().to_str().unwrap()).await;
    prompt(&client, &session, "run echo started; sleep 30");
    client
        .wait_for("the command's output", |f| {
            update(f).is_some_and(|u| u["sessionUpdate"] == "terminal_output_chunk")
        })
        .await
        .unwrap();
    client.notify("session/cancel", json!({"sessionId": session}));
    let (kinds, frames) = until_idle(&client).await;
    assert_eq!(
        update(frames.last().unwrap()).unwrap()["stopReason"],
        "cancelled"
    );
    let exited = frames
        .iter()
        .filter_map(update)
        .any(|u| u["sessionUpdate"] == "terminal_update" && u["exitStatus"].is_object());
    assert!(exited, "the command's exit before the idle: {kinds:?}");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let after = unread_for(&client, &session);
    assert!(after.is_empty(), "after the idle: {after:?}");
}
