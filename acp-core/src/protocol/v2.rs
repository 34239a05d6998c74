//! Protocol v2 (Preview) frames, written from the runtime's account of a session (the v1
//! update types, see [`account`](super::account)), and v2 requests read into that account.
//!
//! What differs from v1, and where it is handled here:
//!
//! - updates are upserts: a v1 `tool_call` becomes the `tool_call_update` that creates the
//!   tool call; `plan` becomes `plan_update` (one plan per session, id [`PLAN_ID`]); a
//!   command carries `type: "command"` and its input `type: "text"`; config options use `configId` / `groupId`;
//!   `current_mode_update` has no counterpart (modes are the config option of category
//!   `mode`, whose `config_option_update` the runtime sends beside it); a diff is `changes`;
//! - the turn: [`prompt_answer`] acknowledges a prompt with its user message's id, and
//!   [`state_update`] carries running / requires_action / idle with the stop reason;
//! - requests and answers: [`request_params`] turns a v2 request's params into the v1 shape
//!   the handlers read, [`result`] a v1 answer into v2's, [`permission_params`] the
//!   permission request the runtime sends.
//!
//! Message and thought chunks are the same bytes in both versions: the stream of a turn costs
//! no translation.

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{State, methods};
use crate::jsonrpc;
use crate::schema::v2 as t;
use crate::schema::{RequestId, SessionId, SessionUpdate, StopReason};
use crate::{Error, Result};

/// The id of a session's plan on v2 (the runtime keeps one plan per session, as v1 does).
pub(crate) const PLAN_ID: &str = "plan";

/// Whether `update` is written the same in v1 and v2 (message and thought chunks with their
/// id: the runtime stamps every agent chunk).
pub(crate) fn same_as_v1(update: &SessionUpdate) -> bool {
    match update {
        SessionUpdate::AgentMessageChunk(c)
        | SessionUpdate::AgentThoughtChunk(c)
        | SessionUpdate::UserMessageChunk(c) => c.message_id.is_some(),
        _ => false,
    }
}

/// A `session/update` frame of `session` carrying `update`, typed.
fn typed(session: &SessionId, update: t::SessionUpdate) -> Result<Vec<u8>> {
    let params = t::UpdateSessionNotification::new(session.0.clone(), update);
    Ok(jsonrpc::encode_notification(
        methods::SESSION_UPDATE,
        &params,
    )?)
}

/// A `session/update` frame of `session` carrying `update` (v2 JSON, translated from v1's).
fn notification(session: &SessionId, update: &Value) -> Result<Vec<u8>> {
    #[derive(Serialize)]
    struct Params<'a> {
        #[serde(rename = "sessionId")]
        session_id: &'a SessionId,
        update: &'a Value,
    }
    Ok(jsonrpc::encode_notification(
        methods::SESSION_UPDATE,
        &Params {
            session_id: session,
            update,
        },
    )?)
}

/// The v2 frame for `update` (the account's, as v1 JSON) of `session`; `None` when v2 has no
/// counterpart.
pub(crate) fn session_update(session: &SessionId, update: Value) -> Result<Option<Vec<u8>>> {
    match translate_update(update) {
        Some(update) => notification(session, &update).map(Some),
        None => Ok(None),
    }
}

/// A v1 update (JSON) as v2 writes it; `None` when v2 has no counterpart.
pub(crate) fn translate_update(mut update: Value) -> Option<Value> {
    let Some(fields) = update.as_object_mut() else {
        return Some(update);
    };
    let kind = fields
        .get("sessionUpdate")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    match kind.as_str() {
        "user_message_chunk" | "agent_message_chunk" | "agent_thought_chunk" => {
            // Every message chunk carries an id in v2; the runtime stamps the agent's, and a
            // replayed prompt recorded before ids were stamped gets one of its own.
            fields
                .entry("messageId")
                .or_insert_with(|| Value::from("msg_user"));
        }
        "tool_call" | "tool_call_update" => {
            fields.insert("sessionUpdate".into(), "tool_call_update".into());
            if let Some(content) = fields.get_mut("content") {
                translate_tool_content(content);
            }
        }
        "plan" => {
            let entries = fields.remove("entries").unwrap_or(Value::Array(Vec::new()));
            let meta = fields.remove("_meta");
            let mut plan = json!({"type": "items", "planId": PLAN_ID, "entries": entries});
            if let Some(meta) = meta {
                plan["_meta"] = meta;
            }
            return Some(json!({"sessionUpdate": "plan_update", "plan": plan}));
        }
        "available_commands_update" => {
            if let Some(Value::Array(commands)) = fields.get_mut("availableCommands") {
                for command in commands {
                    // v2's commands are a tagged union (`command`, and future kinds).
                    if let Some(command) = command.as_object_mut() {
                        command.entry("type").or_insert_with(|| "command".into());
                    }
                    if let Some(Value::Object(input)) = command.get_mut("input") {
                        input.entry("type").or_insert_with(|| "text".into());
                    }
                }
            }
        }
        "config_option_update" => {
            if let Some(options) = fields.get_mut("configOptions") {
                translate_config_options(options);
            }
        }
        "current_mode_update" => return None,
        _ => {}
    }
    Some(update)
}

