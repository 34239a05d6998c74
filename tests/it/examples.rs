//! Every example agent, tested in-process with `acp::testing` — the way an agent author tests
//! their own agent — and every built example driven over pipes by a client that offers neither
//! fs nor terminal (`examples/without_fs.rs`). (The interop tests drive the built binaries with the
//! official clients.)

use crate::support;

use acp::StopReason;
use acp::schema::{
    PlanEntryStatus, SessionConfigOptionCategory, SessionUpdate, ToolCallContent, ToolCallStatus,
};
use acp::testing::{MemoryFs, PermissionPolicy, TerminalStub, TestClient};
use serde_json::json;

#[path = "../../examples/echo.rs"]
#[allow(dead_code)]
mod echo;
#[path = "../../examples/mcp.rs"]
#[allow(dead_code)]
mod mcp;
#[path = "../../examples/model.rs"]
#[allow(dead_code)]
pub(crate) mod model;
#[path = "../../examples/modes.rs"]
#[allow(dead_code)]
pub(crate) mod modes;
#[path = "../../examples/planner.rs"]
#[allow(dead_code)]
mod planner;
#[path = "../../examples/scribe.rs"]
#[allow(dead_code)]
mod scribe;
#[path = "../../examples/shell.rs"]
#[allow(dead_code)]
pub(crate) mod shell;
#[path = "../../examples/workspace.rs"]
#[allow(dead_code)]
mod workspace;

use ToolCallStatus::{Completed, Failed, InProgress, Pending};

/// Guards a test against hangs; generous, never a performance assertion.
async fn within<T>(fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(10), fut)
        .await
        .expect("the test hung")
}

acp::testing::on_both_versions!(
    echo_streams_the_prompt_back_under_a_plan,
    scribe_reads_then_writes_notes_with_a_diff_after_asking,
    scribe_writes_nothing_when_the_user_says_no,
    scribe_asks_once_when_the_user_allows_always,
    shell_does_not_run_a_rejected_command,
    planner_publishes_and_completes_its_plan_with_several_tool_calls,
    planner_revises_its_plan_when_the_file_is_missing,
    modes_advertises_modes_commands_and_a_config_option,
    modes_switches_from_the_mode_picker_and_from_a_slash_command,
    modes_config_option_changes_the_tone,
    model_reads_through_a_tool_it_picked_by_name,
    model_writes_after_permission_and_shows_a_diff,
    model_hears_about_a_rejected_tool_call,
    model_gets_bad_arguments_back_as_a_descriptive_error,
    model_stops_at_max_turn_requests
);

// ---- echo ----

async fn echo_streams_the_prompt_back_under_a_plan(protocol: u16) {
    let client = TestClient::builder()
        .protocol(protocol)
        .connect(echo::Echo)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("hello there  world").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert_eq!(turn.text(), "hello there  world");
    let plans = turn.plans();
    assert_eq!(
        plans.first().unwrap().entries[0].status,
        PlanEntryStatus::InProgress
    );
    assert_eq!(
        plans.last().unwrap().entries[0].status,
        PlanEntryStatus::Completed
    );
}

// ---- scribe ----

async fn scribe_reads_then_writes_notes_with_a_diff_after_asking(protocol: u16) {
    let fs = MemoryFs::new().with("/workspace/NOTES.md", "- first\n");
    let client = TestClient::builder()
        .protocol(protocol)
        .fs(fs)
        .connect(scribe::Scribe)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("second").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert_eq!(turn.text(), "Noted.");
    let calls = turn.tool_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].title.as_str(), calls[0].statuses.as_slice()),
        (
            "Read /workspace/NOTES.md",
            &[Pending, InProgress, Completed][..]
        )
    );
    assert_eq!(calls[1].title, "Write /workspace/NOTES.md");
    assert_eq!(calls[1].statuses, [Pending, InProgress, Completed]);
    assert_eq!(
        calls[1].locations,
        [std::path::PathBuf::from("/workspace/NOTES.md")]
    );
    let diff = calls[1].diffs()[0];
    assert_eq!(diff.old_text.as_deref(), Some("- first\n"));
    assert_eq!(diff.new_text, "- first\n- second\n");
    assert_eq!(turn.permission_requests().len(), 1);
    assert_eq!(
        client.fs().read("/workspace/NOTES.md").as_deref(),
        Some("- first\n- second\n")
    );
}

async fn scribe_writes_nothing_when_the_user_says_no(protocol: u16) {
    let client = TestClient::builder()
        .protocol(protocol)
        .fs(MemoryFs::new())
        .permissions(PermissionPolicy::RejectOnce)
        .connect(scribe::Scribe)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("secret").await.unwrap();
    assert_eq!(turn.text(), "Not noted: you said no.");
    assert_eq!(turn.tool_calls()[1].status(), Some(Failed));
    assert_eq!(client.fs().read("/workspace/NOTES.md"), None);
    assert!(client.requests_from_agent("fs/write_text_file").is_empty());
}

