//! The examples' sessions reloaded: what `session/load` sends, in order, and that nothing
//! follows its answer.

use std::sync::Arc;

use acp::Server;
use acp::schema::{ContentBlock, SessionId, SessionUpdate};
use acp::store::MemoryStore;
use acp::testing::{Direction, Frame, TestClient};
use serde_json::json;

use super::modes;

/// The updates for `session` among `frames`.
fn updates_for(frames: &[Frame], session: &SessionId) -> Vec<SessionUpdate> {
    frames
        .iter()
        .filter(|f| f.direction == Direction::FromAgent)
        .filter_map(Frame::session_update)
        .filter(|n| &n.session_id == session)
        .map(|n| n.update)
        .collect()
}

#[tokio::test]
async fn modes_ends_a_load_replay_with_its_commands_and_sends_nothing_after_the_answer() {
    let store: Arc<dyn acp::store::SessionStore> = Arc::new(MemoryStore::default());
    let client = TestClient::builder()
        .serve(Server::new(modes::Modes).shared_store(store))
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let id = session.id().clone();
    assert_eq!(
        session.prompt("hi").await.unwrap().text(),
        "[ask mode] You said: hi"
    );

    let start = client.transcript().len();
    let load = client.send_request(
        "session/load",
        json!({"sessionId": id, "cwd": "/workspace", "mcpServers": []}),
    );
    let answer = client.wait_for_response(&load).await.unwrap();
    assert!(answer["result"].is_object(), "{answer}");
    // A round trip after the answer: anything the load still sent is in before its answer.
    client.request("session/list", json!({})).await.unwrap();
    let frames = &client.transcript()[start..];
    let answered = frames.iter().position(|f| f.is_response_to(&load)).unwrap();
    let after = updates_for(&frames[answered..], &id);
    assert!(
        after.is_empty(),
        "updates after the session/load answer: {after:?}\n{}",
        client.describe()
    );
    // The replay: the conversation, then the commands as they are now.
    let replayed = updates_for(&frames[..answered], &id);
    let kinds: Vec<_> = replayed
        .iter()
        .map(|u| match u {
            SessionUpdate::UserMessageChunk(c) => match &c.content {
                ContentBlock::Text(t) => format!("user {}", t.text),
                _ => "user ?".to_owned(),
            },
            SessionUpdate::AgentMessageChunk(_) => "agent".to_owned(),
            SessionUpdate::AvailableCommandsUpdate(c) => {
                format!("commands {}", c.available_commands.len())
            }
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        ["user hi", "agent", "commands 5"],
        "{}",
        client.describe()
    );
    // The client's view of the loaded session has them.
    assert_eq!(
        session.view().command_names(),
        ["help", "code", "ask", "echo", "note"]
    );

    // `session/resume` sends nothing before its answer: the commands follow it.
    let start = client.transcript().len();
    let resume = client.send_request(
        "session/resume",
        json!({"sessionId": id, "cwd": "/workspace", "mcpServers": []}),
    );
    client.wait_for_response(&resume).await.unwrap();
    client.request("session/list", json!({})).await.unwrap();
    let frames = &client.transcript()[start..];
    let answered = frames
        .iter()
        .position(|f| f.is_response_to(&resume))
        .unwrap();
    assert!(updates_for(&frames[..answered], &id).is_empty());
    assert!(matches!(
        updates_for(&frames[answered..], &id).as_slice(),
        [SessionUpdate::AvailableCommandsUpdate(_)]
    ));
}