/// A tool call's `content` (v1) as v2 writes it: diffs become `changes` plus a patch.
fn translate_tool_content(content: &mut Value) {
    let Value::Array(items) = content else {
        return;
    };
    for item in items {
        if item.get("type").and_then(Value::as_str) != Some("diff") {
            continue;
        }
        let path = item.get("path").cloned().unwrap_or(Value::Null);
        let old = item.get("oldText").and_then(Value::as_str);
        let new = item.get("newText").and_then(Value::as_str).unwrap_or("");
        let operation = if old.is_some() { "modify" } else { "add" };
        let mut diff = json!({
            "type": "diff",
            "changes": [{"operation": operation, "path": path, "fileType": "text"}],
        });
        if let Some(path) = path.as_str() {
            diff["patch"] = json!({
                "format": "git_patch",
                "text": git_patch(path, old, new),
            });
        }
        if let Some(meta) = item.get("_meta") {
            diff["_meta"] = meta.clone();
        }
        *item = diff;
    }
}

/// A `diff --git` section for a whole-file change of `path` from `old` (none: a new file) to
/// `new`: one hunk replacing every old line with every new one (what v1's `oldText` /
/// `newText` say; a client renders it as a diff).
fn git_patch(path: &str, old: Option<&str>, new: &str) -> String {
    fn lines(text: &str) -> Vec<&str> {
        if text.is_empty() {
            Vec::new()
        } else {
            text.split_inclusive('\n').collect()
        }
    }
    let (old_lines, new_lines) = (lines(old.unwrap_or("")), lines(new));
    let mut out = format!("diff --git {path} {path}\n");
    if old.is_none() {
        out.push_str("new file mode 100644\n--- /dev/null\n");
    } else {
        out.push_str(&format!("--- {path}\n"));
    }
    out.push_str(&format!("+++ {path}\n"));
    let range = |n: usize| match n {
        0 => "0,0".to_owned(),
        1 => "1".to_owned(),
        n => format!("1,{n}"),
    };
    out.push_str(&format!(
        "@@ -{} +{} @@\n",
        range(old_lines.len()),
        range(new_lines.len())
    ));
    for (sign, line) in old_lines
        .iter()
        .map(|l| ('-', l))
        .chain(new_lines.iter().map(|l| ('+', l)))
    {
        out.push(sign);
        out.push_str(line);
        if !line.ends_with('\n') {
            out.push_str("\n\\ No newline at end of file\n");
        }
    }
    out
}

/// Config options (v1 JSON) as v2 writes them: `id` is `configId`, a group's `group` is
/// `groupId`.
fn translate_config_options(options: &mut Value) {
    let Value::Array(options) = options else {
        return;
    };
    for option in options.iter_mut().filter_map(Value::as_object_mut) {
        rename(option, "id", "configId");
        if let Some(Value::Array(groups)) = option.get_mut("options") {
            for group in groups.iter_mut().filter_map(Value::as_object_mut) {
                rename(group, "group", "groupId");
            }
        }
    }
}

fn rename(object: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(value) = object.remove(from) {
        object.insert(to.to_owned(), value);
    }
}

/// A v2 `state_update` frame of `session`.
pub(crate) fn state_update(session: &SessionId, state: State) -> Result<Vec<u8>> {
    let state = match state {
        State::Running => t::StateUpdate::Running(t::RunningStateUpdate::new()),
        State::RequiresAction => {
            t::StateUpdate::RequiresAction(t::RequiresActionStateUpdate::new())
        }
    };
    typed(session, t::SessionUpdate::StateUpdate(state))
}

