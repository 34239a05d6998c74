//! The static description of one `#[acp::tool]` ([`ToolSpec`], generated once per tool by the
//! macro), the permission options every tool offers, and the arguments of a typed call as the
//! client sees them ([`ToolInput`]).

use std::path::PathBuf;

use super::ToolLocations;
use super::checks::ArgSerialize;
use crate::schema::ToolKind;

/// Permission option ids, stable so that clients and tests can rely on them.
pub const ALLOW_ONCE: &str = "allow_once";
/// See [`ALLOW_ONCE`].
pub const ALLOW_ALWAYS: &str = "allow_always";
/// See [`ALLOW_ONCE`].
pub const REJECT_ONCE: &str = "reject_once";
/// See [`ALLOW_ONCE`].
pub const REJECT_ALWAYS: &str = "reject_always";

/// The static description of one `#[acp::tool]`, generated once per tool.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    /// Unique tool name.
    pub name: &'static str,
    /// The doc comment.
    pub description: &'static str,
    /// The client's icon.
    pub kind: ToolKind,
    /// Title template: `{param}` placeholders, `{{`/`}}` escapes (checked by the macro).
    pub title: &'static str,
    /// Parameter names and descriptions, in order.
    pub params: &'static [Param],
    /// Whether to ask the user first.
    pub permission: bool,
}

/// One parameter of a tool.
#[derive(Debug)]
pub struct Param {
    /// The parameter's name (the JSON property).
    pub name: &'static str,
    /// Its description, from the doc comment's `# Arguments` list (may be empty).
    pub description: &'static str,
}

impl ToolSpec {
    pub(crate) fn permission_key(&self) -> String {
        format!("acp.tool:{}", self.name)
    }
}

/// The arguments of a typed call, as the client will see them.
#[derive(Debug, Default)]
pub struct ToolInput {
    pub(crate) raw: serde_json::Map<String, serde_json::Value>,
    pub(crate) locations: Vec<PathBuf>,
}

impl ToolInput {
    /// No arguments yet.
    pub fn new() -> Self {
        ToolInput::default()
    }

    /// Records an argument for `rawInput` and the title.
    pub fn arg<T: ArgSerialize + ?Sized>(mut self, name: &str, value: &T) -> Self {
        let value = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
        self.raw.insert(name.to_owned(), value);
        self
    }

    /// Records the paths of an argument as the call's locations.
    pub fn location<T: ToolLocations + ?Sized>(mut self, value: &T) -> Self {
        value.push_paths(&mut self.locations);
        self
    }
}
