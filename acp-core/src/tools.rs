//! Tools by name: the definitions `#[acp::agent]` generates from `#[acp::tool]` methods, and
//! what a call by name returns.
//!
//! (Placeholder: the macro work fleshes this out.)

use std::borrow::Cow;

use crate::schema::{ToolCallContent, ToolKind};

/// One tool an agent offers: what a model needs to pick it, and how the client shows it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolDef {
    /// The tool's name (unique within the agent).
    pub name: Cow<'static, str>,
    /// What the tool does (from the method's doc comment).
    pub description: Cow<'static, str>,
    /// The kind shown by the client.
    pub kind: ToolKind,
    /// JSON Schema of the tool's arguments (an object with one property per parameter).
    pub input_schema: serde_json::Value,
}

/// What a tool call by name returned.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ToolOutput {
    /// The content shown in the client's tool call.
    pub content: Vec<ToolCallContent>,
    /// The structured return value, when the tool returned one.
    pub raw: Option<serde_json::Value>,
}
