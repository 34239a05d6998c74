//! Every v2 frame written from the account reads back as the schema crate's v2 type, strictly:
//! the JSON we write is exactly what that type writes again (nothing it drops, defaults on
//! error or skips); and a v2 client's params read as the v1 requests the handlers take.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::*;
use crate::protocol::State;
use crate::schema::{
    self, AvailableCommand, AvailableCommandsUpdate, ContentChunk, CurrentModeUpdate, Diff, Plan,
    PlanEntry, PlanEntryPriority, PlanEntryStatus, ToolCall, ToolCallContent, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind, UnstructuredCommandInput, v2,
};

/// `value` (JSON we wrote) as the v2 type `T`, which writes it back unchanged.
#[track_caller]
fn strict<T: DeserializeOwned + Serialize>(value: &Value) -> T {
    let typed: T = serde_json::from_value(value.clone())
        .unwrap_or_else(|e| panic!("not a v2 {}: {e}: {value}", std::any::type_name::<T>()));
    assert_eq!(
        &serde_json::to_value(&typed).unwrap(),
        value,
        "not exactly v2's shape"
    );
    typed
}

/// The v2 frame of `update`, checked strictly as a v2 `session/update`; its update's JSON.
#[track_caller]
fn v2_frame(update: &SessionUpdate) -> Option<Value> {
    let bytes = session_update(&SessionId::new("s"), update).unwrap()?;
    let frame: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(frame["method"], crate::protocol::methods::SESSION_UPDATE);
    let _: v2::UpdateSessionNotification = strict(&frame["params"]);
    Some(frame["params"]["update"].clone())
}

fn v2_update(update: SessionUpdate) -> Option<v2::SessionUpdate> {
    let value = v2_frame(&update)?;
    Some(strict(&value))
}

/// A v1 update as a v1 agent writes it.
fn v1(update: Value) -> SessionUpdate {
    serde_json::from_value(update).expect("a v1 update")
}

#[test]
fn chunks_are_the_same_bytes_and_read_as_v2() {
    let chunk = SessionUpdate::AgentMessageChunk(
        ContentChunk::new("hi".into()).message_id(schema::MessageId::new("msg_0")),
    );
    assert!(same_as_v1(&chunk));
    assert!(matches!(
        v2_update(chunk.clone()),
        Some(v2::SessionUpdate::AgentMessageChunk(_))
    ));
    // What `same_as_v1` lets through as v1 writes it is a strict v2 update.
    let _: v2::SessionUpdate = strict(&serde_json::to_value(&chunk).unwrap());
    let unstamped = SessionUpdate::AgentMessageChunk(ContentChunk::new("hi".into()));
    assert!(!same_as_v1(&unstamped));
}

#[test]
fn every_chunk_has_an_id_and_content_blocks_keep_their_shape() {
    let link = schema::ContentBlock::ResourceLink(
        schema::ResourceLink::new("a.txt", "file:///w/a.txt")
            .mime_type("text/plain".to_owned())
            .size(12),
    );
    let image = schema::ContentBlock::Image(
        schema::ImageContent::new("aGk=", "image/png").uri("file:///w/a.png".to_owned()),
    );
    for (update, kind) in [
        (
            SessionUpdate::UserMessageChunk(ContentChunk::new("hi".into())),
            "user_message_chunk",
        ),
        (
            SessionUpdate::AgentThoughtChunk(ContentChunk::new(image)),
            "agent_thought_chunk",
        ),
        (
            SessionUpdate::AgentMessageChunk(ContentChunk::new(link)),
            "agent_message_chunk",
        ),
    ] {
        let value = v2_frame(&update).unwrap();
        assert_eq!(value["sessionUpdate"], kind);
        assert_eq!(value["messageId"], updates::UNSTAMPED_MESSAGE_ID, "{value}");
        let _: v2::SessionUpdate = strict(&value);
    }
    // v2's `size` is unsigned: a negative one is left out, not a frame v2 rejects.
    let mut link = schema::ResourceLink::new("a", "file:///a");
    link.size = Some(-1);
    let value = v2_frame(&SessionUpdate::AgentMessageChunk(ContentChunk::new(
        schema::ContentBlock::ResourceLink(link),
    )))
    .unwrap();
    assert!(value["content"].get("size").is_none(), "{value}");
}

