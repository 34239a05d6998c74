//! The client's MCP servers: every server a session is given in `session/new`, `session/load`
//! or `session/resume` is connected by the runtime ([`connect`], with the official Rust MCP
//! SDK) in the background, its tools join the session's tool table under unambiguous names
//! ([`names`]) and run through the tool-call lifecycle ([`call`]); the servers stop with their
//! session, and with the connection.
//!
//! Owns: [`McpConfig`] (set on [`Server`](crate::Server)), the per-session [`McpServers`],
//! [`McpStatus`] (what [`Session::mcp_status`] reports), and `mcpCapabilities`. The legacy
//! HTTP+SSE client transport, which rmcp no longer has, is ours (`sse`, feature `mcp-sse`).

mod call;
mod connect;
mod names;
#[cfg(feature = "mcp-sse")]
mod sse;

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use tokio::sync::watch;
use tracing::{Instrument, debug, debug_span, warn};

use crate::schema::{Implementation, McpCapabilities, ToolKind};
use crate::session::{Connection, Session, SessionState};
use crate::tools::{ExtraTools, SessionTools, ToolDef, ToolOutput};
use crate::{Error, Result};
use connect::Live;

/// How long an MCP server gets to start and list its tools by default.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The `mcpCapabilities` this build supports: `http` exactly when feature `mcp-http` is
/// compiled in, `sse` exactly when feature `mcp-sse` is.
pub(crate) fn capabilities() -> McpCapabilities {
    McpCapabilities::new()
        .http(cfg!(feature = "mcp-http"))
        .sse(cfg!(feature = "mcp-sse"))
}

/// When a call of an MCP tool asks the user first (see
/// [`Server::mcp_permission`](crate::Server::mcp_permission)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpPermission {
    /// Ask, unless the server annotates the tool read-only (`readOnlyHint: true`). The default.
    #[default]
    UnlessReadOnly,
    /// Ask before every MCP tool (answers of "always" are remembered per tool).
    Always,
    /// Never ask: the user's MCP servers are trusted.
    Never,
}

/// How a connection handles the MCP servers of its sessions (a connection extension).
#[derive(Debug, Clone)]
pub(crate) struct McpConfig {
    /// How long a server may take to start, shake hands and list its tools.
    pub timeout: Duration,
    pub permission: McpPermission,
    /// Who the agent says it is to the servers.
    pub client: Implementation,
}

/// How one of the session's MCP servers is doing, from [`Session::mcp_status`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpStatus {
    /// The server's name, as the client gave it.
    pub name: String,
    /// Connected with its tools, or why not.
    pub state: McpState,
}

/// Whether an MCP server is usable; see [`McpStatus`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpState {
    /// Connected; its tools are in the session's tool table under these names.
    Connected {
        /// The names its tools have in [`Session::tools`].
        tools: Vec<String>,
    },
    /// It did not start, its handshake failed, or it took longer than the timeout; its tools
    /// are not offered. The message says which, for the author to show the user.
    Failed(String),
}

/// One MCP tool in a session's table.
#[derive(Debug, Clone)]
pub(crate) struct McpTool {
    pub def: ToolDef,
    /// The tool's own name, on its server.
    pub remote: String,
    /// The title shown in the client (not a template).
    pub title: String,
    /// The server's name.
    pub server: String,
    /// The server's index in the session's list.
    index: usize,
}

impl McpTool {
    fn permission_key(&self) -> String {
        format!("acp.mcp:{}:{}", self.server, self.remote)
    }
}

/// What a session's servers came to, once every one has started or failed.
#[derive(Debug, Default)]
struct Table {
    servers: Vec<(String, std::result::Result<Arc<Live>, String>)>,
    tools: Vec<McpTool>,
}

/// The MCP servers of one session.
pub(crate) struct McpServers {
    table: watch::Receiver<Option<Arc<Table>>>,
    startup: tokio::task::JoinHandle<()>,
    timeout: Duration,
}

