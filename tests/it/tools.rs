//! The tool-call lifecycle run by `#[acp::tool]` methods, seen from the client: the exact
//! sequence of messages for a call that is allowed, allowed always, rejected, cancelled,
//! panics, or called by name with bad arguments. Each test names the behaviour it guarantees.
//!
//! The client is `acp::testing::TestClient` in process on a paused clock, read frame by frame
//! (`next_frame`), so every frame the agent sends is asserted as is, in order. It holds each
//! permission request and answers it by hand, after checking that the agent sends nothing
//! while the question is open (the paused clock jumps as soon as the agent is idle): a tool
//! call goes `in_progress` only after the answer. Each test ends by checking that nothing
//! follows the last answer and that the agent shuts down cleanly. (A `tool_call` without
//! `status` is `pending`: the schema leaves the default out.)

use std::path::PathBuf;
use std::time::Duration;

use acp::testing::TestClient;
use acp::{Diff, Json, Prompt, Session, StopReason, schema};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// The agent under test

#[derive(serde::Serialize)]
struct Stats {
    lines: usize,
}

struct Tester;

#[acp::agent(name = "tester", title = "Tester", version = "1.2.3")]
impl Tester {
    /// `<command> [rest]`: `write`, `write-twice`, `sleep`, `panic`, `diff`, `stats`,
    /// `call <tool> <json args>`, `ask-raw <json>`.
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let text = prompt.text();
        let (command, rest) = text.split_once(' ').unwrap_or((&text, ""));
        let outcome = match command {
            "write" => self.write(cx, "notes.md".into(), "hello".into()).await,
            "write-twice" => {
                let first = self.write(cx, "a.md".into(), "1".into()).await?;
                let second = self.write(cx, "b.md".into(), "22".into()).await?;
                Ok(format!("{first}, {second}"))
            }
            "sleep" => self.sleep(cx).await.map(|()| "woke".to_owned()),
            "panic" => self.boom(cx).await,
            "diff" => self.edit(cx, "x.rs".into()).await.map(|d| d.new_text),
            "stats" => self
                .stats(cx, "one\ntwo".into())
                .await
                .map(|s| s.0.lines.to_string()),
            "ask-raw" => {
                // A permission request the author builds, showing `rest` as the raw input.
                let raw: Value = serde_json::from_str(rest)?;
                let call = cx.tool_call("Ask").start().await?;
                let fields = schema::ToolCallUpdateFields::new().raw_input(raw);
                let ok = schema::PermissionOption::new(
                    "allow_once",
                    "Allow",
                    schema::PermissionOptionKind::AllowOnce,
                );
                let chosen = cx
                    .request_permission(
                        schema::ToolCallUpdate::new(call.id().clone(), fields),
                        vec![ok],
                    )
                    .await?;
                call.complete(vec![]).await?;
                Ok(chosen.to_string())
            }
            "call" => {
                let (name, args) = rest.split_once(' ').unwrap_or((rest, "null"));
                let args: Value = serde_json::from_str(args)?;
                cx.call_tool(name, args).await.map(|out| out.to_text())
            }
            other => Err(acp::Error::msg(format!("unknown command {other}"))),
        };
        match outcome {
            Ok(text) => cx.message(format!("ok: {text}")).await?,
            Err(acp::Error::PermissionDenied) => cx.message("denied").await?,
            Err(acp::Error::InvalidParams(m)) => cx.message(format!("invalid: {m}")).await?,
            Err(e) => return Err(e),
        }
        Ok(StopReason::EndTurn)
    }

    /// Writes a file (pretend).
    ///
    /// # Arguments
    /// - `path`: where to write.
    /// - `content`: what to write.
    #[acp::tool(kind = "edit", title = "Write {path}", permission)]
    async fn write(&self, cx: &Session, path: PathBuf, content: String) -> acp::Result<String> {
        let _ = cx;
        Ok(format!(
            "wrote {} bytes to {}",
            content.len(),
            path.display()
        ))
    }

    /// Waits until the turn is cancelled.
    #[acp::tool(kind = "think", title = "Sleep")]
    async fn sleep(&self, cx: &Session) -> acp::Result<()> {
        let _ = cx;
        std::future::pending::<()>().await;
        Ok(())
    }

    /// Panics.
    #[acp::tool(kind = "execute")]
    async fn boom(&self, _cx: &Session) -> acp::Result<String> {
        panic!("kaboom")
    }

    /// Returns a diff.
    #[acp::tool(kind = "edit", title = "Edit {path}")]
    async fn edit(&self, cx: &Session, path: PathBuf) -> acp::Result<Diff> {
        Ok(Diff::new(cx.cwd().join(path), "new").old_text("old".to_owned()))
    }

    /// Counts lines, returning JSON.
    #[acp::tool(kind = "search", name = "count_lines")]
    async fn stats(&self, _cx: &Session, text: String) -> acp::Result<Json<Stats>> {
        Ok(Json(Stats {
            lines: text.lines().count(),
        }))
    }
}

