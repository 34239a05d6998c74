//! Subagents (`cx.subagent`): a tool hands a job to a child session that runs its own work
//! (messages, a tool call with a permission request). What a client that shows subagents
//! sees (v1 with `subagents`, every v2 client), what one that does not sees (never the
//! child's id), failure and panic (the tool call's, not the turn's), cancellation from the
//! parent and of the child alone, the child refusing prompts while its parent drives it, and
//! every frame read strictly as the schema crate's types.

use acp::schema::{
    IdleStopReason, SessionId, SessionUpdate, StateUpdate, StopReason, ToolCallContent,
    ToolCallStatus,
};
use acp::testing::{Direction, Frame, TestClient};
use acp::{Prompt, Session, Subagent};
use serde_json::{Value, json};

/// Delegates every prompt to a subagent through its `task` tool.
struct Lead;

#[acp::agent(name = "lead")]
impl Lead {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let said = match cx.call_tool("task", json!({"job": prompt.text()})).await {
            Ok(out) => format!("delegated: {}", out.to_text()),
            Err(e) => format!("the task failed: {e}"),
        };
        cx.message(said).await?;
        Ok(StopReason::EndTurn)
    }

    /// Hands a job to a helper subagent.
    #[acp::tool(kind = "think", title = "Delegate {job}")]
    async fn task(&self, cx: &Session, job: String) -> acp::Result<String> {
        let helper = Subagent::new("Helper")
            .description("Does the job")
            .instructions(job.clone());
        cx.subagent(helper, |child| async move {
            child.message("working on it\n").await?;
            match job.as_str() {
                "write" => {
                    let out = child
                        .call_tool("write_note", json!({"text": "hello"}))
                        .await?;
                    Ok(out.to_text())
                }
                "fail" => Err(acp::Error::msg("the helper gave up")),
                "panic" => panic!("the helper broke"),
                "wait" => {
                    child.cancelled().await;
                    Err(acp::Error::Cancelled)
                }
                _ => Ok("done".to_owned()),
            }
        })
        .await
    }

    /// Writes a note, after asking.
    #[acp::tool(kind = "edit", title = "Write a note", permission)]
    async fn write_note(&self, _cx: &Session, text: String) -> acp::Result<String> {
        Ok(format!("noted {text}"))
    }
}

/// Every `session/update` and permission request the agent wrote, read strictly as the
/// schema crate's type of the version: it parses and writes back as the same JSON.
fn assert_schema_frames(frames: &[Frame], protocol: u16) {
    let update = acp::schema::CLIENT_METHOD_NAMES.session_update;
    let permission = acp::schema::CLIENT_METHOD_NAMES.session_request_permission;
    for frame in frames
        .iter()
        .filter(|f| f.direction == Direction::FromAgent)
    {
        let params = frame.message["params"].clone();
        let back = match (protocol, frame.method()) {
            (1, Some(m)) if m == update => roundtrip::<acp::schema::SessionNotification>(&params),
            (1, Some(m)) if m == permission => {
                roundtrip::<acp::schema::RequestPermissionRequest>(&params)
            }
            #[cfg(feature = "v2")]
            (2, Some(m)) if m == update => {
                roundtrip::<acp::schema::v2::UpdateSessionNotification>(&params)
            }
            #[cfg(feature = "v2")]
            (2, Some(m)) if m == permission => {
                roundtrip::<acp::schema::v2::RequestPermissionRequest>(&params)
            }
            _ => continue,
        };
        assert_eq!(back, params, "the frame does not read back as itself");
    }
}

fn roundtrip<T: serde::de::DeserializeOwned + serde::Serialize>(params: &Value) -> Value {
    let typed: T = serde_json::from_value(params.clone())
        .unwrap_or_else(|e| panic!("not a {} ({e}): {params}", std::any::type_name::<T>()));
    serde_json::to_value(typed).unwrap()
}

/// The `sessionId` of every frame the agent wrote that has one (params, or a request's).
fn session_ids(frames: &[Frame]) -> Vec<String> {
    frames
        .iter()
        .filter(|f| f.direction == Direction::FromAgent)
        .filter_map(|f| f.message["params"]["sessionId"].as_str().map(str::to_owned))
        .collect()
}

