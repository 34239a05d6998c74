//! Protocol v1 frames for what the runtime sends: a `session/update` of a session, a tool call
//! reported failed, the answer that ends a prompt turn.

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::methods;
use crate::jsonrpc;
use crate::schema::{
    PromptResponse, RequestId, SessionId, SessionNotification, SessionUpdate, StopReason,
    ToolCallId, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use crate::{Error, Result};

/// A `session/update` notification (`params` is a [`SessionNotification`]).
pub(crate) fn update(params: &impl Serialize) -> Result<Vec<u8>> {
    Ok(jsonrpc::encode_notification(
        methods::SESSION_UPDATE,
        params,
    )?)
}

/// A `session/update` carrying `update` for `session`.
pub(crate) fn session_update(session: &SessionId, update: SessionUpdate) -> Result<Vec<u8>> {
    self::update(&SessionNotification::new(session.clone(), update))
}

/// A `session/update` carrying `update` for `session`, and where the update's JSON text is in
/// the frame (for the session store, which keeps that text: see `peer::journal`). The same
/// bytes as [`session_update`] makes.
pub(crate) fn session_update_located(
    session: &SessionId,
    update: &SessionUpdate,
) -> Result<(Vec<u8>, std::ops::Range<usize>)> {
    let mut bytes = Vec::with_capacity(192);
    bytes.extend_from_slice(br#"{"jsonrpc":"2.0","method":""#);
    bytes.extend_from_slice(methods::SESSION_UPDATE.as_bytes());
    bytes.extend_from_slice(br#"","params":{"sessionId":"#);
    serde_json::to_writer(&mut bytes, session)?;
    bytes.extend_from_slice(br#","update":"#);
    let start = bytes.len();
    serde_json::to_writer(&mut bytes, update)?;
    let end = bytes.len();
    bytes.extend_from_slice(b"}}\n");
    Ok((bytes, start..end))
}

/// A `session/update` carrying `update` (already JSON) for `session`: the same frame as
/// [`session_update`] makes, around text serialized once.
pub(crate) fn raw_update(session: &SessionId, update: &RawValue) -> Result<Vec<u8>> {
    /// A [`SessionNotification`] with no `_meta`, its update already serialized.
    #[derive(Serialize)]
    struct Params<'a> {
        #[serde(rename = "sessionId")]
        session_id: &'a SessionId,
        update: &'a RawValue,
    }
    self::update(&Params {
        session_id: session,
        update,
    })
}

/// How deep a value the runtime passes on from elsewhere (a tool call's raw input or output:
/// a model's or client's arguments, an MCP server's result) may nest in a frame. serde_json,
/// which the official Rust SDK (and so Zed) reads frames with, refuses a frame nested deeper
/// than 128 levels, and the frame around a tool call's value takes at most 5 of them.
const MAX_VALUE_DEPTH: usize = 100;

/// What stands in for the part of a value nested deeper than [`MAX_VALUE_DEPTH`].
const TOO_DEEP: &str = "(nested too deeply to show)";

/// Replaces what in `value` is nested deeper than [`MAX_VALUE_DEPTH`] arrays and objects with
/// [`TOO_DEEP`]; returns whether anything was cut.
fn fit_depth(value: &mut Value) -> bool {
    fn fit(value: &mut Value, levels_left: usize) -> bool {
        if !(value.is_array() || value.is_object()) {
            return false;
        }
        if levels_left == 0 {
            *value = Value::String(TOO_DEEP.to_owned());
            return true;
        }
        let fit_all = |cut: bool, child: &mut Value| fit(child, levels_left - 1) | cut;
        match value {
            Value::Array(items) => items.iter_mut().fold(false, fit_all),
            Value::Object(map) => map.values_mut().fold(false, fit_all),
            _ => false,
        }
    }
    fit(value, MAX_VALUE_DEPTH)
}

/// Keeps the raw input and output of a tool call in `update` within [`MAX_VALUE_DEPTH`], so
/// that every client can read the frame (see [`fit_depth`]).
pub(crate) fn fit_tool_call(update: &mut SessionUpdate) {
    match update {
        SessionUpdate::ToolCall(call) => fit_raw(&mut call.raw_input, &mut call.raw_output),
        SessionUpdate::ToolCallUpdate(call) => fit_fields(&mut call.fields),
        _ => {}
    }
}

/// [`fit_tool_call`] for the fields of a tool call update (as a permission request carries).
pub(crate) fn fit_fields(fields: &mut ToolCallUpdateFields) {
    fit_raw(&mut fields.raw_input, &mut fields.raw_output);
}

fn fit_raw(input: &mut Option<Value>, output: &mut Option<Value>) {
    for (what, value) in [("input", input), ("output", output)] {
        if let Some(value) = value
            && fit_depth(value)
        {
            tracing::warn!(
                "a tool call's raw {what} nests deeper than {MAX_VALUE_DEPTH} levels; \
                 the deeper part is sent as \"{TOO_DEEP}\""
            );
        }
    }
}

/// The fields that report a tool call failed, showing `message`.
pub(crate) fn failed_fields(message: &str) -> ToolCallUpdateFields {
    ToolCallUpdateFields::new()
        .status(ToolCallStatus::Failed)
        .content(vec![message.into()])
}

/// A `tool_call_update` reporting `call` failed with `message`.
pub(crate) fn tool_call_failed(call: &ToolCallId, message: &str) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call.clone(), failed_fields(message)))
}