// ---------------------------------------------------------------------------------------------
// The client's side, frame by frame

const CWD: &str = "/work/project";

/// Waits this long (on the paused clock: until the agent is idle) before asserting that the
/// agent sent nothing more.
const QUIET: Duration = Duration::from_secs(1);

/// The test client with its current session; every permission request is held and answered
/// by the test.
struct Client {
    client: TestClient,
    session: String,
}

impl Client {
    async fn start() -> Client {
        let client = TestClient::builder()
            .cwd(CWD)
            .hold("session/request_permission")
            .connect(Tester)
            .await
            .unwrap();
        assert_eq!(
            client.initialize_response()["agentInfo"],
            json!({ "name": "tester", "title": "Tester", "version": "1.2.3" })
        );
        let mut c = Client {
            client,
            session: String::new(),
        };
        c.new_session().await;
        c
    }

    /// Opens a new session and makes it the current one (nothing else may come first).
    async fn new_session(&mut self) {
        let session = self.client.new_session().await.unwrap();
        self.session = session.id().0.to_string();
    }

    /// The agent's next frame.
    async fn recv(&mut self) -> Value {
        match self.client.next_frame().await {
            Ok(frame) => frame.message,
            Err(e) => panic!("{e}\n{}", self.client.describe()),
        }
    }

    /// Starts a prompt turn on the current session; returns the request id.
    async fn prompt(&mut self, text: &str) -> Value {
        self.client.send_request(
            "session/prompt",
            json!({ "sessionId": self.session, "prompt": [{ "type": "text", "text": text }] }),
        )
    }

    /// Expects a `session/update` of this session with this `update`.
    async fn expect_update(&mut self, update: Value) {
        let mut frame = self.recv().await;
        // Message chunks carry the runtime's message id: present, and not part of the shape.
        if let Some(chunk) = frame.pointer_mut("/params/update")
            && chunk["sessionUpdate"] == "agent_message_chunk"
            && let Some(chunk) = chunk.as_object_mut()
        {
            let id = chunk.remove("messageId");
            assert!(
                id.is_some_and(|id| id.is_string()),
                "a message chunk without an id"
            );
        }
        let expected = json!({
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": { "sessionId": self.session, "update": update },
        });
        assert_eq!(frame, expected, "\n got: {frame:#}\nwant: {expected:#}");
    }

    /// Expects a permission request for this tool call; checks that the agent sends nothing
    /// while it is unanswered, then answers with `option`.
    async fn expect_permission(&mut self, tool_call: Value, option: &str) {
        let frame = self.recv().await;
        let expected = json!({
            "jsonrpc": "2.0",
            "id": frame["id"],
            "method": "session/request_permission",
            "params": {
                "sessionId": self.session,
                "toolCall": tool_call,
                "options": [
                    { "optionId": "allow_once", "name": "Allow", "kind": "allow_once" },
                    { "optionId": "allow_always", "name": "Always allow", "kind": "allow_always" },
                    { "optionId": "reject_once", "name": "Reject", "kind": "reject_once" },
                    { "optionId": "reject_always", "name": "Always reject", "kind": "reject_always" },
                ],
            },
        });
        assert_eq!(frame, expected, "\n got: {frame:#}\nwant: {expected:#}");
        let held = self
            .client
            .next_request("session/request_permission")
            .await
            .unwrap();
        assert_eq!(
            held.message(),
            &frame,
            "the held request is the one just seen"
        );
        self.assert_quiet("while the permission request is unanswered")
            .await;
        held.select(option);
    }

    async fn expect_message(&mut self, text: &str) {
        self.expect_update(json!({
            "sessionUpdate": "agent_message_chunk",
            "content": { "type": "text", "text": text },
        }))
        .await;
    }

    async fn expect_answer(&mut self, id: Value, stop_reason: &str) {
        let frame = self.recv().await;
        assert_eq!(
            frame,
            json!({ "jsonrpc": "2.0", "id": id, "result": { "stopReason": stop_reason } })
        );
    }

