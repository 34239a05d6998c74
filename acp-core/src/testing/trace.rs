//! What the test client saw: every [`Frame`] in both directions, and one prompt [`Turn`]
//! summed up (its updates, text, plans, tool calls and permission requests).

use std::path::PathBuf;

use serde_json::Value;

use crate::Error;
use crate::protocol::methods;
use crate::schema::{
    self, SessionId, SessionUpdate, StopReason, ToolCallContent, ToolCallStatus, ToolKind,
};

/// Which way a recorded frame went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the client (the test) to the agent.
    ToAgent,
    /// From the agent to the client.
    FromAgent,
}

/// One JSON-RPC frame as it crossed the pipe.
///
/// A line that was not JSON is recorded as a JSON string holding the line (and reported as
/// malformed output by the client).
#[derive(Debug, Clone)]
pub struct Frame {
    /// Which way it went.
    pub direction: Direction,
    /// The frame, parsed, exactly as it was written.
    pub message: Value,
    /// On a protocol v2 connection, the frame in v1's shape where that differs (see
    /// [`as_v1`](Self::as_v1)); `Value::Null` for an update v1 has no counterpart of.
    pub(super) v1: Option<Value>,
}

impl Frame {
    /// The frame's `method`, if it is a request or notification.
    pub fn method(&self) -> Option<&str> {
        self.message.get("method").and_then(Value::as_str)
    }

    /// Whether this is a response (a `result` or an `error`, no `method`) with this `id`.
    pub fn is_response_to(&self, id: &Value) -> bool {
        self.method().is_none()
            && self.message.get("id") == Some(id)
            && (self.message.get("result").is_some() || self.message.get("error").is_some())
    }

    /// The `session/update` this frame carries, if it is one, as a v1 update: on a protocol
    /// v2 connection, read back in v1's shape (see [`as_v1`](Self::as_v1)); `None` for a v2
    /// update v1 has no counterpart of (`state_update`, `replay_complete`, a terminal's).
    pub fn session_update(&self) -> Option<schema::SessionNotification> {
        if self.method() != Some(methods::SESSION_UPDATE) || self.message.get("id").is_some() {
            return None;
        }
        serde_json::from_value(self.as_v1().get("params")?.clone()).ok()
    }

    /// The frame as protocol v1 carries the same thing, so that one assertion holds on both
    /// versions: on a v1 connection, the frame itself; on a v2 connection, updates,
    /// permission requests and config options read back in v1's shape (a tool call's first
    /// `tool_call_update` as `tool_call`, a diff's patch as
    /// `oldText` / `newText`, `configId` as `id`, the permission's `subject` as `toolCall`…),
    /// and `null` for an update v1 has no counterpart of. [`message`](Self::message) is
    /// always what was written.
    pub fn as_v1(&self) -> &Value {
        self.v1.as_ref().unwrap_or(&self.message)
    }
}

/// What happened in one prompt turn: the answer and the session's updates before it.
#[derive(Debug)]
pub struct Turn {
    pub(super) session: SessionId,
    pub(super) answer: crate::Result<Value>,
    pub(super) updates: Vec<SessionUpdate>,
    pub(super) frames: Vec<Frame>,
}

/// One tool call of a turn, folded from its `tool_call` and `tool_call_update`s.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallTrace {
    /// The tool call id.
    pub id: String,
    /// The latest title.
    pub title: String,
    /// The kind.
    pub kind: ToolKind,
    /// Every status it went through, in order (starting with the initial one).
    pub statuses: Vec<ToolCallStatus>,
    /// The latest content.
    pub content: Vec<ToolCallContent>,
    /// The raw input, if any.
    pub raw_input: Option<Value>,
    /// The raw output, if any.
    pub raw_output: Option<Value>,
    /// Files it touched.
    pub locations: Vec<PathBuf>,
}

impl ToolCallTrace {
    /// The last status.
    pub fn status(&self) -> Option<ToolCallStatus> {
        self.statuses.last().copied()
    }

    /// The text of every text content block, joined.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|c| match c {
                ToolCallContent::Content(c) => match &c.content {
                    schema::ContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }

