//! Runtime behaviour through the in-process test client: ordering, capabilities, cancellation,
//! client calls, errors, the writer. Each test is named for the guarantee it checks.
//!
//! Every test runs on a paused tokio clock: time only moves when every task is idle, so the
//! timing of the runtime (the cancel grace, sleeps) is exact, and the test client's deadline
//! fails a stuck agent at once instead of hanging the test.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_core::schema::{
    AvailableCommand, PermissionOption, PermissionOptionKind, PlanEntry, PlanEntryPriority,
    PlanEntryStatus, SessionUpdate, StopReason, ToolCallStatus, ToolKind,
};
use acp_core::testing::{Direction, MemoryFs, PermissionPolicy, TerminalStub, TestClient};
use acp_core::{Agent, Error, Prompt, Result, Session, SessionSetup};
use serde_json::json;

/// Guards a test body against hangs (on the paused clock it fires as soon as everything is
/// stuck); never a performance assertion.
async fn within<T>(fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), fut)
        .await
        .expect("the test hung")
}

#[derive(Default)]
struct Probe {
    /// Results of client calls the agent made, for the test to inspect.
    seen: Arc<Mutex<Vec<String>>>,
    leaked: Arc<Mutex<Option<Session>>>,
}

impl Probe {
    fn note(&self, s: impl Into<String>) {
        self.seen.lock().unwrap().push(s.into());
    }
}

impl Agent for Probe {
    async fn new_session(&self, _cx: &Session) -> Result<SessionSetup> {
        Ok(SessionSetup::default().commands(vec![AvailableCommand::new("help", "Show help")]))
    }

    async fn prompt(&self, cx: &Session, prompt: Prompt) -> Result<StopReason> {
        let text = prompt.text();
        let (cmd, arg) = text.split_once(' ').unwrap_or((&text, ""));
        match cmd {
            "stream" => {
                for i in 0..arg.parse::<usize>().unwrap() {
                    cx.message(format!("{i},")).await?;
                }
            }
            "plan" => {
                let entry = |s| PlanEntry::new("step", PlanEntryPriority::High, s);
                cx.plan([entry(PlanEntryStatus::Pending)]).await?;
                cx.thought("thinking").await?;
                cx.plan([entry(PlanEntryStatus::Completed)]).await?;
            }
            "read" => match cx.fs().read_text_file(arg).await {
                Ok(t) => cx.message(t).await?,
                Err(e) => self.note(format!("read: {e} not_found={}", e.is_not_found())),
            },
            "write" => match cx.fs().write_text_file(arg, "written").await {
                Ok(()) => self.note("write: ok"),
                Err(e) => self.note(format!("write: {e}")),
            },
            "ask" => {
                let call = cx
                    .tool_call("Risky")
                    .kind(ToolKind::Execute)
                    .start()
                    .await?;
                let options = vec![
                    PermissionOption::new("yes", "Yes", PermissionOptionKind::AllowOnce),
                    PermissionOption::new("no", "No", PermissionOptionKind::RejectOnce),
                ];
                match call.request_permission(options).await {
                    Ok(choice) => {
                        self.note(format!("ask: {choice}"));
                        call.complete(vec![]).await?;
                    }
                    Err(e) => {
                        self.note(format!("ask: {e}"));
                        return Err(e);
                    }
                }
            }
            "sleep" => {
                cx.message("sleeping").await?;
                cx.cancelled().await;
                // Authors often surface cancellation as an error; the answer is still `cancelled`.
                return Err(Error::msg("interrupted"));
            }
            "stubborn" => loop {
                // Ignores cancellation entirely; the runtime must drop it.
                tokio::time::sleep(Duration::from_millis(5)).await;
            },
            "count" => {
                #[derive(Default)]
                struct Count(std::sync::atomic::AtomicU32);
                let n = cx
                    .state::<Count>()
                    .0
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                cx.message(n.to_string()).await?;
            }
            "panic" => panic!("boom"),
            "fail" => return Err(Error::msg("it broke")),
            "abandon" => {
                let call = cx.tool_call("Abandoned").start().await?;
                drop(call);
            }
            "leave-open" => {
                let call = cx.tool_call("Left open").start().await?;
                std::mem::forget(call);
            }
            "leak" => {
                *self.leaked.lock().unwrap() = Some(cx.clone());
            }
            "term" => {
                let term = cx.terminal().create("make", ["test"]).await?;
                let status = term.wait_for_exit().await?;
                let out = term.output().await?;
                cx.message(format!("{}|{:?}", out.output, status.exit_code))
                    .await?;
                if arg == "drop" {
                    drop(term);
                } else {
                    term.release().await?;
                }
            }
            "term-in-tool" => {
                let call = cx
                    .tool_call("Run make")
                    .kind(ToolKind::Execute)
                    .start()
                    .await?;
                let term = acp_core::in_tool_call(&call, async {
                    assert_eq!(cx.current_tool_call().as_ref(), Some(call.id()));
                    cx.terminal().create("make", ["all"]).await
                })
                .await?;
                assert_eq!(cx.current_tool_call(), None);
                term.release().await?;
                call.complete(vec![]).await?;
            }
            "term-wait" => {
                let term = cx.terminal().create("sleep", ["100"]).await?;
                cx.message("started").await?;
                term.wait_for_exit().await?;
            }
            _ => cx.message(text.clone()).await?,
        }
        Ok(StopReason::EndTurn)
    }
}

