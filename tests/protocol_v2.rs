//! Protocol v2, in process (`TestClient`, raw v2 frames, a paused clock): the same agent code
//! as a v1 agent, negotiated per connection. Every frame the agent writes on a v2 connection
//! is read as the schema crate's v2 type (`acp::schema::v2`), and every rule of the v2 turn
//! lifecycle has a test: the prompt answered once accepted with its user message's id, the
//! prompt echoed, `running` → `requires_action` while a permission waits → `running` → `idle`
//! with the stop reason; prompts queued FIFO, a cancel answering the queued ones `-32800`;
//! nothing for a session after its turn's `idle`; updates as upserts; resume with and without
//! replay; close during a turn; a repeated idempotency key.
#![cfg(feature = "v2")]

use std::path::PathBuf;

use acp::schema::{StopReason, v2};
use acp::store::MemoryStore;
use acp::testing::{Frame, TestClient};
use acp::{Prompt, Session};
use serde_json::{Value, json};

/// A frame's message, as an `Option` (for `filter_map` and `?`).
trait Json {
    fn json(&self) -> Option<Value>;
}

impl Json for Frame {
    fn json(&self) -> Option<Value> {
        Some(self.message.clone())
    }
}

/// A small agent: `stream N` streams N chunks; `write` asks permission through a tool;
/// `wait` runs until cancelled; `plan` sends a plan; `fail` fails.
#[derive(Default)]
struct Two;

#[acp::agent(name = "two")]
impl Two {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let text = prompt.text();
        let mut words = text.split_whitespace();
        match words.next() {
            Some("stream") => {
                let n: usize = words.next().and_then(|n| n.parse().ok()).unwrap_or(3);
                for i in 0..n {
                    cx.message(format!("chunk {i} ")).await?;
                }
            }
            Some("write") => {
                let out = cx
                    .call_tool("write", json!({"path": "/w/a.txt", "content": "hi"}))
                    .await;
                cx.message(format!("{out:?}")).await?;
            }
            Some("wait") => {
                cx.message("waiting").await?;
                cx.cancelled().await;
                return Ok(StopReason::Cancelled);
            }
            Some("plan") => {
                cx.plan(vec![acp::schema::PlanEntry::new(
                    "step",
                    acp::schema::PlanEntryPriority::High,
                    acp::schema::PlanEntryStatus::Pending,
                )])
                .await?;
            }
            Some("fail") => return Err(acp::Error::msg("it went wrong")),
            Some("run") => {
                let command: Vec<&str> = words.collect();
                cx.call_tool("run", json!({"command": command.join(" ")}))
                    .await?;
            }
            _ => cx.message(text.clone()).await?,
        }
        Ok(StopReason::EndTurn)
    }

    /// Runs a shell command on the agent's machine (v2 has no client terminals).
    ///
    /// # Arguments
    /// - `command`: the shell command.
    #[acp::tool(kind = "execute", title = "Run {command}")]
    async fn run(&self, cx: &Session, command: String) -> acp::Result<acp::Terminal> {
        let terminal = cx.terminal().create("sh", ["-c", command.as_str()]).await?;
        terminal.wait_for_exit().await?;
        Ok(terminal)
    }

    /// Writes a file (pretend), after asking.
    ///
    /// # Arguments
    /// - `path`: where.
    /// - `content`: what.
    #[acp::tool(kind = "edit", title = "Write {path}", permission)]
    async fn write(&self, cx: &Session, path: PathBuf, content: String) -> acp::Result<String> {
        let _ = cx;
        Ok(format!(
            "wrote {} bytes to {}",
            content.len(),
            path.display()
        ))
    }
}

/// A v2 connection to [`Two`] with a memory store, holding permission requests.
async fn connect() -> TestClient {
    let server = acp::Server::new(Two).store(MemoryStore::new());
    let client = TestClient::builder()
        .skip_initialize()
        .hold("session/request_permission")
        .serve(server)
        .await
        .expect("connecting");
    let init = client
        .request(
            "initialize",
            json!({"protocolVersion": 2, "info": {"name": "t", "version": "1"}, "capabilities": {}}),
        )
        .await
        .expect("initialize");
    let init: v2::InitializeResponse =
        serde_json::from_value(init).expect("a v2 initialize answer");
    assert_eq!(init.protocol_version, acp::schema::ProtocolVersion::V2);
    client
}

async fn new_session(client: &TestClient) -> String {
    new_session_in(client, "/w").await
}