/// The `idle` `state_update` frame that ends a turn of `session` (v2), from how the turn
/// ended, and the stop reason (none: the turn failed, which v2 reports as the `error` stop
/// reason).
pub(crate) fn idle(
    session: &SessionId,
    outcome: Result<StopReason>,
    cancelled: bool,
    background: &[String],
    usage: Option<crate::schema::Usage>,
) -> (Vec<u8>, Option<StopReason>) {
    let (stop, reason) = match outcome {
        _ if cancelled => (Some(StopReason::Cancelled), t::StopReason::Cancelled),
        Err(Error::Cancelled) => (Some(StopReason::Cancelled), t::StopReason::Cancelled),
        Ok(reason) => (Some(reason), stop_reason(reason)),
        Err(e) => {
            tracing::warn!("the prompt turn failed: {e}");
            let error = same_shape::<t::Error>(&e.to_rpc());
            (None, t::ErrorStopReason::new().error(error).into())
        }
    };
    let mut idle = t::IdleStateUpdate::new()
        .stop_reason(reason)
        .background(background_terminals(background));
    // v2's `Usage` has v1's fields; a failed turn reports none.
    if stop.is_some() {
        idle = idle.usage(usage.and_then(|u| same_shape::<t::Usage>(&u)));
    }
    let update = t::SessionUpdate::StateUpdate(t::StateUpdate::Idle(idle));
    // Nothing here can fail to encode (typed values of the schema crate).
    let bytes = typed(session, update).unwrap_or_default();
    (bytes, stop)
}

/// v1's stop reason of a turn that ended (not by an error) as v2's.
fn stop_reason(reason: StopReason) -> t::StopReason {
    match reason {
        StopReason::EndTurn => t::StopReason::EndTurn,
        StopReason::MaxTokens => t::StopReason::MaxTokens,
        StopReason::MaxTurnRequests => t::StopReason::MaxTurnRequests,
        StopReason::Refusal => t::StopReason::Refusal,
        StopReason::Cancelled => t::StopReason::Cancelled,
        // A reason of a newer v1 the schema crate knows and v2 does not yet: the turn ended.
        _ => t::StopReason::EndTurn,
    }
}

/// A value of v1's type as the v2 type of the same wire shape (`Usage`, `Error`): `None`
/// if the shapes ever part.
fn same_shape<T: serde::de::DeserializeOwned>(value: &impl Serialize) -> Option<T> {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| serde_json::from_value(v).ok())
}

/// The `idle` `state_update` of a session no turn runs in (a snapshot, no stop reason), with
/// the terminals still running in it.
pub(crate) fn idle_snapshot(session: &SessionId, background: &[String]) -> Option<Vec<u8>> {
    let idle = t::IdleStateUpdate::new().background(background_terminals(background));
    typed(
        session,
        t::SessionUpdate::StateUpdate(t::StateUpdate::Idle(idle)),
    )
    .ok()
}

/// A state's `background` list: the terminals `ids`; none when there are none.
fn background_terminals(ids: &[String]) -> Option<Vec<t::BackgroundWork>> {
    (!ids.is_empty()).then(|| {
        ids.iter()
            .map(|id| t::BackgroundWork::Terminal(t::BackgroundTerminal::new(id.as_str())))
            .collect()
    })
}

/// A `terminal_update` of the agent-owned terminal `id` of `session`: what is given of its
/// command, cwd, output (a snapshot replacing every byte shown so far) and exit status.
pub(crate) fn terminal_update(
    session: &SessionId,
    id: &str,
    started: Option<(&str, &std::path::Path)>,
    output: Option<&[u8]>,
    exit: Option<&crate::schema::TerminalExitStatus>,
) -> Result<Vec<u8>> {
    use base64::Engine as _;
    let mut update = t::TerminalUpdate::new(id);
    if let Some((command, cwd)) = started {
        update = update
            .command(command.to_owned())
            .cwd(cwd.to_path_buf())
            // Any of them can be stopped on its own (`terminal/cancel`).
            .capabilities(
                t::TerminalCapabilities::new().cancel(t::TerminalCancelCapabilities::new()),
            );
    }
    if let Some(output) = output {
        let data = base64::engine::general_purpose::STANDARD.encode(output);
        update = update.output(t::TerminalOutput::new(data));
    }
    if let Some(exit) = exit {
        let mut status = t::TerminalExitStatus::new();
        status.exit_code = exit.exit_code.map(i64::from);
        status.signal = exit.signal.clone();
        update = update.exit_status(status);
    }
    typed(session, t::SessionUpdate::TerminalUpdate(update))
}

