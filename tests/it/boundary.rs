//! The process boundary: nothing an author, a dependency or a client does corrupts, stalls or
//! bloats the agent. Each test drives a built binary over real pipes — `faulty`
//! (`tests/agents/faulty.rs`, written the way a careless author would) or an example — and
//! checks what the client sees. Waits are guarded (hang guards only; nothing asserts on how
//! fast the agent is).

use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use acp::schema::StopReason;
use acp::testing::{MemoryFs, TestClient, TestClientBuilder};
use serde_json::{Value, json};

const GUARD: Duration = Duration::from_secs(20);

fn faulty() -> Command {
    let mut cmd = Command::new(support::example_binary("faulty"));
    cmd.env("RUST_LOG", "warn")
        .env("ACP_DATA_DIR", support::data_dir());
    cmd
}

async fn spawn(builder: TestClientBuilder) -> TestClient {
    builder
        .spawn(faulty())
        .await
        .unwrap_or_else(|e| panic!("starting faulty: {e}"))
}

/// The code and message of an error answer.
fn error_of(answer: &Value) -> (i64, String) {
    let code = answer
        .pointer("/error/code")
        .and_then(Value::as_i64)
        .unwrap_or_else(|| panic!("expected an error answer, got {answer}"));
    let message = answer["error"]["message"].as_str().unwrap_or("").to_owned();
    (code, message)
}