async fn new_session_in(client: &TestClient, cwd: &str) -> String {
    let answer = client
        .request("session/new", json!({"cwd": cwd}))
        .await
        .expect("session/new");
    let answer: v2::NewSessionResponse = serde_json::from_value(answer).expect("v2 answer");
    answer.session_id.0.to_string()
}

/// The update of a `session/update` frame (checked as a v2 update), if it is one.
fn update(frame: &Frame) -> Option<Value> {
    let message = frame.json()?;
    if message.get("method")? != "session/update" {
        return None;
    }
    let update = message["params"]["update"].clone();
    let _: v2::SessionUpdate = serde_json::from_value(update.clone())
        .unwrap_or_else(|e| panic!("not a v2 session update ({e}): {update}"));
    Some(update)
}

fn kind(update: &Value) -> String {
    let kind = update["sessionUpdate"].as_str().unwrap_or_default();
    match update["state"].as_str() {
        Some(state) => format!("{kind}:{state}"),
        None => kind.to_owned(),
    }
}

/// Frames until the `idle` state update, with their kinds (`answer:<id>` for answers).
async fn until_idle(client: &TestClient) -> (Vec<String>, Vec<Frame>) {
    let mut kinds = Vec::new();
    let mut frames = Vec::new();
    loop {
        let frame = client.next_frame().await.expect("a frame before idle");
        let message = frame.json().expect("JSON");
        let k = match update(&frame) {
            Some(u) => kind(&u),
            None if message.get("id").is_some() && message.get("method").is_none() => {
                format!("answer:{}", message["id"])
            }
            None => message["method"].as_str().unwrap_or("?").to_owned(),
        };
        let idle = k == "state_update:idle";
        kinds.push(k);
        frames.push(frame);
        if idle {
            return (kinds, frames);
        }
    }
}

fn prompt(client: &TestClient, session: &str, text: &str) -> Value {
    client.send_request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
    )
}

