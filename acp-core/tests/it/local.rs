//! The local backend of `cx.fs()` and `cx.terminal()` (`Server::local_fallback`): files read
//! and written on the agent's machine inside the session's roots, commands run as child
//! processes in their own process group, and the opt-in switching on only where the client
//! lacks the capability. Each test is named for the behaviour it guarantees.
//!
//! These tests run real processes on a real clock (not the paused one of `runtime.rs`).

use std::path::Path;
use std::time::{Duration, Instant};

use acp_core::schema::{SessionUpdate, StopReason, ToolCallContent, ToolCallStatus};
use acp_core::testing::{MemoryFs, TerminalStub, TestClient, TestClientBuilder};
use acp_core::{Agent, Prompt, Result, Server, Session, Terminal, in_tool_call};

/// Answers each prompt with what came of one `cx.fs()` / `cx.terminal()` call:
/// - `read PATH [LINE LIMIT]`, `write PATH TEXT`;
/// - `run LINE`: runs the command line, waits, answers `exit=.. signal=.. truncated=..` and
///   the output; `limit N LINE`: the same with an output byte limit of N;
/// - `tool LINE`: runs it inside a tool call;
/// - `watch LINE`: runs it, sends its first output line as a message, then waits for it;
/// - `kill LINE` / `drop LINE`: runs it, sends its first output line, then kills it / drops
///   the handle;
/// - `keep LINE`: runs it, keeps the handle in the session's state, sends its first output
///   line, then waits for the turn to be cancelled;
/// - `hold LINE`: runs it, waits for it to exit, keeps the handle in the session's state and
///   answers its first output line; `release` (a later turn) releases it;
/// - `caps`: what `cx.fs()` and `cx.terminal()` say they can do.
struct Local;

impl Agent for Local {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> Result<StopReason> {
        let text = prompt.text();
        let (command, rest) = text.split_once(' ').unwrap_or((&text, ""));
        let reply = match command {
            "read" => {
                let mut words = rest.split(' ');
                let path = words.next().unwrap_or_default();
                let mut number = || words.next().map(|w| w.parse::<u32>().unwrap());
                let (line, limit) = (number(), number());
                match cx.fs().read_lines(path, line, limit).await {
                    Ok(text) => format!("read: {text}"),
                    Err(e) => format!("error: {e} (not found: {})", e.is_not_found()),
                }
            }
            "write" => {
                let (path, content) = rest.split_once(' ').unwrap_or((rest, ""));
                match cx.fs().write_text_file(path, content).await {
                    Ok(()) => "written".to_owned(),
                    Err(e) => format!("error: {e}"),
                }
            }
            "run" => match start(cx, rest, None).await {
                Ok(terminal) => finish(&terminal).await?,
                Err(e) => format!("error: {e}"),
            },
            "limit" => {
                let (limit, line) = rest.split_once(' ').unwrap();
                finish(&start(cx, line, limit.parse().ok()).await?).await?
            }
            "tool" => {
                let call = cx.tool_call("Run it").start().await?;
                let terminal = in_tool_call(&call, start(cx, rest, None)).await?;
                call.in_progress().await?;
                terminal.wait_for_exit().await?;
                call.complete(vec!["done".into()]).await?;
                "ran in a tool call".to_owned()
            }
            "watch" => {
                let terminal = start(cx, rest, None).await?;
                cx.message(first_line(&terminal).await?).await?;
                finish(&terminal).await?
            }
            "kill" => {
                let terminal = start(cx, rest, None).await?;
                cx.message(first_line(&terminal).await?).await?;
                terminal.kill().await?;
                finish(&terminal).await?
            }
            "keep" => {
                let terminal = start(cx, rest, None).await?;
                let line = first_line(&terminal).await?;
                *cx.state::<Kept>().0.lock().unwrap() = Some(terminal);
                cx.message(line).await?;
                cx.cancelled().await;
                return Ok(StopReason::Cancelled);
            }
            "hold" => {
                let terminal = start(cx, rest, None).await?;
                terminal.wait_for_exit().await?;
                let line = first_line(&terminal).await?;
                *cx.state::<Kept>().0.lock().unwrap() = Some(terminal);
                line
            }
            "release" => {
                let kept = cx.state::<Kept>().0.lock().unwrap().take();
                kept.unwrap().release().await?;
                "released".to_owned()
            }
            "drop" => {
                let terminal = start(cx, rest, None).await?;
                let line = first_line(&terminal).await?;
                drop(terminal);
                line
            }
            "caps" => format!(
                "read={} write={} terminal={}",
                cx.fs().can_read(),
                cx.fs().can_write(),
                cx.terminal().is_supported()
            ),
            _ => text.clone(),
        };
        cx.message(reply).await?;
        Ok(StopReason::EndTurn)
    }
}

