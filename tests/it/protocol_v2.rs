//! Protocol v2, in process (`TestClient`, raw v2 frames, a paused clock): the same agent code
//! as a v1 agent, negotiated per connection. Every frame the agent writes on a v2 connection
//! is read as the schema crate's v2 type (`acp::schema::v2`), and every rule of the v2 turn
//! lifecycle has a test: the prompt answered once accepted with its user message's id, the
//! prompt echoed, `running` → `requires_action` while a permission waits → `running` → `idle`
//! with the stop reason; prompts queued FIFO, a cancel answering the queued ones `-32800`;
//! nothing for a session after its turn's `idle`; updates as upserts; resume with and without
//! replay; close during a turn; a repeated idempotency key. (Sessions across versions and
//! agent-owned terminals: `tests/protocol_v2_sessions.rs`.)
#![cfg(feature = "v2")]

use crate::support::v2 as common;

use acp::schema::v2;
use acp::store::MemoryStore;
use acp::testing::{Frame, TestClient};
use common::{
    Json, Two, connect, kind, new_session, new_session_in, prompt, unread_for, until_idle, update,
    v2_initialize,
};
use serde_json::{Value, json};

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
        let after = unread_for(&client, &session);
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
async fn a_retry_while_the_first_prompt_is_running_or_queued_starts_no_second_turn() {
    let client = connect().await;
    let session = new_session(&client).await;
    let params = |text: &str, key: &str| json!({"sessionId": session, "prompt": [{"type": "text", "text": text}], "idempotencyKey": key});
    // The first prompt runs, waiting for the user's permission; the second waits behind it.
    let running = client
        .request("session/prompt", params("write", "key-a"))
        .await
        .unwrap();
    let held = client
        .next_request("session/request_permission")
        .await
        .expect("a permission request");
    let queued = client.send_request("session/prompt", params("stream 1", "key-b"));
    // Retries of both while they run and wait: the same message ids, at once.
    let again = client
        .request("session/prompt", params("write", "key-a"))
        .await
        .unwrap();
    assert_eq!(again["messageId"], running["messageId"]);
    let retried = client
        .request("session/prompt", params("stream 1", "key-b"))
        .await
        .unwrap();
    let option = held.params()["options"][0]["optionId"].clone();
    held.respond(json!({"outcome": {"outcome": "selected", "optionId": option}}));
    let (first, _) = until_idle(&client).await;
    let (second, frames) = until_idle(&client).await;
    let answer = frames
        .iter()
        .find(|f| f.is_response_to(&queued))
        .expect("the queued prompt answered when its turn started");
    assert_eq!(
        answer.json().unwrap()["result"]["messageId"],
        retried["messageId"]
    );
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let later: Vec<String> = client
        .take_unread()
        .iter()
        .filter_map(update)
        .map(|u| kind(&u))
        .collect();
    // Each turn echoes its prompt once, as its user message.
    let runs = |kinds: &[String]| kinds.iter().filter(|k| *k == "user_message").count();
    assert_eq!(
        (runs(&first), runs(&second), runs(&later)),
        (1, 1, 0),
        "one turn per prompt: {first:?} {second:?} {later:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn without_a_store_the_baseline_session_methods_answer_that_nothing_is_kept() {
    let client = TestClient::builder()
        .skip_initialize()
        .serve(acp::Server::new(Two).no_store())
        .await
        .unwrap();
    client.request("initialize", v2_initialize()).await.unwrap();
    let listed = client.request("session/list", json!({})).await.unwrap();
    assert_eq!(listed, json!({"sessions": []}));
    let err = client
        .request("session/resume", json!({"sessionId": "gone", "cwd": "/w"}))
        .await
        .expect_err("nothing to resume");
    assert!(err.to_string().contains("-32002"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn tool_calls_and_terminals_that_cannot_be_cancelled_are_refused() {
    let client = connect().await;
    let session = new_session(&client).await;
    for (method, params, says) in [
        (
            "tool_call/cancel",
            json!({"sessionId": session, "toolCallId": "call_0"}),
            "not cancellable",
        ),
        (
            "terminal/cancel",
            json!({"sessionId": session, "terminalId": "t"}),
            "is not running",
        ),
    ] {
        let err = client.request(method, params).await.expect_err(method);
        assert!(err.to_string().contains("-32602"), "{method}: {err}");
        assert!(err.to_string().contains(says), "{method}: {err}");
    }
    let err = client
        .request(
            "tool_call/cancel",
            json!({"sessionId": "nope", "toolCallId": "c"}),
        )
        .await
        .expect_err("unknown session");
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

/// A terminal still running when the turn ends is the idle's background work, and the
/// client stops it alone with `terminal/cancel` (its process group, not the session).
#[tokio::test]
async fn a_terminal_left_running_is_background_work_the_client_can_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect().await;
    let session = new_session_in(&client, dir.path().to_str().unwrap()).await;
    prompt(&client, &session, "background sleep 30");
    let (_, frames) = until_idle(&client).await;
    let updates: Vec<Value> = frames.iter().filter_map(update).collect();
    let idle = updates.last().unwrap();
    let background = idle["background"].as_array().expect("a background list");
    assert_eq!(background.len(), 1, "{idle}");
    assert_eq!(background[0]["type"], "terminal");
    let id = background[0]["terminalId"].as_str().unwrap().to_owned();
    // Its first update advertised that it can be cancelled.
    assert!(
        updates
            .iter()
            .any(|u| u["sessionUpdate"] == "terminal_update"
                && u["terminalId"] == id.as_str()
                && u["capabilities"]["cancel"].is_object()),
        "{updates:?}"
    );

    let cancel = json!({"sessionId": session, "terminalId": id});
    let answer = client.request("terminal/cancel", cancel.clone()).await;
    assert_eq!(answer.unwrap(), json!({}));
    let exited = client
        .wait_for("the cancelled terminal's exit", |f| {
            update(f).is_some_and(|u| {
                u["sessionUpdate"] == "terminal_update"
                    && u["terminalId"] == id.as_str()
                    && u["exitStatus"].is_object()
            })
        })
        .await
        .unwrap();
    let status = &update(&exited).unwrap()["exitStatus"];
    assert!(status["signal"].is_string(), "{status}");
    // Gone: not cancellable again, and no longer background work.
    let err = client.request("terminal/cancel", cancel).await.unwrap_err();
    assert!(err.to_string().contains("-32602"), "{err}");
    prompt(&client, &session, "hi");
    let (_, frames) = until_idle(&client).await;
    let idle = update(frames.last().unwrap()).unwrap();
    assert!(idle.get("background").is_none(), "{idle}");
}

/// The tokens a turn reports are added up and told with its end, on both versions (to a v1
/// client that asked for them: unstable in v1).
#[tokio::test]
async fn tokens_a_turn_reports_are_added_up_in_the_v1_answer_and_the_v2_idle() {
    for protocol in [1, 2] {
        let client = TestClient::builder()
            .protocol(protocol)
            .end_turn_usage(true)
            .connect(Two)
            .await
            .unwrap();
        let session = client.new_session().await.unwrap();
        let turn = session.prompt("usage").await.unwrap();
        assert_eq!(
            turn.answer().unwrap()["usage"],
            json!({"totalTokens": 45, "inputTokens": 30, "outputTokens": 15, "thoughtTokens": 4}),
            "protocol {protocol}"
        );
        // A turn that reports none says nothing of it.
        let turn = session.prompt("hi").await.unwrap();
        assert!(
            turn.answer().unwrap().get("usage").is_none(),
            "protocol {protocol}"
        );
    }
}

/// v1's end-of-turn `usage` is unstable: a client that did not ask for it (or declined) gets
/// an answer its stable schema reads, without it; v2 tells it on `idle` whatever the key says.
#[tokio::test]
async fn a_v1_client_that_did_not_ask_for_the_turns_tokens_gets_no_usage() {
    for (protocol, builder) in [
        (1, TestClient::builder()),
        (1, TestClient::builder().end_turn_usage(false)),
        (2, TestClient::builder().end_turn_usage(false)),
    ] {
        let client = builder.protocol(protocol).connect(Two).await.unwrap();
        let session = client.new_session().await.unwrap();
        let turn = session.prompt("usage").await.unwrap();
        let answer = turn.answer().unwrap();
        if protocol == 1 {
            assert!(answer.get("usage").is_none(), "{answer}");
            // Every key is one the stable schema has.
            let keys: Vec<&String> = answer.as_object().unwrap().keys().collect();
            assert!(
                keys.iter()
                    .all(|k| ["stopReason", "_meta"].contains(&k.as_str())),
                "{keys:?}"
            );
        } else {
            assert_eq!(answer["usage"]["totalTokens"], 45, "{answer}");
        }
    }
}
