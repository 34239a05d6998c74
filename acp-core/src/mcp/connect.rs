//! Connecting one MCP server the client named: a child process over stdio (in the session's
//! cwd, with its configured env over the service's less its secrets (see `Grant::child_env`), in a process group of its own so that everything it starts
//! is stopped with it), streamable HTTP (feature `mcp-http`) or the legacy HTTP+SSE transport
//! (feature `mcp-sse`, `sse.rs`); the MCP handshake and the list of its tools; and
//! stopping it again (stdin closed, a short wait, then the whole process group killed and
//! reaped; an HTTP or SSE server's connection closed).

use std::path::Path;
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion, Tool};
use rmcp::service::{Peer, RoleClient, RunningService, serve_client};
use tokio::process::{Child, Command};
use tracing::{debug, warn};

use crate::schema::McpServer;
use crate::session::grant::Grant;
use crate::session::local::{exited, kill_group};
use crate::sync::lock;

/// How long a stdio server gets to exit on its own once its stdin is closed, before it is
/// killed.
const EXIT_WAIT: Duration = Duration::from_millis(100);

/// The MCP revision the runtime asks for in `initialize`: the newest with that handshake, named
/// here rather than taken from rmcp's `LATEST` (which is `2026-07-28`, a revision that has no
/// `initialize`: asking for it there is asking for a handshake it does not have).
pub(crate) const ASKED_REVISION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// The MCP revisions the runtime speaks with a server, newest first: those of the `initialize`
/// handshake that rmcp 3.11 implements. A server that answers `initialize` with any other (a
/// newer one, one that has no `initialize`, an unknown one) is refused with an error naming
/// both. `2026-07-28` (which replaced `initialize` with `server/discover` and per-request
/// `_meta`) is not among them: rmcp can probe for it, but only with a fixed 10 s wait for
/// servers that ignore the probe, which is the whole of a server's start timeout.
pub(crate) const SPOKEN_REVISIONS: [ProtocolVersion; 4] = [
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2024_11_05,
];

/// `Ok` if `answered` (the revision a server answered `initialize` with) is one the runtime
/// speaks; else the error telling which it answered and which it could have.
pub(crate) fn check_revision(answered: &ProtocolVersion) -> Result<(), String> {
    if SPOKEN_REVISIONS.contains(answered) {
        return Ok(());
    }
    let spoken: Vec<&str> = SPOKEN_REVISIONS
        .iter()
        .map(ProtocolVersion::as_str)
        .collect();
    Err(format!(
        "the server answered with MCP revision `{answered}`, which this agent does not speak (it speaks {})",
        spoken.join(", ")
    ))
}

/// One connected server.
pub(crate) struct Live {
    /// Requests to the server.
    pub peer: Peer<RoleClient>,
    /// Its tools, as it listed them.
    pub tools: Vec<Tool>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, ClientConfig>>>,
    child: Mutex<Option<ChildGuard>>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

/// The name the client gave a server.
pub(crate) fn name(server: &McpServer) -> String {
    match server {
        McpServer::Stdio(s) => s.name.clone(),
        McpServer::Http(s) => s.name.clone(),
        McpServer::Sse(s) => s.name.clone(),
        _ => "mcp".to_owned(),
    }
}

/// Connects `server`, completes the MCP handshake as `client` (the agent's `agentInfo`), and
/// lists its tools.
pub(crate) async fn connect(
    server: &McpServer,
    cwd: &Path,
    client: &crate::schema::Implementation,
    grant: &Grant,
) -> Result<Live, String> {
    let mut info = Implementation::new(client.name.clone(), client.version.clone());
    info.title = client.title.clone();
    let config = ClientConfig::new(ClientCapabilities::default(), info)
        .with_protocol_version(ASKED_REVISION);
    match server {
        McpServer::Stdio(s) => {
            let mut command = Command::new(&s.command);
            // The service's secrets stay with it; then what the client configured.
            grant.child_env(&mut command);
            command
                .args(&s.args)
                .envs(s.env.iter().map(|v| (&v.name, &v.value)))
                .current_dir(cwd)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                // The server's log goes where the agent's does; never to the protocol's stdout.
                .stderr(Stdio::inherit())
                .kill_on_drop(true);
            #[cfg(unix)]
            command.process_group(0);
            let mut child = command
                .spawn()
                .map_err(|e| format!("could not start `{}`: {e}", s.command.display()))?;
            let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                return Err("the server's pipes were not created".to_owned());
            };
            // From here on the guard kills the process (group) if anything below fails or
            // this future is dropped (a timeout, the session closing).
            let guard = ChildGuard::new(child);
            debug!(server = %s.name, pid = ?guard.pid, "started MCP server");
            let service = serve_client(config, (stdout, stdin))
                .await
                .map_err(|e| format!("the MCP handshake failed: {e}"))?;
            finish(service, Some(guard)).await
        }
        #[cfg(feature = "mcp-http")]
        McpServer::Http(h) => {
            use rmcp::transport::StreamableHttpClientTransport;
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            let mut headers = std::collections::HashMap::new();
            for header in &h.headers {
                let name = http::HeaderName::from_bytes(header.name.as_bytes())
                    .map_err(|e| format!("bad header name `{}`: {e}", header.name))?;
                let value = http::HeaderValue::from_str(&header.value)
                    .map_err(|e| format!("bad value for header `{}`: {e}", header.name))?;
                headers.insert(name, value);
            }
            let transport = StreamableHttpClientTransport::from_config(
                StreamableHttpClientTransportConfig::with_uri(h.url.as_str())
                    .custom_headers(headers),
            );
            let service = serve_client(config, transport)
                .await
                .map_err(|e| format!("the MCP handshake failed: {e}"))?;
            finish(service, None).await
        }
        #[cfg(not(feature = "mcp-http"))]
        McpServer::Http(_) => Err(
            "HTTP MCP servers are not supported by this agent (built without `mcp-http`)".into(),
        ),
        #[cfg(feature = "mcp-sse")]
        McpServer::Sse(s) => {
            let transport = super::sse::SseTransport::connect(&s.url, &s.headers)
                .await
                .map_err(|e| format!("could not open its SSE stream: {e}"))?;
            let service = serve_client(config, transport)
                .await
                .map_err(|e| format!("the MCP handshake failed: {e}"))?;
            finish(service, None).await
        }
        #[cfg(not(feature = "mcp-sse"))]
        McpServer::Sse(_) => {
            Err("SSE MCP servers are not supported by this agent (built without `mcp-sse`)".into())
        }
        _ => Err("this kind of MCP server is not supported by this agent".to_owned()),
    }
}