    /// Lets the agent run until it is idle, and asserts that it sent nothing meanwhile.
    async fn assert_quiet(&mut self, when: &str) {
        tokio::time::sleep(QUIET).await;
        let unread: Vec<String> = self
            .client
            .take_unread()
            .iter()
            .map(|f| f.message.to_string())
            .collect();
        assert!(
            unread.is_empty(),
            "the agent sent frames {when}:\n{}",
            unread.join("\n")
        );
    }

    /// Nothing follows the last answer; the agent shuts down cleanly and never wrote
    /// malformed output.
    async fn finish(mut self) {
        self.assert_quiet("after the last answer").await;
        self.client.close().await.unwrap();
    }
}

fn write_call(id: &str, path: &str, content: &str) -> Value {
    json!({
        "sessionUpdate": "tool_call",
        "toolCallId": id,
        "title": format!("Write {path}"),
        "name": "write",
        "kind": "edit",
        "locations": [{ "path": format!("{CWD}/{path}") }],
        "rawInput": { "path": path, "content": content },
    })
}

fn write_permission(id: &str, path: &str, content: &str) -> Value {
    json!({
        "toolCallId": id,
        "title": format!("Write {path}"),
        "kind": "edit",
        "locations": [{ "path": format!("{CWD}/{path}") }],
        "rawInput": { "path": path, "content": content },
    })
}

fn status(id: &str, status: &str) -> Value {
    json!({ "sessionUpdate": "tool_call_update", "toolCallId": id, "status": status })
}

fn completed_text(id: &str, text: &str) -> Value {
    json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": id,
        "status": "completed",
        "content": [{ "type": "content", "content": { "type": "text", "text": text } }],
    })
}

fn failed(id: &str, message: &str) -> Value {
    json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": id,
        "status": "failed",
        "content": [{ "type": "content", "content": { "type": "text", "text": message } }],
    })
}

// ---------------------------------------------------------------------------------------------
/// The rest of a turn that writes "hello" to notes.md: the call announced, permission asked
/// and answered with `answer` (or not asked at all: `None`), run, completed, and reported.
async fn expect_hello_written(c: &mut Client, id: Value, call: &str, answer: Option<&str>) {
    c.expect_update(write_call(call, "notes.md", "hello")).await;
    if let Some(answer) = answer {
        c.expect_permission(write_permission(call, "notes.md", "hello"), answer)
            .await;
    }
    c.expect_update(status(call, "in_progress")).await;
    c.expect_update(completed_text(call, "wrote 5 bytes to notes.md"))
        .await;
    c.expect_message("ok: wrote 5 bytes to notes.md").await;
    c.expect_answer(id, "end_turn").await;
}

// The lifecycle, message by message

#[tokio::test(start_paused = true)]
async fn allowed_once_tool_call_goes_pending_permission_in_progress_completed() {
    let mut c = Client::start().await;
    let id = c.prompt("write").await;
    expect_hello_written(&mut c, id, "call_0", Some("allow_once")).await;

    // "Once" is not remembered: the next call asks again.
    let id = c.prompt("write").await;
    c.expect_update(write_call("call_1", "notes.md", "hello"))
        .await;
    c.expect_permission(
        write_permission("call_1", "notes.md", "hello"),
        "reject_once",
    )
    .await;
    c.expect_update(failed("call_1", "permission denied by the user"))
        .await;
    c.expect_message("denied").await;
    c.expect_answer(id, "end_turn").await;
    c.finish().await;
}

#[tokio::test(start_paused = true)]
async fn allow_always_is_remembered_for_the_session_and_not_asked_again() {
    let mut c = Client::start().await;
    let id = c.prompt("write-twice").await;
    c.expect_update(write_call("call_0", "a.md", "1")).await;
    c.expect_permission(write_permission("call_0", "a.md", "1"), "allow_always")
        .await;
    c.expect_update(status("call_0", "in_progress")).await;
    c.expect_update(completed_text("call_0", "wrote 1 bytes to a.md"))
        .await;
    // Second call of the same tool: no permission request.
    c.expect_update(write_call("call_1", "b.md", "22")).await;
    c.expect_update(status("call_1", "in_progress")).await;
    c.expect_update(completed_text("call_1", "wrote 2 bytes to b.md"))
        .await;
    c.expect_message("ok: wrote 1 bytes to a.md, wrote 2 bytes to b.md")
        .await;
    c.expect_answer(id, "end_turn").await;

    // Still remembered in a later turn of the same session.
    let id = c.prompt("write").await;
    expect_hello_written(&mut c, id, "call_2", None).await;

    // A new session asks again.
    c.new_session().await;
    let id = c.prompt("write").await;
    expect_hello_written(&mut c, id, "call_0", Some("allow_once")).await;
    c.finish().await;
}