    /// The diffs in the content.
    pub fn diffs(&self) -> Vec<&schema::Diff> {
        self.content
            .iter()
            .filter_map(|c| match c {
                ToolCallContent::Diff(d) => Some(d),
                _ => None,
            })
            .collect()
    }
}

impl Turn {
    /// The raw answer to `session/prompt`: its result, or its error as [`Error::Rpc`].
    pub fn answer(&self) -> std::result::Result<&Value, &Error> {
        self.answer.as_ref()
    }

    /// The stop reason, if the turn ended without an error.
    pub fn stop_reason(&self) -> Option<StopReason> {
        let result = self.answer.as_ref().ok()?;
        serde_json::from_value(result.get("stopReason")?.clone()).ok()
    }

    /// The error code, if the turn ended with an error.
    pub fn error_code(&self) -> Option<i32> {
        match &self.answer {
            Err(Error::Rpc { code, .. }) => Some(*code),
            _ => None,
        }
    }

    /// Every `session/update` of this session sent before the answer, in order.
    pub fn updates(&self) -> &[SessionUpdate] {
        &self.updates
    }

    /// Every frame exchanged from the prompt until now (the answer and anything after).
    pub fn frames(&self) -> &[Frame] {
        &self.frames
    }

    /// The concatenated text of the agent's message chunks.
    pub fn text(&self) -> String {
        message_text(&self.updates)
    }

    /// The concatenated text of the agent's thought chunks.
    pub fn thoughts(&self) -> String {
        chunks(&self.updates, |u| match u {
            SessionUpdate::AgentThoughtChunk(c) => Some(&c.content),
            _ => None,
        })
    }

    /// The checklists sent, in order: legacy `plan`s, and the checklists of `plan_update`s
    /// (whatever their plan id) as plans.
    pub fn plans(&self) -> Vec<schema::Plan> {
        self.updates
            .iter()
            .filter_map(|u| match u {
                SessionUpdate::Plan(p) => Some(p.clone()),
                SessionUpdate::PlanUpdate(schema::PlanUpdate {
                    plan: schema::PlanUpdateContent::Items(items),
                    ..
                }) => Some(schema::Plan::new(items.entries.clone())),
                _ => None,
            })
            .collect()
    }

    /// The plan operations sent (`plan_update`, `plan_removed`), in order.
    pub fn plan_operations(&self) -> Vec<&SessionUpdate> {
        self.updates
            .iter()
            .filter(|u| {
                matches!(
                    u,
                    SessionUpdate::PlanUpdate(_) | SessionUpdate::PlanRemoved(_)
                )
            })
            .collect()
    }

    /// The subagent sessions the turn announced (`subagent_update` naming a session for the
    /// first time), in order.
    pub fn subagents(&self) -> Vec<SessionId> {
        let mut ids: Vec<SessionId> = Vec::new();
        for update in &self.updates {
            if let SessionUpdate::SubagentUpdate(subagent) = update
                && !ids.contains(&subagent.session_id)
            {
                ids.push(subagent.session_id.clone());
            }
        }
        ids
    }

    /// Every `session/update` of the session `id` (a subagent's, say) among the turn's frames,
    /// in order, read as v1 updates (see [`Frame::session_update`]).
    pub fn updates_of(&self, id: &SessionId) -> Vec<SessionUpdate> {
        self.frames
            .iter()
            .filter(|f| f.direction == Direction::FromAgent)
            .filter_map(Frame::session_update)
            .filter(|n| &n.session_id == id)
            .map(|n| n.update)
            .collect()
    }

    /// The notices sent, in order.
    pub fn notices(&self) -> Vec<&schema::Notice> {
        self.updates
            .iter()
            .filter_map(|u| match u {
                SessionUpdate::Notice(n) => Some(n),
                _ => None,
            })
            .collect()
    }

