//! Sessions recorded by the runtime and reopened from the store: `session/list`, `/load`
//! (the whole conversation replayed in order), `/resume`, `/delete`, across a restart of the
//! agent on the same store. All in process, on a paused clock, with the in-memory store (the
//! SQLite store passes the same contract in the `store` module).

use std::sync::Arc;
use std::time::Duration;

use acp_core::schema::{SessionUpdate, StopReason, ToolCallStatus, ToolKind};
use acp_core::store::{MemoryStore, Record, SessionStore};
use acp_core::testing::{TestClient, Turn};
use acp_core::{Agent, Error, Prompt, Result, Server, Session};
use serde_json::json;

/// Commands: `stream N` (N chunks), `tool` (a tool call, completed), `sleep` (until
/// cancelled), `title T` (sets the session's title, `title` alone clears it); anything else
/// is echoed.
struct Recorded;

impl Agent for Recorded {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> Result<StopReason> {
        let text = prompt.text();
        match text.split_once(' ').unwrap_or((&text, "")) {
            ("stream", n) => {
                for i in 0..n.parse::<usize>().unwrap_or(0) {
                    cx.message(format!("chunk {i}")).await?;
                }
            }
            ("tool", _) => {
                let call = cx
                    .tool_call("Look around")
                    .kind(ToolKind::Read)
                    .start()
                    .await?;
                call.complete(vec!["seen".into()]).await?;
            }
            ("title", title) => {
                let info = acp_core::schema::SessionInfoUpdate::new()
                    .title((!title.is_empty()).then(|| title.to_owned()));
                cx.update(SessionUpdate::SessionInfoUpdate(info)).await?;
            }
            ("sleep", _) => {
                cx.message("sleeping").await?;
                cx.cancelled().await;
                return Ok(StopReason::Cancelled);
            }
            _ => cx.message(text.clone()).await?,
        }
        Ok(StopReason::EndTurn)
    }
}

async fn within<T>(fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), fut)
        .await
        .expect("the test hung")
}

async fn client(store: &Arc<MemoryStore>) -> TestClient {
    let shared: Arc<dyn SessionStore> = store.clone();
    TestClient::builder()
        .serve(Server::new(Recorded).shared_store(shared))
        .await
        .unwrap()
}

/// The updates a turn showed the client, as the user's prompt plus what the agent sent.
fn as_seen(prompt: &str, turn: &Turn) -> Vec<serde_json::Value> {
    let mut seen = vec![json!({
        "sessionUpdate": "user_message_chunk",
        "content": {"type": "text", "text": prompt}
    })];
    seen.extend(turn.updates().iter().map(|u| json!(u)));
    seen
}

/// Has a `load_session` of its own: it gives a reopened session's setup (an answer `_meta`);
/// the history is the runtime's.
struct SetsUpReopened;

impl Agent for SetsUpReopened {
    fn capabilities(&self) -> acp_core::schema::AgentCapabilities {
        acp_core::schema::AgentCapabilities::new().load_session(true)
    }

    async fn prompt(&self, cx: &Session, prompt: Prompt) -> Result<StopReason> {
        cx.message(prompt.text()).await?;
        Ok(StopReason::EndTurn)
    }

    async fn load_session(&self, _cx: &Session) -> Result<acp_core::SessionSetup> {
        let mut meta = acp_core::schema::Meta::new();
        meta.insert("setUpBy".into(), json!("load_session"));
        Ok(acp_core::SessionSetup::default().meta(meta))
    }
}

