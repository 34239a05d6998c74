//! The frames on the wire as the client sees them: the text of each streamed chunk, the
//! borrowed shapes incoming frames are parsed into, and the client's fixed answers.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde::Deserialize;
use serde_json::value::RawValue;

/// What follows the index in every chunk of `stream N`.
pub(crate) const CHUNK_TAIL: &str = " of the streamed answer.\n";

/// The text of chunk `i` of `stream N`, the same in all three agents and the baseline: the
/// 0-based index as 8 digits, then [`CHUNK_TAIL`] (`00000042 of the streamed answer.\n`,
/// 33 bytes).
pub(crate) fn chunk_text(i: usize, out: &mut String) {
    out.clear();
    let _ = write!(out, "{i:08}{CHUNK_TAIL}");
}

/// Whether a JSON string says the text of chunk `i`.
pub(crate) fn is_chunk_text(text: &RawValue, i: usize) -> bool {
    let mut expected = String::new();
    chunk_text(i, &mut expected);
    serde_json::from_str::<Cow<'_, str>>(text.get()).is_ok_and(|text| text == expected)
}

/// The bytes around the text of a chunk that passed the full check (see
/// `Client::read_stream`).
#[derive(Default)]
pub(crate) struct Template {
    pub(crate) before: Vec<u8>,
    pub(crate) after: Vec<u8>,
}

impl Template {
    /// Whether `line` is this template around the text of chunk `i` written as JSON the
    /// usual way: a quote, the index as 8 digits, then `json_tail` ([`CHUNK_TAIL`] as JSON,
    /// closing quote included).
    pub(crate) fn fits(&self, line: &[u8], i: usize, json_tail: &[u8]) -> bool {
        let digits = line
            .strip_prefix(self.before.as_slice())
            .and_then(|l| l.strip_suffix(self.after.as_slice()))
            .and_then(|t| t.strip_prefix(b"\""))
            .and_then(|t| t.strip_suffix(json_tail));
        digits.is_some_and(|d| {
            d.len() == 8
                && d.iter().all(u8::is_ascii_digit)
                && d.iter().fold(0, |n, d| n * 10 + usize::from(d - b'0')) == i
        })
    }
}

/// One incoming line, parsed in place: `P` is the shape expected of `params` (borrowed raw
/// JSON where it does not matter, a typed borrowed struct on the hot path).
#[derive(Deserialize)]
pub(crate) struct Frame<'a, P> {
    #[serde(borrow, default)]
    pub(crate) id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(crate) method: Option<Cow<'a, str>>,
    #[serde(default = "none")]
    pub(crate) params: Option<P>,
    #[serde(borrow, default)]
    pub(crate) result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(crate) error: Option<&'a RawValue>,
}

// `#[serde(default)]` on a generic field would ask for `P: Default`.
fn none<P>() -> Option<P> {
    None
}

/// The params of a `session/update`, down to a text chunk's text.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UpdateParams<'a> {
    #[serde(borrow)]
    pub(crate) session_id: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) update: Update<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Update<'a> {
    #[serde(borrow)]
    pub(crate) session_update: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) content: Option<TextContent<'a>>,
    /// v2's `state_update`: `running`, `requires_action` or `idle`.
    #[serde(borrow, default)]
    pub(crate) state: Option<Cow<'a, str>>,
    /// v2's idle `state_update`: why the turn ended.
    #[serde(borrow, default)]
    pub(crate) stop_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(crate) struct TextContent<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) kind: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) text: Option<&'a RawValue>,
}

/// Just enough of a `session/update` to see whose it is.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionParams<'a> {
    #[serde(borrow)]
    pub(crate) session_id: Cow<'a, str>,
}

/// The params of `session/request_permission`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PermissionParams<'a> {
    #[serde(borrow)]
    pub(crate) session_id: Cow<'a, str>,
    /// v1: the tool call asked about.
    #[serde(borrow, default)]
    pub(crate) tool_call: Option<ToolCallRef<'a>>,
    /// v2: the subject, `{"type": "tool_call", "toolCall": …}`.
    #[serde(borrow, default)]
    pub(crate) subject: Option<Subject<'a>>,
    #[serde(borrow)]
    pub(crate) options: Vec<PermissionChoice<'a>>,
}

/// v2's permission subject.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Subject<'a> {
    #[serde(borrow)]
    pub(crate) tool_call: ToolCallRef<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolCallRef<'a> {
    #[serde(borrow)]
    pub(crate) tool_call_id: Cow<'a, str>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PermissionChoice<'a> {
    #[serde(borrow)]
    pub(crate) option_id: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) name: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) kind: Cow<'a, str>,
}

/// The options every agent offers, as (optionId, name, kind); the client picks `allow`.
pub(crate) const PERMISSION_OPTIONS: [(&str, &str, &str); 2] = [
    ("allow", "Allow", "allow_once"),
    ("reject", "Reject", "reject_once"),
];

/// The client's answer to every permission request.
pub(crate) const ALLOW: &str = r#""result":{"outcome":{"outcome":"selected","optionId":"allow"}}"#;
/// The client's answer to any other request from the agent (during the handshake).
pub(crate) const NOT_SUPPORTED: &str =
    r#""error":{"code":-32601,"message":"not supported by the bench client"}"#;

/// The answer to the agent's request `id`; `outcome` is its `"result":…` or `"error":…`.
pub(crate) fn reply(id: &RawValue, outcome: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{},{outcome}}}"#, id.get())
}
