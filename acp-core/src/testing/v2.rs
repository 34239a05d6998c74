//! The test client on protocol v2: what the agent writes, read back in v1's shape, so that the
//! same assertions ([`Turn::text`](super::Turn::text), [`Turn::tool_calls`](super::Turn::tool_calls),
//! [`SessionView`](super::SessionView), permission policies…) hold on both versions, and the
//! end of a v2 turn (its `idle` `state_update`) read as v1's answer to `session/prompt`.
//!
//! The raw v2 frame is always kept ([`Frame::message`](super::Frame::message)); only
//! [`Frame::as_v1`](super::Frame::as_v1) and what is built on it are translated. A v2 update with
//! no v1 counterpart (`state_update`, `replay_complete`, `terminal_update`,
//! `terminal_output_chunk`) is no v1 update at all.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use crate::Error;
use crate::protocol::methods;

/// The v1 shape of a v2 frame the agent wrote, when it differs: `Some(Value::Null)` for an
/// update v1 has no counterpart of, `None` when the frame is the same in both versions.
/// `created` holds the `(session, tool call)` pairs already seen, so that the first
/// `tool_call_update` of a call reads as v1's `tool_call`.
pub(super) fn as_v1(message: &Value, created: &mut HashSet<(String, String)>) -> Option<Value> {
    match message.get("method").and_then(Value::as_str) {
        Some(methods::SESSION_UPDATE) => {
            let session = message["params"]["sessionId"].as_str().unwrap_or_default();
            let Some(update) = update_as_v1(&message["params"]["update"], session, created) else {
                return Some(Value::Null);
            };
            let mut v1 = message.clone();
            v1["params"]["update"] = update;
            Some(v1)
        }
        Some(methods::REQUEST_PERMISSION) => {
            let mut v1 = message.clone();
            let params = v1.get_mut("params")?.as_object_mut()?;
            params.remove("title");
            if let Some(mut subject) = params.remove("subject") {
                if let Some(content) = subject["toolCall"].get_mut("content") {
                    content_as_v1(content);
                }
                params.insert("toolCall".into(), subject["toolCall"].take());
            }
            Some(v1)
        }
        None => {
            let options = message.get("result")?.get("configOptions")?;
            let mut v1 = message.clone();
            v1["result"]["configOptions"] = config_options_as_v1(options.clone());
            Some(v1)
        }
        Some(_) => None,
    }
}

/// A v2 update as v1 writes it; `None` when v1 has no counterpart.
fn update_as_v1(
    update: &Value,
    session: &str,
    created: &mut HashSet<(String, String)>,
) -> Option<Value> {
    let mut update = update.clone();
    let fields = update.as_object_mut()?;
    let kind = fields
        .get("sessionUpdate")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    match kind.as_str() {
        "state_update" | "replay_complete" | "terminal_update" | "terminal_output_chunk" => {
            return None;
        }
        "tool_call_update" => {
            let id = fields
                .get("toolCallId")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if created.insert((session.to_owned(), id.to_owned())) {
                fields.insert("sessionUpdate".into(), "tool_call".into());
            }
            if let Some(content) = fields.get_mut("content") {
                content_as_v1(content);
            }
        }
        "available_commands_update" => {
            if let Some(Value::Array(commands)) = fields.get_mut("availableCommands") {
                for command in commands.iter_mut().filter_map(Value::as_object_mut) {
                    command.remove("type");
                    if let Some(Value::Object(input)) = command.get_mut("input") {
                        input.remove("type");
                    }
                }
            }
        }
        "config_option_update" => {
            if let Some(options) = fields.get_mut("configOptions") {
                *options = config_options_as_v1(options.take());
            }
        }
        _ => {}
    }
    Some(update)
}

/// A tool call's v2 `content` as v1 writes it: a diff (`changes` and a whole-file git patch)
/// becomes v1's `path` / `oldText` / `newText`.
fn content_as_v1(content: &mut Value) {
    let Value::Array(items) = content else {
        return;
    };
    for item in items {
        if item.get("type").and_then(Value::as_str) != Some("diff") || item.get("path").is_some() {
            continue;
        }
        let path = item["changes"][0]["path"].clone();
        let patch = item["patch"]["text"].as_str().unwrap_or_default();
        let (old, new) = whole_file(patch);
        let mut diff = json!({"type": "diff", "path": path, "newText": new});
        if let Some(old) = old {
            diff["oldText"] = old.into();
        }
        if let Some(meta) = item.get("_meta") {
            diff["_meta"] = meta.clone();
        }
        *item = diff;
    }
}