#[tokio::test(start_paused = true)]
async fn rejected_tool_call_fails_and_returns_permission_denied() {
    let mut c = Client::start().await;
    let id = c.prompt("write").await;
    c.expect_update(write_call("call_0", "notes.md", "hello"))
        .await;
    c.expect_permission(
        write_permission("call_0", "notes.md", "hello"),
        "reject_always",
    )
    .await;
    c.expect_update(failed("call_0", "permission denied by the user"))
        .await;
    c.expect_message("denied").await;
    c.expect_answer(id, "end_turn").await;

    // "Reject always" is remembered: the next call fails without asking.
    let id = c.prompt("write").await;
    c.expect_update(write_call("call_1", "notes.md", "hello"))
        .await;
    c.expect_update(failed("call_1", "permission denied by the user"))
        .await;
    c.expect_message("denied").await;
    c.expect_answer(id, "end_turn").await;
    c.finish().await;
}

#[tokio::test(start_paused = true)]
async fn cancel_during_the_body_fails_the_call_and_the_turn_answers_cancelled() {
    let mut c = Client::start().await;
    let id = c.prompt("sleep").await;
    c.expect_update(json!({
        "sessionUpdate": "tool_call",
        "toolCallId": "call_0",
        "title": "Sleep",
        "name": "sleep",
        "kind": "think",
        "rawInput": {},
    }))
    .await;
    c.expect_update(status("call_0", "in_progress")).await;
    c.client
        .notify("session/cancel", json!({ "sessionId": c.session }));
    c.expect_update(failed("call_0", "cancelled")).await;
    c.expect_answer(id, "cancelled").await;
    c.finish().await;
}

#[tokio::test(start_paused = true)]
async fn panic_in_a_tool_fails_the_call_and_the_turn_and_the_agent_lives_on() {
    let mut c = Client::start().await;
    let id = c.prompt("panic").await;
    c.expect_update(json!({
        "sessionUpdate": "tool_call",
        "toolCallId": "call_0",
        "title": "boom",
        "name": "boom",
        "kind": "execute",
        "rawInput": {},
    }))
    .await;
    c.expect_update(status("call_0", "in_progress")).await;
    c.expect_update(failed("call_0", "the tool `boom` panicked: kaboom"))
        .await;
    let answer = c.recv().await;
    assert_eq!(
        answer,
        json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": { "code": -32603, "message": "the tool `boom` panicked: kaboom" },
        })
    );

    // The agent is still serving.
    let id = c.prompt("diff").await;
    c.expect_update(json!({
        "sessionUpdate": "tool_call",
        "toolCallId": "call_1",
        "title": "Edit x.rs",
        "name": "edit",
        "kind": "edit",
        "locations": [{ "path": format!("{CWD}/x.rs") }],
        "rawInput": { "path": "x.rs" },
    }))
    .await;
    c.expect_update(status("call_1", "in_progress")).await;
    c.expect_update(json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": "call_1",
        "status": "completed",
        "content": [{ "type": "diff", "path": format!("{CWD}/x.rs"), "oldText": "old", "newText": "new" }],
    }))
    .await;
    c.expect_message("ok: new").await;
    c.expect_answer(id, "end_turn").await;
    c.finish().await;
}

