//! What `acp::llm` does beside a turn's calls, with the scripted provider: compaction near the
//! context window (shown to an editor that takes compactions, done either way), and a `task`
//! tool that hands a job to the model in a subagent with the read-only tools (a permission
//! asked inside it), replayed after a restart.

use std::path::PathBuf;
use std::sync::Arc;

use acp::llm::Model;
use acp::llm::scripted::{Reply, Scripted};
use acp::schema::{SessionUpdate, StopReason, ToolCallStatus};
use acp::store::MemoryStore;
use acp::testing::{MemoryFs, PermissionPolicy, TestClient};
use acp::{Prompt, Session};
use serde_json::json;

struct Agent {
    model: Model,
}

#[acp::agent(name = "agent")]
impl Agent {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        self.model.run(cx, &prompt).await
    }

    /// Reads a text file, after asking.
    #[acp::tool(kind = "read", title = "Read {path}", permission)]
    async fn read(&self, cx: &Session, path: PathBuf) -> acp::Result<String> {
        cx.fs().read_text_file(&path).await
    }

    /// Writes a text file.
    #[acp::tool(kind = "edit", title = "Write {path}", permission)]
    async fn write(&self, cx: &Session, path: PathBuf, content: String) -> acp::Result<String> {
        cx.fs().write_text_file(&path, content).await?;
        Ok("written".into())
    }

    /// Hands a self-contained task to a subagent.
    #[acp::tool(kind = "think", title = "{description}")]
    async fn task(&self, cx: &Session, description: String, prompt: String) -> acp::Result<String> {
        self.model.task(cx, &description, &prompt).await
    }
}

/// The summariser's requests are those with its instructions.
fn summarising(request: &acp::llm::Request<'_>) -> bool {
    request
        .system
        .is_some_and(|s| s.starts_with("You are compacting"))
}

/// A model whose every answer used 900 of a 1,000-token window; it summarises as "S1".
fn crowded() -> Scripted {
    Scripted::from_fn(|request| {
        if summarising(request) {
            Reply::new().text("S").text("1").usage(300, 2)
        } else {
            Reply::new().text("ok").usage(900, 10)
        }
    })
}

async fn compaction_near_the_window(shows: bool) {
    let provider = crowded();
    let model = Model::new(provider.clone(), "scripted").context_window(1000);
    let builder = TestClient::builder();
    let builder = if shows { builder.compaction() } else { builder };
    let client = builder.connect(Agent { model }).await.unwrap();
    let session = client.new_session().await.unwrap();
    for prompt in ["t1", "t2"] {
        session.prompt(prompt).await.unwrap();
    }
    // Two turns: nothing old enough to compact yet.
    assert!(!provider.requests().iter().any(|r| r.tools.is_empty()));
    let turn = session.prompt("t3").await.unwrap();
    assert_eq!(turn.text(), "ok");
    let requests = provider.requests();
    let summary = &requests[requests.len() - 2];
    assert!(
        summary.tools.is_empty(),
        "a summary is a call without tools"
    );
    let asked = summary.last_user_text();
    assert!(
        asked.contains("User: t1") && asked.contains("Agent: ok"),
        "{asked}"
    );
    assert!(
        !asked.contains("t2"),
        "the last two turns are kept: {asked}"
    );
    // The next call is sent the summary and the kept turns: smaller than before.
    let after = requests.last().unwrap();
    let texts: Vec<String> = after.messages.iter().map(|m| m.text()).collect();
    assert_eq!(
        texts,
        ["[Summary of the earlier conversation]\nS1t2", "ok", "t3"]
    );
    let compaction: Vec<String> = turn
        .updates()
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::CompactionUpdate(c) => {
                Some(serde_json::to_value(&c.status).unwrap().to_string())
            }
            SessionUpdate::CompactionSummaryChunk(_) => Some("chunk".into()),
            _ => None,
        })
        .collect();
    if shows {
        assert_eq!(
            compaction,
            ["\"in_progress\"", "chunk", "chunk", "\"completed\""]
        );
    } else {
        assert!(compaction.is_empty(), "{compaction:?}");
    }
}

#[tokio::test]
async fn compaction_near_the_window_is_shown_to_an_editor_that_takes_it() {
    compaction_near_the_window(true).await;
}

#[tokio::test]
async fn compaction_near_the_window_happens_for_any_editor() {
    compaction_near_the_window(false).await;
}