    /// The tool calls of the turn, in the order they started.
    pub fn tool_calls(&self) -> Vec<ToolCallTrace> {
        let mut calls: Vec<ToolCallTrace> = Vec::new();
        for update in &self.updates {
            match update {
                // A call announced anew (as Zed's `_meta.terminal_info` needs) replaces what
                // it shows, as Zed's client reads it, keeping its history of statuses.
                SessionUpdate::ToolCall(c)
                    if calls
                        .iter()
                        .any(|call| call.id == c.tool_call_id.to_string()) =>
                {
                    let id = c.tool_call_id.to_string();
                    if let Some(call) = calls.iter_mut().find(|call| call.id == id) {
                        call.title.clone_from(&c.title);
                        call.kind = c.kind;
                        call.statuses.push(c.status);
                        call.content.clone_from(&c.content);
                        if c.raw_input.is_some() {
                            call.raw_input.clone_from(&c.raw_input);
                        }
                        if c.raw_output.is_some() {
                            call.raw_output.clone_from(&c.raw_output);
                        }
                        call.locations = c.locations.iter().map(|l| l.path.clone()).collect();
                    }
                }
                SessionUpdate::ToolCall(c) => calls.push(ToolCallTrace {
                    id: c.tool_call_id.to_string(),
                    title: c.title.clone(),
                    kind: c.kind,
                    statuses: vec![c.status],
                    content: c.content.clone(),
                    raw_input: c.raw_input.clone(),
                    raw_output: c.raw_output.clone(),
                    locations: c.locations.iter().map(|l| l.path.clone()).collect(),
                }),
                SessionUpdate::ToolCallUpdate(u) => {
                    let id = u.tool_call_id.to_string();
                    if let Some(call) = calls.iter_mut().find(|c| c.id == id) {
                        let f = &u.fields;
                        if let Some(s) = f.status {
                            call.statuses.push(s);
                        }
                        if let Some(t) = &f.title {
                            call.title.clone_from(t);
                        }
                        if let Some(k) = f.kind {
                            call.kind = k;
                        }
                        if let Some(c) = &f.content {
                            call.content.clone_from(c);
                        }
                        if let Some(v) = &f.raw_input {
                            call.raw_input = Some(v.clone());
                        }
                        if let Some(v) = &f.raw_output {
                            call.raw_output = Some(v.clone());
                        }
                        if let Some(l) = &f.locations {
                            call.locations = l.iter().map(|l| l.path.clone()).collect();
                        }
                    }
                }
                _ => {}
            }
        }
        calls
    }

    /// The permission requests the agent made during the turn (their params, in v1's shape:
    /// see [`Frame::as_v1`]), in order.
    pub fn permission_requests(&self) -> Vec<&Value> {
        self.frames
            .iter()
            .filter(|f| {
                f.direction == Direction::FromAgent
                    && f.method() == Some(methods::REQUEST_PERMISSION)
                    && f.message["params"]["sessionId"].as_str() == Some(&*self.session.0)
            })
            .map(|f| &f.as_v1()["params"])
            .collect()
    }
}

/// What is wrong with a frame the agent wrote, if anything.
pub(super) fn malformed(message: &Value) -> Option<&'static str> {
    let Some(obj) = message.as_object() else {
        return Some("not a JSON object");
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Some("`jsonrpc` is not \"2.0\"");
    }
    match obj.get("method") {
        Some(Value::String(_)) => None,
        Some(_) => Some("`method` is not a string"),
        None => match (obj.get("id"), obj.get("result"), obj.get("error")) {
            (None, _, _) => Some("neither a method nor an id"),
            (Some(_), Some(_), Some(_)) => Some("a response with both `result` and `error`"),
            (Some(_), None, None) => Some("a response with neither `result` nor `error`"),
            (Some(_), None, Some(e)) if !e.is_object() => Some("`error` is not an object"),
            _ => None,
        },
    }
}

/// The concatenated text of the agent's message chunks among `updates`.
pub(super) fn message_text(updates: &[SessionUpdate]) -> String {
    chunks(updates, |u| match u {
        SessionUpdate::AgentMessageChunk(c) => Some(&c.content),
        _ => None,
    })
}

/// The concatenated text of the text blocks `pick` finds among `updates`.
fn chunks(
    updates: &[SessionUpdate],
    pick: impl Fn(&SessionUpdate) -> Option<&schema::ContentBlock>,
) -> String {
    updates
        .iter()
        .filter_map(pick)
        .filter_map(|b| match b {
            schema::ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}