#[test]
fn a_tool_call_is_created_by_a_tool_call_update_and_its_diff_is_changes() {
    let call = SessionUpdate::ToolCall(
        ToolCall::new("call_1", "Write a.txt")
            .kind(ToolKind::Edit)
            .status(ToolCallStatus::Pending)
            .content(vec![ToolCallContent::Diff(
                Diff::new("/w/a.txt", "new\n").old_text("old\n".to_owned()),
            )]),
    );
    let Some(v2::SessionUpdate::ToolCallUpdate(update)) = v2_update(call) else {
        panic!("not a tool_call_update")
    };
    let value = serde_json::to_value(&update).unwrap();
    assert_eq!(value["title"], "Write a.txt");
    assert_eq!(value["kind"], "edit");
    let diff = &value["content"][0];
    assert_eq!(
        diff["changes"][0],
        json!({"operation": "modify", "path": "/w/a.txt", "fileType": "text"})
    );
    assert_eq!(
        diff["patch"],
        json!({
            "format": "git_patch",
            "text": "diff --git /w/a.txt /w/a.txt\n--- /w/a.txt\n+++ /w/a.txt\n@@ -1 +1 @@\n-old\n+new\n"
        })
    );
    let patch = SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        "call_1",
        ToolCallUpdateFields::new().status(ToolCallStatus::Completed),
    ));
    let value = v2_frame(&patch).unwrap();
    assert_eq!(
        value,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "completed"})
    );
}

#[test]
fn a_tool_call_says_what_v1_wrote_and_its_content_reads_as_v2() {
    // A tool call as v1 writes it: kind `other`, status `pending` and empty lists unsaid.
    let bare = v2_frame(&SessionUpdate::ToolCall(ToolCall::new("c", "Think"))).unwrap();
    assert_eq!(
        bare,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": "Think"})
    );
    let call = v1(json!({
        "sessionUpdate": "tool_call",
        "toolCallId": "c",
        "title": "Run",
        "name": "run",
        "kind": "execute",
        "status": "in_progress",
        "content": [
            {"type": "content", "content": {"type": "text", "text": "out"}, "_meta": {"k": 1}},
            {"type": "terminal", "terminalId": "term_1"},
            {"type": "session", "sessionId": "child"},
            {"type": "diff", "path": "/w/n", "newText": "x", "_meta": {"d": true}},
        ],
        "locations": [{"path": "/w/a.rs", "line": 3}, {"path": "/w/b.rs"}],
        "rawInput": {"cmd": "ls"},
        "rawOutput": "ok",
        "_meta": {"m": "v"},
    }));
    let value = v2_frame(&call).unwrap();
    assert_eq!(
        value,
        json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c",
            "name": "run",
            "title": "Run",
            "kind": "execute",
            "status": "in_progress",
            "content": [
                {"type": "content", "content": {"type": "text", "text": "out"}, "_meta": {"k": 1}},
                {"type": "terminal", "terminalId": "term_1"},
                {"type": "session", "sessionId": "child"},
                {
                    "type": "diff",
                    "changes": [{"operation": "add", "path": "/w/n", "fileType": "text"}],
                    "patch": {
                        "format": "git_patch",
                        "text": "diff --git /w/n /w/n\nnew file mode 100644\n--- /dev/null\n+++ /w/n\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n",
                    },
                    "_meta": {"d": true},
                },
            ],
            "locations": [{"path": "/w/a.rs", "line": 3}, {"path": "/w/b.rs"}],
            "rawInput": {"cmd": "ls"},
            "rawOutput": "ok",
            "_meta": {"m": "v"},
        })
    );
}

/// The old JSON translation passed v1's line 0 through; v2's lines start at 1 (the schema's
/// `minimum: 1`), so the frame was one a v2 client rejects.
#[test]
fn a_location_on_line_0_has_no_line_on_v2() {
    let update = v1(json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c",
        "locations": [{"path": "/w/a.rs", "line": 0}],
    }));
    let value = v2_frame(&update).unwrap();
    assert_eq!(value["locations"], json!([{"path": "/w/a.rs"}]));
}

#[test]
fn a_new_file_is_an_add_with_a_new_file_patch() {
    let call = SessionUpdate::ToolCall(
        ToolCall::new("c", "t").content(vec![ToolCallContent::Diff(Diff::new("/w/n", "x"))]),
    );
    let value = v2_frame(&call).unwrap();
    assert_eq!(value["content"][0]["changes"][0]["operation"], "add");
    assert_eq!(
        value["content"][0]["patch"]["text"],
        "diff --git /w/n /w/n\nnew file mode 100644\n--- /dev/null\n+++ /w/n\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n"
    );
}