/// The old text (none for a new file) and the new text of a one-file git patch whose hunks
/// cover the whole file, as the runtime writes them.
fn whole_file(patch: &str) -> (Option<String>, String) {
    let (mut old, mut new) = (String::new(), String::new());
    let mut new_file = false;
    let mut in_hunk = false;
    let mut last: Option<char> = None;
    for line in patch.split_inclusive('\n') {
        if !in_hunk {
            new_file |= line.starts_with("new file mode") || line.starts_with("--- /dev/null");
            in_hunk = line.starts_with("@@");
            continue;
        }
        let target = match line.chars().next() {
            Some('-') => Some(&mut old),
            Some('+') => Some(&mut new),
            Some('\\') => {
                // "\ No newline at end of file": the line before had no newline of its own.
                let text = match last {
                    Some('-') => &mut old,
                    _ => &mut new,
                };
                if text.ends_with('\n') {
                    text.pop();
                }
                None
            }
            _ => None,
        };
        if let Some(text) = target {
            last = line.chars().next();
            text.push_str(&line[1..]);
        }
    }
    ((!new_file).then_some(old), new)
}

/// Config options (v2 JSON) as v1 writes them: `configId` is `id`, `groupId` is `group`.
fn config_options_as_v1(mut options: Value) -> Value {
    if let Value::Array(list) = &mut options {
        for option in list.iter_mut().filter_map(Value::as_object_mut) {
            rename(option, "configId", "id");
            if let Some(Value::Array(groups)) = option.get_mut("options") {
                for group in groups.iter_mut().filter_map(Value::as_object_mut) {
                    rename(group, "groupId", "group");
                }
            }
        }
    }
    options
}

fn rename(object: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(value) = object.remove(from) {
        object.insert(to.to_owned(), value);
    }
}

/// Whether `message` is the `idle` `state_update` of `session` that ends a turn (a snapshot
/// idle, with no stop reason, ends none).
pub(super) fn is_turn_idle(message: &Value, session: &str) -> bool {
    message.get("method").and_then(Value::as_str) == Some(methods::SESSION_UPDATE)
        && message["params"]["sessionId"].as_str() == Some(session)
        && message["params"]["update"]["sessionUpdate"] == "state_update"
        && message["params"]["update"]["state"] == "idle"
        && message["params"]["update"].get("stopReason").is_some()
}

/// A turn's `idle` update read as v1's answer to `session/prompt`: its stop reason (and the
/// accepted prompt's `messageId`), or its error as [`Error::Rpc`].
pub(super) fn answer_of_idle(idle: &Value, message_id: &Value) -> crate::Result<Value> {
    let update = &idle["params"]["update"];
    if update["stopReason"] == "error" {
        let error = &update["error"];
        return Err(Error::Rpc {
            code: error["code"].as_i64().unwrap_or(-32603) as i32,
            message: error["message"].as_str().unwrap_or_default().to_owned(),
            data: error.get("data").cloned(),
        });
    }
    let mut answer = json!({"stopReason": update["stopReason"], "messageId": message_id});
    if let Some(usage) = update.get("usage") {
        answer["usage"] = usage.clone();
    }
    Ok(answer)
}

/// The params of a v2 `initialize` from the client's v1 settings: its info (a default one if
/// none was set: v2 requires it) and the capabilities v2 has (elicitation, auth).
pub(super) fn initialize_params(capabilities: &Value, info: Option<&Value>) -> Value {
    let info = info
        .cloned()
        .unwrap_or_else(|| json!({"name": "acp-testing", "version": env!("CARGO_PKG_VERSION")}));
    let mut v2_capabilities = json!({});
    for key in ["elicitation", "auth"] {
        if let Some(value) = capabilities.get(key).filter(|v| !v.is_null()) {
            v2_capabilities[key] = value.clone();
        }
    }
    json!({"protocolVersion": 2, "info": info, "capabilities": v2_capabilities})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_file_patch_gives_back_both_texts() {
        let patch = "diff --git a b\n--- a\n+++ a\n@@ -1,2 +1 @@\n-one\n-two\n+three\n\\ No newline at end of file\n";
        assert_eq!(
            whole_file(patch),
            (Some("one\ntwo\n".to_owned()), "three".to_owned())
        );
        let added =
            "diff --git a a\nnew file mode 100644\n--- /dev/null\n+++ a\n@@ -0,0 +1 @@\n+x\n";
        assert_eq!(whole_file(added), (None, "x\n".to_owned()));
    }

    #[test]
    fn the_first_update_of_a_tool_call_reads_as_its_creation() {
        let mut created = HashSet::new();
        let frame = |status: &str| {
            json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
                "update": {"sessionUpdate": "tool_call_update", "toolCallId": "t", "title": "x", "status": status}}})
        };
        let first = as_v1(&frame("pending"), &mut created).unwrap();
        assert_eq!(first["params"]["update"]["sessionUpdate"], "tool_call");
        let second = as_v1(&frame("completed"), &mut created).unwrap();
        assert_eq!(
            second["params"]["update"]["sessionUpdate"],
            "tool_call_update"
        );
        let state = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
            "update": {"sessionUpdate": "state_update", "state": "running"}}});
        assert_eq!(as_v1(&state, &mut created), Some(Value::Null));
    }
}
