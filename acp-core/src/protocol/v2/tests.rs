//! Every v2 frame written from the account reads back as the schema crate's v2 type.

use serde_json::{Value, json};

use super::*;
use crate::protocol::State;
use crate::schema::{
    self, AvailableCommand, AvailableCommandsUpdate, ContentChunk, CurrentModeUpdate, Diff, Plan,
    PlanEntry, PlanEntryPriority, PlanEntryStatus, ToolCall, ToolCallContent, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind, UnstructuredCommandInput, v2,
};

fn v2_update(update: SessionUpdate) -> Option<v2::SessionUpdate> {
    let value = translate_update(serde_json::to_value(update).unwrap())?;
    Some(
        serde_json::from_value(value.clone())
            .unwrap_or_else(|e| panic!("not a v2 update: {e}: {value}")),
    )
}

#[test]
fn chunks_are_the_same_bytes_and_read_as_v2() {
    let chunk = SessionUpdate::AgentMessageChunk(
        ContentChunk::new("hi".into()).message_id(schema::MessageId::new("msg_0")),
    );
    assert!(same_as_v1(&chunk));
    assert!(matches!(
        v2_update(chunk),
        Some(v2::SessionUpdate::AgentMessageChunk(_))
    ));
    let unstamped = SessionUpdate::AgentMessageChunk(ContentChunk::new("hi".into()));
    assert!(!same_as_v1(&unstamped));
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
    let diff = &value["content"][0];
    assert_eq!(
        diff["changes"][0],
        json!({"operation": "modify", "path": "/w/a.txt", "fileType": "text"})
    );
    assert_eq!(
        diff["patch"]["text"],
        "diff --git /w/a.txt /w/a.txt\n--- /w/a.txt\n+++ /w/a.txt\n@@ -1 +1 @@\n-old\n+new\n"
    );
    let patch = SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        "call_1",
        ToolCallUpdateFields::new().status(ToolCallStatus::Completed),
    ));
    assert!(matches!(
        v2_update(patch),
        Some(v2::SessionUpdate::ToolCallUpdate(_))
    ));
}

#[test]
fn a_new_file_is_an_add_with_a_new_file_patch() {
    let call = SessionUpdate::ToolCall(
        ToolCall::new("c", "t").content(vec![ToolCallContent::Diff(Diff::new("/w/n", "x"))]),
    );
    let value = translate_update(serde_json::to_value(call).unwrap()).unwrap();
    assert_eq!(value["content"][0]["changes"][0]["operation"], "add");
    assert_eq!(
        value["content"][0]["patch"]["text"],
        "diff --git /w/n /w/n\nnew file mode 100644\n--- /dev/null\n+++ /w/n\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n"
    );
}

#[test]
fn a_plan_is_a_plan_update_with_the_session_plan_id() {
    let plan = SessionUpdate::Plan(Plan::new(vec![PlanEntry::new(
        "step",
        PlanEntryPriority::High,
        PlanEntryStatus::Pending,
    )]));
    let Some(v2::SessionUpdate::PlanUpdate(update)) = v2_update(plan) else {
        panic!("not a plan_update")
    };
    let value = serde_json::to_value(update).unwrap();
    assert_eq!(value["plan"]["planId"], PLAN_ID);
    assert_eq!(value["plan"]["entries"][0]["content"], "step");
}

#[test]
fn command_inputs_carry_their_type_and_mode_updates_have_no_v2_frame() {
    let commands = SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(vec![
        AvailableCommand::new("note", "Take a note").input(
            schema::AvailableCommandInput::Unstructured(UnstructuredCommandInput::new("text")),
        ),
    ]));
    let value = translate_update(serde_json::to_value(commands).unwrap()).unwrap();
    assert_eq!(value["availableCommands"][0]["type"], "command");
    assert_eq!(value["availableCommands"][0]["input"]["type"], "text");
    assert!(matches!(
        serde_json::from_value::<v2::SessionUpdate>(value).unwrap(),
        v2::SessionUpdate::AvailableCommandsUpdate(_)
    ));
    let mode = SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new("code"));
    assert!(v2_update(mode).is_none());
}

#[test]
fn state_updates_and_the_prompt_answer_read_as_v2() {
    let session = SessionId::new("s");
    for state in [State::Running, State::RequiresAction] {
        let frame: Value = serde_json::from_slice(&state_update(&session, state).unwrap()).unwrap();
        let _: v2::SessionUpdate =
            serde_json::from_value(frame["params"]["update"].clone()).expect("a v2 state update");
    }
    for (outcome, cancelled, stop) in [
        (Ok(StopReason::EndTurn), false, "end_turn"),
        (Ok(StopReason::EndTurn), true, "cancelled"),
        (Err(Error::msg("boom")), false, "error"),
    ] {
        let (bytes, _) = idle(&session, outcome, cancelled, &[], None);
        let frame: Value = serde_json::from_slice(&bytes).unwrap();
        let update = &frame["params"]["update"];
        assert_eq!(update["stopReason"], stop, "{update}");
        let _: v2::SessionUpdate =
            serde_json::from_value(update.clone()).expect("a v2 idle update");
    }
    let answer: Value =
        serde_json::from_slice(&prompt_answer(&RequestId::Number(3), "msg_7")).unwrap();
    let _: v2::PromptResponse =
        serde_json::from_value(answer["result"].clone()).expect("a v2 prompt response");
}

#[test]
fn v2_session_params_read_as_v1_and_permission_params_as_v2() {
    let mut params = json!({
        "cwd": "/w",
        "mcpServers": [{"type": "stdio", "name": "fs", "command": "mcp-fs"}],
    });
    request_params(methods::SESSION_NEW, &mut params);
    let _: schema::NewSessionRequest = serde_json::from_value(params).expect("v1 params");
    let mut set = json!({"sessionId": "s", "configId": "mode", "type": "id", "value": "code"});
    request_params(methods::SESSION_SET_CONFIG_OPTION, &mut set);
    let _: schema::SetSessionConfigOptionRequest = serde_json::from_value(set).expect("v1 params");

    let v1 = schema::RequestPermissionRequest::new(
        "s",
        ToolCallUpdate::new("c", ToolCallUpdateFields::new().title("Run ls".to_owned())),
        vec![schema::PermissionOption::new(
            "allow",
            "Allow",
            schema::PermissionOptionKind::AllowOnce,
        )],
    );
    let v2_params = permission_params(serde_json::to_value(v1).unwrap());
    assert_eq!(v2_params["title"], "Run ls");
    let _: v2::RequestPermissionRequest =
        serde_json::from_value(v2_params).expect("v2 permission params");
}
