//! One test per guarantee of README's "Guarantees the runtime keeps for you", each run twice
//! with the same body: in process (`TestClient::connect`, on a paused tokio clock, so timing
//! is exact and a stuck agent fails at once) and over real pipes against the built `probe`
//! binary (`TestClient::spawn`, built fresh by the first test that needs it). Timing is
//! checked by the order of frames, never by wall-clock thresholds; every wait of the client
//! has a deadline, so a deadlock fails in seconds.
//!
//! The agent is `tests/agents/probe_agent.rs`; each prompt command exercises one guarantee.

use crate::support;

#[path = "../agents/probe_agent.rs"]
mod probe_agent;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use acp::schema::{SessionUpdate, StopReason, ToolCallStatus};
use acp::testing::{MemoryFs, PermissionPolicy, TestClient, TestClientBuilder, Turn};
use serde_json::{Value, json};

/// Where the agent runs.
#[derive(Clone, Copy, Debug)]
enum Via {
    /// In this process, on the test's (paused) clock.
    InProcess,
    /// The built `probe` binary, over pipes.
    Pipes,
}

fn probe_command() -> Command {
    let mut cmd = Command::new(support::example_binary("probe"));
    cmd.env("RUST_LOG", "warn")
        .env("ACP_DATA_DIR", support::data_dir());
    cmd
}

async fn connect(via: Via, builder: TestClientBuilder) -> TestClient {
    let builder = builder.fs(MemoryFs::new().with("/workspace/a.txt", "alpha"));
    let client = match via {
        Via::InProcess => builder.connect(probe_agent::Probe::default()).await,
        Via::Pipes => builder.spawn(probe_command()).await,
    };
    client.unwrap_or_else(|e| panic!("connecting the probe ({via:?}): {e}"))
}

/// `in_process` and `over_pipes` tests for each scenario `name(via)`.
macro_rules! both_ways {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(start_paused = true)]
            async fn in_process() {
                super::$name(super::Via::InProcess).await;
            }

            #[tokio::test]
            async fn over_pipes() {
                super::$name(super::Via::Pipes).await;
            }
        }
    )*};
}

both_ways!(
    cancel_takes_effect_before_any_further_update,
    a_turn_that_ignores_cancellation_is_answered_within_the_grace,
    stdin_eof_answers_running_turns_cancelled_then_exits_zero,
    a_panicking_turn_answers_internal_error_and_the_next_prompt_works,
    an_error_after_a_cancel_still_answers_cancelled,
    a_protocol_level_cancel_request_cancels_that_prompt,
    an_unanswered_permission_and_a_cancel_end_the_turn_cancelled_with_the_call_failed,
    a_turn_waiting_on_the_client_never_stalls_other_sessions,
    nothing_of_a_turn_follows_its_answer,
    an_update_through_a_handle_kept_past_its_turn_is_refused,
);

fn text_of(update: &SessionUpdate) -> Option<&str> {
    match update {
        SessionUpdate::AgentMessageChunk(c) => match &c.content {
            acp::ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        },
        _ => None,
    }
}

fn texts(turn: &Turn) -> Vec<&str> {
    turn.updates().iter().filter_map(text_of).collect()
}

/// Between each step the turn awaits a client call; the client cancels on `step 3` before it
/// answers the call that follows. A cancel read at once fails that call: no `step 4`.
async fn cancel_takes_effect_before_any_further_update(via: Via) {
    let c = connect(via, TestClient::builder()).await;
    let s = c.new_session().await.unwrap();
    s.cancel_when(|u| text_of(u) == Some("step 3"));
    let turn = s.prompt("steps").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::Cancelled));
    assert_eq!(texts(&turn), ["step 0", "step 1", "step 2", "step 3"]);
    // The cancel cascades to the read the turn was waiting on: the client may drop it.
    let read = turn
        .frames()
        .iter()
        .filter(|f| f.method() == Some("fs/read_text_file"))
        .map(|f| f.message["id"].clone())
        .next_back()
        .unwrap();
    let withdrawn = turn
        .frames()
        .iter()
        .find(|f| f.method() == Some("$/cancel_request"))
        .map(|f| f.message["params"]["requestId"].clone());
    assert_eq!(withdrawn, Some(read), "{}", c.describe());
    c.close().await.unwrap();
}