/// A terminal kept past its turn.
#[derive(Default)]
struct Kept(std::sync::Mutex<Option<Terminal>>);

async fn start(cx: &Session, line: &str, limit: Option<u64>) -> Result<Terminal> {
    cx.terminal()
        .create_with(line, |req| req.output_byte_limit(limit))
        .await
}

async fn finish(terminal: &Terminal) -> Result<String> {
    let status = terminal.wait_for_exit().await?;
    let output = terminal.output().await?;
    Ok(format!(
        "exit={:?} signal={:?} truncated={} output={}",
        status.exit_code, status.signal, output.truncated, output.output
    ))
}

/// The command's first line of output, once it has written one.
async fn first_line(terminal: &Terminal) -> Result<String> {
    loop {
        let output = terminal.output().await?.output;
        if let Some((line, _)) = output.split_once('\n') {
            return Ok(line.to_owned());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A client of `Local` served with the local fallback on (or off), sessions in `cwd`.
async fn connect(builder: TestClientBuilder, fallback: bool, cwd: &Path) -> TestClient {
    builder
        .cwd(cwd)
        .serve(Server::new(Local).local_fallback(fallback))
        .await
        .unwrap()
}

async fn text(client: &TestClient, prompt: &str) -> String {
    let session = client.new_session().await.unwrap();
    session.prompt(prompt).await.unwrap().text()
}

#[tokio::test]
async fn local_files_are_read_and_written_inside_the_roots() {
    let dir = tempfile::tempdir().unwrap();
    let (cwd, more) = (dir.path().join("project"), dir.path().join("shared"));
    std::fs::create_dir_all(&more).unwrap();
    let builder = TestClient::builder().additional_directories([&more]);
    let client = connect(builder, true, &cwd).await;
    let s = client.new_session().await.unwrap();

    // A write creates the file and the directories it is in (the cwd itself included).
    let written = s
        .prompt("write notes/today.md one\ntwo\nthree")
        .await
        .unwrap();
    assert_eq!(written.text(), "written");
    let on_disk = std::fs::read_to_string(cwd.join("notes/today.md")).unwrap();
    assert_eq!(on_disk, "one\ntwo\nthree");
    let read = s.prompt("read notes/../notes/today.md").await.unwrap();
    assert_eq!(read.text(), "read: one\ntwo\nthree");
    // `line` is 1-based, `limit` counts lines, line endings are kept.
    assert_eq!(
        s.prompt("read notes/today.md 2 1").await.unwrap().text(),
        "read: two\n"
    );
    assert_eq!(
        s.prompt("read notes/today.md 2").await.unwrap().text(),
        "read: two\nthree"
    );
    // The additional directories are roots too; a file replaced is replaced.
    let shared = more.join("lib.rs");
    for body in ["fn a() {}", "fn b() {}"] {
        let prompt = format!("write {} {body}", shared.display());
        assert_eq!(s.prompt(&prompt).await.unwrap().text(), "written");
    }
    assert_eq!(std::fs::read_to_string(&shared).unwrap(), "fn b() {}");
    // A missing file is `is_not_found`.
    let missing = s.prompt("read nothing-here.txt").await.unwrap().text();
    assert!(missing.ends_with("(not found: true)"), "{missing}");
    // Nothing went to the client.
    assert!(client.requests_from_agent("fs/read_text_file").is_empty());
    assert!(client.requests_from_agent("fs/write_text_file").is_empty());
}

#[tokio::test]
async fn local_paths_outside_the_roots_are_refused_with_the_error_of_the_client_path() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(dir.path().join("secret.txt"), "secret").unwrap();
    let local = connect(TestClient::builder(), true, &cwd).await;
    let through_client = connect(TestClient::builder().fs(MemoryFs::new()), true, &cwd).await;
    for prompt in [
        "read ../secret.txt".to_owned(),
        format!("read {}/secret.txt", dir.path().display()),
        "read project/../../secret.txt".to_owned(),
        "write ../escaped.txt nope".to_owned(),
        "write ../project-other/x nope".to_owned(),
    ] {
        let refused = text(&local, &prompt).await;
        assert!(
            refused.contains("is outside the session's directories"),
            "{prompt}: {refused}"
        );
        assert_eq!(refused, text(&through_client, &prompt).await, "{prompt}");
    }
    assert!(!dir.path().join("escaped.txt").exists());
    assert!(!dir.path().join("project-other").exists());
}

#[tokio::test]
async fn a_local_command_gives_its_output_on_stdout_and_stderr_and_its_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(TestClient::builder(), true, dir.path()).await;
    let ran = text(&client, "run echo out; echo err >&2; pwd; exit 3").await;
    let cwd = dir.path().canonicalize().unwrap();
    assert_eq!(
        ran,
        format!(
            "exit=Some(3) signal=None truncated=false output=out\nerr\n{}\n",
            cwd.display()
        )
    );
    // A command line is run by the shell, which answers 127 for a program it cannot find.
    let session = client.new_session().await.unwrap();
    let turn = session
        .prompt("run no-such-program-acp-test")
        .await
        .unwrap();
    assert!(turn.text().starts_with("exit=Some(127)"), "{}", turn.text());
    assert!(client.requests_from_agent("terminal/create").is_empty());
    // A cwd that does not exist is named.
    let gone = connect(TestClient::builder(), true, &dir.path().join("gone")).await;
    let refused = text(&gone, "run true").await;
    assert!(
        refused.starts_with("error: I/O error (NotFound): starting `true` in `")
            && refused.ends_with("gone`: no such directory"),
        "{refused}"
    );
}

#[tokio::test]
async fn local_output_keeps_the_tail_within_the_byte_limit_at_a_character_boundary() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(TestClient::builder(), true, dir.path()).await;
    let all = "héllo wörld €uro";
    for limit in [0, 1, 5, 8, 9, 10, 16, all.len(), all.len() + 1] {
        let ran = text(&client, &format!("limit {limit} printf '{all}'")).await;
        let start = all
            .char_indices()
            .map(|(i, _)| i)
            .find(|i| all.len() - i <= limit)
            .unwrap_or(all.len());
        let truncated = limit < all.len();
        assert_eq!(
            ran,
            format!(
                "exit=Some(0) signal=None truncated={truncated} output={}",
                &all[start..]
            ),
            "limit {limit}"
        );
    }
}

