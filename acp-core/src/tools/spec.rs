//! The static description of one `#[acp::tool]` ([`ToolSpec`], generated once per tool by the
//! macro), the permission options every tool offers, and the arguments of a typed call as the
//! client sees them ([`ToolInput`]).

use std::path::PathBuf;

use super::ToolLocations;
use super::checks::ArgSerialize;
use crate::schema::{ClientCapabilities, ToolKind};
use crate::{Error, Result, Session};

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
    /// What the client must offer for the tool to run.
    pub requires: &'static [Requirement],
}

/// A client capability a tool cannot run without (`#[acp::tool(requires(terminal))]`). A
/// tool whose requirement the session cannot meet is left out of
/// [`Session::tools`](crate::Session::tools), and a call of it fails with
/// [`Error::Unsupported`] before anything is sent (no tool call shown, no permission asked).
/// A requirement the client lacks is met all the same when the server does it locally
/// ([`Server::local_fallback`](crate::Server::local_fallback)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Requirement {
    /// The client's terminals (`terminal`).
    Terminal,
    /// Reading files through the client (`fs.readTextFile`).
    ReadTextFile,
    /// Writing files through the client (`fs.writeTextFile`).
    WriteTextFile,
}

impl Requirement {
    /// The capability as the protocol names it, e.g. `fs.readTextFile`.
    pub fn name(self) -> &'static str {
        match self {
            Requirement::Terminal => "terminal",
            Requirement::ReadTextFile => "fs.readTextFile",
            Requirement::WriteTextFile => "fs.writeTextFile",
        }
    }

    /// Whether a client with `capabilities` meets it.
    pub fn is_met_by(self, capabilities: &ClientCapabilities) -> bool {
        match self {
            Requirement::Terminal => capabilities.terminal,
            Requirement::ReadTextFile => capabilities.fs.read_text_file,
            Requirement::WriteTextFile => capabilities.fs.write_text_file,
        }
    }

    /// Whether session `cx` meets it: through the client, or locally.
    pub(crate) fn is_met_in(self, cx: &Session) -> bool {
        match self {
            Requirement::Terminal => cx.terminal().is_supported(),
            Requirement::ReadTextFile => cx.fs().can_read(),
            Requirement::WriteTextFile => cx.fs().can_write(),
        }
    }
}

/// `Err(Unsupported)` naming the first of `requires` session `cx` does not meet.
pub(crate) fn check_requirements(requires: &[Requirement], cx: &Session) -> Result<()> {
    match requires.iter().find(|r| !r.is_met_in(cx)) {
        Some(missing) => Err(Error::Unsupported(missing.name())),
        None => Ok(()),
    }
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
