//! What a tool's return value becomes in the client: [`ToolOutput`], the [`IntoToolOutput`]
//! conversions, [`Json`] for any serializable value, and [`ToolLocations`] for path arguments.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::schema::{ContentBlock, Diff, ToolCallContent};
use crate::session::Terminal;

/// What a tool call returned: its content, and the structured value when the tool returned
/// one. This is what [`Session::call_tool`](crate::Session::call_tool) returns, ready to hand
/// back to a model. (The client shows this content after any terminal the tool embedded in
/// its call.)
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ToolOutput {
    /// The content shown in the client's tool call.
    pub content: Vec<ToolCallContent>,
    /// The structured return value (`rawOutput`), when the tool returned one.
    pub raw: Option<serde_json::Value>,
}

impl ToolOutput {
    /// An output with this content.
    pub fn new(content: Vec<ToolCallContent>) -> Self {
        ToolOutput { content, raw: None }
    }

    /// An output of one text block.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput::new(vec![text.into().into()])
    }

    /// Sets the structured value sent as `rawOutput`.
    #[must_use]
    pub fn raw(mut self, raw: serde_json::Value) -> Self {
        self.raw = Some(raw);
        self
    }

    /// The output as text for a model: the text blocks joined by newlines, diffs as
    /// `diff <path>` plus the new text, terminals by id; or the raw value when there is no
    /// content.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for item in &self.content {
            if !out.is_empty() {
                out.push('\n');
            }
            match item {
                ToolCallContent::Content(c) => match &c.content {
                    ContentBlock::Text(t) => out.push_str(&t.text),
                    other => out.push_str(&serde_json::to_string(other).unwrap_or_default()),
                },
                ToolCallContent::Diff(d) => {
                    out.push_str(&format!("diff {}\n{}", d.path.display(), d.new_text));
                }
                ToolCallContent::Terminal(t) => {
                    out.push_str(&format!("terminal {}", t.terminal_id))
                }
                _ => {}
            }
        }
        if out.is_empty()
            && let Some(raw) = &self.raw
        {
            out = raw.to_string();
        }
        out
    }
}

/// A value an `#[acp::tool]` may return (inside its `Result`): how it is shown in the client's
/// tool call when the call completes (after the terminals the tool ran, which stay shown).
///
/// | returned | shown as |
/// | --- | --- |
/// | `String`, `&str`, `Cow<str>` | text |
/// | [`Diff`] | a diff |
/// | [`Terminal`] | the terminal's live output |
/// | [`ToolCallContent`], `Vec<ToolCallContent>`, [`ContentBlock`] | as is |
/// | [`ToolOutput`] | as is (content and `rawOutput`) |
/// | [`Json<T>`](Json), `serde_json::Value` | `rawOutput`, and pretty JSON as text |
/// | `()` | nothing |
/// | `Option<T>` | `T`'s content, or nothing |
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be shown as the output of a tool call",
    label = "this is what the tool returns on success",
    note = "an `#[acp::tool]` may return `String`, `acp::Diff`, `acp::Terminal`, `acp::ToolOutput`, `()`, or any serializable value wrapped in `acp::Json(…)`"
)]
pub trait IntoToolOutput {
    /// The content (and structured value) shown when the tool call completes.
    fn to_tool_output(&self) -> ToolOutput;
}

impl IntoToolOutput for ToolOutput {
    fn to_tool_output(&self) -> ToolOutput {
        self.clone()
    }
}

impl IntoToolOutput for String {
    fn to_tool_output(&self) -> ToolOutput {
        ToolOutput::text(self.as_str())
    }
}

impl IntoToolOutput for str {
    fn to_tool_output(&self) -> ToolOutput {
        ToolOutput::text(self)
    }
}

impl IntoToolOutput for Cow<'_, str> {
    fn to_tool_output(&self) -> ToolOutput {
        ToolOutput::text(self.as_ref())
    }
}