async fn client(agent: Probe) -> TestClient {
    TestClient::builder()
        .fs(MemoryFs::new().with("/workspace/a.txt", "alpha"))
        .terminal(TerminalStub::new().output("ok\n").exit_code(3))
        .connect(agent)
        .await
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn initialize_advertises_only_what_is_implemented() {
    let c = TestClient::builder()
        .connect(Probe::default())
        .await
        .unwrap();
    let init = c.initialize_response();
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentCapabilities"]["loadSession"], false);
    assert_eq!(init["authMethods"], json!([]));
    // Not advertised, so not routed.
    let err = c
        .request(
            "session/load",
            json!({"sessionId": "x", "cwd": "/", "mcpServers": []}),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Rpc { code: -32601, .. }), "{err:?}");
    let err = c
        .request("authenticate", json!({"methodId": "x"}))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Rpc { code: -32601, .. }), "{err:?}");
}

#[tokio::test(start_paused = true)]
async fn version_negotiation_answers_the_clients_version_or_our_latest() {
    let c = TestClient::builder()
        .connect(Probe::default())
        .await
        .unwrap();
    // The builder's `initialize` chose v1: a connection keeps the version it negotiated first
    // (a client asking 2 or more on a fresh connection gets 2: tests/protocol_v2.rs).
    for (asked, answered) in [(1, 1), (0, 1), (99, 1)] {
        let init = c
            .request("initialize", json!({"protocolVersion": asked}))
            .await
            .unwrap();
        assert_eq!(init["protocolVersion"], answered, "client asked {asked}");
    }
}

