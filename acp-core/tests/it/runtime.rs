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

/// What is freed and when: a closed session, the agent once `serve` returns.
mod lifecycle;
/// The connection's framing and limits: lines too long or unterminated, the requests in
/// flight.
mod limits;
/// The writer: frames coalesced, a stalled client waited for.
mod writer;