#[test]
fn git_patches_are_the_same_text_as_before() {
    assert_eq!(
        updates::git_patch("/p", Some("a\nb\n"), "a\nc"),
        "diff --git /p /p\n--- /p\n+++ /p\n@@ -1,2 +1,2 @@\n-a\n-b\n+a\n+c\n\\ No newline at end of file\n"
    );
    assert_eq!(
        updates::git_patch("/p", Some(""), ""),
        "diff --git /p /p\n--- /p\n+++ /p\n@@ -0,0 +0,0 @@\n"
    );
}

#[test]
fn a_plan_is_a_plan_update_with_the_session_plan_id() {
    let plan = SessionUpdate::Plan(
        Plan::new(vec![PlanEntry::new(
            "step",
            PlanEntryPriority::High,
            PlanEntryStatus::Pending,
        )])
        .meta(serde_json::Map::from_iter([("k".to_owned(), json!(1))])),
    );
    let value = v2_frame(&plan).unwrap();
    assert_eq!(
        value,
        json!({
            "sessionUpdate": "plan_update",
            "plan": {
                "type": "items",
                "planId": PLAN_ID,
                "entries": [{"content": "step", "priority": "high", "status": "pending"}],
                "_meta": {"k": 1},
            },
        })
    );
}

#[test]
fn command_inputs_carry_their_type_and_mode_updates_have_no_v2_frame() {
    let commands = SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(vec![
        AvailableCommand::new("note", "Take a note").input(
            schema::AvailableCommandInput::Unstructured(UnstructuredCommandInput::new("text")),
        ),
        AvailableCommand::new("clear", "Clear"),
    ]));
    let value = v2_frame(&commands).unwrap();
    assert_eq!(
        value["availableCommands"],
        json!([
            {"type": "command", "name": "note", "description": "Take a note",
             "input": {"type": "text", "hint": "text"}},
            {"type": "command", "name": "clear", "description": "Clear"},
        ])
    );
    let mode = SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new("code"));
    assert!(v2_update(mode).is_none());
}

fn v1_options() -> Vec<schema::SessionConfigOption> {
    serde_json::from_value(json!([
        {"id": "mode", "name": "Mode", "category": "mode", "type": "select",
         "currentValue": "code", "options": [{"value": "code", "name": "Code"},
                                              {"value": "ask", "name": "Ask", "description": "Q"}]},
        {"id": "model", "name": "Model", "category": "model", "type": "select",
         "currentValue": "m1", "options": [{"group": "fast", "name": "Fast",
                                            "options": [{"value": "m1", "name": "M1"}]}]},
        {"id": "yolo", "name": "YOLO", "description": "no asking", "type": "boolean",
         "currentValue": false, "category": "_custom", "_meta": {"x": 1}},
    ]))
    .unwrap()
}

#[test]
fn config_options_have_config_ids_and_group_ids() {
    let update = SessionUpdate::ConfigOptionUpdate(schema::ConfigOptionUpdate::new(v1_options()));
    let value = v2_frame(&update).unwrap();
    assert_eq!(
        value["configOptions"],
        json!([
            {"configId": "mode", "name": "Mode", "category": "mode", "type": "select",
             "currentValue": "code", "options": [{"value": "code", "name": "Code"},
                                                  {"value": "ask", "name": "Ask", "description": "Q"}]},
            {"configId": "model", "name": "Model", "category": "model", "type": "select",
             "currentValue": "m1", "options": [{"groupId": "fast", "name": "Fast",
                                                "options": [{"value": "m1", "name": "M1"}]}]},
            {"configId": "yolo", "name": "YOLO", "description": "no asking", "type": "boolean",
             "currentValue": false, "category": "_custom", "_meta": {"x": 1}},
        ])
    );
}