/// The turn ignores the cancel and ticks every 5 ms: it is answered after the 50 ms grace,
/// so only about ten ticks can follow the cancel (a 5 s grace would let ~1,000 through).
async fn a_turn_that_ignores_cancellation_is_answered_within_the_grace(via: Via) {
    let c = connect(via, TestClient::builder()).await;
    let s = c.new_session().await.unwrap();
    s.cancel_when(|u| text_of(u) == Some("tick 3"));
    let turn = s.prompt("stubborn").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::Cancelled));
    let after_cancel = texts(&turn).len() - 4;
    assert!(
        after_cancel <= 40,
        "{after_cancel} ticks were sent between the cancel and the answer; the grace is 50 ms (≈10 ticks)"
    );
    // The session takes a new turn.
    assert_eq!(s.prompt("again").await.unwrap().text(), "again");
    c.close().await.unwrap();
}

async fn stdin_eof_answers_running_turns_cancelled_then_exits_zero(via: Via) {
    let c = connect(via, TestClient::builder()).await;
    let s = c.new_session().await.unwrap();
    let (turn, waited) = tokio::join!(s.prompt("sleep"), async {
        let seen = s
            .wait_for_update("the `sleeping` chunk", |u| text_of(u) == Some("sleeping"))
            .await;
        c.close_input();
        seen
    });
    waited.unwrap();
    let turn = turn.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::Cancelled), "{turn:?}");
    drop(s);
    // Exit status 0 (or `serve` returning Ok) and nothing malformed.
    c.close().await.unwrap();
}

async fn a_panicking_turn_answers_internal_error_and_the_next_prompt_works(via: Via) {
    let c = connect(via, TestClient::builder()).await;
    let s = c.new_session().await.unwrap();
    let turn = s.prompt("panic").await.unwrap();
    assert_eq!(turn.error_code(), Some(-32603), "{turn:?}");
    assert!(
        format!("{:?}", turn.answer()).contains("panicked on purpose"),
        "{turn:?}"
    );
    assert_eq!(s.prompt("still here").await.unwrap().text(), "still here");
    c.close().await.unwrap();
}

async fn an_error_after_a_cancel_still_answers_cancelled(via: Via) {
    let c = connect(via, TestClient::builder()).await;
    let s = c.new_session().await.unwrap();
    s.cancel_when(|u| text_of(u) == Some("sleeping"));
    let turn = s.prompt("sleep").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::Cancelled), "{turn:?}");
    c.close().await.unwrap();
}

async fn a_protocol_level_cancel_request_cancels_that_prompt(via: Via) {
    let c = connect(via, TestClient::builder()).await;
    let s = c.new_session().await.unwrap();
    c.send(
        json!({"jsonrpc": "2.0", "id": "p-1", "method": "session/prompt",
        "params": {"sessionId": s.id(), "prompt": [{"type": "text", "text": "sleep"}]}}),
    );
    s.wait_for_update("the `sleeping` chunk", |u| text_of(u) == Some("sleeping"))
        .await
        .unwrap();
    c.notify("$/cancel_request", json!({"requestId": "p-1"}));
    let answer = c.wait_for_response(&json!("p-1")).await.unwrap();
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    drop(s);
    c.close().await.unwrap();
}

async fn an_unanswered_permission_and_a_cancel_end_the_turn_cancelled_with_the_call_failed(
    via: Via,
) {
    let builder = TestClient::builder().permissions(PermissionPolicy::Never);
    let c = connect(via, builder).await;
    let s = c.new_session().await.unwrap();
    s.cancel_when(|u| matches!(u, SessionUpdate::ToolCall(_)));
    let turn = s.prompt("ask").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::Cancelled), "{turn:?}");
    assert_eq!(turn.permission_requests().len(), 1);
    let calls = turn.tool_calls();
    assert_eq!(
        calls[0].statuses,
        [ToolCallStatus::Pending, ToolCallStatus::Failed],
        "{calls:?}"
    );
    // A client that cancels answers its permission requests itself: no `$/cancel_request`.
    assert!(
        !c.transcript()
            .iter()
            .any(|f| f.method() == Some("$/cancel_request")),
        "{}",
        c.describe()
    );
    c.close().await.unwrap();
}

async fn a_turn_waiting_on_the_client_never_stalls_other_sessions(via: Via) {
    let builder = TestClient::builder().permissions(PermissionPolicy::Never);
    let c = connect(via, builder).await;
    let waiting = c.new_session().await.unwrap();
    let other = c.new_session().await.unwrap();
    let (stuck, done) = tokio::join!(waiting.prompt("ask"), async {
        waiting
            .wait_for_update("the tool call", |u| matches!(u, SessionUpdate::ToolCall(_)))
            .await
            .unwrap();
        // The first turn now waits for a permission answer that never comes.
        let turn = other.prompt("hello").await.unwrap();
        waiting.cancel();
        turn
    });
    assert_eq!(done.text(), "hello");
    assert_eq!(stuck.unwrap().stop_reason(), Some(StopReason::Cancelled));
    drop((waiting, other));
    c.close().await.unwrap();
}

