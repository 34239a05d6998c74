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
///
/// What the user sees and what a model reads may differ: [`for_model`](Self::for_model) sets
/// the model's text apart from the content shown. A returned [`Diff`] does so by itself: the
/// editor shows the diff, a model reads `edited <path>: +N −M lines` rather than the whole
/// new file.
///
/// ```
/// use acp_core::ToolOutput;
///
/// let output = ToolOutput::text("3,214 rows, first ten shown in the table")
///     .for_model("3214 rows; columns: id, name, email");
/// assert_eq!(output.to_text(), "3214 rows; columns: id, name, email");
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ToolOutput {
    /// The content shown in the client's tool call.
    pub content: Vec<ToolCallContent>,
    /// The structured return value (`rawOutput`), when the tool returned one.
    pub raw: Option<serde_json::Value>,
    /// The text a model is given instead of the content, when set
    /// ([`for_model`](Self::for_model)).
    pub model_text: Option<String>,
}

impl ToolOutput {
    /// An output with this content.
    pub fn new(content: Vec<ToolCallContent>) -> Self {
        ToolOutput {
            content,
            raw: None,
            model_text: None,
        }
    }

    /// Sets the text a model is given for this output ([`to_text`](Self::to_text)), apart
    /// from the content the user sees: a short summary of a long diff, a table, a log.
    #[must_use]
    pub fn for_model(mut self, text: impl Into<String>) -> Self {
        self.model_text = Some(text.into());
        self
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

    /// The output as text for a model: the text [set for it](Self::for_model) when there
    /// is one; else the text blocks joined by newlines, diffs as `diff <path>` plus the new
    /// text, terminals by id; or the raw value when there is no content.
    pub fn to_text(&self) -> String {
        if let Some(text) = &self.model_text {
            return text.clone();
        }
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

/// The editor is shown the diff; a model reads a summary of it: `edited <path>: +N −M lines`
/// (`created <path>: +N lines` for a new file).
impl IntoToolOutput for Diff {
    fn to_tool_output(&self) -> ToolOutput {
        ToolOutput::new(vec![ToolCallContent::Diff(self.clone())]).for_model(diff_summary(self))
    }
}

/// A diff in one line, for a model: `edited <path>: +N −M lines` (lines added and removed),
/// or `created <path>: +N lines` for a new file.
fn diff_summary(diff: &Diff) -> String {
    let path = diff.path.display();
    match &diff.old_text {
        None => format!("created {path}: +{} lines", diff.new_text.lines().count()),
        Some(old) => {
            let (added, removed) = line_changes(old, &diff.new_text);
            format!("edited {path}: +{added} \u{2212}{removed} lines")
        }
    }
}

/// The most line pairs compared exactly; past it the changed region counts whole.
const DIFF_BUDGET: usize = 4_000_000;

/// Lines added and removed from `old` to `new`: their common start and end set aside, the
/// rest by the longest common subsequence of lines (when small enough to compare; else the
/// whole changed region counts as removed and added).
fn line_changes(old: &str, new: &str) -> (usize, usize) {
    let old: Vec<&str> = old.lines().collect();
    let new: Vec<&str> = new.lines().collect();
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let (old, new) = (&old[prefix..], &new[prefix..]);
    let suffix = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (old, new) = (&old[..old.len() - suffix], &new[..new.len() - suffix]);
    if old.len().saturating_mul(new.len()) > DIFF_BUDGET {
        return (new.len(), old.len());
    }
    // The LCS length, one row at a time.
    let mut row = vec![0usize; new.len() + 1];
    for a in old {
        let mut diagonal = 0;
        for (j, b) in new.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if a == b {
                diagonal + 1
            } else {
                above.max(row[j])
            };
            diagonal = above;
        }
    }
    let common = row[new.len()];
    (new.len() - common, old.len() - common)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_changes_count_added_and_removed_lines() {
        assert_eq!(line_changes("a\nb\nc\n", "a\nb\nc\n"), (0, 0));
        assert_eq!(line_changes("a\nb\nc\n", "a\nB\nc\n"), (1, 1));
        assert_eq!(line_changes("a\nc\n", "a\nb\nc\nd\n"), (2, 0));
        assert_eq!(line_changes("a\nb\nc\nd\n", "b\nd\n"), (0, 2));
        assert_eq!(line_changes("x\na\ny\nb\nz", "a\nq\nb"), (1, 3));
        assert_eq!(line_changes("", "a\n"), (1, 0));
    }

    #[test]
    fn a_diff_is_shown_whole_and_summarised_for_a_model() {
        let diff = Diff::new("/w/a.txt", "one\n2\nthree\n").old_text("one\ntwo\nthree\n");
        let output = diff.to_tool_output();
        assert_eq!(output.content, [ToolCallContent::Diff(diff.clone())]);
        assert_eq!(output.to_text(), "edited /w/a.txt: +1 \u{2212}1 lines");
        let new = Diff::new("/w/b.txt", "x\ny");
        assert_eq!(diff_summary(&new), "created /w/b.txt: +2 lines");
    }
}