#[test]
fn every_other_update_kind_reads_as_v2() {
    for (update, kind) in [
        (
            json!({"sessionUpdate": "session_info_update", "title": "T", "updatedAt": null}),
            "session_info_update",
        ),
        (
            json!({"sessionUpdate": "usage_update", "used": 10, "size": 100,
                   "cost": {"amount": 0.5, "currency": "USD"}, "_meta": {"u": 1}}),
            "usage_update",
        ),
        (
            json!({"sessionUpdate": "usage_update", "used": 1, "size": 2}),
            "usage_update",
        ),
        (
            json!({"sessionUpdate": "plan_update",
                   "plan": {"type": "markdown", "planId": "p2", "content": "# Plan"}}),
            "plan_update",
        ),
        (
            json!({"sessionUpdate": "plan_removed", "planId": "p2"}),
            "plan_removed",
        ),
        (
            json!({"sessionUpdate": "notice", "severity": "warning", "title": "Careful"}),
            "notice",
        ),
        (
            json!({"sessionUpdate": "compaction_update", "compactionId": "k",
                   "status": "completed", "summary": [{"type": "text", "text": "s"}]}),
            "compaction_update",
        ),
        (
            json!({"sessionUpdate": "compaction_summary_chunk", "compactionId": "k",
                   "content": {"type": "text", "text": "s"}}),
            "compaction_summary_chunk",
        ),
        (
            json!({"sessionUpdate": "subagent_update", "sessionId": "child", "title": "Sub",
                   "cwd": "/w"}),
            "subagent_update",
        ),
        (
            json!({"sessionUpdate": "session_message", "messageId": "m1",
                   "senderSessionId": "parent", "recipientSessionId": "child",
                   "content": [{"type": "text", "text": "hi"}]}),
            "session_message",
        ),
        (
            json!({"sessionUpdate": "session_message_chunk", "messageId": "m1",
                   "content": {"type": "text", "text": "hi"}}),
            "session_message_chunk",
        ),
    ] {
        let expected = update.clone();
        let value = v2_frame(&v1(update)).unwrap_or_else(|| panic!("no v2 frame for {kind}"));
        assert_eq!(value["sessionUpdate"], kind);
        // The same shape in both versions: the same JSON.
        assert_eq!(value, expected, "{kind}");
    }
}