async fn scribe_asks_once_when_the_user_allows_always(protocol: u16) {
    let client = TestClient::builder()
        .protocol(protocol)
        .fs(MemoryFs::new())
        .permissions(PermissionPolicy::AllowAlways)
        .connect(scribe::Scribe)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    assert_eq!(
        session
            .prompt("one")
            .await
            .unwrap()
            .permission_requests()
            .len(),
        1
    );
    assert_eq!(
        session
            .prompt("two")
            .await
            .unwrap()
            .permission_requests()
            .len(),
        0
    );
    assert_eq!(
        client.fs().read("/workspace/NOTES.md").as_deref(),
        Some("- one\n- two\n")
    );
}

#[tokio::test]
async fn scribe_explains_when_the_editor_reads_but_does_not_write_files() {
    let client = TestClient::builder()
        .skip_initialize()
        .connect(scribe::Scribe)
        .await
        .unwrap();
    let read_only = json!({"fs": {"readTextFile": true, "writeTextFile": false}});
    client
        .request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": read_only}),
        )
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("buy milk").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert_eq!(
        turn.text(),
        "This editor does not let agents write files (no fs.writeTextFile capability), \
         so I can't keep notes."
    );
    assert!(turn.tool_calls().is_empty());
    assert!(client.requests_from_agent("fs/read_text_file").is_empty());
}

// ---- shell ----

#[tokio::test]
async fn shell_runs_the_command_in_a_terminal_embedded_in_its_tool_call() {
    let client = TestClient::builder()
        .terminal(TerminalStub::new().output("a\nb\n").exit_code(0))
        .connect(shell::Shell)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("ls -la").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert_eq!(
        client.terminals_created(),
        [("sh".to_owned(), vec!["-c".to_owned(), "ls -la".to_owned()])]
    );
    let call = &turn.tool_calls()[0];
    assert_eq!(call.title, "Run `ls -la`");
    assert_eq!(call.statuses, [Pending, InProgress, Completed]);
    assert!(
        matches!(&call.content[..], [ToolCallContent::Terminal(t)] if &*t.terminal_id.0 == "term_0")
    );
    assert!(
        turn.text().contains("exit code 0, 2 lines"),
        "{}",
        turn.text()
    );
    assert_eq!(client.terminals_released(), ["term_0"]);
}

async fn shell_does_not_run_a_rejected_command(protocol: u16) {
    let client = TestClient::builder()
        .protocol(protocol)
        .terminal(TerminalStub::new())
        .permissions(PermissionPolicy::RejectOnce)
        .connect(shell::Shell)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("rm -rf /").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert!(client.terminals_created().is_empty());
    assert_eq!(turn.tool_calls()[0].status(), Some(Failed));
    assert_eq!(turn.text(), "Okay, I won't run it.");
}