#[tokio::test(start_paused = true)]
async fn a_store_advertises_the_history_methods() {
    within(async {
        let c = client(&Arc::default()).await;
        let caps = &c.initialize_response()["agentCapabilities"];
        assert_eq!(caps["loadSession"], true, "{caps}");
        for method in ["list", "resume", "close", "delete"] {
            assert!(
                caps["sessionCapabilities"][method].is_object(),
                "{method}: {caps}"
            );
        }
        c.close().await.unwrap();
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn without_a_store_they_are_neither_advertised_nor_answered() {
    within(async {
        let c = TestClient::builder().connect(Recorded).await.unwrap();
        let caps = &c.initialize_response()["agentCapabilities"];
        assert_eq!(caps["loadSession"], false, "{caps}");
        assert!(caps["sessionCapabilities"]["list"].is_null(), "{caps}");
        let e = c.list_sessions(None, None).await.unwrap_err();
        assert!(matches!(e, Error::Rpc { code: -32601, .. }), "{e}");
        c.close().await.unwrap();
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_restarted_agent_lists_loads_replays_and_resumes_the_conversation() {
    within(async {
        let store = Arc::new(MemoryStore::default());
        // First run: two turns, one with a tool call.
        let first = client(&store).await;
        let s = first.new_session().await.unwrap();
        let id = s.id().clone();
        let mut seen = Vec::new();
        for prompt in ["hello", "tool"] {
            let turn = s.prompt(prompt).await.unwrap();
            seen.extend(as_seen(prompt, &turn));
        }
        first.close().await.unwrap();

        // The agent restarts on the same store.
        let second = client(&store).await;
        let listed = second.all_sessions(None).await.unwrap();
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert_eq!(listed[0]["sessionId"], json!(id));
        assert_eq!(listed[0]["cwd"], "/workspace");
        assert!(listed[0]["updatedAt"].is_string(), "{:?}", listed[0]);
        assert!(
            second
                .all_sessions(Some("/elsewhere"))
                .await
                .unwrap()
                .is_empty()
        );

        let loaded = second.load_session(&id).await.unwrap();
        // The user's prompts carry the message id the agent gave them when it recorded them
        // (the client never saw them as updates); the rest is exactly what it saw.
        let replayed: Vec<_> = loaded
            .replayed
            .iter()
            .map(|u| {
                let mut u = json!(u);
                if u["sessionUpdate"] == "user_message_chunk" {
                    let id = u.as_object_mut().unwrap().remove("messageId");
                    assert!(id.is_some_and(|id| id.is_string()), "{u}");
                }
                u
            })
            .collect();
        assert_eq!(
            replayed, seen,
            "the conversation, in order, exactly as shown"
        );
        // The conversation goes on; tool call ids do not restart at `call_0`.
        let turn = loaded.session.prompt("tool").await.unwrap();
        let calls = turn.tool_calls();
        assert_eq!(calls[0].status(), Some(ToolCallStatus::Completed));
        assert_ne!(calls[0].id, "call_0", "a recorded tool call id was reused");
        second.close().await.unwrap();

        // Resumed: nothing replayed, and it goes on.
        let third = client(&store).await;
        let before = third.transcript().len();
        let resumed = third.resume_session(&id).await.unwrap();
        assert!(
            third.transcript()[before..]
                .iter()
                .all(|f| f.method() != Some("session/update")),
            "resume replayed updates"
        );
        assert_eq!(resumed.prompt("again").await.unwrap().text(), "again");
        third.close().await.unwrap();
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn every_update_is_recorded_before_the_client_receives_it() {
    within(async {
        let store = Arc::new(MemoryStore::default());
        let c = client(&store).await;
        let s = c.new_session().await.unwrap();
        let turn = s.prompt("stream 300").await.unwrap();
        assert_eq!(turn.updates().len(), 300);
        // The answer was written after its turn's records were committed.
        let records = store.records(s.id(), None).await.unwrap();
        assert_eq!(records.len(), 1 + 300 + 1, "prompt, chunks, turn end");
        assert!(matches!(&records[300].1, Record::Update { update }
            if serde_json::from_str::<serde_json::Value>(update.get()).unwrap()["content"]["text"] == "chunk 299"));
        assert!(matches!(&records[301].1, Record::TurnEnded { stop_reason } if stop_reason == "end_turn"));
        let cursors: Vec<u64> = records.iter().map(|(c, _)| *c).collect();
        assert!(cursors.windows(2).all(|w| w[0] < w[1]), "{cursors:?}");
        c.close().await.unwrap();
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_turn_is_recorded_too() {
    within(async {
        let store = Arc::new(MemoryStore::default());
        let c = client(&store).await;
        let s = c.new_session().await.unwrap();
        s.cancel_when(|u| matches!(u, SessionUpdate::AgentMessageChunk(_)));
        let turn = s.prompt("sleep").await.unwrap();
        assert_eq!(turn.stop_reason(), Some(StopReason::Cancelled));
        let records = store.records(s.id(), None).await.unwrap();
        assert!(matches!(records.last(), Some((_, Record::TurnEnded { stop_reason })) if stop_reason == "cancelled"));
        let id = s.id().clone();
        c.close().await.unwrap();
        let again = client(&store).await;
        let loaded = again.load_session(&id).await.unwrap();
        assert_eq!(loaded.replayed.len(), 2, "the prompt and `sleeping`");
        again.close().await.unwrap();
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn delete_removes_the_history_and_is_idempotent() {
    within(async {
        let store = Arc::new(MemoryStore::default());
        let c = client(&store).await;
        let s = c.new_session().await.unwrap();
        s.prompt("hello").await.unwrap();
        let id = s.id().clone();
        assert_eq!(c.delete_session(&id).await.unwrap(), json!({}));
        assert!(c.all_sessions(None).await.unwrap().is_empty());
        assert_eq!(c.delete_session(&id).await.unwrap(), json!({}));
        let e = c
            .load_session(&id)
            .await
            .expect_err("loaded a deleted session");
        assert!(matches!(e, Error::Rpc { code: -32002, .. }), "{e}");
        // Deleting an open session closed it on this connection too.
        assert_eq!(s.prompt("after").await.unwrap().error_code(), Some(-32002));
        c.close().await.unwrap();
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn list_pages_through_more_sessions_than_one_page() {
    within(async {
        let store = Arc::new(MemoryStore::default());
        let c = client(&store).await;
        let mut ids = Vec::new();
        for _ in 0..120 {
            ids.push(json!(c.new_session().await.unwrap().id()));
        }
        let first = c.list_sessions(None, None).await.unwrap();
        assert_eq!(first["sessions"].as_array().unwrap().len(), 50);
        assert!(first["nextCursor"].is_string(), "{first}");
        let all = c.all_sessions(None).await.unwrap();
        let mut listed: Vec<_> = all.iter().map(|s| s["sessionId"].clone()).collect();
        assert_eq!(listed.len(), 120, "each session exactly once");
        // Newest first.
        assert_eq!(listed[0], ids[119]);
        listed.sort_by_key(|v| v.to_string());
        listed.dedup();
        assert_eq!(listed.len(), 120);
        let e = c
            .list_sessions(None, Some("not a cursor"))
            .await
            .unwrap_err();
        assert!(matches!(e, Error::Rpc { code: -32602, .. }), "{e}");
        c.close().await.unwrap();
    })
    .await;
}

/// A title the agent gives the session (`session_info_update`) is what `session/list` shows,
/// also after a restart; a cleared one is gone.
#[tokio::test(start_paused = true)]
async fn session_list_shows_the_title_the_agent_set() {
    within(async {
        let store = Arc::new(MemoryStore::default());
        let first = client(&store).await;
        let s = first.new_session().await.unwrap();
        let listed = first.all_sessions(None).await.unwrap();
        assert!(listed[0]["title"].is_null(), "{listed:?}");
        s.prompt("title Fixing the parser").await.unwrap();
        let id = s.id().clone();
        first.close().await.unwrap();

        let second = client(&store).await;
        let listed = second.all_sessions(None).await.unwrap();
        assert_eq!(listed[0]["sessionId"], json!(id));
        assert_eq!(listed[0]["title"], "Fixing the parser", "{listed:?}");
        let loaded = second.load_session(&id).await.unwrap();
        loaded.session.prompt("title").await.unwrap();
        let listed = second.all_sessions(None).await.unwrap();
        assert!(listed[0]["title"].is_null(), "{listed:?}");
        second.close().await.unwrap();
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn with_a_store_the_authors_load_session_gives_the_setup_after_the_runtimes_replay() {
    within(async {
        let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::default());
        let serve = || Server::new(SetsUpReopened).shared_store(store.clone());
        let first = TestClient::builder().serve(serve()).await.unwrap();
        let s = first.new_session().await.unwrap();
        let id = s.id().clone();
        let turn = s.prompt("hello").await.unwrap();
        first.close().await.unwrap();

        let second = TestClient::builder().serve(serve()).await.unwrap();
        let loaded = second.load_session(&id).await.unwrap();
        let mut replayed: Vec<_> = loaded.replayed.iter().map(|u| json!(u)).collect();
        replayed[0].as_object_mut().unwrap().remove("messageId");
        assert_eq!(
            replayed,
            as_seen("hello", &turn),
            "replayed once, by the runtime"
        );
        let answer = loaded.session.new_session_response();
        assert_eq!(answer["_meta"]["setUpBy"], "load_session", "{answer}");
        let resumed = second.resume_session(&id).await.unwrap();
        let answer = resumed.new_session_response();
        assert_eq!(answer["_meta"]["setUpBy"], "load_session", "{answer}");
        second.close().await.unwrap();
    })
    .await;
}