async fn finish(
    service: RunningService<RoleClient, ClientConfig>,
    child: Option<ChildGuard>,
) -> Result<Live, String> {
    let answered = service
        .peer()
        .peer_info()
        .map(|i| i.protocol_version.clone());
    match answered {
        Some(revision) => {
            if let Err(e) = check_revision(&revision) {
                let _ = service.cancel().await;
                if let Some(mut child) = child {
                    child.stop().await;
                }
                return Err(e);
            }
            debug!(%revision, "MCP revision agreed");
        }
        None => return Err("the server's handshake answer is missing".to_owned()),
    }
    let tools = match service.peer().list_all_tools().await {
        Ok(tools) => tools,
        Err(e) => {
            // A server without tools may not implement `tools/list` at all.
            debug!("tools/list failed: {e}");
            if service
                .peer()
                .peer_info()
                .is_some_and(|i| i.capabilities.tools.is_some())
            {
                return Err(format!("listing its tools failed: {e}"));
            }
            Vec::new()
        }
    };
    Ok(Live {
        peer: service.peer().clone(),
        tools,
        service: tokio::sync::Mutex::new(Some(service)),
        child: Mutex::new(child),
    })
}

impl Live {
    /// Stops the server: the MCP session is closed (stdin closed for stdio servers), the
    /// process gets a moment to exit, then its whole process group is killed and reaped.
    pub(crate) async fn stop(&self) {
        if let Some(mut service) = self.service.lock().await.take() {
            let _ = service.close_with_timeout(EXIT_WAIT).await;
        }
        let child = lock(&self.child).take();
        if let Some(mut child) = child {
            child.stop().await;
        }
    }
}

/// A stdio server's process: killed with its process group when dropped, whatever else
/// happens (a guard, not a courtesy: the agent must leave no orphan).
struct ChildGuard {
    child: Option<Child>,
    pid: Option<u32>,
}

impl ChildGuard {
    fn new(child: Child) -> Self {
        let pid = child.id();
        ChildGuard {
            child: Some(child),
            pid,
        }
    }

    /// Waits a moment for the process to exit on its own (its stdin is closed), then kills its
    /// group, and reaps it.
    async fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // Not reaped before its group is killed: the group's id is still the server's.
        match tokio::time::timeout(EXIT_WAIT, exited(&child)).await {
            Ok(Ok(status)) => {
                debug!(pid = ?self.pid, %status, "MCP server exited");
                // Whatever the server itself started in its group goes too.
                kill_group(self.pid);
            }
            _ => {
                kill_group(self.pid);
                let _ = child.start_kill();
                debug!(pid = ?self.pid, "MCP server killed");
            }
        }
        if let Err(e) = child.wait().await {
            warn!(pid = ?self.pid, "could not reap an MCP server: {e}");
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_group(self.pid);
            // `kill_on_drop` would do it too; this also works outside a runtime.
            let _ = child.start_kill();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_revisions_spoken_are_named_and_any_other_answer_is_refused_by_name() {
        for spoken in &SPOKEN_REVISIONS {
            assert!(check_revision(spoken).is_ok(), "{spoken}");
            assert!(spoken.has_initialize(), "{spoken}");
        }
        assert!(SPOKEN_REVISIONS.contains(&ASKED_REVISION));
        assert_eq!(ASKED_REVISION.as_str(), "2025-11-25");
        let newer = check_revision(&ProtocolVersion::V_2026_07_28).unwrap_err();
        assert!(newer.contains("`2026-07-28`"), "{newer}");
        assert!(
            newer.contains("2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05"),
            "{newer}"
        );
        let unknown: ProtocolVersion = serde_json::from_str("\"2023-01-01\"").unwrap();
        assert!(
            check_revision(&unknown)
                .unwrap_err()
                .contains("`2023-01-01`")
        );
    }
}