/// The stubborn turn keeps sending after the cancel; none of it may follow the answer.
async fn nothing_of_a_turn_follows_its_answer(via: Via) {
    let c = connect(via, TestClient::builder()).await;
    let s = c.new_session().await.unwrap();
    let t = c.new_session().await.unwrap();
    s.cancel_when(|u| text_of(u) == Some("tick 1"));
    s.prompt("stubborn").await.unwrap();
    // A whole turn on another session, then a pause longer than the ticking, as a barrier.
    t.prompt("barrier").await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    t.prompt("barrier").await.unwrap();
    let frames = c.transcript();
    let answer = frames
        .iter()
        .position(|f| f.message["result"]["stopReason"] == "cancelled")
        .expect("the cancelled answer");
    let late: Vec<&Value> = frames[answer + 1..]
        .iter()
        .filter_map(|f| f.session_update().map(|n| (n, &f.message)))
        .filter(|(n, _)| &n.session_id == s.id())
        .map(|(_, m)| m)
        .collect();
    assert!(late.is_empty(), "updates after the answer: {late:?}");
    drop((s, t));
    c.close().await.unwrap();
}

async fn an_update_through_a_handle_kept_past_its_turn_is_refused(via: Via) {
    let c = connect(via, TestClient::builder()).await;
    let s = c.new_session().await.unwrap();
    s.prompt("keep").await.unwrap();
    let turn = s.prompt("late").await.unwrap();
    assert_eq!(texts(&turn), ["refused: the turn has ended"]);
    let sent_late = c
        .transcript()
        .iter()
        .filter_map(|f| f.session_update())
        .any(|n| text_of(&n.update) == Some("late"));
    assert!(
        !sent_late,
        "an update of an answered turn reached the client"
    );
    drop(s);
    c.close().await.unwrap();
}

/// A client that stops reading: the agent streams into a full pipe, its output queue fills,
/// and the turn waits instead of buffering the rest of the stream in memory.
#[test]
fn a_producer_faster_than_a_stalled_reader_stays_bounded() {
    const FLOOD: usize = 1_000_000;
    let mut child = probe_command()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning the probe");
    let mut stdin = child.stdin.take().unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    // Keep stdout open and never read it.
    let _stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    use std::io::Write;
    for line in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}),
    ] {
        writeln!(stdin, "{line}").unwrap();
    }
    stdin.flush().unwrap();
    // The prompt needs the session id, which is on stdout; read just those two answers.
    let mut stdout = BufReader::new(_stdout);
    let mut session = String::new();
    for _ in 0..2 {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        if let Some(id) = v.pointer("/result/sessionId").and_then(Value::as_str) {
            session = id.to_owned();
        }
    }
    let prompt = json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": format!("flood {FLOOD}")}]}});
    writeln!(stdin, "{prompt}").unwrap();
    stdin.flush().unwrap();
    // Watch the progress the agent reports on stderr until it stops moving.
    let mut sent = 0usize;
    let started = Instant::now();
    // Quiet for 750 ms: the turn is waiting on the full pipe.
    while let Ok(line) = rx.recv_timeout(Duration::from_millis(750)) {
        if let Some(n) = line.strip_prefix("sent ") {
            sent = n.trim().parse().unwrap_or(sent);
        }
        assert!(
            started.elapsed() < support::HANG_GUARD,
            "the agent kept producing for {:?} into a pipe nobody reads ({sent} chunks so far)",
            support::HANG_GUARD
        );
    }
    let rss = vm_rss_kib(child.id());
    let _ = child.kill();
    let _ = child.wait();
    // The pipe (64 KiB), the writer's buffer (64 KiB) and the queue (1,024 frames) hold a few
    // thousand chunks of ~100 bytes; an unbounded queue would hold all million.
    assert!(
        sent <= 20_000,
        "{sent} chunks were produced while the client read nothing"
    );
    if let Some(rss) = rss {
        assert!(
            rss < 64 * 1024,
            "the agent grew to {rss} KiB with a stalled reader"
        );
    }
    drop(stdout);
}

fn vm_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