#[tokio::test]
async fn a_local_terminal_in_a_tool_call_is_shown_as_text_kept_up_to_date() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(TestClient::builder(), true, dir.path()).await;
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("tool echo hello; exit 2").await.unwrap();
    let calls = turn.tool_calls();
    assert_eq!(calls.len(), 1);
    let call = &calls[0];
    assert_eq!(call.status(), Some(ToolCallStatus::Completed));
    // The client was never handed a terminal id it does not know.
    let terminals = turn.updates().iter().filter(|u| {
        serde_json::to_string(u)
            .unwrap()
            .contains(r#""type":"terminal""#)
    });
    assert_eq!(terminals.count(), 0);
    // Each update of the call brings the terminal's text up to date, even one that sets no
    // content of its own (`in_progress`).
    let in_progress = turn.updates().iter().find_map(|u| match u {
        SessionUpdate::ToolCallUpdate(u) if u.fields.status == Some(ToolCallStatus::InProgress) => {
            u.fields.content.clone()
        }
        _ => None,
    });
    let in_progress = format!("{in_progress:?}");
    assert!(
        in_progress.contains("$ echo hello; exit 2"),
        "{in_progress}"
    );
    // At the end: the command line, its whole output and exit code, then what the tool gave.
    assert!(
        matches!(
            &call.content[..],
            [ToolCallContent::Content(_), ToolCallContent::Content(_)]
        ),
        "{:?}",
        call.content
    );
    let shown = call.text();
    assert!(
        shown.contains("$ echo hello; exit 2\nhello\n[exit code 2]\n"),
        "{shown}"
    );
    assert!(shown.ends_with("done"), "{shown}");
}