#[tokio::test]
async fn shell_kills_and_releases_the_terminal_on_cancel() {
    let client = TestClient::builder()
        .terminal(TerminalStub::new().hang())
        .connect(shell::Shell)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    // Cancel once the terminal shows up in the tool call.
    session.cancel_when(|u| {
        matches!(u, SessionUpdate::ToolCallUpdate(u)
            if u.fields.content.as_ref().is_some_and(|c| matches!(c[..], [ToolCallContent::Terminal(_)])))
    });
    let turn = within(session.prompt("sleep 1000")).await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::Cancelled));
    assert_eq!(turn.tool_calls()[0].status(), Some(Failed));
    client
        .wait_for("the terminal's release", |f| {
            f.method() == Some("terminal/release") && f.message["params"]["terminalId"] == "term_0"
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn shell_explains_when_the_editor_has_no_terminal() {
    let client = TestClient::builder().connect(shell::Shell).await.unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("ls").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert!(
        turn.text().contains("no `terminal` capability"),
        "{}",
        turn.text()
    );
    assert!(turn.tool_calls().is_empty());
    assert!(client.requests_from_agent("terminal/create").is_empty());
}

/// On protocol v2 (no client terminals) the same agent runs the command itself, in the
/// session's cwd, and the editor sees it as an agent-owned terminal.
#[tokio::test]
async fn shell_runs_the_command_itself_on_protocol_v2() {
    let dir = tempfile::tempdir().unwrap();
    let client = TestClient::builder()
        .protocol(2)
        .cwd(dir.path())
        .connect(shell::Shell)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("echo a; echo b > made.txt").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    let call = &turn.tool_calls()[0];
    assert_eq!(call.title, "Run `echo a; echo b > made.txt`");
    assert_eq!(call.statuses, [Pending, InProgress, Completed]);
    assert!(
        turn.text().contains("exit code 0, 1 lines"),
        "{}",
        turn.text()
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("made.txt")).unwrap(),
        "b\n"
    );
    // Shown as v2's agent-owned terminal, never through the client's `terminal/*`.
    let shown = turn.frames().iter().any(|f| {
        f.message["params"]["update"]["sessionUpdate"] == "terminal_update"
            && f.message["params"]["update"]["exitStatus"]["exitCode"] == 0
    });
    assert!(shown, "{}", client.describe());
    assert!(client.terminals_created().is_empty());
}

// ---- planner ----

async fn planner_publishes_and_completes_its_plan_with_several_tool_calls(protocol: u16) {
    let fs = MemoryFs::new().with(
        "/workspace/README.md",
        "# Title\nsome words here\nTODO: more\n",
    );
    let client = TestClient::builder()
        .protocol(protocol)
        .fs(fs)
        .connect(planner::Planner)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    let calls = turn.tool_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].title, "Read README.md");
    assert!(calls.iter().all(|c| c.status() == Some(Completed)));
    assert_eq!(
        calls[1].raw_output,
        Some(json!({"lines": 3, "words": 7, "headings": 1, "todos": 1}))
    );
    let last = turn.plans().last().unwrap().entries.clone();
    assert!(last.iter().all(|e| e.status == PlanEntryStatus::Completed));
    assert_eq!(
        turn.text(),
        "`README.md` has 3 lines, 7 words, 1 headings and 1 TODOs."
    );
    assert!(!turn.thoughts().is_empty());
}

async fn planner_revises_its_plan_when_the_file_is_missing(protocol: u16) {
    let client = TestClient::builder()
        .protocol(protocol)
        .fs(MemoryFs::new())
        .connect(planner::Planner)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("NOPE.md").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    let last = turn.plans().last().unwrap().entries.clone();
    let steps: Vec<_> = last.iter().map(|e| e.content.as_str()).collect();
    assert_eq!(steps, ["Read NOPE.md", "Explain that the file is missing"]);
    assert_eq!(turn.tool_calls()[0].status(), Some(Failed));
}

/// v1 only: the cancel goes out when the agent shows its first tool call, and arrives while the
/// step waits for the editor's `fs/read_text_file` answer. On v2 the agent reads the file
/// itself, at once, and the turn may be over before the cancel is read.
#[tokio::test]
async fn planner_stops_between_steps_when_cancelled() {
    let fs = MemoryFs::new().with("/workspace/README.md", "text");
    let client = TestClient::builder()
        .fs(fs)
        .connect(planner::Planner)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    session.cancel_when(|u| matches!(u, SessionUpdate::ToolCall(_)));
    let turn = within(session.prompt("")).await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::Cancelled));
    assert_eq!(turn.text(), "", "no report after the cancel");
    assert_eq!(
        turn.tool_calls().len(),
        1,
        "no step started after the cancel"
    );
}

// ---- modes ----

async fn modes_advertises_modes_commands_and_a_config_option(protocol: u16) {
    let client = TestClient::builder()
        .protocol(protocol)
        .connect(modes::Modes)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let view = session.view();
    assert_eq!(view.mode.as_deref(), Some("ask"));
    assert_eq!(view.modes, ["ask", "code"]);
    // The modes are offered as a config option too, first; then the tone.
    let options: Vec<_> = view
        .config_options
        .iter()
        .map(|o| (o.id.0.to_string(), o.category.clone()))
        .collect();
    assert_eq!(
        options,
        [
            ("mode".to_owned(), Some(SessionConfigOptionCategory::Mode)),
            ("tone".to_owned(), None)
        ]
    );
    if protocol == 1 {
        // v1 also answers with the modes themselves (v2 has only the option).
        let answer = session.new_session_response();
        assert_eq!(answer["modes"]["currentModeId"], "ask");
    }
    // The slash commands arrive right after the answer.
    let turn = session.prompt("hi").await.unwrap();
    assert_eq!(turn.text(), "[ask mode] You said: hi");
    assert_eq!(session.view().commands.len(), 5);
}