impl<T: IntoToolOutput + ?Sized> IntoToolOutput for &T {
    fn to_tool_output(&self) -> ToolOutput {
        (**self).to_tool_output()
    }
}

impl<T: IntoToolOutput + ?Sized> IntoToolOutput for Box<T> {
    fn to_tool_output(&self) -> ToolOutput {
        (**self).to_tool_output()
    }
}

impl<T: IntoToolOutput> IntoToolOutput for Option<T> {
    fn to_tool_output(&self) -> ToolOutput {
        self.as_ref()
            .map(IntoToolOutput::to_tool_output)
            .unwrap_or_default()
    }
}

impl IntoToolOutput for () {
    fn to_tool_output(&self) -> ToolOutput {
        ToolOutput::default()
    }
}

impl IntoToolOutput for Diff {
    fn to_tool_output(&self) -> ToolOutput {
        ToolOutput::new(vec![ToolCallContent::Diff(self.clone())])
    }
}

impl IntoToolOutput for Terminal {
    fn to_tool_output(&self) -> ToolOutput {
        ToolOutput::new(vec![self.content()])
    }
}

impl IntoToolOutput for ToolCallContent {
    fn to_tool_output(&self) -> ToolOutput {
        ToolOutput::new(vec![self.clone()])
    }
}

impl IntoToolOutput for Vec<ToolCallContent> {
    fn to_tool_output(&self) -> ToolOutput {
        ToolOutput::new(self.clone())
    }
}

impl IntoToolOutput for ContentBlock {
    fn to_tool_output(&self) -> ToolOutput {
        ToolOutput::new(vec![self.clone().into()])
    }
}

impl IntoToolOutput for serde_json::Value {
    fn to_tool_output(&self) -> ToolOutput {
        let text = serde_json::to_string_pretty(self).unwrap_or_default();
        ToolOutput::text(text).raw(self.clone())
    }
}

/// Returns any serializable value from a tool: sent as the call's `rawOutput`, and shown as
/// pretty-printed JSON text.
///
/// ```
/// # use acp_core::{IntoToolOutput, Json};
/// #[derive(serde::Serialize)]
/// struct Count { matches: usize }
///
/// let output = Json(Count { matches: 3 }).to_tool_output();
/// assert_eq!(output.raw, Some(serde_json::json!({ "matches": 3 })));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoToolOutput for Json<T> {
    fn to_tool_output(&self) -> ToolOutput {
        match serde_json::to_value(&self.0) {
            Ok(value) => value.to_tool_output(),
            Err(e) => ToolOutput::text(format!("(the output could not be serialized: {e})")),
        }
    }
}

/// Arguments whose values are files the tool touches: sent as the tool call's `locations`.
///
/// `#[acp::agent]` uses it for parameters typed `PathBuf`, `Option<PathBuf>` or
/// `Vec<PathBuf>`.
pub trait ToolLocations {
    /// Appends the paths in `self` to `out`.
    fn push_paths(&self, out: &mut Vec<PathBuf>);
}

impl ToolLocations for Path {
    fn push_paths(&self, out: &mut Vec<PathBuf>) {
        out.push(self.to_path_buf());
    }
}

impl ToolLocations for PathBuf {
    fn push_paths(&self, out: &mut Vec<PathBuf>) {
        out.push(self.clone());
    }
}

impl<T: ToolLocations> ToolLocations for Option<T> {
    fn push_paths(&self, out: &mut Vec<PathBuf>) {
        if let Some(p) = self {
            p.push_paths(out);
        }
    }
}

impl<T: ToolLocations> ToolLocations for [T] {
    fn push_paths(&self, out: &mut Vec<PathBuf>) {
        for p in self {
            p.push_paths(out);
        }
    }
}

impl<T: ToolLocations> ToolLocations for Vec<T> {
    fn push_paths(&self, out: &mut Vec<PathBuf>) {
        self.as_slice().push_paths(out);
    }
}