fn kind(update: &SessionUpdate) -> String {
    serde_json::to_value(update).unwrap()["sessionUpdate"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn connect(protocol: u16, shows: bool) -> TestClient {
    let builder = TestClient::builder().protocol(protocol);
    let builder = if shows { builder.subagents() } else { builder };
    builder.connect(Lead).await.unwrap()
}

/// A client that shows subagents: the child announced on the parent before any of its
/// traffic, its own updates and permission request on its id, the instructions as the two
/// views of one message, the parent's tool call referring to it, its end reported.
async fn a_client_that_shows_subagents_sees_the_child_session(protocol: u16) {
    let client = connect(protocol, protocol == 1).await;
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("write").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert_eq!(turn.text(), "delegated: noted hello");
    let children = turn.subagents();
    assert_eq!(children.len(), 1, "{:?}", turn.updates());
    let child = &children[0];

    // The announcement comes before any frame naming the child.
    let ids = session_ids(turn.frames());
    let first_child_frame = ids
        .iter()
        .position(|id| id == &child.0.to_string())
        .unwrap();
    let announced = turn
        .frames()
        .iter()
        .filter(|f| f.direction == Direction::FromAgent)
        .filter(|f| f.message["params"]["sessionId"].is_string())
        .position(|f| f.message["params"]["update"]["sessionUpdate"] == "subagent_update")
        .unwrap();
    assert!(announced < first_child_frame, "{ids:?}");

    let subagent_updates: Vec<_> = turn
        .updates()
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::SubagentUpdate(s) => Some(s.clone()),
            _ => None,
        })
        .collect();
    let first = &subagent_updates[0];
    assert_eq!(first.title.value().cloned(), Some("Helper".to_owned()));
    assert!(matches!(
        first.state.value().cloned(),
        Some(StateUpdate::Running(_))
    ));
    assert!(
        first
            .capabilities
            .value()
            .cloned()
            .unwrap()
            .cancel
            .is_some()
    );
    let last = subagent_updates.last().unwrap();
    match last.state.value().cloned() {
        Some(StateUpdate::Idle(idle)) => {
            assert_eq!(idle.stop_reason, Some(IdleStopReason::EndTurn));
        }
        other => panic!("the child did not end idle: {other:?}"),
    }

    // The parent's tool call refers to the child and completes with its answer.
    let calls = turn.tool_calls();
    let task = &calls[0];
    assert_eq!(task.status(), Some(ToolCallStatus::Completed));
    assert!(
        task.content
            .iter()
            .any(|c| matches!(c, ToolCallContent::Session(s) if &s.session_id == child)),
        "{:?}",
        task.content
    );

    // The child's own updates: the instructions received, its message, its tool call.
    let of_child = turn.updates_of(child);
    let kinds: Vec<String> = of_child.iter().map(kind).collect();
    assert_eq!(kinds[0], "session_message", "{kinds:?}");
    assert!(
        kinds.contains(&"agent_message_chunk".to_owned()),
        "{kinds:?}"
    );
    assert!(kinds.contains(&"tool_call".to_owned()), "{kinds:?}");
    let SessionUpdate::SessionMessage(received) = &of_child[0] else {
        unreachable!()
    };
    assert_eq!(
        received.sender_session_id.value().cloned(),
        Some(session.id().clone())
    );
    let sent = turn
        .updates()
        .iter()
        .find_map(|u| match u {
            SessionUpdate::SessionMessage(m) => Some(m.clone()),
            _ => None,
        })
        .expect("the sent view of the instructions");
    assert_eq!(
        sent.recipient_session_id.value().cloned(),
        Some(child.clone())
    );
    assert_eq!(
        received.sender_message_id.value().cloned(),
        Some(sent.message_id.clone())
    );

    // v2 reports the child's own work state on its session too: running, then idle.
    if protocol == 2 {
        let states: Vec<String> = turn
            .frames()
            .iter()
            .filter(|f| f.direction == Direction::FromAgent)
            .filter(|f| f.message["params"]["sessionId"] == json!(child))
            .filter(|f| f.message["params"]["update"]["sessionUpdate"] == "state_update")
            .map(|f| f.message["params"]["update"]["state"].to_string())
            .collect();
        assert_eq!(
            states.first().map(String::as_str),
            Some("\"running\""),
            "{states:?}"
        );
        assert_eq!(
            states.last().map(String::as_str),
            Some("\"idle\""),
            "{states:?}"
        );
    }

    // The permission request is about the child's call, on the child's session.
    let asked =
        client.requests_from_agent(acp::schema::CLIENT_METHOD_NAMES.session_request_permission);
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["sessionId"], json!(child));
    assert_schema_frames(turn.frames(), protocol);
}