impl std::fmt::Debug for McpServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServers").finish_non_exhaustive()
    }
}

impl Drop for McpServers {
    fn drop(&mut self) {
        // Servers still starting are dropped with the task (their processes killed); the
        // connected ones are killed by their guards when the table goes.
        self.startup.abort();
    }
}

/// Starts connecting the servers `state` was given, in the background; the session's tools
/// and calls wait for them. `reserved` are the agent's own tool names. Does nothing when the
/// session has no servers.
pub(crate) fn attach(state: &Arc<SessionState>, reserved: Vec<String>) {
    if state.mcp_servers().is_empty() {
        return;
    }
    let config = config(state.conn());
    let servers = state.mcp_servers().to_vec();
    let cwd = state.roots().cwd.clone();
    let grant = state.conn().grant().clone();
    let (tx, rx) = watch::channel(None);
    let timeout = config.timeout;
    let span = debug_span!("mcp", session = %state.id());
    let startup = tokio::spawn(
        async move {
            let connecting = servers.iter().map(|server| {
                let name = connect::name(server);
                let client = config.client.clone();
                let cwd = cwd.clone();
                let grant = &grant;
                async move {
                    let connecting = async {
                        // What the operator did not grant the client is neither started nor
                        // reached.
                        grant.mcp_server(server)?;
                        connect::connect(server, &cwd, &client, grant).await
                    };
                    let outcome = tokio::time::timeout(timeout, connecting)
                        .await
                        .unwrap_or_else(|_| {
                            Err(format!("it did not finish starting within {timeout:?}"))
                        });
                    match &outcome {
                        Ok(live) => {
                            debug!(server = %name, tools = live.tools.len(), "MCP server connected")
                        }
                        Err(e) => warn!("the MCP server `{name}` is not available: {e}"),
                    }
                    (name, outcome.map(Arc::new))
                }
            });
            let servers = join_all(connecting).await;
            let _ = tx.send(Some(Arc::new(table(servers, &reserved, config.permission))));
        }
        .instrument(span),
    );
    let servers = Arc::new(McpServers {
        table: rx,
        startup,
        timeout,
    });
    state.values().insert(Handle(servers.clone()));
    state.values().insert(SessionTools(servers));
}

/// The per-session value holding the session's [`McpServers`] (beside the same value as the
/// session's [`SessionTools`]).
struct Handle(Arc<McpServers>);

fn servers(state: &SessionState) -> Option<Arc<McpServers>> {
    state.values().get::<Handle>().map(|h| h.0.clone())
}

fn config(conn: &Connection) -> McpConfig {
    conn.services()
        .get::<McpConfig>()
        .map(|c| (*c).clone())
        .unwrap_or_else(|| McpConfig {
            timeout: DEFAULT_TIMEOUT,
            permission: McpPermission::default(),
            client: Implementation::new("acp-agent", "0.0.0"),
        })
}

fn table(
    servers: Vec<(String, std::result::Result<Arc<Live>, String>)>,
    reserved: &[String],
    permission: McpPermission,
) -> Table {
    let listed: Vec<(&str, &[rmcp::model::Tool])> = servers
        .iter()
        .map(|(name, outcome)| match outcome {
            Ok(live) => (name.as_str(), live.tools.as_slice()),
            Err(_) => (name.as_str(), &[][..]),
        })
        .collect();
    let assigned = names::assign(&listed, reserved);
    let mut tools = Vec::new();
    for (index, ((server, list), names)) in listed.iter().zip(assigned).enumerate() {
        for (tool, name) in list.iter().zip(names) {
            let read_only = names::read_only(tool);
            let title = names::title(tool);
            let ask = match permission {
                McpPermission::UnlessReadOnly => !read_only,
                McpPermission::Always => true,
                McpPermission::Never => false,
            };
            let kind: ToolKind = names::kind(tool);
            let def = ToolDef {
                name: name.into(),
                description: tool
                    .description
                    .clone()
                    .unwrap_or_default()
                    .into_owned()
                    .into(),
                kind,
                title: title.replace('{', "{{").replace('}', "}}").into(),
                permission: ask,
                input_schema: serde_json::Value::Object((*tool.input_schema).clone()),
                requires: std::borrow::Cow::Borrowed(&[]),
            };
            tools.push(McpTool {
                def,
                remote: tool.name.to_string(),
                title,
                server: (*server).to_owned(),
                index,
            });
        }
    }
    Table { servers, tools }
}