/// The answer to the `session/prompt` request `id`, from how the turn ended.
///
/// A cancelled turn answers `cancelled` whatever the author's code returned (an error
/// caused by the cancel included); so does a turn whose code returned [`Error::Cancelled`]
/// (e.g. a permission request the client answered `cancelled`). Any other error is answered
/// as a JSON-RPC error.
/// Returns the frame, and the stop reason it answers with (none for an error).
pub(crate) fn prompt_answer(
    id: &RequestId,
    outcome: Result<StopReason>,
    cancelled: bool,
    meta: Option<crate::schema::Meta>,
) -> (Vec<u8>, Option<StopReason>) {
    let stop = match outcome {
        _ if cancelled => StopReason::Cancelled,
        Err(Error::Cancelled) => StopReason::Cancelled,
        Ok(reason) => reason,
        Err(e) => {
            tracing::warn!("the prompt turn failed: {e}");
            return (jsonrpc::encode_error(id, &e.to_rpc()), None);
        }
    };
    (
        jsonrpc::encode_result(id, &PromptResponse::new(stop).meta(meta)),
        Some(stop),
    )
}

/// The answer to any other request `id`: its result, or its error.
pub(crate) fn answer<T: Serialize>(id: &RequestId, result: Result<T>) -> Vec<u8> {
    match result {
        Ok(value) => jsonrpc::encode_result(id, &value),
        Err(e) => jsonrpc::encode_error(id, &e.to_rpc()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::ContentChunk;

    #[test]
    fn a_located_update_is_the_same_frame_and_its_range_is_the_update() {
        let session = SessionId::new("sess \"quoted\"");
        let update = SessionUpdate::AgentMessageChunk(ContentChunk::new("a\nb \"c\"".into()));
        let (bytes, range) = session_update_located(&session, &update).unwrap();
        assert_eq!(bytes, session_update(&session, update.clone()).unwrap());
        let text = std::str::from_utf8(&bytes[range]).unwrap();
        assert_eq!(text, serde_json::to_string(&update).unwrap());
    }

    /// `levels` arrays around `inner`.
    fn nested(levels: usize, inner: Value) -> Value {
        (0..levels).fold(inner, |v, _| Value::Array(vec![v]))
    }

    #[test]
    fn a_value_too_deep_for_serde_json_readers_is_cut_where_it_passes_the_limit() {
        let mut kept = nested(MAX_VALUE_DEPTH, Value::Null);
        assert!(!fit_depth(&mut kept));
        assert_eq!(kept, nested(MAX_VALUE_DEPTH, Value::Null));

        let mut deep = serde_json::json!({"a": nested(300, 1.into()), "b": [1, {"c": 2}]});
        assert!(fit_depth(&mut deep));
        let cut = nested(MAX_VALUE_DEPTH - 1, Value::String(TOO_DEEP.into()));
        assert_eq!(deep, serde_json::json!({"a": cut, "b": [1, {"c": 2}]}));
    }

    #[test]
    fn a_tool_call_frame_with_deep_raw_values_is_readable_by_serde_json() {
        use crate::schema::{ToolCall, ToolCallUpdate};
        let session = SessionId::new("s");
        let deep = || nested(MAX_VALUE_DEPTH + 100, Value::Null);
        let mut call = SessionUpdate::ToolCall(
            ToolCall::new("call_0", "t")
                .raw_input(deep())
                .raw_output(deep()),
        );
        let mut update = SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            "call_0",
            ToolCallUpdateFields::new()
                .raw_input(deep())
                .raw_output(deep()),
        ));
        for update in [&mut call, &mut update] {
            let unfit = session_update(&session, update.clone()).unwrap();
            assert!(serde_json::from_slice::<Value>(&unfit).is_err());
            fit_tool_call(update);
            let frame = session_update(&session, update.clone()).unwrap();
            let read: Value = serde_json::from_slice(&frame).expect("a readable frame");
            assert_eq!(
                read["params"]["update"]["rawOutput"],
                nested(MAX_VALUE_DEPTH, TOO_DEEP.into())
            );
        }
    }
}
