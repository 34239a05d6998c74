//! The `coder` example under `acp::testing`, its model a scripted provider: a task that reads,
//! edits and runs a command with permissions; ask mode refusing an edit before the user is
//! asked; the model picked with the `model` config option; the plan tool; a restart
//! mid-conversation, the session loaded by another process with the model's history.

use acp::StopReason;
use acp::llm::scripted::{Reply, Scripted};
use acp::llm::{Model, Part};
use acp::schema::ToolCallStatus::*;
use acp::testing::{MemoryFs, PermissionPolicy, TerminalStub, TestClient};
use serde_json::json;

#[path = "../examples/coder.rs"]
#[allow(dead_code)]
mod coder;

const LIB: &str = "/workspace/src/lib.rs";

async fn client(provider: &Scripted) -> TestClient {
    let coder = coder::Coder::new(Model::new(provider.clone(), "main-model"), "small-model");
    TestClient::builder()
        .fs(MemoryFs::new().with(LIB, "pub fn two() -> u32 { 1 + 1 }\n"))
        .terminal(TerminalStub::new().command(
            "sh -c cargo test",
            TerminalStub::new().output("test result: ok. 1 passed"),
        ))
        .permissions(PermissionPolicy::AllowOnce)
        .connect(coder)
        .await
        .unwrap()
}