impl McpServers {
    /// The table, once every server has started or failed (at most the timeout, plus a
    /// margin for the last server's clean-up).
    async fn ready(&self) -> Option<Arc<Table>> {
        let mut rx = self.table.clone();
        let wait = rx.wait_for(Option::is_some);
        match tokio::time::timeout(self.timeout + Duration::from_secs(1), wait).await {
            Ok(Ok(table)) => table.clone(),
            _ => None,
        }
    }

    /// Stops every server (those still starting too).
    async fn stop(&self) {
        self.startup.abort();
        let table = self.table.borrow().clone();
        if let Some(table) = table {
            join_all(
                table
                    .servers
                    .iter()
                    .filter_map(|(_, s)| s.as_ref().ok())
                    .map(|live| live.stop()),
            )
            .await;
        }
    }
}

impl ExtraTools for McpServers {
    fn tools(&self) -> futures_util::future::BoxFuture<'_, Vec<ToolDef>> {
        Box::pin(async move {
            match self.ready().await {
                Some(table) => table.tools.iter().map(|t| t.def.clone()).collect(),
                None => Vec::new(),
            }
        })
    }

    fn call_tool<'a>(
        &'a self,
        cx: &'a Session,
        name: &'a str,
        args: serde_json::Value,
    ) -> futures_util::future::BoxFuture<'a, Option<Result<ToolOutput>>> {
        Box::pin(async move {
            let table = tokio::select! {
                table = self.ready() => table?,
                () = cx.cancelled() => return Some(Err(Error::Cancelled)),
            };
            let tool = table.tools.iter().find(|t| t.def.name == name)?;
            let live = table.servers.get(tool.index)?.1.as_ref().ok()?;
            Some(call::call(cx, live, tool, args).await)
        })
    }
}

/// Stops the MCP servers of `state` (on `session/close`, and when the connection ends).
pub(crate) async fn stop(state: &SessionState) {
    if let Some(servers) = servers(state) {
        servers.stop().await;
    }
}

impl Session {
    /// How each of the client's MCP servers for this session is doing: connected (with the
    /// names its tools have in [`tools`](Session::tools)) or failed (with why, to show the
    /// user). Waits for the servers still starting, like `tools`. Empty when the client gave
    /// no servers.
    ///
    /// ```no_run
    /// # async fn demo(cx: &acp_core::Session) -> acp_core::Result<()> {
    /// use acp_core::McpState;
    /// for server in cx.mcp_status().await {
    ///     if let McpState::Failed(why) = &server.state {
    ///         cx.message(format!("MCP server `{}` is unavailable: {why}\n", server.name)).await?;
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn mcp_status(&self) -> Vec<McpStatus> {
        let Some(servers) = servers(&self.state) else {
            return Vec::new();
        };
        let Some(table) = servers.ready().await else {
            return self
                .mcp_servers()
                .iter()
                .map(|s| McpStatus {
                    name: connect::name(s),
                    state: McpState::Failed("it is still starting".to_owned()),
                })
                .collect();
        };
        table
            .servers
            .iter()
            .enumerate()
            .map(|(index, (name, outcome))| McpStatus {
                name: name.clone(),
                state: match outcome {
                    Ok(_) => McpState::Connected {
                        tools: table
                            .tools
                            .iter()
                            .filter(|t| t.index == index)
                            .map(|t| t.def.name.to_string())
                            .collect(),
                    },
                    Err(e) => McpState::Failed(e.clone()),
                },
            })
            .collect()
    }
}
