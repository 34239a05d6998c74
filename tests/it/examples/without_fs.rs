//! Every example, in an editor that offers neither fs nor terminal.
//!
//! Each built example is spawned and driven over real pipes by a client whose `initialize`
//! advertises no `fs` and no `terminal` (the builder's default). The same request goes out in
//! the shapes editors send: plain text, text with an @-mention (`resource_link`), text with
//! `_meta` on the request, and an @-mention alone. Every one must end the turn with
//! `end_turn`, never a JSON-RPC error, and (except the @-mention alone, which asks for nothing
//! in particular) answer with a message chunk containing `says`: for an example that needs fs
//! or a terminal for what was asked, the explanation of what it cannot do and why.

use acp::schema::SessionUpdate;
use acp::testing::{Direction, Frame, TestClient};
use serde_json::{Value, json};

use super::support;

/// The `session/prompt` params of each prompt shape, for the request `ask`.
fn prompt_shapes(session: &acp::schema::SessionId, ask: &str) -> [(&'static str, Value); 4] {
    let text = json!({"type": "text", "text": ask});
    let link = json!({
        "type": "resource_link",
        "uri": "file:///workspace/src/main.rs",
        "name": "main.rs",
    });
    let params = |prompt: Value| json!({"sessionId": session, "prompt": prompt});
    let mut with_meta = params(json!([text]));
    with_meta["_meta"] = json!({"vendor.example/trace": "abc"});
    [
        ("plain text", params(json!([text]))),
        ("text and a resource_link", params(json!([text, link]))),
        ("text with _meta", with_meta),
        ("a resource_link alone", params(json!([link]))),
    ]
}

/// The text of the agent's message chunks among `frames`.
fn message_text(frames: &[Frame]) -> String {
    frames
        .iter()
        .filter(|f| f.direction == Direction::FromAgent)
        .filter_map(Frame::session_update)
        .filter_map(|n| match n.update {
            SessionUpdate::AgentMessageChunk(c) => match c.content {
                acp::schema::ContentBlock::Text(t) => Some(t.text),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Spawns `example`, sends `ask` in every prompt shape, and checks each turn ends with
/// `end_turn` and (but for the @-mention alone) a message containing `says`.
async fn answers_without_fs_or_terminal(example: &str, ask: &str, says: &str) {
    let command = std::process::Command::new(support::example_binary(example));
    let client = TestClient::builder().spawn(command).await.unwrap();
    let session = client.new_session().await.unwrap();
    for (shape, params) in prompt_shapes(session.id(), ask) {
        let start = client.transcript().len();
        let answer = client.request("session/prompt", params).await;
        let text = message_text(&client.transcript()[start..]);
        let context = || format!("{example}, {shape} `{ask}`:\n{}", client.describe());
        let stop = answer.as_ref().ok().map(|a| a["stopReason"].clone());
        assert_eq!(
            stop,
            Some(json!("end_turn")),
            "answer {answer:?}, said {text:?}; {}",
            context()
        );
        if shape != "a resource_link alone" {
            assert!(
                text.contains(says),
                "said {text:?}, not {says:?}; {}",
                context()
            );
        }
    }
    for method in ["fs/read_text_file", "fs/write_text_file", "terminal/create"] {
        assert!(client.requests_from_agent(method).is_empty(), "{method}");
    }
    drop(session);
    client.close().await.unwrap();
}

#[tokio::test]
async fn echo_without_fs_or_terminal_explains_it_cannot_read() {
    answers_without_fs_or_terminal("echo", "read README.md", "no fs.readTextFile capability").await;
}

#[tokio::test]
async fn echo_without_fs_or_terminal_answers_a_bad_stream_count() {
    answers_without_fs_or_terminal("echo", "stream lots", "like `stream 3`").await;
}

#[tokio::test]
async fn shell_without_fs_or_terminal_explains_it_cannot_run_commands() {
    answers_without_fs_or_terminal("shell", "ls -la", "no `terminal` capability").await;
}

#[tokio::test]
async fn model_without_fs_or_terminal_explains_its_tool_cannot_read() {
    answers_without_fs_or_terminal(
        "model",
        "read README.md",
        "does not support `fs.readTextFile`",
    )
    .await;
}

#[tokio::test]
async fn scribe_without_fs_or_terminal_explains_it_cannot_keep_notes() {
    answers_without_fs_or_terminal("scribe", "buy milk", "no fs.writeTextFile capability").await;
}

#[tokio::test]
async fn modes_without_fs_or_terminal_answers() {
    answers_without_fs_or_terminal("modes", "hello", "You said: hello").await;
}

#[tokio::test]
async fn planner_without_fs_or_terminal_explains_it_cannot_read() {
    answers_without_fs_or_terminal("planner", "README.md", "no fs.readTextFile capability").await;
}

#[tokio::test]
async fn bench_without_fs_or_terminal_answers_an_unknown_prompt_with_its_usage() {
    answers_without_fs_or_terminal("bench", "what can you do?", "`stream N`").await;
}

#[tokio::test]
async fn workspace_without_fs_or_terminal_explains_it_cannot_read() {
    answers_without_fs_or_terminal("workspace", "read README.md", "no fs.readTextFile").await;
}

#[tokio::test]
async fn mcp_without_fs_or_terminal_lists_its_own_tool() {
    answers_without_fs_or_terminal("mcp", "tools", "say").await;
}
