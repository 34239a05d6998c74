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
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::FutureExt;
use serde::Serialize;

pub use output::{IntoToolOutput, Json, ToolLocations, ToolOutput};
pub use spec::Requirement;

use crate::Result;
use crate::schema::ToolKind;
use crate::session::{Session, ToolCallGuard, adopting};

/// One tool an agent offers: what a model needs to pick it, and how the client shows it.
///
/// Serializes as `{"name", "description", "input_schema"}`, the shape model APIs take for a
/// tool (rename `input_schema` to `parameters` for APIs that want that):
///
/// ```
/// # async fn demo(cx: &acp_core::Session) -> serde_json::Result<()> {
/// let tools = serde_json::to_value(cx.tools().await)?;
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
    /// The client capabilities the tool cannot run without.
    pub requires: Cow<'static, [spec::Requirement]>,
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
    /// Runs the check of a tool by name, without calling it.
    fn check_tool<'a>(
        &'a self,
        cx: &'a Session,
        name: &'a str,
    ) -> Pin<Box<dyn Future<Output = Result<()>> + Send + 'a>>;
}

/// The connection extension holding the agent's [`ToolHost`].
pub(crate) struct Tools(pub Arc<dyn ToolHost>);

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Tools one session has beside the agent's own: those of the client's MCP servers. A layer
/// above this one (`mcp`) provides them; sessions reach them through [`SessionTools`].
pub(crate) trait ExtraTools: Send + Sync {
    /// Their definitions, once the sources still starting are ready (or gave up).
    fn tools(&self) -> BoxFuture<'_, Vec<ToolDef>>;
    /// Runs the tool `name` through the tool-call lifecycle; `None` if none has that name.
    fn call_tool<'a>(
        &'a self,
        cx: &'a Session,
        name: &'a str,
        args: serde_json::Value,
    ) -> BoxFuture<'a, Option<Result<ToolOutput>>>;
}

/// The per-session value holding a session's [`ExtraTools`].
pub(crate) struct SessionTools(pub Arc<dyn ExtraTools>);

impl Session {
    fn tool_host(&self) -> Option<Arc<dyn ToolHost>> {
        self.connection()
            .services()
            .get::<Tools>()
            .map(|t| t.0.clone())
    }

    fn extra_tools(&self) -> Option<Arc<dyn ExtraTools>> {
        self.state
            .values()
            .get::<SessionTools>()
            .map(|t| t.0.clone())
    }

    /// Runs a tool by name with JSON arguments: one of the agent's `#[acp::tool]` methods,
    /// or a tool of one of the client's MCP servers, through the same lifecycle as a typed
    /// call (tool call shown, permission asked if the tool's policy says so, status
    /// updates). Bad arguments fail with [`Error::InvalidParams`](crate::Error::InvalidParams)
    /// describing what is wrong, ready to hand back to a model; an unknown name too, listing
    /// the session's tools. MCP tools wait for their servers to finish starting (bounded by
    /// [`Server::mcp_timeout`](crate::Server::mcp_timeout)).
    pub async fn call_tool(&self, name: &str, args: serde_json::Value) -> Result<ToolOutput> {
        let host = self.tool_host();
        let Some(extra) = self.extra_tools() else {
            // No MCP servers: every name is the agent's to answer.
            return match host {
                Some(host) => host.call_tool(self, name, args).await,
                None => Err(by_name::unknown_tool(name, &[])),
            };
        };
        // The agent's own tools keep their names; MCP tools were named around them.
        if let Some(host) = &host
            && host.tools().iter().any(|t| t.name == name)
        {
            return host.call_tool(self, name, args).await;
        }
        if let Some(result) = extra.call_tool(self, name, args).await {
            return result;
        }
        let names: Vec<String> = self
            .tools()
            .await
            .into_iter()
            .map(|t| t.name.into_owned())
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        Err(by_name::unknown_tool(name, &names))
    }

    /// Runs a tool by name like [`call_tool`](Self::call_tool), as tool call `call`, already
    /// shown: the tool's lifecycle updates that call (its title, kind, input and locations,
    /// then permission, `in_progress`, `completed` or `failed`) instead of announcing a new
    /// one. This is how a model's tool call appears in the editor as soon as the model names
    /// the tool, before its arguments are complete. A call the tool never reached (an unknown
    /// name, a capability the client lacks, the turn cancelled) is failed with the error.
    ///
    /// ```no_run
    /// # async fn demo(cx: &acp_core::Session) -> acp_core::Result<()> {
    /// // The model named `read_file`: show it at once…
    /// let call = cx.tool_call("read_file").start().await?;
    /// // …and once its arguments are complete, run it in that call.
    /// let output = cx
    ///     .call_tool_in(call, "read_file", serde_json::json!({"path": "README.md"}))
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn call_tool_in(
        &self,
        call: ToolCallGuard,
        name: &str,
        args: serde_json::Value,
    ) -> Result<ToolOutput> {
        let (result, left) = adopting(call, self.call_tool(name, args)).await;
        if let Some(call) = left {
            // The tool never started a call of its own.
            let _ = match &result {
                Ok(output) => call.complete(output.content.clone()).await,
                Err(e) => call.fail(e).await,
            };
        }
        result
    }

    /// Every tool a model may call in this session: the agent's own (see
    /// [`Agent::tools`](crate::Agent::tools)), then those of the client's MCP servers, each
    /// under a name unique in the session. Waits for the MCP servers still starting (bounded
    /// by [`Server::mcp_timeout`](crate::Server::mcp_timeout)); servers that failed are left
    /// out (see [`Session::mcp_status`]).
    pub async fn tools(&self) -> Vec<ToolDef> {
        let mut tools = self.tool_host().map(|h| h.tools()).unwrap_or_default();
        // What the session cannot run (the client lacks it, and it is not done locally) is
        // not offered.
        tools.retain(|t| t.requires.iter().all(|r| r.is_met_in(self)));
        if let Some(extra) = self.extra_tools() {
            tools.extend(extra.tools().await);
        }
        tools
    }

    /// The tools a model may call now: [`tools`](Self::tools), less the agent's tools whose
    /// `check` (`#[acp::tool(check = …)]`) refuses them in the session's current state (its
    /// mode, its settings, whatever the check reads), so that a model is not offered a tool
    /// that would be refused. Each check runs once (outside any tool call: a check that reads
    /// [`current_tool_call`](Self::current_tool_call) sees none); one that panics counts as
    /// a refusal. `llm::Model::run` offers these at each model call.
    pub async fn available_tools(&self) -> Vec<ToolDef> {
        let mut tools = self.tools().await;
        let Some(host) = self.tool_host() else {
            return tools;
        };
        let own: Vec<Cow<'static, str>> = host.tools().into_iter().map(|t| t.name).collect();
        let mut refused = Vec::new();
        for tool in tools.iter().filter(|t| own.contains(&t.name)) {
            let check = AssertUnwindSafe(host.check_tool(self, &tool.name)).catch_unwind();
            match check.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::debug!(tool = %tool.name, "not offered: {e}");
                    refused.push(tool.name.clone());
                }
                Err(_) => {
                    tracing::warn!(tool = %tool.name, "not offered: its check panicked");
                    refused.push(tool.name.clone());
                }
            }
        }
        tools.retain(|t| !refused.contains(&t.name));
        tools
    }
}