#[tokio::test]
async fn the_fallback_switches_on_only_where_the_client_lacks_the_capability() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    std::fs::write(cwd.join("a.txt"), "on disk").unwrap();
    let fs = || MemoryFs::new().with(cwd.join("a.txt"), "in the editor");
    let stub = || TerminalStub::new().output("from the editor");

    // The client offers everything: everything goes through it, as without the option.
    let full = connect(TestClient::builder().fs(fs()).terminal(stub()), true, cwd).await;
    assert_eq!(text(&full, "read a.txt").await, "read: in the editor");
    let ran = text(&full, "run echo local").await;
    assert!(ran.ends_with("output=from the editor"), "{ran}");
    assert_eq!(full.requests_from_agent("terminal/create").len(), 1);

    // Without the option, a client without capabilities gets nothing done.
    let off = connect(TestClient::builder(), false, cwd).await;
    assert_eq!(
        text(&off, "caps").await,
        "read=false write=false terminal=false"
    );
    let refused = text(&off, "read a.txt").await;
    assert!(
        refused.contains("does not support `fs.readTextFile`"),
        "{refused}"
    );
    let refused = text(&off, "run echo local").await;
    assert!(refused.contains("does not support `terminal`"), "{refused}");

    // With it, what the client lacks is done locally, each capability on its own.
    let on = connect(TestClient::builder(), true, cwd).await;
    assert_eq!(
        text(&on, "caps").await,
        "read=true write=true terminal=true"
    );
    assert_eq!(text(&on, "read a.txt").await, "read: on disk");
    let ran = text(&on, "run echo local").await;
    assert!(ran.ends_with("output=local\n"), "{ran}");
    // A client with a terminal and no file system: commands in its terminal, files local.
    let mixed = connect(TestClient::builder().terminal(stub()), true, cwd).await;
    assert_eq!(text(&mixed, "read a.txt").await, "read: on disk");
    assert_eq!(text(&mixed, "write b.txt new").await, "written");
    assert_eq!(std::fs::read_to_string(cwd.join("b.txt")).unwrap(), "new");
    let ran = text(&mixed, "run echo local").await;
    assert!(ran.ends_with("output=from the editor"), "{ran}");
    assert_eq!(mixed.requests_from_agent("terminal/create").len(), 1);
}

/// The command line of a process that starts a grandchild in the background and waits:
/// its first line of output is `<its pid> <the grandchild's pid>`.
const TREE: &str = "sleep 60 & echo $$ $!; sleep 60";

/// The two pids of [`TREE`]'s first line.
fn pids(line: &str) -> Vec<u32> {
    let pids: Vec<u32> = line
        .split_whitespace()
        .map(|w| w.parse().unwrap_or_else(|_| panic!("not pids: {line}")))
        .collect();
    assert_eq!(pids.len(), 2, "{line}");
    pids
}