#[test]
fn a_replayed_record_is_converted_and_a_stale_one_skipped() {
    let session = SessionId::new("s");
    let raw = |text: &str| serde_json::value::RawValue::from_string(text.to_owned()).unwrap();
    let frame = replayed_update(
        &session,
        &raw(r#"{"sessionUpdate":"tool_call","toolCallId":"c","title":"t"}"#),
    )
    .unwrap()
    .expect("a frame");
    let frame: Value = serde_json::from_slice(&frame).unwrap();
    assert_eq!(
        frame["params"]["update"]["sessionUpdate"],
        "tool_call_update"
    );
    let mode = raw(r#"{"sessionUpdate":"current_mode_update","currentModeId":"code"}"#);
    assert!(replayed_update(&session, &mode).unwrap().is_none());
    let stale = raw(r#"{"sessionUpdate":"tool_call","title":"no id"}"#);
    assert!(replayed_update(&session, &stale).unwrap().is_none());
}

#[test]
fn the_echo_of_a_prompt_is_a_user_message() {
    let update = user_message(
        &schema::MessageId::new("msg_3"),
        &[
            "hello".into(),
            schema::ContentBlock::ResourceLink(schema::ResourceLink::new("a", "file:///a")),
        ],
    );
    let bytes = notification(&SessionId::new("s"), update).unwrap();
    let frame: Value = serde_json::from_slice(&bytes).unwrap();
    let _: v2::UpdateSessionNotification = strict(&frame["params"]);
    assert_eq!(
        frame["params"]["update"],
        json!({
            "sessionUpdate": "user_message",
            "messageId": "msg_3",
            "content": [{"type": "text", "text": "hello"},
                        {"type": "resource_link", "name": "a", "uri": "file:///a"}],
        })
    );
}

#[test]
fn state_updates_and_the_prompt_answer_read_as_v2() {
    let session = SessionId::new("s");
    for state in [State::Running, State::RequiresAction] {
        let frame: Value = serde_json::from_slice(&state_update(&session, state).unwrap()).unwrap();
        let _: v2::UpdateSessionNotification = strict(&frame["params"]);
    }
    for (outcome, cancelled, stop) in [
        (Ok(StopReason::EndTurn), false, "end_turn"),
        (Ok(StopReason::EndTurn), true, "cancelled"),
        (Err(Error::msg("boom")), false, "error"),
    ] {
        let (bytes, _) = idle(&session, outcome, cancelled, &["t1".to_owned()], None);
        let frame: Value = serde_json::from_slice(&bytes).unwrap();
        let update = &frame["params"]["update"];
        assert_eq!(update["stopReason"], stop, "{update}");
        let _: v2::UpdateSessionNotification = strict(&frame["params"]);
    }
    let answer: Value =
        serde_json::from_slice(&prompt_answer(&RequestId::Number(3), "msg_7")).unwrap();
    let _: v2::PromptResponse = strict(&answer["result"]);
}

#[test]
fn the_permission_request_has_a_title_and_the_tool_call_as_subject() {
    let v1 = schema::RequestPermissionRequest::new(
        "s",
        ToolCallUpdate::new(
            "c",
            ToolCallUpdateFields::new()
                .title("Write a".to_owned())
                .content(vec![ToolCallContent::Diff(Diff::new("/w/a", "x"))]),
        ),
        vec![
            schema::PermissionOption::new(
                "allow",
                "Allow",
                schema::PermissionOptionKind::AllowOnce,
            ),
            schema::PermissionOption::new(
                "never",
                "Never",
                schema::PermissionOptionKind::RejectAlways,
            ),
        ],
    );
    let value = serde_json::to_value(permission_request(v1)).unwrap();
    let _: v2::RequestPermissionRequest = strict(&value);
    assert_eq!(value["title"], "Write a");
    assert_eq!(value["subject"]["type"], "tool_call");
    assert_eq!(value["subject"]["toolCall"]["toolCallId"], "c");
    assert_eq!(
        value["subject"]["toolCall"]["content"][0]["changes"][0]["operation"],
        "add"
    );
    assert_eq!(value["options"][1]["kind"], "reject_always");
    let untitled = schema::RequestPermissionRequest::new(
        "s",
        ToolCallUpdate::new("c", ToolCallUpdateFields::new()),
        vec![],
    );
    assert_eq!(permission_request(untitled).title, "Allow this tool call?");
}

/// The v2 answer of `v1`, checked strictly as `A::V2`.
#[track_caller]
fn v2_answer<A: Answer>(v1: A) -> Value
where
    A::V2: DeserializeOwned,
{
    let value = serde_json::to_value(v1.into_v2()).unwrap();
    let _: A::V2 = strict(&value);
    value
}

#[test]
fn answers_drop_modes_and_write_config_options_in_v2_shape() {
    let modes =
        schema::SessionModeState::new("code", vec![schema::SessionMode::new("code", "Code")]);
    let value = v2_answer(
        schema::NewSessionResponse::new("s")
            .modes(modes.clone())
            .config_options(v1_options()),
    );
    assert!(value.get("modes").is_none());
    assert_eq!(value["sessionId"], "s");
    assert_eq!(value["configOptions"][0]["configId"], "mode");
    assert_eq!(value["configOptions"][1]["options"][0]["groupId"], "fast");
    for value in [
        v2_answer(
            schema::ResumeSessionResponse::new()
                .modes(modes.clone())
                .config_options(v1_options()),
        ),
        v2_answer(
            schema::LoadSessionResponse::new()
                .modes(modes)
                .config_options(v1_options()),
        ),
        v2_answer(schema::SetSessionConfigOptionResponse::new(v1_options())),
    ] {
        assert!(value.get("modes").is_none());
        assert_eq!(value["configOptions"][2]["configId"], "yolo");
    }
    let list = v2_answer(
        schema::ListSessionsResponse::new(vec![
            schema::SessionInfo::new("s", "/w")
                .additional_directories(vec!["/x".into()])
                .title("T".to_owned())
                .updated_at("2025-01-01T00:00:00Z".to_owned()),
        ])
        .next_cursor("c1".to_owned()),
    );
    assert_eq!(
        list,
        json!({"sessions": [{"sessionId": "s", "cwd": "/w", "additionalDirectories": ["/x"],
                             "title": "T", "updatedAt": "2025-01-01T00:00:00Z"}],
               "nextCursor": "c1"})
    );
    let meta = serde_json::Map::from_iter([("k".to_owned(), json!("v"))]);
    for value in [
        v2_answer(schema::CloseSessionResponse::new().meta(meta.clone())),
        v2_answer(schema::DeleteSessionResponse::new().meta(meta.clone())),
        v2_answer(schema::AuthenticateResponse::new().meta(meta.clone())),
        v2_answer(schema::LogoutResponse::new().meta(meta.clone())),
    ] {
        assert_eq!(value, json!({"_meta": {"k": "v"}}));
    }
    assert_eq!(
        v2_answer(json!({"modes": 1})),
        json!({"modes": 1}),
        "an extension's own"
    );
}

/// A v2 client's params (JSON), read as `jsonrpc::params` reads them.
fn v2_params<T: DeserializeOwned>(method: &str, params: Value) -> T {
    let raw = serde_json::value::to_raw_value(&params).unwrap();
    crate::jsonrpc::params(method, Some(&raw)).expect("v2 params")
}

#[test]
fn v2_session_params_read_as_v1() {
    let new = params::new_session(v2_params(
        methods::SESSION_NEW,
        json!({
            "cwd": "/w",
            "additionalDirectories": ["/x"],
            "mcpServers": [
                {"type": "stdio", "name": "fs", "command": "/bin/mcp-fs"},
                {"type": "http", "name": "web", "url": "https://mcp", "headers": [{"name": "a", "value": "b"}]},
            ],
        }),
    ))
    .unwrap();
    assert_eq!(
        serde_json::to_value(&new).unwrap(),
        json!({
            "cwd": "/w",
            "additionalDirectories": ["/x"],
            "mcpServers": [
                {"name": "fs", "command": "/bin/mcp-fs", "args": [], "env": []},
                {"type": "http", "name": "web", "url": "https://mcp", "headers": [{"name": "a", "value": "b"}]},
            ],
        })
    );
    let bare = params::new_session(v2_params(methods::SESSION_NEW, json!({"cwd": "/w"}))).unwrap();
    assert!(bare.mcp_servers.is_empty());
    let sse = params::new_session(v2_params(
        methods::SESSION_NEW,
        json!({"cwd": "/w", "mcpServers": [{"type": "sse", "name": "s", "url": "u"}]}),
    ))
    .unwrap_err();
    assert_eq!(sse.code, schema::ErrorCode::InvalidParams);
    assert!(
        sse.message.contains("field `mcpServers[0].type`"),
        "{}",
        sse.message
    );

    let set = params::set_config_option(v2_params(
        methods::SESSION_SET_CONFIG_OPTION,
        json!({"sessionId": "s", "configId": "mode", "type": "id", "value": "code"}),
    ))
    .unwrap();
    assert_eq!(
        serde_json::to_value(&set).unwrap(),
        json!({"sessionId": "s", "configId": "mode", "value": "code"})
    );
    let set = params::set_config_option(v2_params(
        methods::SESSION_SET_CONFIG_OPTION,
        json!({"sessionId": "s", "configId": "yolo", "type": "boolean", "value": true}),
    ))
    .unwrap();
    assert_eq!(set.value.as_bool(), Some(true));

    let (prompt, key) = params::prompt(v2_params(
        methods::SESSION_PROMPT,
        json!({"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}], "idempotencyKey": "k1"}),
    ))
    .unwrap();
    assert_eq!(key.as_deref(), Some("k1"));
    assert_eq!(prompt.prompt, vec![schema::ContentBlock::from("hi")]);
    let unknown = params::prompt(v2_params(
        methods::SESSION_PROMPT,
        json!({"sessionId": "s", "prompt": [{"type": "text", "text": "a"}, {"type": "_widget"}]}),
    ))
    .unwrap_err();
    assert!(
        unknown.message.contains("field `prompt[1]`"),
        "{}",
        unknown.message
    );

    let login = params::login(v2_params("auth/login", json!({"methodId": "agent"}))).unwrap();
    assert_eq!(login.method_id.0.as_ref(), "agent");
    let list = params::list_sessions(v2_params(
        methods::SESSION_LIST,
        json!({"cwd": "/w", "cursor": "c1"}),
    ))
    .unwrap();
    assert_eq!(
        serde_json::to_value(&list).unwrap(),
        json!({"cwd": "/w", "cursor": "c1"})
    );
    let close = params::close_session(v2_params(methods::SESSION_CLOSE, json!({"sessionId": "s"})));
    assert_eq!(close.unwrap().session_id.0.as_ref(), "s");
    let delete = params::delete_session(v2_params(
        methods::SESSION_DELETE,
        json!({"sessionId": "s"}),
    ));
    assert_eq!(delete.unwrap().session_id.0.as_ref(), "s");
}

#[test]
fn resume_replays_from_the_start_only() {
    let resume = |replay: Value| {
        let mut params = json!({"sessionId": "s", "cwd": "/w"});
        if !replay.is_null() {
            params["replayFrom"] = replay;
        }
        params::resume_session(v2_params(methods::SESSION_RESUME, params))
    };
    let (req, replay) = resume(Value::Null).unwrap();
    assert!(!replay);
    assert_eq!(req.session_id.0.as_ref(), "s");
    assert!(resume(json!({"type": "start"})).unwrap().1);
    let e = resume(json!({"type": "cursor", "cursorId": "c"})).unwrap_err();
    assert_eq!(e.code, schema::ErrorCode::InvalidParams);
    assert_eq!(
        e.message,
        r#"`replayFrom` {"type":"cursor","cursorId":"c"} is not supported; replay from `{"type": "start"}`"#
    );
}
