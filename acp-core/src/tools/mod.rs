//! Tools: what an agent offers a model and the client shows. The definitions an agent lists
//! ([`ToolDef`], with JSON Schemas built in [`schema`]), what a tool returns ([`output`]), and
//! the lifecycle every `#[acp::tool]` call runs ([`lifecycle`]), typed or by name
//! ([`by_name`]). The macro expands each tool into one static [`spec::ToolSpec`] and the
//! assertions of [`checks`]; everything else is generic here.

pub(crate) mod by_name;
pub(crate) mod checks;
pub(crate) mod lifecycle;
mod output;
pub(crate) mod schema;
pub(crate) mod spec;
pub(crate) mod title;

use std::borrow::Cow;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;

pub use output::{IntoToolOutput, Json, ToolLocations, ToolOutput};

use crate::schema::ToolKind;
use crate::session::Session;
use crate::{Error, Result};

/// One tool an agent offers: what a model needs to pick it, and how the client shows it.
///
/// Serializes as `{"name", "description", "input_schema"}`, the shape model APIs take for a
/// tool (rename `input_schema` to `parameters` for APIs that want that):
///
/// ```
/// # fn demo(cx: &acp_core::Session) -> serde_json::Result<()> {
/// let tools = serde_json::to_value(cx.tools())?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolDef {
    /// The tool's name (unique within the agent).
    pub name: Cow<'static, str>,
    /// What the tool does (from the method's doc comment).
    pub description: Cow<'static, str>,
    /// The kind shown by the client.
    pub kind: ToolKind,
    /// The title template shown by the client, e.g. `Write {path}`.
    pub title: Cow<'static, str>,
    /// Whether the tool asks the user for permission before it runs.
    pub permission: bool,
    /// JSON Schema of the tool's arguments (an object with one property per parameter).
    pub input_schema: serde_json::Value,
}

impl Serialize for ToolDef {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("ToolDef", 3)?;
        s.serialize_field("name", &self.name)?;
        s.serialize_field("description", &self.description)?;
        s.serialize_field("input_schema", &self.input_schema)?;
        s.end()
    }
}

/// The agent's tools, reached at run time from any session of its connection.
pub(crate) trait ToolHost: Send + Sync {
    /// The tool definitions.
    fn tools(&self) -> Vec<ToolDef>;
    /// Runs a tool by name.
    fn call_tool<'a>(
        &'a self,
        cx: &'a Session,
        name: &'a str,
        args: serde_json::Value,
    ) -> Pin<Box<dyn Future<Output = Result<ToolOutput>> + Send + 'a>>;
}

/// The connection extension holding the agent's [`ToolHost`].
pub(crate) struct Tools(pub Arc<dyn ToolHost>);

impl Session {
    fn tool_host(&self) -> Option<Arc<dyn ToolHost>> {
        self.connection()
            .extensions
            .get::<Tools>()
            .map(|t| t.0.clone())
    }

    /// Runs one of the agent's `#[acp::tool]` methods by name with JSON arguments, through
    /// the same lifecycle as a typed call (tool call shown, permission asked if the tool's
    /// policy says so, status updates). Bad arguments fail with [`Error::InvalidParams`]
    /// describing what is wrong, ready to hand back to a model.
    pub async fn call_tool(&self, name: &str, args: serde_json::Value) -> Result<ToolOutput> {
        match self.tool_host() {
            Some(host) => host.call_tool(self, name, args).await,
            None => Err(Error::InvalidParams(format!("no tool named `{name}`"))),
        }
    }

    /// The agent's tool definitions (see [`Agent::tools`](crate::Agent::tools)).
    pub fn tools(&self) -> Vec<ToolDef> {
        self.tool_host().map(|h| h.tools()).unwrap_or_default()
    }
}