async fn modes_switches_from_the_mode_picker_and_from_a_slash_command(protocol: u16) {
    let client = TestClient::builder()
        .protocol(protocol)
        .connect(modes::Modes)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    session.set_mode("code").await.unwrap();
    assert_eq!(
        session.prompt("x").await.unwrap().text(),
        "[code mode] You said: x"
    );
    let err = session.set_mode("yolo").await.unwrap_err();
    assert!(
        matches!(err, acp::Error::Rpc { code: -32602, .. }),
        "{err:?}"
    );

    let turn = session.prompt("/ask").await.unwrap();
    assert_eq!(session.view().mode.as_deref(), Some("ask"));
    if protocol == 1 {
        // v2 tells the mode by its config option only.
        assert!(turn.updates().iter().any(
            |u| matches!(u, SessionUpdate::CurrentModeUpdate(m) if &*m.current_mode_id.0 == "ask")
        ));
    }
    assert_eq!(
        session.prompt("y").await.unwrap().text(),
        "[ask mode] You said: y"
    );
    assert_eq!(
        session.prompt("/echo hi there").await.unwrap().text(),
        "hi there"
    );
    // Ask mode: the tool's check refuses the call before the user is asked.
    let turn = session.prompt("/note milk").await.unwrap();
    assert_eq!(
        turn.text(),
        "Not saved: ask mode never edits; switch to code mode (/code) first"
    );
    assert!(turn.permission_requests().is_empty());
    assert_eq!(turn.tool_calls()[0].status(), Some(Failed));
    // Code mode: asked, then saved.
    session.set_mode("code").await.unwrap();
    let turn = session.prompt("/note milk").await.unwrap();
    assert_eq!(turn.text(), "Saved (1 notes).");
    assert_eq!(turn.permission_requests().len(), 1);
}

async fn modes_config_option_changes_the_tone(protocol: u16) {
    let client = TestClient::builder()
        .protocol(protocol)
        .connect(modes::Modes)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let answer = session.set_config_option("tone", "cheerful").await.unwrap();
    assert_eq!(answer["configOptions"][1]["currentValue"], "cheerful");
    assert_eq!(session.prompt("/echo yay").await.unwrap().text(), "yay 🎉");
}

// ---- model ----

fn model_client(protocol: u16) -> acp::testing::TestClientBuilder {
    TestClient::builder()
        .protocol(protocol)
        .fs(MemoryFs::new().with("/workspace/notes.txt", "milk"))
}

async fn model_reads_through_a_tool_it_picked_by_name(protocol: u16) {
    let client = model_client(protocol)
        .connect(model::ModelAgent::new(model::scripted()))
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("read notes.txt").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    let calls = turn.tool_calls();
    assert_eq!(calls[0].title, "Read notes.txt");
    assert_eq!(calls[0].statuses, [Pending, InProgress, Completed]);
    assert_eq!(turn.text(), "Done. The tool returned:\nmilk");
}

async fn model_writes_after_permission_and_shows_a_diff(protocol: u16) {
    let client = model_client(protocol)
        .connect(model::ModelAgent::new(model::scripted()))
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("write notes.txt eggs").await.unwrap();
    assert_eq!(turn.permission_requests().len(), 1);
    let call = &turn.tool_calls()[0];
    assert_eq!(call.status(), Some(Completed));
    let diff = call.diffs()[0];
    assert_eq!(diff.old_text.as_deref(), Some("milk"));
    assert_eq!(diff.new_text, "eggs");
    assert_eq!(
        client.fs().read("/workspace/notes.txt").as_deref(),
        Some("eggs")
    );
}

async fn model_hears_about_a_rejected_tool_call(protocol: u16) {
    let client = model_client(protocol)
        .permissions(PermissionPolicy::RejectOnce)
        .connect(model::ModelAgent::new(model::scripted()))
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("write notes.txt eggs").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert!(
        turn.text()
            .starts_with("The tool failed: permission denied"),
        "{}",
        turn.text()
    );
    assert_eq!(
        client.fs().read("/workspace/notes.txt").as_deref(),
        Some("milk")
    );
}

async fn model_gets_bad_arguments_back_as_a_descriptive_error(protocol: u16) {
    let client = model_client(protocol)
        .connect(model::ModelAgent::new(model::scripted()))
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("bad").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert!(
        turn.text().starts_with("The tool failed:"),
        "{}",
        turn.text()
    );
    assert!(
        turn.text().contains("path"),
        "names the argument: {}",
        turn.text()
    );
}

async fn model_stops_at_max_turn_requests(protocol: u16) {
    let agent = model::ModelAgent::new(model::scripted()).max_turn_requests(3);
    let client = model_client(protocol).connect(agent).await.unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("spin").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::MaxTurnRequests));
    assert_eq!(turn.tool_calls().len(), 3);
}

// ---- every example, in an editor that offers neither fs nor terminal ----

mod without_fs;

// ---- the examples' sessions reloaded ----

mod history;

// ---- workspace: every root of the session ----

mod roots;

// ---- mcp: against a real MCP server ----

mod mcp_servers;