/// The parent hands `read notes` to a subagent; the child reads a file (asking first) and
/// answers; the parent's model gets that answer as the tool's result.
fn delegating() -> Scripted {
    Scripted::from_fn(|request| {
        let asked = request
            .messages
            .first()
            .map(acp::llm::Message::text)
            .unwrap_or_default();
        let results = request.messages.len();
        match (asked.as_str(), results) {
            ("delegate", 1) => Reply::new().tool_call(
                "c1",
                "task",
                json!({"description": "Look around", "prompt": "read notes"}),
            ),
            ("delegate", _) => Reply::new().text("done"),
            ("read notes", 1) => {
                Reply::new().tool_call("c2", "read", json!({"path": "/workspace/notes.txt"}))
            }
            ("read notes", _) => Reply::new().text("found milk"),
            _ => Reply::new().text("?"),
        }
    })
}

#[tokio::test]
async fn a_task_runs_the_model_in_a_subagent_with_the_read_only_tools_and_replays() {
    let provider = delegating();
    let store = Arc::new(MemoryStore::default());
    let serve = || {
        let model = Model::new(provider.clone(), "scripted");
        acp::Server::new(Agent { model }).shared_store(store.clone())
    };
    let client = TestClient::builder()
        .subagents()
        .fs(MemoryFs::new().with("/workspace/notes.txt", "milk"))
        .permissions(PermissionPolicy::AllowOnce)
        .serve(serve())
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("delegate").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert_eq!(turn.text(), "done");

    // The child's model saw only the read-only tools, and its own context.
    let requests = provider.requests();
    let child = requests
        .iter()
        .find(|r| r.messages[0].text() == "read notes")
        .unwrap();
    let offered: Vec<&str> = child.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered, ["read"]);
    // The parent's model got the child's answer as the task's result.
    let last = requests.last().unwrap();
    assert!(
        format!("{:?}", last.messages).contains("found milk"),
        "{:?}",
        last.messages
    );
    let task = &turn.tool_calls()[0];
    assert_eq!(task.title, "Look around");
    assert_eq!(task.status(), Some(ToolCallStatus::Completed));
    let children = turn.subagents();
    assert_eq!(children.len(), 1);
    let of_child = turn.updates_of(&children[0]);
    assert!(
        of_child
            .iter()
            .any(|u| matches!(u, SessionUpdate::ToolCall(c) if c.name.as_deref() == Some("read"))),
        "{of_child:?}"
    );
    let asked =
        client.requests_from_agent(acp::schema::CLIENT_METHOD_NAMES.session_request_permission);
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["sessionId"], json!(children[0]));
    let id = session.id().clone();
    client.close().await.unwrap();

    // After a restart, loading the parent replays the child's work after its announcement.
    let again = TestClient::builder()
        .subagents()
        .serve(serve())
        .await
        .unwrap();
    again.load_session(&id).await.unwrap();
    let replayed: Vec<String> = again
        .transcript()
        .iter()
        .filter_map(|f| f.session_update())
        .filter(|n| n.session_id == children[0])
        .map(|n| serde_json::to_value(&n.update).unwrap()["sessionUpdate"].to_string())
        .collect();
    assert!(
        replayed.contains(&"\"tool_call\"".to_owned()),
        "{replayed:?}"
    );
}

/// With prices, each `usage_update` carries what the session's calls cost so far.
#[tokio::test]
async fn usage_updates_carry_the_cost_of_the_calls_so_far() {
    let usage = acp::llm::Usage {
        input_tokens: 1_000,
        output_tokens: 500,
        cached_input_tokens: Some(400),
        cache_write_tokens: None,
        reasoning_tokens: None,
    };
    let provider =
        Scripted::from_fn(move |_| Reply::new().text("ok").event(acp::llm::Event::Usage(usage)));
    let prices = acp::llm::Prices::new("USD", 2.0, 8.0).cached_read(0.5);
    let model = Model::new(provider, "scripted")
        .context_window(100_000)
        .prices(prices);
    let client = TestClient::builder()
        .connect(Agent { model })
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let mut costs = Vec::new();
    for prompt in ["one", "two"] {
        let turn = session.prompt(prompt).await.unwrap();
        for update in turn.updates() {
            if let SessionUpdate::UsageUpdate(u) = update {
                let cost = u.cost.clone().expect("a cost");
                assert_eq!(cost.currency, "USD");
                costs.push((cost.amount * 1e6).round() / 1e6);
            }
        }
    }
    // 600 input at 2, 400 cached at 0.5, 500 output at 8, per million: 0.0054 a call.
    assert_eq!(costs, [0.0054, 0.0108]);
}