/// A client without the capability is never sent the child's id: the child's work shows as
/// text in the parent's tool call, and its permission request is asked about that call.
#[tokio::test]
async fn a_client_without_subagents_never_sees_the_childs_id() {
    let client = connect(1, false).await;
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("write").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert_eq!(turn.text(), "delegated: noted hello");
    let parent = session.id().to_string();
    let ids = session_ids(&client.transcript());
    assert!(ids.iter().all(|id| *id == parent), "{ids:?}");
    assert!(turn.subagents().is_empty());
    let calls = turn.tool_calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    let task = &calls[0];
    assert_eq!(task.status(), Some(ToolCallStatus::Completed));
    let text = task.text();
    assert!(text.contains("working on it"), "{text}");
    assert!(text.contains("▸ Write a note"), "{text}");
    let asked =
        client.requests_from_agent(acp::schema::CLIENT_METHOD_NAMES.session_request_permission);
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["sessionId"], json!(parent));
    assert_eq!(asked[0]["toolCall"]["toolCallId"], json!(task.id));
    assert_schema_frames(&client.transcript(), 1);
}

/// The child's failure or panic fails the tool call it runs in, not the turn, and is its
/// `idle` with an `error` stop reason.
async fn the_childs_failure_is_the_tool_calls(protocol: u16) {
    let client = connect(protocol, true).await;
    let session = client.new_session().await.unwrap();
    for (job, says) in [
        ("fail", "the helper gave up"),
        ("panic", "the helper broke"),
    ] {
        let turn = session.prompt(job).await.unwrap();
        assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn), "{job}");
        assert!(turn.text().contains(says), "{}", turn.text());
        let task = &turn.tool_calls()[0];
        assert_eq!(task.status(), Some(ToolCallStatus::Failed));
        let ended = turn.updates().iter().rev().find_map(|u| match u {
            SessionUpdate::SubagentUpdate(s) => s.state.value().cloned(),
            _ => None,
        });
        match ended {
            Some(StateUpdate::Idle(idle)) => match idle.stop_reason.clone() {
                Some(IdleStopReason::Error(e)) => {
                    assert!(e.error.unwrap().message.contains(says));
                }
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
        assert_schema_frames(turn.frames(), protocol);
    }
}

/// Cancelling the parent's turn cancels the child; cancelling the child alone fails only
/// the tool call, and the parent's turn goes on. While the child runs, the client may not
/// prompt it.
async fn cancels_reach_the_child_and_the_child_refuses_prompts(protocol: u16) {
    let client = connect(protocol, true).await;
    let session = client.new_session().await.unwrap();

    // The child alone.
    let prompt = session.start_prompt("wait");
    let announced = session
        .wait_for_update("the subagent announced", |u| {
            matches!(u, SessionUpdate::SubagentUpdate(_))
        })
        .await
        .unwrap();
    let SessionUpdate::SubagentUpdate(announced) = announced else {
        unreachable!()
    };
    let child: SessionId = announced.session_id;
    let refused = client
        .request(
            acp::schema::AGENT_METHOD_NAMES.session_prompt,
            json!({"sessionId": child, "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await;
    match refused {
        Err(acp::Error::Rpc { code, message, .. }) => {
            assert_eq!(code, -32600, "{message}");
            assert!(message.contains("subagent"), "{message}");
        }
        other => panic!("a live child was prompted: {other:?}"),
    }
    client.notify(
        acp::schema::AGENT_METHOD_NAMES.session_cancel,
        json!({"sessionId": child}),
    );
    // The tool call fails; the parent's turn goes on and ends as usual.
    session
        .wait_for_update("the parent's answer", |u| {
            matches!(u, SessionUpdate::AgentMessageChunk(c)
                if matches!(&c.content, acp::schema::ContentBlock::Text(t)
                    if t.text.contains("the task failed")))
        })
        .await
        .unwrap();
    if protocol == 1 {
        let answer = client.wait_for_response(&prompt).await.unwrap();
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    } else {
        client
            .wait_for("the turn's idle", |f| {
                f.message["params"]["update"]["sessionUpdate"] == "state_update"
                    && f.message["params"]["update"]["state"] == "idle"
                    && f.message["params"]["sessionId"] == json!(session.id())
            })
            .await
            .unwrap();
    }

    // The parent's turn: the child is cancelled with it.
    session.cancel_when(|u| matches!(u, SessionUpdate::SubagentUpdate(_)));
    let turn = session.prompt("wait").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::Cancelled));
    let ended = turn.updates().iter().rev().find_map(|u| match u {
        SessionUpdate::SubagentUpdate(s) => s.state.value().cloned(),
        _ => None,
    });
    assert!(
        matches!(&ended, Some(StateUpdate::Idle(i)) if i.stop_reason == Some(IdleStopReason::Cancelled)),
        "{ended:?}"
    );
}

acp::testing::on_both_versions!(
    a_client_that_shows_subagents_sees_the_child_session,
    the_childs_failure_is_the_tool_calls,
    cancels_reach_the_child_and_the_child_refuses_prompts,
);