/// `pid`'s process group, while it runs (Linux: from /proc; a zombie counts as gone).
#[cfg(target_os = "linux")]
fn group_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    (fields[0] != "Z").then(|| fields[2].parse().unwrap())
}

/// Waits (at most 5 s) until none of `pids` runs.
#[cfg(target_os = "linux")]
async fn all_gone(pids: &[u32]) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|&p| group_of(p).is_some()) {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn kill_stops_the_local_commands_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(TestClient::builder(), true, dir.path()).await;
    let session = client.new_session().await.unwrap();
    let turn = session.prompt(&format!("kill {TREE}")).await.unwrap();
    let [first, ended] = turn.updates() else {
        panic!("{:?}", turn.updates())
    };
    let line = serde_json::to_value(first).unwrap()["content"]["text"].clone();
    let pids = pids(line.as_str().unwrap());
    let ended = serde_json::to_value(ended).unwrap()["content"]["text"].clone();
    assert!(
        ended
            .as_str()
            .unwrap()
            .starts_with(r#"exit=None signal=Some("SIGKILL")"#),
        "{ended}"
    );
    assert!(all_gone(&pids).await, "still running: {pids:?}");
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn cancelling_the_turn_stops_a_running_local_command_and_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(TestClient::builder(), true, dir.path()).await;
    let session = client.new_session().await.unwrap();
    let id = session.start_prompt(&format!("watch {TREE}"));
    let first = session
        .wait_for_update("the pids", |u| {
            serde_json::to_string(u)
                .unwrap()
                .contains("agent_message_chunk")
        })
        .await
        .unwrap();
    let line = serde_json::to_value(&first).unwrap()["content"]["text"].clone();
    let pids = pids(line.as_str().unwrap());
    // Both run, in a process group of their own (led by the command), not the agent's.
    let leader = pids[0];
    assert_eq!(group_of(leader), Some(leader));
    assert_eq!(group_of(pids[1]), Some(leader));
    assert_ne!(group_of(std::process::id()), Some(leader));
    session.cancel();
    let turn = session.finish(&id).await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::Cancelled));
    assert!(all_gone(&pids).await, "still running: {pids:?}");
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn cancelling_the_turn_stops_a_local_command_even_if_its_handle_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(TestClient::builder(), true, dir.path()).await;
    let session = client.new_session().await.unwrap();
    let id = session.start_prompt(&format!("keep {TREE}"));
    let first = session
        .wait_for_update("the pids", |u| {
            serde_json::to_string(u)
                .unwrap()
                .contains("agent_message_chunk")
        })
        .await
        .unwrap();
    let line = serde_json::to_value(&first).unwrap()["content"]["text"].clone();
    let pids = pids(line.as_str().unwrap());
    session.cancel();
    let turn = session.finish(&id).await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::Cancelled));
    assert!(all_gone(&pids).await, "still running: {pids:?}");
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn dropping_a_local_terminal_stops_its_command_and_group() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(TestClient::builder(), true, dir.path()).await;
    let line = text(&client, &format!("drop {TREE}")).await;
    let tree = pids(&line);
    assert!(all_gone(&tree).await, "still running: {tree:?}");
    // A command that exited, leaving a process in its group that no longer writes to the
    // terminal: that one lives on until the terminal is released, then goes too.
    let session = client.new_session().await.unwrap();
    let held = session.prompt("hold sleep 60 >/dev/null 2>&1 & echo $$ $!");
    let pids = pids(&held.await.unwrap().text());
    assert!(all_gone(&pids[..1]).await, "the command did not exit");
    assert!(
        group_of(pids[1]).is_some(),
        "the background process ended early"
    );
    assert_eq!(session.prompt("release").await.unwrap().text(), "released");
    assert!(all_gone(&pids).await, "still running: {pids:?}");
}