/// A `terminal_output_chunk`: `data` appended to the output of the agent-owned terminal `id`.
pub(crate) fn terminal_output_chunk(session: &SessionId, id: &str, data: &[u8]) -> Result<Vec<u8>> {
    use base64::Engine as _;
    let data = base64::engine::general_purpose::STANDARD.encode(data);
    typed(
        session,
        t::SessionUpdate::TerminalOutputChunk(t::TerminalOutputChunk::new(id, data)),
    )
}

/// A `replay_complete` update of `session`: the replay `session/resume` asked for is over.
pub(crate) fn replay_complete(session: &SessionId) -> Result<Vec<u8>> {
    typed(
        session,
        t::SessionUpdate::ReplayComplete(t::ReplayComplete::new()),
    )
}

/// The answer to the v2 `session/prompt` request `id`: accepted, its user message `message_id`.
pub(crate) fn prompt_answer(id: &RequestId, message_id: &str) -> Vec<u8> {
    jsonrpc::encode_result(id, &t::PromptResponse::new(message_id))
}

/// A v2 request's params (JSON) of `method` in the v1 shape the runtime's handlers read.
pub(crate) fn request_params(method: &str, params: &mut Value) {
    let Some(fields) = params.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(servers)) = fields.get_mut("mcpServers") {
        for server in servers.iter_mut().filter_map(Value::as_object_mut) {
            // v1's stdio servers have no `type`, and every list is required there.
            if server.get("type").and_then(Value::as_str) == Some("stdio") {
                server.remove("type");
                server.entry("args").or_insert_with(|| json!([]));
                server.entry("env").or_insert_with(|| json!([]));
            } else if server.get("type").and_then(Value::as_str) == Some("http") {
                server.entry("headers").or_insert_with(|| json!([]));
            }
        }
    } else if matches!(
        method,
        methods::SESSION_NEW | methods::SESSION_LOAD | methods::SESSION_RESUME
    ) {
        fields.insert("mcpServers".into(), json!([]));
    }
    if method == methods::SESSION_SET_CONFIG_OPTION
        && fields.get("type").and_then(Value::as_str) == Some("id")
    {
        fields.remove("type");
    }
}

/// A v1 answer (JSON) as v2 writes it: no `modes` (they are a config option), config options
/// in v2's shape.
pub(crate) fn result(mut value: Value) -> Value {
    if let Some(fields) = value.as_object_mut() {
        fields.remove("modes");
        if let Some(options) = fields.get_mut("configOptions") {
            translate_config_options(options);
        }
    }
    value
}

/// The params of a v1 `session/request_permission` (JSON) as v2 writes them: the prompt's
/// `title`, and the tool call as the request's `subject`.
pub(crate) fn permission_params(mut params: Value) -> Value {
    let Some(fields) = params.as_object_mut() else {
        return params;
    };
    if let Some(mut call) = fields.remove("toolCall") {
        let title = call
            .get("title")
            .and_then(Value::as_str)
            .map_or_else(|| "Allow this tool call?".to_owned(), str::to_owned);
        if let Some(content) = call.get_mut("content") {
            translate_tool_content(content);
        }
        fields.insert("title".into(), title.into());
        fields.insert(
            "subject".into(),
            json!({"type": "tool_call", "toolCall": call}),
        );
    } else {
        fields
            .entry("title")
            .or_insert_with(|| "Allow this action?".into());
    }
    params
}

/// The `user_message` update of `session` echoing the user's prompt `blocks`, its message
/// `message`.
pub(crate) fn user_message(
    session: &SessionId,
    message: &crate::schema::MessageId,
    blocks: &[crate::schema::ContentBlock],
) -> Result<Vec<u8>> {
    let update = json!({
        "sessionUpdate": "user_message",
        "messageId": message,
        "content": blocks,
    });
    notification(session, &update)
}

#[cfg(test)]
mod tests;