#[tokio::test(start_paused = true)]
async fn chunks_arrive_in_order_and_before_the_answer() {
    within(async {
        let c = client(Probe::default()).await;
        let s = c.new_session().await.unwrap();
        let turn = s.prompt("stream 500").await.unwrap();
        assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
        let expected: String = (0..500).map(|i| format!("{i},")).collect();
        assert_eq!(turn.text(), expected);
        // Nothing of the turn after its answer.
        let answer_at = turn
            .frames()
            .iter()
            .position(|f| f.direction == Direction::FromAgent && f.message.get("result").is_some())
            .unwrap();
        assert!(
            turn.frames()[answer_at + 1..]
                .iter()
                .all(|f| f.method() != Some("session/update"))
        );
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn plans_and_thoughts_are_sent_as_updates() {
    let c = client(Probe::default()).await;
    let s = c.new_session().await.unwrap();
    let turn = s.prompt("plan").await.unwrap();
    let plans = turn.plans();
    assert_eq!(plans.len(), 2);
    assert_eq!(plans[1].entries[0].status, PlanEntryStatus::Completed);
    assert_eq!(turn.thoughts(), "thinking");
}

#[tokio::test(start_paused = true)]
async fn slash_commands_follow_the_new_session_answer() {
    let c = client(Probe::default()).await;
    let s = c.new_session().await.unwrap();
    s.wait_for_update("the commands", |u| {
        matches!(u, SessionUpdate::AvailableCommandsUpdate(_))
    })
    .await
    .unwrap();
    let t = c.transcript();
    let answer = t
        .iter()
        .position(|f| f.message["result"]["sessionId"] == json!(s.id()))
        .unwrap();
    let cmds = t
        .iter()
        .position(|f| f.message["params"]["update"]["sessionUpdate"] == "available_commands_update")
        .unwrap();
    assert!(
        answer < cmds,
        "the commands came before the session was answered"
    );
}

#[tokio::test(start_paused = true)]
async fn fs_calls_go_through_the_client() {
    let agent = Probe::default();
    let seen = agent.seen.clone();
    let c = client(agent).await;
    let s = c.new_session().await.unwrap();
    assert_eq!(s.prompt("read a.txt").await.unwrap().text(), "alpha");
    s.prompt("read missing.txt").await.unwrap();
    s.prompt("write b.txt").await.unwrap();
    assert_eq!(c.fs().read("/workspace/b.txt").as_deref(), Some("written"));
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen[0].starts_with("read: ") && seen[0].ends_with("not_found=true"),
        "{seen:?}"
    );
    assert_eq!(seen[1], "write: ok");
}

#[tokio::test(start_paused = true)]
async fn fs_without_the_capability_fails_without_sending_anything() {
    let agent = Probe::default();
    let seen = agent.seen.clone();
    let c = TestClient::builder().connect(agent).await.unwrap();
    let s = c.new_session().await.unwrap();
    s.prompt("read a.txt").await.unwrap();
    s.prompt("write b.txt").await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert!(seen[0].contains("fs.readTextFile"), "{seen:?}");
    assert!(seen[1].contains("fs.writeTextFile"), "{seen:?}");
    assert!(c.requests_from_agent("fs/read_text_file").is_empty());
    assert!(c.requests_from_agent("fs/write_text_file").is_empty());
}

#[tokio::test(start_paused = true)]
async fn permission_answers_reach_the_agent() {
    for (policy, expected) in [
        (PermissionPolicy::AllowOnce, "ask: yes"),
        (PermissionPolicy::RejectOnce, "ask: no"),
    ] {
        let agent = Probe::default();
        let seen = agent.seen.clone();
        let c = TestClient::builder()
            .permissions(policy)
            .connect(agent)
            .await
            .unwrap();
        let s = c.new_session().await.unwrap();
        let turn = s.prompt("ask").await.unwrap();
        assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
        assert_eq!(seen.lock().unwrap()[0], expected);
        assert_eq!(turn.permission_requests().len(), 1);
        let calls = turn.tool_calls();
        assert_eq!(
            calls[0].statuses,
            [ToolCallStatus::Pending, ToolCallStatus::Completed]
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_permission_outcome_ends_the_turn_cancelled() {
    let c = TestClient::builder()
        .permissions(PermissionPolicy::Cancelled)
        .connect(Probe::default())
        .await
        .unwrap();
    let s = c.new_session().await.unwrap();
    let turn = s.prompt("ask").await.unwrap();
    // The client said "cancelled" without a session/cancel: the author saw Error::Cancelled,
    // returned it with `?`, and the turn ends as cancelled.
    assert_eq!(turn.stop_reason(), Some(StopReason::Cancelled));
    assert_eq!(turn.tool_calls()[0].status(), Some(ToolCallStatus::Failed));
}

#[tokio::test(start_paused = true)]
async fn cancel_answers_cancelled_even_when_the_author_returns_an_error() {
    within(async {
        let c = client(Probe::default()).await;
        let s = c.new_session().await.unwrap();
        s.cancel_when(|u| matches!(u, SessionUpdate::AgentMessageChunk(_)));
        let turn = s.prompt("sleep").await.unwrap();
        assert_eq!(turn.stop_reason(), Some(StopReason::Cancelled));
        assert_eq!(turn.text(), "sleeping");
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_turn_that_ignores_cancellation_is_dropped_and_answered() {
    within(async {
        let c = client(Probe::default()).await;
        let s = c.new_session().await.unwrap();
        let (turn, cancelled_at) = tokio::join!(s.prompt("stubborn"), async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            s.cancel();
            tokio::time::Instant::now()
        });
        let waited = cancelled_at.elapsed();
        assert_eq!(turn.unwrap().stop_reason(), Some(StopReason::Cancelled));
        // Exactly the 50 ms grace on the paused clock.
        assert!(
            waited >= Duration::from_millis(50) && waited < Duration::from_millis(60),
            "answered {waited:?} after the cancel; the grace is 50 ms"
        );
        // The session is usable again.
        assert_eq!(s.prompt("again").await.unwrap().text(), "again");
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn cancel_resolves_a_pending_permission_request() {
    within(async {
        let agent = Probe::default();
        let seen = agent.seen.clone();
        let c = TestClient::builder()
            .permissions(PermissionPolicy::Never)
            .connect(agent)
            .await
            .unwrap();
        let s = c.new_session().await.unwrap();
        s.cancel_when(|u| matches!(u, SessionUpdate::ToolCall(_)));
        let turn = s.prompt("ask").await.unwrap();
        assert_eq!(turn.stop_reason(), Some(StopReason::Cancelled));
        assert_eq!(
            seen.lock().unwrap()[0],
            "ask: the prompt turn was cancelled"
        );
        // The unfinished tool call was reported failed before the answer.
        assert_eq!(
            turn.tool_calls()[0].statuses,
            [ToolCallStatus::Pending, ToolCallStatus::Failed]
        );
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_waiting_turn_does_not_block_other_sessions() {
    within(async {
        let c = TestClient::builder()
            .permissions(PermissionPolicy::Never)
            .connect(Probe::default())
            .await
            .unwrap();
        let waiting = c.new_session().await.unwrap();
        let other = c.new_session().await.unwrap();
        let (stuck, done) = tokio::join!(waiting.prompt("ask"), async {
            let turn = other.prompt("hello").await.unwrap();
            waiting.cancel();
            turn
        });
        assert_eq!(done.text(), "hello");
        assert_eq!(stuck.unwrap().stop_reason(), Some(StopReason::Cancelled));
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn two_sessions_stream_at_once_without_mixing() {
    within(async {
        let c = client(Probe::default()).await;
        let a = c.new_session().await.unwrap();
        let b = c.new_session().await.unwrap();
        let (ta, tb) = tokio::join!(a.prompt("stream 300"), b.prompt("stream 300"));
        let expected: String = (0..300).map(|i| format!("{i},")).collect();
        assert_eq!(ta.unwrap().text(), expected);
        assert_eq!(tb.unwrap().text(), expected);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_second_prompt_while_one_runs_is_refused() {
    let c = client(Probe::default()).await;
    let s = c.new_session().await.unwrap();
    let (first, second) = tokio::join!(s.prompt("sleep"), async {
        s.wait_for_update("the first turn's chunk", |u| {
            matches!(u, SessionUpdate::AgentMessageChunk(_))
        })
        .await
        .unwrap();
        // The first turn is running: it waits for its cancel.
        let second = c
            .request("session/prompt", json!({"sessionId": s.id(), "prompt": []}))
            .await;
        s.cancel();
        second
    });
    assert_eq!(first.unwrap().stop_reason(), Some(StopReason::Cancelled));
    match second {
        Err(Error::Rpc { code, message, .. }) => {
            assert_eq!(code, -32600);
            assert!(message.contains("already running"), "{message}");
        }
        other => panic!("a second prompt on a busy session must be refused: {other:?}"),
    }
    // Once the first turn answered, the session takes the next one.
    assert_eq!(s.prompt("next").await.unwrap().text(), "next");
}

#[tokio::test(start_paused = true)]
async fn a_panicking_turn_answers_internal_error_and_the_agent_lives_on() {
    let c = client(Probe::default()).await;
    let s = c.new_session().await.unwrap();
    let turn = s.prompt("panic").await.unwrap();
    assert_eq!(turn.error_code(), Some(-32603));
    assert!(format!("{:?}", turn.answer()).contains("boom"));
    assert_eq!(s.prompt("still here").await.unwrap().text(), "still here");
}

#[tokio::test(start_paused = true)]
async fn an_author_error_answers_internal_error_with_its_message() {
    let c = client(Probe::default()).await;
    let s = c.new_session().await.unwrap();
    let turn = s.prompt("fail").await.unwrap();
    assert_eq!(turn.error_code(), Some(-32603));
    assert!(format!("{:?}", turn.answer()).contains("it broke"));
}

#[tokio::test(start_paused = true)]
async fn no_tool_call_stays_open_after_its_turn() {
    let c = client(Probe::default()).await;
    let s = c.new_session().await.unwrap();
    for prompt in ["abandon", "leave-open"] {
        let turn = s.prompt(prompt).await.unwrap();
        let calls = turn.tool_calls();
        assert_eq!(
            calls[0].statuses,
            [ToolCallStatus::Pending, ToolCallStatus::Failed],
            "{prompt}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn updates_after_the_answer_are_refused_and_never_sent() {
    let agent = Probe::default();
    let leaked = agent.leaked.clone();
    let c = client(agent).await;
    let s = c.new_session().await.unwrap();
    s.prompt("leak").await.unwrap();
    let cx = leaked.lock().unwrap().take().unwrap();
    let before = c.transcript().len();
    assert!(matches!(cx.message("late").await, Err(Error::TurnEnded)));
    let after = c.transcript();
    assert!(
        after[before..]
            .iter()
            .all(|f| f.method() != Some("session/update"))
    );
}

#[tokio::test(start_paused = true)]
async fn terminals_run_in_the_client_and_are_released() {
    let c = client(Probe::default()).await;
    let s = c.new_session().await.unwrap();
    let turn = s.prompt("term").await.unwrap();
    assert_eq!(turn.text(), "ok\n|Some(3)");
    assert_eq!(
        c.terminals_created(),
        [("make".to_owned(), vec!["test".to_owned()])]
    );
    assert_eq!(c.terminals_released(), ["term_0"]);
    // Dropped instead of released: released anyway.
    s.prompt("term drop").await.unwrap();
    c.wait_for("the dropped terminal's release", |f| {
        f.method() == Some("terminal/release") && f.message["params"]["terminalId"] == "term_1"
    })
    .await
    .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_terminal_wait_releases_the_terminal() {
    within(async {
        let c = TestClient::builder()
            .terminal(TerminalStub::new().hang())
            .connect(Probe::default())
            .await
            .unwrap();
        let s = c.new_session().await.unwrap();
        s.cancel_when(|u| matches!(u, SessionUpdate::AgentMessageChunk(_)));
        let turn = s.prompt("term-wait").await.unwrap();
        assert_eq!(turn.stop_reason(), Some(StopReason::Cancelled));
        c.wait_for("the terminal's release", |f| {
            f.method() == Some("terminal/release")
        })
        .await
        .unwrap();
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn terminals_without_the_capability_fail_without_sending_anything() {
    let c = TestClient::builder()
        .connect(Probe::default())
        .await
        .unwrap();
    let s = c.new_session().await.unwrap();
    let turn = s.prompt("term").await.unwrap();
    assert_eq!(turn.error_code(), Some(-32603));
    assert!(format!("{:?}", turn.answer()).contains("terminal"));
    assert!(c.terminals_created().is_empty());
    assert!(c.requests_from_agent("terminal/create").is_empty());
}

#[tokio::test(start_paused = true)]
async fn unknown_sessions_and_bad_params_get_the_specified_errors() {
    let c = client(Probe::default()).await;
    let err = c
        .request("session/prompt", json!({"sessionId": "nope", "prompt": []}))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Rpc { code: -32002, .. }), "{err:?}");
    let err = c
        .request("session/new", json!({"mcpServers": []}))
        .await
        .unwrap_err();
    match err {
        Error::Rpc { code, message, .. } => {
            assert_eq!(code, -32602);
            assert!(message.contains("cwd"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let err = c.request("_vendor/thing", json!({})).await.unwrap_err();
    assert!(matches!(err, Error::Rpc { code: -32601, .. }), "{err:?}");
    // Still usable.
    c.new_session().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn serve_returns_ok_when_the_client_goes_away_mid_turn() {
    within(async {
        let c = client(Probe::default()).await;
        let s = c.new_session().await.unwrap();
        s.cancel_when(|_| false);
        c.send(
            json!({"jsonrpc": "2.0", "id": 999, "method": "session/prompt",
            "params": {"sessionId": s.id(), "prompt": [{"type": "text", "text": "sleep"}]}}),
        );
        s.wait_for_update("the chunk", |u| {
            matches!(u, SessionUpdate::AgentMessageChunk(_))
        })
        .await
        .unwrap();
        drop(s);
        c.close().await.unwrap();
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn session_state_lives_as_long_as_its_session() {
    let c = client(Probe::default()).await;
    let a = c.new_session().await.unwrap();
    let b = c.new_session().await.unwrap();
    assert_eq!(a.prompt("count").await.unwrap().text(), "0");
    assert_eq!(a.prompt("count").await.unwrap().text(), "1");
    assert_eq!(b.prompt("count").await.unwrap().text(), "0");
}

#[tokio::test(start_paused = true)]
async fn a_terminal_created_in_a_tool_body_is_embedded_in_its_tool_call() {
    let c = client(Probe::default()).await;
    let s = c.new_session().await.unwrap();
    let turn = s.prompt("term-in-tool").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    let embedded = turn.updates().iter().any(|u| match u {
        SessionUpdate::ToolCallUpdate(u) => u.fields.content.as_ref().is_some_and(|c| {
            matches!(&c[..], [acp_core::schema::ToolCallContent::Terminal(t)] if &*t.terminal_id.0 == "term_0")
        }),
        _ => false,
    });
    assert!(embedded, "{:#?}", turn.updates());
}

#[tokio::test(start_paused = true)]
async fn a_protocol_level_cancel_request_cancels_that_prompt() {
    let c = client(Probe::default()).await;
    let s = c.new_session().await.unwrap();
    c.send(
        json!({"jsonrpc": "2.0", "id": "p-1", "method": "session/prompt",
        "params": {"sessionId": s.id(), "prompt": [{"type": "text", "text": "sleep"}]}}),
    );
    s.wait_for_update("the chunk", |u| {
        matches!(u, SessionUpdate::AgentMessageChunk(_))
    })
    .await
    .unwrap();
    assert!(
        !c.transcript()
            .iter()
            .any(|f| f.direction == Direction::FromAgent && f.is_response_to(&json!("p-1")))
    );
    c.notify("$/cancel_request", json!({"requestId": "p-1"}));
    let answer = c.wait_for_response(&json!("p-1")).await.unwrap();
    assert_eq!(answer["result"]["stopReason"], "cancelled");
}

#[tokio::test(start_paused = true)]
async fn an_oversized_line_is_rejected_and_the_connection_goes_on() {
    within(async {
        let c = client(Probe::default()).await;
        // One line just over the 64 MiB limit.
        c.send(json!("x".repeat(64 * 1024 * 1024 + 16)));
        let s = c.new_session().await.unwrap();
        let rejected = c
            .transcript()
            .into_iter()
            .find(|f| f.direction == Direction::FromAgent && f.message["error"]["code"] == -32700)
            .expect("the long line was answered");
        assert!(
            rejected.message["error"]["message"]
                .as_str()
                .unwrap()
                .contains("longer than"),
            "{}",
            rejected.message
        );
        assert_eq!(s.prompt("after").await.unwrap().text(), "after");
        // The whole line was skipped: one error for it, nothing parsed from its remains.
        let errors = c
            .transcript()
            .iter()
            .filter(|f| f.direction == Direction::FromAgent && f.message.get("error").is_some())
            .count();
        assert_eq!(errors, 1, "one error for one oversized line");
    })
    .await;
}

/// A client for an agent served by `server` (its limits set by the test) over an in-memory
/// pipe.
async fn attached<A: Agent>(
    server: acp_core::Server<A>,
    builder: acp_core::testing::TestClientBuilder,
) -> (TestClient, tokio::task::JoinHandle<Result<()>>) {
    let (client_io, agent_io) = tokio::io::duplex(1 << 16);
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    let (client_read, client_write) = tokio::io::split(client_io);
    let served = tokio::spawn(server.serve(agent_read, agent_write));
    let client = builder.attach(client_read, client_write).await.unwrap();
    (client, served)
}

#[tokio::test(start_paused = true)]
async fn the_line_limit_is_configurable() {
    within(async {
        let server = acp_core::Server::new(Probe::default()).max_line_bytes(1024);
        let (c, served) = attached(server, TestClient::builder()).await;
        c.send(json!("x".repeat(2000)));
        let s = c.new_session().await.unwrap();
        let rejected = c
            .transcript()
            .into_iter()
            .find(|f| f.direction == Direction::FromAgent && f.message["error"]["code"] == -32700)
            .expect("the long line was answered");
        let message = rejected.message["error"]["message"].as_str().unwrap();
        assert!(message.contains("1024 bytes"), "{message}");
        assert_eq!(s.prompt("after").await.unwrap().text(), "after");
        c.close().await.unwrap();
        served.await.unwrap().unwrap();
    })
    .await;
}

/// An agent whose `session/new` for the cwd `/slow` waits until the test opens the gate.
struct Gated {
    gate: Arc<tokio::sync::Notify>,
}

impl Agent for Gated {
    async fn new_session(&self, cx: &Session) -> Result<SessionSetup> {
        if cx.cwd() == std::path::Path::new("/slow") {
            self.gate.notified().await;
        }
        Ok(SessionSetup::default())
    }

    async fn prompt(&self, cx: &Session, prompt: Prompt) -> Result<StopReason> {
        cx.message(prompt.text()).await?;
        Ok(StopReason::EndTurn)
    }
}

/// With at most 2 requests in flight, two handlers that do not finish leave the next request
/// unread until one of them does.
#[tokio::test(start_paused = true)]
async fn beyond_the_requests_in_flight_nothing_more_is_read() {
    within(async {
        let gate = Arc::new(tokio::sync::Notify::new());
        let server = acp_core::Server::new(Gated { gate: gate.clone() }).max_in_flight(2);
        let (c, served) = attached(server, TestClient::builder()).await;
        let slow = json!({"cwd": "/slow", "mcpServers": []});
        let (a, b) = (
            c.send_request("session/new", slow.clone()),
            c.send_request("session/new", slow),
        );
        let third = c.send_request("session/new", json!({"cwd": "/fast", "mcpServers": []}));
        // Long enough (on the paused clock) for the third to be answered if it were read.
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(
            !c.transcript().iter().any(|f| f.is_response_to(&third)),
            "a third request was read while two were in flight"
        );
        gate.notify_one();
        for id in [&a, &b, &third] {
            if id == &b {
                gate.notify_one();
            }
            assert!(
                c.wait_for_response(id)
                    .await
                    .unwrap()
                    .get("result")
                    .is_some()
            );
        }
        c.close().await.unwrap();
        served.await.unwrap().unwrap();
    })
    .await;
}

/// Running turns (bounded by sessions) and handlers waiting on the client do not count as
/// in flight: with a bound of 1, a turn waiting on the user and a turn waiting for its cancel
/// leave the client free to open sessions and to cancel.
#[tokio::test(start_paused = true)]
async fn turns_and_handlers_waiting_on_the_client_do_not_count_as_in_flight() {
    within(async {
        let server = acp_core::Server::new(Probe::default()).max_in_flight(1);
        let builder = TestClient::builder().hold("session/request_permission");
        let (c, served) = attached(server, builder).await;
        let (s1, s2) = (
            c.new_session().await.unwrap(),
            c.new_session().await.unwrap(),
        );
        let asking = s1.start_prompt("ask");
        let held = c.next_request("session/request_permission").await.unwrap();
        let sleeping = s2.start_prompt("sleep");
        s2.wait_for_update("sleeping", |u| {
            matches!(u, SessionUpdate::AgentMessageChunk(_))
        })
        .await
        .unwrap();
        let s3 = c.new_session().await.unwrap();
        assert_eq!(s3.prompt("third").await.unwrap().text(), "third");
        s2.cancel();
        let answer = c.wait_for_response(&sleeping).await.unwrap();
        assert_eq!(answer["result"]["stopReason"], "cancelled");
        held.select("yes");
        let answer = c.wait_for_response(&asking).await.unwrap();
        assert_eq!(answer["result"]["stopReason"], "end_turn");
        c.close().await.unwrap();
        served.await.unwrap().unwrap();
    })
    .await;
}

/// Counts the drops of the per-session value of `session/close`'s test.
#[derive(Default)]
struct ClosedState;

static CLOSED_STATE_DROPS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Drop for ClosedState {
    fn drop(&mut self) {
        CLOSED_STATE_DROPS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

struct Closing;

impl Agent for Closing {
    async fn prompt(&self, cx: &Session, _prompt: Prompt) -> Result<StopReason> {
        let _ = cx.state::<ClosedState>();
        cx.message("waiting").await?;
        cx.cancelled().await;
        Ok(StopReason::Cancelled)
    }
}

/// `session/close` is advertised, cancels the running turn (which answers `cancelled`), frees
/// the session's memory, and the session is unknown afterwards.
#[tokio::test(start_paused = true)]
async fn closing_a_session_cancels_its_turn_and_frees_it() {
    within(async {
        let c = TestClient::builder().connect(Closing).await.unwrap();
        assert!(
            c.initialize_response()["agentCapabilities"]["sessionCapabilities"]["close"]
                .is_object(),
            "{}",
            c.initialize_response()
        );
        let s = c.new_session().await.unwrap();
        let turn = s.start_prompt("go");
        s.wait_for_update("waiting", |_| true).await.unwrap();
        assert_eq!(s.close().await.unwrap(), json!({}));
        let answer = c.wait_for_response(&turn).await.unwrap();
        assert_eq!(answer["result"]["stopReason"], "cancelled");
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(
            CLOSED_STATE_DROPS.load(std::sync::atomic::Ordering::SeqCst),
            1
        );
        let again = c
            .request(
                "session/prompt",
                json!({"sessionId": s.id(), "prompt": [{"type": "text", "text": "x"}]}),
            )
            .await
            .unwrap_err();
        assert!(matches!(again, Error::Rpc { code: -32002, .. }), "{again}");
        let twice = s.close().await.unwrap_err();
        assert!(matches!(twice, Error::Rpc { code: -32002, .. }), "{twice}");
        c.close().await.unwrap();
    })
    .await;
}

/// A writer that counts writes and flushes, and can be stalled like a client that stops
/// reading.
struct Gate<W> {
    inner: W,
    shared: Arc<GateState>,
}

#[derive(Default)]
struct GateState {
    stalled: std::sync::atomic::AtomicBool,
    waker: Mutex<Option<std::task::Waker>>,
    writes: std::sync::atomic::AtomicUsize,
    flushes: std::sync::atomic::AtomicUsize,
}

impl GateState {
    fn stall(&self, stalled: bool) {
        self.stalled
            .store(stalled, std::sync::atomic::Ordering::SeqCst);
        if let Some(w) = self.waker.lock().unwrap().take() {
            w.wake();
        }
    }

    fn count(n: &std::sync::atomic::AtomicUsize) -> usize {
        n.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl<W: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Gate<W> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if self
            .shared
            .stalled
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            *self.shared.waker.lock().unwrap() = Some(cx.waker().clone());
            return std::task::Poll::Pending;
        }
        self.shared
            .writes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        self.shared
            .flushes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Streams `n` chunks, counting those the runtime accepted.
struct Flood {
    sent: Arc<std::sync::atomic::AtomicUsize>,
}

impl Agent for Flood {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> Result<StopReason> {
        let n: usize = prompt.text().parse().unwrap_or(0);
        for i in 0..n {
            cx.message(format!("{i:08} of the flood")).await?;
            self.sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        Ok(StopReason::EndTurn)
    }
}

/// Serves `agent` with its output through a [`Gate`]; returns the client and the gate.
async fn gated(agent: impl Agent) -> (TestClient, Arc<GateState>) {
    let (client_io, agent_io) = tokio::io::duplex(1 << 16);
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    let (client_read, client_write) = tokio::io::split(client_io);
    let shared = Arc::new(GateState::default());
    let writer = Gate {
        inner: agent_write,
        shared: shared.clone(),
    };
    tokio::spawn(acp_core::serve(agent, agent_read, writer));
    let c = TestClient::builder()
        .attach(client_read, client_write)
        .await
        .unwrap();
    (c, shared)
}

#[tokio::test(start_paused = true)]
async fn the_writer_coalesces_frames_and_flushes_when_its_queue_drains() {
    let sent = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (c, gate) = gated(Flood { sent: sent.clone() }).await;
    let s = c.new_session().await.unwrap();
    let (writes, flushes) = (
        GateState::count(&gate.writes),
        GateState::count(&gate.flushes),
    );
    let turn = s.prompt("5000").await.unwrap();
    assert_eq!(turn.updates().len(), 5000);
    let writes = GateState::count(&gate.writes) - writes;
    let flushes = GateState::count(&gate.flushes) - flushes;
    // 5,001 frames of ~130 bytes: written in 64 KiB batches, flushed when the queue drains.
    assert!(
        flushes * 10 <= 5000,
        "{flushes} flushes for 5,001 frames: the writer flushes too often"
    );
    assert!(
        writes * 10 <= 5000,
        "{writes} writes for 5,001 frames: the writer does not coalesce"
    );
}

#[tokio::test(start_paused = true)]
async fn a_producer_faster_than_a_stalled_client_waits_instead_of_buffering() {
    let sent = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (c, gate) = gated(Flood { sent: sent.clone() }).await;
    let s = c.new_session().await.unwrap();
    gate.stall(true);
    let (turn, accepted) = tokio::join!(s.prompt("20000"), async {
        // On the paused clock this sleep ends only when every task is stuck.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let accepted = sent.load(std::sync::atomic::Ordering::SeqCst);
        gate.stall(false);
        accepted
    });
    // The queue (1,024 frames) and the writer's 64 KiB buffer hold a bounded number of
    // chunks; the rest of the turn waits for the client.
    assert!(
        accepted <= 4096,
        "{accepted} chunks accepted while the client read nothing"
    );
    let turn = turn.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    // Nothing was lost or reordered on the way.
    let texts: Vec<String> = turn
        .updates()
        .iter()
        .map(|u| match u {
            SessionUpdate::AgentMessageChunk(c) => match &c.content {
                acp_core::schema::ContentBlock::Text(t) => t.text.clone(),
                _ => String::new(),
            },
            _ => String::new(),
        })
        .collect();
    assert_eq!(texts.len(), 20_000);
    for (i, t) in texts.iter().enumerate() {
        assert_eq!(*t, format!("{i:08} of the flood"));
    }
}

/// Counts its drops; keeps a session handle when asked, as an author might.
struct Dropped {
    drops: Arc<std::sync::atomic::AtomicUsize>,
    kept: Mutex<Option<Session>>,
}

impl Drop for Dropped {
    fn drop(&mut self) {
        self.drops.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Agent for Dropped {
    async fn prompt(&self, cx: &Session, _prompt: Prompt) -> Result<StopReason> {
        *self.kept.lock().unwrap() = Some(cx.clone());
        cx.message("kept").await?;
        Ok(StopReason::EndTurn)
    }
}

#[tokio::test(start_paused = true)]
async fn when_serve_returns_the_agent_and_its_sessions_are_dropped() {
    let drops = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let agent = Dropped {
        drops: drops.clone(),
        kept: Mutex::new(None),
    };
    let c = TestClient::builder().connect(agent).await.unwrap();
    for _ in 0..3 {
        let s = c.new_session().await.unwrap();
        // The agent keeps a handle of the session: agent → session → connection → agent.
        assert_eq!(s.prompt("keep").await.unwrap().text(), "kept");
    }
    assert_eq!(drops.load(std::sync::atomic::Ordering::SeqCst), 0);
    c.close().await.unwrap();
    assert_eq!(
        drops.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the agent outlived `serve`"
    );
}

#[tokio::test(start_paused = true)]
async fn a_long_line_under_the_limit_is_a_message_like_any_other() {
    let c = client(Probe::default()).await;
    let s = c.new_session().await.unwrap();
    // 2 MiB of text in one prompt: far under the 64 MiB limit.
    let text = "y".repeat(2 * 1024 * 1024);
    let turn = s.prompt(&text).await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert_eq!(turn.text().len(), text.len());
}

#[tokio::test(start_paused = true)]
async fn a_last_message_without_its_newline_is_still_handled() {
    let c = client(Probe::default()).await;
    // The client's last line ends at end of file instead of a newline.
    c.send_raw(r#"{"jsonrpc":"2.0","id":"last","method":"session/new","params":{"cwd":"/w","mcpServers":[]}}"#);
    c.close_input();
    let answer = c.wait_for_response(&json!("last")).await.unwrap();
    assert!(answer["result"]["sessionId"].is_string(), "{answer}");
    c.close().await.unwrap();
}