#[tokio::test(start_paused = true)]
async fn bad_arguments_by_name_fail_the_call_with_a_message_for_the_model() {
    let mut c = Client::start().await;
    let id = c.prompt(r#"call write {"path": 3, "contents": "x"}"#).await;
    c.expect_update(json!({
        "sessionUpdate": "tool_call",
        "toolCallId": "call_0",
        "title": "Write 3",
        "name": "write",
        "kind": "edit",
        "rawInput": { "path": 3, "contents": "x" },
    }))
    .await;
    let message = "invalid arguments for tool `write`: argument `path`: invalid type: integer `3`, \
                   expected path string; missing argument `content`; unknown argument `contents` \
                   (expected an object with `path`, `content`)";
    c.expect_update(failed("call_0", message)).await;
    c.expect_message(&format!("invalid: {message}")).await;
    c.expect_answer(id, "end_turn").await;

    // Not an object at all.
    let id = c.prompt(r#"call count_lines [1]"#).await;
    c.expect_update(json!({
        "sessionUpdate": "tool_call",
        "toolCallId": "call_1",
        "title": "count_lines",
        "name": "count_lines",
        "kind": "search",
        "rawInput": [1],
    }))
    .await;
    let message = "invalid arguments for tool `count_lines`: the arguments must be a JSON object, \
                   not an array (expected an object with `text`)";
    c.expect_update(failed("call_1", message)).await;
    c.expect_message(&format!("invalid: {message}")).await;
    c.expect_answer(id, "end_turn").await;

    // An unknown tool: no tool call at all.
    let id = c.prompt(r#"call nope {}"#).await;
    c.expect_message(
        "invalid: no tool named `nope`; the tools are: write, sleep, boom, edit, count_lines",
    )
    .await;
    c.expect_answer(id, "end_turn").await;
    c.finish().await;
}

#[tokio::test(start_paused = true)]
async fn call_by_name_runs_the_same_lifecycle_as_a_typed_call() {
    let mut c = Client::start().await;
    let id = c
        .prompt(r#"call write {"path": "notes.md", "content": "hello"}"#)
        .await;
    expect_hello_written(&mut c, id, "call_0", Some("allow_once")).await;
    c.finish().await;
}

#[tokio::test(start_paused = true)]
async fn json_output_is_sent_as_raw_output_and_text() {
    let mut c = Client::start().await;
    let id = c.prompt(r#"call count_lines {"text": "a\nb\nc"}"#).await;
    c.expect_update(json!({
        "sessionUpdate": "tool_call",
        "toolCallId": "call_0",
        "title": "count_lines",
        "name": "count_lines",
        "kind": "search",
        "rawInput": { "text": "a\nb\nc" },
    }))
    .await;
    c.expect_update(status("call_0", "in_progress")).await;
    c.expect_update(json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": "call_0",
        "status": "completed",
        "content": [{ "type": "content", "content": { "type": "text", "text": "{\n  \"lines\": 3\n}" } }],
        "rawOutput": { "lines": 3 },
    }))
    .await;
    c.expect_message("ok: {\n  \"lines\": 3\n}").await;
    c.expect_answer(id, "end_turn").await;
    c.finish().await;
}

#[tokio::test(start_paused = true)]
async fn arguments_nested_too_deep_for_a_rust_client_are_cut_in_the_frames_not_lost() {
    // 120 levels parse (serde_json reads up to 128), but inside a `tool_call` frame they
    // would pass 128, and a client reading with serde_json (the official Rust SDK) could not
    // read the frame at all.
    let levels = 120;
    let args = format!(
        r#"{{"text": "x", "deep": {}{}}}"#,
        "[".repeat(levels),
        "]".repeat(levels)
    );
    let mut c = Client::start().await;
    let id = c.prompt(&format!("call count_lines {args}")).await;
    // The object is one level, `deep` and what it holds 99 more; the rest is cut.
    let cut = (1..100).fold(json!("(nested too deeply to show)"), |v, _| json!([v]));
    c.expect_update(json!({
        "sessionUpdate": "tool_call",
        "toolCallId": "call_0",
        "title": "count_lines",
        "name": "count_lines",
        "kind": "search",
        "rawInput": { "text": "x", "deep": cut },
    }))
    .await;
    let message = "invalid arguments for tool `count_lines`: unknown argument `deep` \
                   (expected an object with `text`)";
    c.expect_update(failed("call_0", message)).await;
    c.expect_message(&format!("invalid: {message}")).await;
    c.expect_answer(id, "end_turn").await;
    c.finish().await;
}

#[tokio::test(start_paused = true)]
async fn a_permission_request_with_a_raw_input_too_deep_for_a_rust_client_is_cut_too() {
    let levels = 120;
    let raw = format!("{}{}", "[".repeat(levels), "]".repeat(levels));
    let mut c = Client::start().await;
    let id = c.prompt(&format!("ask-raw {raw}")).await;
    c.expect_update(
        json!({ "sessionUpdate": "tool_call", "toolCallId": "call_0", "title": "Ask" }),
    )
    .await;
    let frame = c.recv().await;
    assert_eq!(frame["method"], "session/request_permission", "{frame}");
    let cut = (0..100).fold(json!("(nested too deeply to show)"), |v, _| json!([v]));
    assert_eq!(frame["params"]["toolCall"]["rawInput"], cut);
    let held = c
        .client
        .next_request("session/request_permission")
        .await
        .unwrap();
    held.select("allow_once");
    c.expect_update(json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": "call_0",
        "status": "completed",
        "content": [],
    }))
    .await;
    c.expect_message("ok: allow_once").await;
    c.expect_answer(id, "end_turn").await;
    c.finish().await;
}