/// The last request's tool results, as (text, is_error).
fn results(provider: &Scripted) -> Vec<(String, bool)> {
    let requests = provider.requests();
    let last = requests.last().unwrap().messages.last().unwrap();
    last.content
        .iter()
        .filter_map(|p| match p {
            Part::ToolResult {
                content, is_error, ..
            } => Some((content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn reads_edits_and_runs_the_tests_with_permission() {
    let provider = Scripted::new()
        .reply(Reply::new().tool_call("1", "read", json!({"path": "src/lib.rs"})))
        .reply(Reply::new().text("Simplifying.").tool_call(
            "2",
            "edit",
            json!({"path": "src/lib.rs", "old": "1 + 1", "new": "2"}),
        ))
        .reply(Reply::new().tool_call("3", "run", json!({"command": "cargo test"})))
        .reply(Reply::new().text(" Tests pass."));
    let client = client(&provider).await;
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("simplify two()").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert_eq!(turn.text(), "Simplifying. Tests pass.");

    let calls = turn.tool_calls();
    let titles: Vec<_> = calls.iter().map(|c| c.title.as_str()).collect();
    assert_eq!(
        titles,
        ["Read src/lib.rs", "Edit src/lib.rs", "Run cargo test"]
    );
    assert!(
        calls.iter().all(|c| c.status() == Some(Completed)),
        "{calls:#?}"
    );
    assert_eq!(calls[1].statuses, [Pending, InProgress, Completed]);
    // Edits and commands are asked about; reading is not.
    let asked: Vec<_> = turn
        .permission_requests()
        .iter()
        .map(|p| p["toolCall"]["toolCallId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(asked, [calls[1].id.clone(), calls[2].id.clone()]);

    let diff = calls[1].diffs()[0];
    assert_eq!(
        diff.old_text.as_deref(),
        Some("pub fn two() -> u32 { 1 + 1 }\n")
    );
    assert_eq!(diff.new_text, "pub fn two() -> u32 { 2 }\n");
    assert_eq!(
        client.fs().read(LIB).as_deref(),
        Some("pub fn two() -> u32 { 2 }\n")
    );
    assert_eq!(
        client.terminals_created(),
        [(
            "sh".to_owned(),
            vec!["-c".to_owned(), "cargo test".to_owned()]
        )]
    );

    // What the model read, and the command's output, went back to it.
    let requests = provider.requests();
    assert_eq!(requests.len(), 4);
    let read = &requests[1].messages.last().unwrap().content[0];
    assert!(
        matches!(read, Part::ToolResult { content, .. } if content.contains("1 + 1")),
        "{read:?}"
    );
    let ran = results(&provider);
    assert!(ran[0].0.contains("test result: ok"), "{ran:?}");
    assert!(ran[0].0.contains("exit code 0"), "{ran:?}");
}

#[tokio::test]
async fn ask_mode_refuses_an_edit_before_the_user_is_asked() {
    let provider = Scripted::new()
        .reply(Reply::new().tool_call(
            "1",
            "write",
            json!({"path": "src/lib.rs", "content": "gone"}),
        ))
        .reply(Reply::new().text("I can't edit in ask mode."));
    let client = client(&provider).await;
    let session = client.new_session().await.unwrap();
    session.set_mode("ask").await.unwrap();
    let turn = session.prompt("delete everything").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    let calls = turn.tool_calls();
    assert_eq!(calls[0].status(), Some(Failed));
    assert!(calls[0].text().contains("ask mode"), "{}", calls[0].text());
    assert!(turn.permission_requests().is_empty());
    assert_eq!(
        client.fs().read(LIB).as_deref(),
        Some("pub fn two() -> u32 { 1 + 1 }\n")
    );
    let refused = results(&provider);
    assert!(
        refused[0].1 && refused[0].0.contains("ask mode"),
        "{refused:?}"
    );
}

#[tokio::test]
async fn the_model_is_a_config_option_the_editor_switches() {
    let provider = Scripted::from_fn(|_| Reply::new().text("ok"));
    let client = client(&provider).await;
    let session = client.new_session().await.unwrap();
    let options = &session.new_session_response()["configOptions"];
    let model = options
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "model")
        .expect("a model option");
    assert_eq!(model["category"], "model");
    session.prompt("one").await.unwrap();
    session.set_config_option("model", "small").await.unwrap();
    session.prompt("two").await.unwrap();
    let models: Vec<_> = provider.requests().into_iter().map(|r| r.model).collect();
    assert_eq!(models, ["main-model", "small-model"]);
}

#[tokio::test]
async fn the_plan_tool_shows_the_plan() {
    let provider = Scripted::new()
        .reply(Reply::new().tool_call(
            "1",
            "plan",
            json!({"steps": [
                {"step": "Read the code", "status": "completed"},
                {"step": "Fix the bug", "status": "in_progress"}
            ]}),
        ))
        .reply(Reply::new().text("On it."));
    let client = client(&provider).await;
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("fix it").await.unwrap();
    let plans = turn.plans();
    assert_eq!(plans.len(), 1);
    let steps: Vec<_> = plans[0]
        .entries
        .iter()
        .map(|e| e.content.as_str())
        .collect();
    assert_eq!(steps, ["Read the code", "Fix the bug"]);
}

#[tokio::test]
async fn a_restart_mid_conversation_loads_the_session_with_the_models_history() {
    let store = std::sync::Arc::new(acp::store::MemoryStore::default());
    let fs = MemoryFs::new().with(LIB, "pub fn two() -> u32 { 1 + 1 }\n");
    let serve = |provider: &Scripted| {
        let coder = coder::Coder::new(Model::new(provider.clone(), "main-model"), "small-model");
        let server = acp::Server::new(coder).shared_store(store.clone());
        TestClient::builder().fs(fs.clone()).serve(server)
    };
    let first_provider = Scripted::new()
        .reply(Reply::new().tool_call("1", "read", json!({"path": "src/lib.rs"})))
        .reply(Reply::new().text("It returns 2."));
    let first = serve(&first_provider).await.unwrap();
    let session = first.new_session().await.unwrap();
    let turn = session.prompt("what does two() return?").await.unwrap();
    assert_eq!(turn.text(), "It returns 2.");
    let id = session.id().clone();
    first.close().await.unwrap();

    // Another process of the agent, on the same store: the editor loads the session.
    let second_provider = Scripted::new().reply(Reply::new().text("Nothing else."));
    let second = serve(&second_provider).await.unwrap();
    let loaded = second.load_session(&id).await.unwrap();
    assert!(
        loaded
            .replayed
            .iter()
            .any(|u| matches!(u, acp::schema::SessionUpdate::AgentMessageChunk(_))),
        "the first turn is replayed to the editor"
    );
    let turn = loaded.session.prompt("anything else?").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    let sent = &second_provider.requests()[0].messages;
    let first_sent = &first_provider.requests()[1].messages;
    assert_eq!(
        sent[..first_sent.len()],
        first_sent[..],
        "the prompt, the read call and its result, as the first process sent them"
    );
    assert_eq!(
        sent[first_sent.len()..],
        [
            acp::llm::Message::assistant("It returns 2."),
            acp::llm::Message::user("anything else?")
        ]
    );
    assert!(
        matches!(&first_sent[2].content[0], Part::ToolResult { content, .. } if content.contains("1 + 1")),
        "{first_sent:?}"
    );
    second.close().await.unwrap();
}
