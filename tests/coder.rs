//! The `coder` example under `acp::testing`, its model a scripted provider: a task that reads,
//! edits and runs a command with permissions; ask mode refusing an edit before the user is
//! asked; the model picked with the `model` config option; the plan tool.

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