#[tokio::test(start_paused = true)]
async fn a_client_asking_for_2_or_3_gets_2_and_one_asking_for_1_gets_1() {
    for (asked, got) in [(3, 2), (1, 1)] {
        let server = acp::Server::new(Two).store(MemoryStore::new());
        let client = TestClient::builder()
            .skip_initialize()
            .serve(server)
            .await
            .unwrap();
        let params = if asked >= 2 {
            json!({"protocolVersion": asked, "info": {"name": "t", "version": "1"}, "capabilities": {}})
        } else {
            json!({"protocolVersion": asked, "clientCapabilities": {}})
        };
        let answer = client.request("initialize", params).await.unwrap();
        assert_eq!(answer["protocolVersion"], got);
        if got == 2 {
            assert!(answer.get("agentCapabilities").is_none(), "{answer}");
            assert!(answer["capabilities"]["session"].is_object(), "{answer}");
            assert_eq!(answer["info"]["name"], "two");
        } else {
            assert!(answer["agentCapabilities"].is_object(), "{answer}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_turn_is_answered_on_acceptance_echoed_and_told_by_state_updates() {
    let client = connect().await;
    let session = new_session(&client).await;
    let id = prompt(&client, &session, "stream 3");
    let (kinds, frames) = until_idle(&client).await;
    assert_eq!(
        kinds,
        [
            format!("answer:{id}"),
            "user_message".into(),
            "state_update:running".into(),
            "agent_message_chunk".into(),
            "agent_message_chunk".into(),
            "agent_message_chunk".into(),
            "state_update:idle".into(),
        ]
    );
    let answer: v2::PromptResponse =
        serde_json::from_value(frames[0].json().unwrap()["result"].clone()).expect("v2 answer");
    let echo = update(&frames[1]).unwrap();
    assert_eq!(echo["messageId"], answer.message_id.0.as_ref());
    assert_eq!(echo["content"][0]["text"], "stream 3");
    for chunk in &frames[3..6] {
        assert!(update(chunk).unwrap()["messageId"].is_string());
    }
    assert_eq!(update(&frames[6]).unwrap()["stopReason"], "end_turn");
}

#[tokio::test(start_paused = true)]
async fn a_permission_request_reports_requires_action_while_it_waits() {
    let client = connect().await;
    let session = new_session(&client).await;
    prompt(&client, &session, "write");
    let held = client
        .next_request("session/request_permission")
        .await
        .expect("a permission request");
    let params = held.params().clone();
    let _: v2::RequestPermissionRequest =
        serde_json::from_value(params.clone()).expect("v2 permission params");
    assert_eq!(params["subject"]["type"], "tool_call");
    assert_eq!(params["title"], "Write /w/a.txt");
    let before: Vec<String> = client
        .take_unread()
        .iter()
        .filter_map(update)
        .map(|u| kind(&u))
        .collect();
    assert_eq!(
        before.last().map(String::as_str),
        Some("state_update:requires_action"),
        "{before:?}"
    );
    assert!(!before.iter().any(|k| k == "tool_call"), "{before:?}");
    let option = params["options"][0]["optionId"].clone();
    held.respond(json!({"outcome": {"outcome": "selected", "optionId": option}}));
    let (kinds, _) = until_idle(&client).await;
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("state_update:running"),
        "{kinds:?}"
    );
    assert!(kinds.contains(&"tool_call_update".to_owned()), "{kinds:?}");
}

#[tokio::test(start_paused = true)]
async fn prompts_queue_in_order_and_a_cancel_refuses_the_queued_ones() {
    let client = connect().await;
    let session = new_session(&client).await;
    let first = prompt(&client, &session, "wait");
    // The first turn runs: its answer, echo, running and "waiting".
    client
        .wait_for("the first turn's message", |f| {
            update(f).is_some_and(|u| u["content"]["text"] == "waiting")
        })
        .await
        .unwrap();
    let second = prompt(&client, &session, "queued one");
    let third = prompt(&client, &session, "queued two");
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    // Queued: not answered while the first runs.
    let early: Vec<Value> = client
        .take_unread()
        .iter()
        .filter_map(Frame::json)
        .collect();
    assert!(
        !early
            .iter()
            .any(|m| m.get("id") == Some(&second) || m.get("id") == Some(&third)),
        "{early:?}"
    );
    let _ = first;
    client.notify("session/cancel", json!({"sessionId": session}));
    let (kinds, frames) = until_idle(&client).await;
    let idle = update(frames.last().unwrap()).unwrap();
    assert_eq!(idle["stopReason"], "cancelled", "{kinds:?}");
    // The queued prompts are refused -32800 (cancelled), each once.
    for id in [&second, &third] {
        let answer = client
            .wait_for("a queued prompt's answer", |f| {
                f.json().is_some_and(|m| m.get("id") == Some(id))
            })
            .await
            .unwrap();
        assert_eq!(answer.json().unwrap()["error"]["code"], -32800);
    }
    client.take_unread();
    // Queued without a cancel: run after, in order.
    let a = prompt(&client, &session, "stream 1");
    let b = prompt(&client, &session, "echo b");
    let (first_turn, _) = until_idle(&client).await;
    assert_eq!(first_turn.first(), Some(&format!("answer:{a}")));
    let (second_turn, frames) = until_idle(&client).await;
    assert_eq!(second_turn.first(), Some(&format!("answer:{b}")));
    assert!(
        frames
            .iter()
            .filter_map(update)
            .any(|u| u["content"]["text"] == "echo b")
    );
}

#[tokio::test(start_paused = true)]
async fn nothing_for_a_session_follows_its_idle() {
    let client = connect().await;
    let session = new_session(&client).await;
    for text in ["stream 50", "plan", "fail"] {
        prompt(&client, &session, text);
        until_idle(&client).await;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let after: Vec<Value> = client
            .take_unread()
            .iter()
            .filter_map(Frame::json)
            .filter(|m| m["params"]["sessionId"] == session.as_str())
            .collect();
        assert!(after.is_empty(), "after the idle of `{text}`: {after:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_failed_turn_ends_idle_with_the_error_stop_reason_and_plans_are_plan_updates() {
    let client = connect().await;
    let session = new_session(&client).await;
    prompt(&client, &session, "plan");
    let (kinds, frames) = until_idle(&client).await;
    assert!(kinds.contains(&"plan_update".to_owned()), "{kinds:?}");
    assert!(!kinds.contains(&"plan".to_owned()));
    let plan = frames
        .iter()
        .filter_map(update)
        .find(|u| kind(u) == "plan_update")
        .unwrap();
    assert_eq!(plan["plan"]["type"], "items");
    prompt(&client, &session, "fail");
    let (_, frames) = until_idle(&client).await;
    let idle = update(frames.last().unwrap()).unwrap();
    assert_eq!(idle["stopReason"], "error", "{idle}");
    assert!(
        idle["error"]["message"]
            .as_str()
            .unwrap()
            .contains("it went wrong")
    );
}

#[tokio::test(start_paused = true)]
async fn resume_replays_from_the_start_or_not_at_all_and_reports_the_state() {
    let client = connect().await;
    let session = new_session(&client).await;
    prompt(&client, &session, "stream 2");
    until_idle(&client).await;
    client
        .request("session/close", json!({"sessionId": session}))
        .await
        .unwrap();
    client.take_unread();

    let id = client.send_request(
        "session/resume",
        json!({"sessionId": session, "cwd": "/w", "replayFrom": {"type": "start"}}),
    );
    let mut kinds = Vec::new();
    loop {
        let frame = client.next_frame().await.unwrap();
        if frame.json().unwrap().get("id") == Some(&id) {
            let _: v2::ResumeSessionResponse =
                serde_json::from_value(frame.json().unwrap()["result"].clone())
                    .expect("a v2 resume answer");
            break;
        }
        kinds.push(kind(&update(&frame).expect("an update before the answer")));
    }
    assert_eq!(
        kinds,
        [
            "user_message_chunk",
            "agent_message_chunk",
            "agent_message_chunk",
            "replay_complete",
            "state_update:idle",
        ]
    );
    client
        .request("session/close", json!({"sessionId": session}))
        .await
        .unwrap();
    client.take_unread();
    client
        .request("session/resume", json!({"sessionId": session, "cwd": "/w"}))
        .await
        .unwrap();
    let kinds: Vec<String> = client
        .take_unread()
        .iter()
        .filter_map(update)
        .map(|u| kind(&u))
        .collect();
    assert_eq!(kinds, ["state_update:idle"]);
    let listed = client.request("session/list", json!({})).await.unwrap();
    let listed: v2::ListSessionsResponse = serde_json::from_value(listed).expect("v2 list");
    assert_eq!(listed.sessions.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn close_during_a_turn_ends_it_idle_cancelled_before_the_answer() {
    let client = connect().await;
    let session = new_session(&client).await;
    prompt(&client, &session, "wait");
    client
        .wait_for("the turn's message", |f| {
            update(f).is_some_and(|u| u["content"]["text"] == "waiting")
        })
        .await
        .unwrap();
    let close = client.send_request("session/close", json!({"sessionId": session}));
    let (_, frames) = until_idle(&client).await;
    assert_eq!(
        update(frames.last().unwrap()).unwrap()["stopReason"],
        "cancelled"
    );
    let answer = client.next_frame().await.unwrap();
    assert_eq!(
        answer.json().unwrap()["id"],
        close,
        "the close answer follows the idle"
    );
}

#[tokio::test(start_paused = true)]
async fn a_repeated_idempotency_key_starts_no_second_turn() {
    let client = connect().await;
    let session = new_session(&client).await;
    let params = json!({
        "sessionId": session,
        "prompt": [{"type": "text", "text": "stream 1"}],
        "idempotencyKey": "key-1",
    });
    let first = client
        .request("session/prompt", params.clone())
        .await
        .unwrap();
    until_idle(&client).await;
    let again = client.request("session/prompt", params).await.unwrap();
    assert_eq!(again["messageId"], first["messageId"]);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let kinds: Vec<String> = client
        .take_unread()
        .iter()
        .filter_map(update)
        .map(|u| kind(&u))
        .collect();
    assert!(kinds.is_empty(), "a second turn ran: {kinds:?}");
}

#[tokio::test(start_paused = true)]
async fn without_a_store_the_baseline_session_methods_answer_that_nothing_is_kept() {
    let client = TestClient::builder()
        .skip_initialize()
        .serve(acp::Server::new(Two).no_store())
        .await
        .unwrap();
    let v2_init =
        json!({"protocolVersion": 2, "info": {"name": "t", "version": "1"}, "capabilities": {}});
    client.request("initialize", v2_init).await.unwrap();
    let listed = client.request("session/list", json!({})).await.unwrap();
    assert_eq!(listed, json!({"sessions": []}));
    let err = client
        .request("session/resume", json!({"sessionId": "gone", "cwd": "/w"}))
        .await
        .expect_err("nothing to resume");
    assert!(err.to_string().contains("-32002"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn v1_methods_that_v2_removed_are_not_found_on_a_v2_connection() {
    let client = connect().await;
    let session = new_session(&client).await;
    for method in ["session/load", "session/set_mode", "authenticate"] {
        let err = client
            .request(
                method,
                json!({"sessionId": session, "cwd": "/w", "modeId": "x"}),
            )
            .await
            .expect_err(method);
        assert!(err.to_string().contains("-32601"), "{method}: {err}");
    }
}

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
        .request(
            "initialize",
            json!({"protocolVersion": 2, "info": {"name": "t", "version": "1"}, "capabilities": {}}),
        )
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