/// Waits (guarded) until the agent's stderr contains `needle`.
async fn stderr_shows(c: &TestClient, needle: &str) {
    let started = Instant::now();
    while !c.stderr().contains(needle) {
        assert!(
            started.elapsed() < GUARD,
            "stderr never showed {needle:?}:\n{}",
            c.stderr()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

// ---- 1. stdout belongs to the protocol ----------------------------------------------------

#[tokio::test]
async fn prints_from_a_tool_and_its_child_process_go_to_stderr_never_to_the_client() {
    let c = spawn(TestClient::builder()).await;
    let s = c.new_session().await.unwrap();
    // Any stray line would be a problem that fails this prompt (TestClient checks every line).
    let turn = s.prompt("shout").await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert!(
        turn.text().contains("shouted (child: exit status: 0)"),
        "{}",
        turn.text()
    );
    assert!(c.problems().is_empty(), "{:?}", c.problems());
    assert!(
        !c.transcript().iter().any(|f| f.is_response_to(&json!(999))),
        "the forged frame reached the client"
    );
    stderr_shows(&c, "a stray line printed by a tool").await;
    stderr_shows(&c, r#""id":999"#).await;
    stderr_shows(&c, "a child process writing to its stdout").await;
    c.close().await.unwrap();
}

#[tokio::test]
async fn a_local_terminals_output_is_captured_never_reaching_the_agents_stdout_or_stderr() {
    // No `terminal` capability: `faulty` (served with `local_fallback`) runs it itself.
    let dir = std::env::temp_dir();
    let c = spawn(TestClient::builder().cwd(&dir)).await;
    let s = c.new_session().await.unwrap();
    let forged = r#"{"jsonrpc":"2.0","id":998,"result":{"stopReason":"end_turn"}}"#;
    let line = format!("echo '{forged}'; echo local-stderr-marker >&2; exit 4");
    let turn = s.prompt(&format!("run {line}")).await.unwrap();
    assert_eq!(
        turn.text(),
        format!("ran (Some(4)): {forged}\nlocal-stderr-marker\n"),
        "{:?}\n{}",
        turn.answer(),
        c.stderr()
    );
    assert!(c.problems().is_empty(), "{:?}", c.problems());
    assert!(
        !c.transcript().iter().any(|f| f.is_response_to(&json!(998))),
        "the command's output reached the client as a frame"
    );
    assert!(c.requests_from_agent("terminal/create").is_empty());
    // Give a stray write time to show up on stderr before saying it did not.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stderr = c.stderr();
    assert!(!stderr.contains("local-stderr-marker"), "{stderr}");
    assert!(!stderr.contains(r#""id":998"#), "{stderr}");
    c.close().await.unwrap();
}

#[tokio::test]
async fn no_descriptor_author_code_or_a_child_sees_is_non_blocking_and_fd1_is_stderr() {
    let c = spawn(TestClient::builder()).await;
    let s = c.new_session().await.unwrap();
    let report = s.prompt("fds").await.unwrap().text();
    let target = |fd: u8| {
        report
            .lines()
            .find(|l| l.starts_with(&format!("fd {fd}:")))
            .and_then(|l| l.split("target=").nth(1))
            .unwrap_or_else(|| panic!("no fd {fd} in {report}"))
            .to_owned()
    };
    for fd in 0..3 {
        assert!(
            report.contains(&format!("fd {fd}: nonblocking=Some(false)")),
            "fd {fd}:\n{report}"
        );
    }
    assert_eq!(target(0), "/dev/null", "{report}");
    assert_eq!(
        target(1),
        target(2),
        "fd 1 must point where stderr does:\n{report}"
    );
    c.close().await.unwrap();
}

/// A print while the protocol's output is backed up (the client not reading) used to panic
/// with EAGAIN, the stdio descriptors being non-blocking; now it goes to stderr.
#[test]
fn printing_while_the_client_is_not_reading_neither_panics_nor_corrupts_the_stream() {
    let mut agent = Raw::start(faulty());
    agent.handshake();
    let flood = agent.new_session();
    let print = agent.new_session();
    agent.prompt(10, &flood, "flood 200000");
    // The flood fills the pipe (nobody reads); then a turn prints before sending anything.
    agent.wait_stderr("", Duration::from_millis(300));
    agent.prompt(11, &print, "print");
    agent.wait_stderr("a child process writing to its stdout", GUARD);
    let frames = agent.read_until(&[10, 11], 0);
    for id in [10, 11] {
        assert_eq!(
            frames.answer(id)["result"]["stopReason"],
            "end_turn",
            "prompt {id}"
        );
    }
    assert_eq!(
        frames.chunks,
        200_000 + 1,
        "every chunk, and the print's message"
    );
    assert!(!agent.stderr().contains("panicked"), "{}", agent.stderr());
    agent.finish();
}

// ---- 2. and 3. bounded input; the reader never waits on its own replies -------------------

#[test]
fn a_client_that_writes_requests_without_reading_answers_cannot_grow_the_agent() {
    let mut agent = Raw::start(faulty());
    agent.handshake();
    let written = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut stdin = agent.stdin.take().unwrap();
    let (count, halt) = (written.clone(), stop.clone());
    let writer = thread::spawn(move || {
        for i in 0..200_000 {
            if halt.load(Ordering::Relaxed) {
                break;
            }
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":{},"method":"session/new","params":{{"cwd":"/tmp","mcpServers":[]}}}}"#,
                100 + i
            );
            if writeln!(stdin, "{line}").is_err() {
                break;
            }
            count.fetch_add(1, Ordering::Relaxed);
        }
    });
    // Wait until the writer is stuck: the agent stopped reading.
    let started = Instant::now();
    let mut last = (0, Instant::now());
    loop {
        thread::sleep(Duration::from_millis(100));
        let now = written.load(Ordering::Relaxed);
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() > Duration::from_millis(1500) {
            break;
        }
        assert!(
            started.elapsed() < GUARD,
            "the writer never stopped: {now} lines"
        );
    }
    let accepted = written.load(Ordering::Relaxed);
    let peak = agent.peak_rss_kib();
    stop.store(true, Ordering::Relaxed);
    agent.kill();
    let _ = writer.join();
    assert!(
        accepted < 20_000,
        "the agent went on reading ({accepted} of 200,000 requests) without being read"
    );
    assert!(
        peak < 64 * 1024,
        "peak RSS {peak} KiB after {accepted} requests"
    );
}

#[test]
fn a_cancel_behind_error_replies_is_seen_while_the_output_is_backed_up() {
    let mut agent = Raw::start_with_log(faulty(), "acp_core::router=debug");
    agent.handshake();
    let session = agent.new_session();
    agent.prompt(10, &session, "flood 100000000");
    agent.wait_stderr("", Duration::from_millis(300));
    // 500 lines that each need an error reply, then the cancel, all while nothing is read.
    for _ in 0..500 {
        agent.send("this is not json");
    }
    agent.send(
        &json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}})
            .to_string(),
    );
    // The reader reaches the cancel without the client reading anything.
    agent.wait_stderr("cancel requested", GUARD);
    // Every error reply arrives too, none lost.
    let frames = agent.read_until(&[10], 500);
    assert_eq!(frames.answer(10)["result"]["stopReason"], "cancelled");
    assert_eq!(frames.parse_errors, 500);
    agent.finish();
}

// ---- 4. and 9. the client's answers -------------------------------------------------------

#[tokio::test]
async fn a_malformed_response_is_never_answered_and_fails_the_request_it_names() {
    for (what, body) in [
        (
            "both",
            r#""result":{"outcome":{"outcome":"cancelled"}},"error":{"code":1,"message":"m"}"#,
        ),
        ("neither", r#""extra":true"#),
        ("a malformed error", r#""error":"no""#),
    ] {
        let c = spawn(TestClient::builder().hold("session/request_permission")).await;
        let s = c.new_session().await.unwrap();
        let prompt = s.start_prompt("risky");
        let asked = c.next_request("session/request_permission").await.unwrap();
        let asked_id = asked.id().clone();
        c.send_raw(format!(r#"{{"jsonrpc":"2.0","id":{asked_id},{body}}}"#) + "\n");
        let (code, message) = error_of(&c.wait_for_response(&prompt).await.unwrap());
        assert_eq!(code, -32603, "{what}: {message}");
        assert!(message.contains("malformed"), "{what}: {message}");
        assert!(
            !c.transcript()
                .iter()
                .any(|f| f.is_response_to(&asked_id) && f.message.get("method").is_none()),
            "{what}: the agent answered the client's response"
        );
        drop(asked);
        c.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_clients_error_code_is_not_passed_on_as_the_code_of_the_prompts_answer() {
    let c = spawn(TestClient::builder().hold("session/request_permission")).await;
    let s = c.new_session().await.unwrap();
    let prompt = s.start_prompt("risky");
    let asked = c.next_request("session/request_permission").await.unwrap();
    asked.respond_error(-32601, "Method not found");
    let (code, message) = error_of(&c.wait_for_response(&prompt).await.unwrap());
    assert_eq!(code, -32603, "{message}");
    assert!(
        message.contains("-32601") && message.contains("session/request_permission"),
        "{message}"
    );
    c.close().await.unwrap();
}

// ---- 5. and 6. cwd and the fs boundary ----------------------------------------------------

#[tokio::test]
async fn a_relative_or_empty_cwd_is_invalid_params_naming_it() {
    let c = spawn(TestClient::builder()).await;
    for (params, field) in [
        (json!({"cwd": "project", "mcpServers": []}), "`cwd`"),
        (json!({"cwd": "", "mcpServers": []}), "`cwd`"),
        (
            json!({"cwd": "/p", "additionalDirectories": ["lib"], "mcpServers": []}),
            "`additionalDirectories`",
        ),
    ] {
        let id = c.send_request("session/new", params.clone());
        let (code, message) = error_of(&c.wait_for_response(&id).await.unwrap());
        assert_eq!(code, -32602, "{params}: {message}");
        assert!(message.contains(field), "{params}: {message}");
    }
    c.close().await.unwrap();
}

#[tokio::test]
async fn fs_paths_are_normalized_inside_the_session_and_refused_outside_it() {
    let fs = MemoryFs::new()
        .with("/workspace/a.txt", "alpha")
        .with("/etc/hostname", "the host");
    let c = spawn(TestClient::builder().fs(fs)).await;
    let s = c.new_session().await.unwrap();
    let reads = |c: &TestClient| -> Vec<String> {
        c.transcript()
            .iter()
            .filter(|f| f.method() == Some("fs/read_text_file"))
            .map(|f| {
                f.message["params"]["path"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned()
            })
            .collect()
    };
    for outside in [
        "../../../etc/passwd",
        "/etc/hostname",
        "/workspace-other/a.txt",
    ] {
        let text = s.prompt(&format!("read {outside}")).await.unwrap().text();
        assert!(
            text.contains("is outside the session's directories"),
            "{outside}: {text}"
        );
    }
    assert!(reads(&c).is_empty(), "sent anyway: {:?}", reads(&c));
    let text = s.prompt("read sub/../a.txt").await.unwrap().text();
    assert_eq!(text, "read: alpha");
    assert_eq!(reads(&c), ["/workspace/a.txt"]);
    // Explicitly unrestricted: sent, normalized.
    let text = s
        .prompt("read-anywhere /etc/./hostname")
        .await
        .unwrap()
        .text();
    assert_eq!(text, "read: the host");
    assert_eq!(reads(&c), ["/workspace/a.txt", "/etc/hostname"]);
    c.close().await.unwrap();
}

// ---- 7. logging never freezes the agent ---------------------------------------------------

#[tokio::test]
async fn a_client_that_never_reads_stderr_cannot_stall_the_agent() {
    // stderr is a pipe nobody reads: ~64 KiB fill it.
    let mut child = faulty()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let _unread = child.stderr.take().unwrap();
    let read = tokio::net::unix::pipe::Receiver::from_owned_fd(stdout.into()).unwrap();
    let write = tokio::net::unix::pipe::Sender::from_owned_fd(stdin.into()).unwrap();
    let c = TestClient::builder().attach(read, write).await.unwrap();
    let s = c.new_session().await.unwrap();
    // 20,000 warnings of ~150 bytes: about 3 MB, 45 times what the pipe holds.
    for round in 0..3 {
        let text = s
            .prompt("log 20000")
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}"))
            .text();
        assert_eq!(text, "logged 20000");
    }
    assert_eq!(s.prompt("still here").await.unwrap().text(), "still here");
    c.close().await.unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
}

// ---- 8. shutdown ---------------------------------------------------------------------------

#[test]
fn the_agent_exits_after_stdin_closes_even_if_the_client_never_reads_stdout() {
    let mut agent = Raw::start(faulty());
    agent.handshake();
    let session = agent.new_session();
    agent.prompt(10, &session, "flood 100000000");
    agent.wait_stderr("", Duration::from_millis(300));
    // Close stdin, keep stdout open and unread.
    drop(agent.stdin.take());
    let closed = Instant::now();
    let status = loop {
        if let Some(status) = agent.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            closed.elapsed() < Duration::from_secs(5),
            "still running 5 s after stdin closed (documented: within 1 s)"
        );
        thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status}: {}", agent.stderr());
}

// ---- 10. JSON-RPC classification ---------------------------------------------------------

#[tokio::test]
async fn invalid_utf8_is_a_parse_error() {
    let c = spawn(TestClient::builder()).await;
    let mut line = br#"{"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd":"/"#.to_vec();
    line.extend_from_slice(b"\xff\xfe\",\"mcpServers\":[]}}\n");
    c.send_raw(line);
    let frame = c.next_frame().await.unwrap();
    let (code, _) = error_of(&frame.message);
    assert_eq!(code, -32700, "{}", frame.message);
    assert_eq!(frame.message["id"], Value::Null);
    assert!(c.new_session().await.is_ok(), "the connection survives");
    c.close().await.unwrap();
}

// ---- author faults ------------------------------------------------------------------------

#[tokio::test]
async fn a_panicking_tool_or_prompt_fails_that_turn_only() {
    let c = spawn(TestClient::builder()).await;
    let s = c.new_session().await.unwrap();
    let boom = s.prompt("boom").await.unwrap();
    assert_eq!(boom.error_code(), Some(-32603));
    let calls = boom.tool_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].status(), Some(acp::schema::ToolCallStatus::Failed));
    let panic = s.prompt("panic").await.unwrap();
    assert_eq!(panic.error_code(), Some(-32603));
    assert_eq!(s.prompt("fine").await.unwrap().text(), "fine");
    c.close().await.unwrap();
}

// ---- a raw client, for what TestClient does on purpose (reading everything at once) -------

/// An agent process driven line by line, with stdout read only when the test says so.
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    stderr: Arc<Mutex<String>>,
    /// Kills the agent past the guard, so that a blocked read fails instead of hanging.
    done: Arc<AtomicBool>,
}

/// What [`Raw::read_until_answers`] saw.
struct Seen {
    answers: Vec<Value>,
    chunks: usize,
    parse_errors: usize,
}

impl Seen {
    fn answer(&self, id: i64) -> &Value {
        self.answers
            .iter()
            .find(|a| a["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id}"))
    }
}

impl Raw {
    fn start(cmd: Command) -> Raw {
        Raw::spawn(cmd)
    }

    fn start_with_log(mut cmd: Command, filter: &str) -> Raw {
        cmd.env("RUST_LOG", filter);
        Raw::spawn(cmd)
    }

    fn spawn(mut cmd: Command) -> Raw {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let (mut err, log) = (child.stderr.take().unwrap(), stderr.clone());
        thread::spawn(move || {
            let mut buf = [0; 8192];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                log.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let done = Arc::new(AtomicBool::new(false));
        let (pid, finished) = (child.id(), done.clone());
        thread::spawn(move || {
            let started = Instant::now();
            while !finished.load(Ordering::Relaxed) {
                if started.elapsed() > GUARD * 3 {
                    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
                    return;
                }
                thread::sleep(Duration::from_millis(50));
            }
        });
        Raw {
            stdin: child.stdin.take(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
            stderr,
            done,
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin closed");
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).unwrap();
        assert!(
            n > 0,
            "the agent closed its output; stderr:\n{}",
            self.stderr()
        );
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
    }

    fn handshake(&mut self) {
        self.send(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#,
        );
        assert!(self.read().get("result").is_some());
    }

    fn new_session(&mut self) -> String {
        self.send(r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#);
        let answer = self.read();
        answer["result"]["sessionId"].as_str().unwrap().to_owned()
    }

    fn prompt(&mut self, id: i64, session: &str, text: &str) {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}});
        self.send(&request.to_string());
    }

    /// Reads until every id in `ids` is answered and `parse_errors` parse errors arrived,
    /// counting message chunks.
    fn read_until(&mut self, ids: &[i64], parse_errors: usize) -> Seen {
        let mut seen = Seen {
            answers: Vec::new(),
            chunks: 0,
            parse_errors: 0,
        };
        while seen.parse_errors < parse_errors
            || ids
                .iter()
                .any(|id| !seen.answers.iter().any(|a| a["id"] == *id))
        {
            let frame = self.read();
            if frame["method"] == "session/update" {
                if frame["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
                    seen.chunks += 1;
                }
            } else if frame.pointer("/error/code") == Some(&json!(-32700)) {
                seen.parse_errors += 1;
            } else if frame.get("id").is_some() && frame.get("method").is_none() {
                seen.answers.push(frame);
            }
        }
        seen
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits until stderr contains `needle` (an empty needle: just waits `limit`).
    fn wait_stderr(&self, needle: &str, limit: Duration) {
        let started = Instant::now();
        if needle.is_empty() {
            thread::sleep(limit);
            return;
        }
        while !self.stderr().contains(needle) {
            assert!(
                started.elapsed() < limit,
                "stderr never showed {needle:?}:\n{}",
                self.stderr()
            );
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// The agent's peak resident memory (VmHWM), in KiB.
    fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.done.store(true, Ordering::Relaxed);
    }

    /// Closes stdin and requires exit status 0.
    fn finish(mut self) {
        drop(self.stdin.take());
        let mut rest = String::new();
        let _ = self.stdout.read_to_string(&mut rest);
        let status = self.child.wait().unwrap();
        self.done.store(true, Ordering::Relaxed);
        assert!(status.success(), "{status}: {}", self.stderr());
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        let _ = self.child.kill();
    }
}
