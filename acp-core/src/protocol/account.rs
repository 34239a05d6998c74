//! The runtime's account of what happens in a session, whatever the protocol version a
//! connection speaks: the v1 update types (what the author API and the session store use),
//! fitted so that every client can read them. `v1` writes the account as it is; `v2` translates
//! it (see its module doc).

use serde_json::Value;

use crate::schema::{
    SessionUpdate, ToolCallId, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::v1::session_update;
    use crate::schema::SessionId;

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
