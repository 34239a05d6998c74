//! The client's MCP servers, connected by the runtime, against real MCP servers nobody here
//! wrote: the official `@modelcontextprotocol/server-everything` (over stdio, and over
//! streamable HTTP and the legacy HTTP+SSE transport on 127.0.0.1) and
//! `@modelcontextprotocol/server-filesystem`, pinned by
//! tests/mcp/package-lock.json (installed by .ci/run, or here with `npm ci` on first use).
//!
//! Most tests drive the `mcp` example agent as a child process over its pipes: `tools` lists
//! every tool name a model would see, `call NAME JSON` runs one, `status` reports the servers.
//! Every frame of a tool call is asserted as the client received it. Server processes are found
//! by a tag put in their environment (which also proves the configured env reaches them), so
//! the tests can check that none is left behind.

use crate::support;

use support::{everything, everything_js};

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use acp::schema::{
    EnvVariable, HttpHeader, McpServer, McpServerHttp, McpServerSse, McpServerStdio,
};
use acp::testing::{Direction, Frame, PermissionPolicy, TestClient};
use acp::{Prompt, Session, StopReason};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// The servers

fn filesystem_js() -> PathBuf {
    support::mcp_node_modules().join("@modelcontextprotocol/server-filesystem/dist/index.js")
}

/// A tag unique to this test process and call, put in a server's environment.
fn tag() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "t{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// server-filesystem over stdio, allowed the session's cwd (given as `.`: it resolves it
/// against the cwd the runtime starts it in).
fn filesystem(tag: &str) -> McpServer {
    McpServer::Stdio(
        McpServerStdio::new("files", "node")
            .args(vec![filesystem_js().display().to_string(), ".".into()])
            .env(vec![EnvVariable::new("ACP_MCP_TEST_TAG", tag)]),
    )
}

/// A fresh directory for one test's session.
fn workspace() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("mcp")
        .join(tag());
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

/// The live (not zombie) processes whose environment holds `ACP_MCP_TEST_TAG=tag`.
#[cfg(target_os = "linux")]
fn tagged(tag: &str) -> Vec<u32> {
    let needle = format!("ACP_MCP_TEST_TAG={tag}");
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| rest.starts_with('Z')))
            .unwrap_or(true);
        if !zombie
            && environ
                .split(|b| *b == 0)
                .any(|var| var == needle.as_bytes())
        {
            pids.push(pid);
        }
    }
    pids
}

/// Waits until no process carries `tag` (at most `within`); the ones left otherwise.
#[cfg(target_os = "linux")]
async fn gone(tag: &str, within: Duration) -> Vec<u32> {
    let start = Instant::now();
    loop {
        let left = tagged(tag);
        if left.is_empty() || start.elapsed() > within {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// ---------------------------------------------------------------------------------------------
// The client

/// The `mcp` example, spawned, in `cwd`.
async fn spawn_example(cwd: &Path, permissions: PermissionPolicy) -> TestClient {
    let command = std::process::Command::new(support::example_binary("mcp"));
    TestClient::builder()
        .cwd(cwd)
        .permissions(permissions)
        .deadline(Duration::from_secs(30))
        .spawn(command)
        .await
        .unwrap()
}

/// Sends `text` as a prompt of `session`; returns the answer and the frames the agent sent
/// meanwhile (the answer included).
async fn prompt(
    client: &TestClient,
    session: &acp::schema::SessionId,
    text: &str,
) -> (Value, Vec<Value>) {
    let start = client.transcript().len();
    let id = client.send_request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
    );
    let answer = client.wait_for_response(&id).await.unwrap();
    let frames = client.transcript()[start..]
        .iter()
        .filter(|f| f.direction == Direction::FromAgent)
        .map(|f| f.message.clone())
        .collect();
    (answer, frames)
}

/// The text of the agent message chunks among `frames`.
fn said(frames: &[Value]) -> String {
    frames
        .iter()
        .filter(|f| f["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .map(|f| {
            f["params"]["update"]["content"]["text"]
                .as_str()
                .unwrap_or("")
        })
        .collect()
}

/// The `session/update`s about tool calls among `frames`, and the permission requests, in
/// order, each reduced to what the client shows: `(kind of frame, status, the frame)`.
fn tool_frames(frames: &[Value]) -> Vec<(String, String, Value)> {
    frames
        .iter()
        .filter_map(|f| {
            if f["method"] == "session/request_permission" {
                return Some(("permission".to_owned(), String::new(), f.clone()));
            }
            let update = &f["params"]["update"];
            let kind = update["sessionUpdate"].as_str()?;
            if kind != "tool_call" && kind != "tool_call_update" {
                return None;
            }
            let status = update["status"].as_str().unwrap_or("pending").to_owned();
            Some((kind.to_owned(), status, update.clone()))
        })
        .collect()
}

fn shape(frames: &[(String, String, Value)]) -> Vec<(&str, &str)> {
    frames
        .iter()
        .map(|(k, s, _)| (k.as_str(), s.as_str()))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Tests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_are_listed_beside_the_agents_own_under_unambiguous_names() {
    let cwd = workspace();
    let tag = tag();
    let client = spawn_example(&cwd, PermissionPolicy::AllowOnce).await;
    let caps = &client.initialize_response()["agentCapabilities"]["mcpCapabilities"];
    assert_eq!(caps["http"], json!(true), "HTTP is compiled in (mcp-http)");
    assert_eq!(caps["sse"], json!(true), "SSE is compiled in (mcp-sse)");
    let servers = vec![
        everything("everything", &tag),
        everything("twin", &tag),
        filesystem(&tag),
    ];
    let started = Instant::now();
    let session = client.new_session_with_mcp(servers).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "session/new does not wait for the servers"
    );
    let (answer, frames) = prompt(&client, session.id(), "tools").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    let names: Vec<String> = said(&frames).lines().map(str::to_owned).collect();
    assert_eq!(
        names[0], "say",
        "the agent's own tools come first: {names:?}"
    );
    for expected in [
        "everything__echo",
        "twin__echo",
        "everything__get-sum",
        "twin__trigger-long-running-operation",
        "read_text_file",
        "write_file",
        "list_allowed_directories",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from {names:?}"
        );
    }
    assert!(
        !names.iter().any(|n| n == "echo"),
        "a shared name is never bare: {names:?}"
    );
    let unique: std::collections::HashSet<_> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "names are unique: {names:?}");

    // The filesystem server runs in the session's cwd (its `.` is the cwd).
    let (_, frames) = prompt(&client, session.id(), "call list_allowed_directories {}").await;
    assert!(
        said(&frames).contains(&cwd.display().to_string()),
        "{}",
        said(&frames)
    );
    // And every server got its configured env.
    let (_, frames) = prompt(&client, session.id(), "call everything__get-env {}").await;
    assert!(said(&frames).contains(&tag), "{}", said(&frames));
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_by_name_runs_the_tool_call_lifecycle_and_maps_the_result() {
    let cwd = workspace();
    let tag = tag();
    let client = spawn_example(&cwd, PermissionPolicy::AllowOnce).await;
    let session = client
        .new_session_with_mcp(vec![everything("everything", &tag)])
        .await
        .unwrap();
    let (answer, frames) = prompt(
        &client,
        session.id(),
        r#"call echo {"message": "hello mcp"}"#,
    )
    .await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    let calls = tool_frames(&frames);
    // echo is annotated read-only: no permission asked.
    assert_eq!(
        shape(&calls),
        [
            ("tool_call", "pending"),
            ("tool_call_update", "in_progress"),
            ("tool_call_update", "completed")
        ],
        "{calls:#?}"
    );
    let announced = &calls[0].2;
    assert_eq!(announced["title"], "Echo Tool");
    // The programmatic name the agent called it by, beside the title the user reads.
    assert_eq!(announced["name"], "echo");
    assert_eq!(announced["kind"], "read");
    assert_eq!(announced["rawInput"], json!({"message": "hello mcp"}));
    let id = &announced["toolCallId"];
    assert!(calls.iter().all(|(_, _, u)| &u["toolCallId"] == id));
    assert_eq!(
        calls[2].2["content"],
        json!([{"type": "content", "content": {"type": "text", "text": "Echo: hello mcp"}}])
    );
    assert_eq!(said(&frames), "Echo: hello mcp");

    // Images and structured content come through as such.
    let (_, frames) = prompt(&client, session.id(), "call get-tiny-image {}").await;
    let calls = tool_frames(&frames);
    let done = &calls.last().unwrap().2;
    assert_eq!(done["status"], "completed");
    assert!(
        done["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["content"]["type"] == "image" && c["content"]["mimeType"] == "image/png"),
        "{done:#}"
    );
    let (_, frames) = prompt(
        &client,
        session.id(),
        r#"call get-structured-content {"location": "New York"}"#,
    )
    .await;
    let calls = tool_frames(&frames);
    let done = &calls.last().unwrap().2;
    assert_eq!(done["status"], "completed");
    assert!(
        done["rawOutput"].is_object(),
        "structured content is rawOutput: {done:#}"
    );
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_not_annotated_read_only_asks_permission_first() {
    let cwd = workspace();
    let tag = tag();
    let client = spawn_example(&cwd, PermissionPolicy::AllowOnce).await;
    let session = client
        .new_session_with_mcp(vec![filesystem(&tag)])
        .await
        .unwrap();
    let args = json!({"path": cwd.join("note.txt"), "content": "written over MCP"});
    let (answer, frames) = prompt(&client, session.id(), &format!("call write_file {args}")).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    let calls = tool_frames(&frames);
    assert_eq!(
        shape(&calls),
        [
            ("tool_call", "pending"),
            ("permission", ""),
            ("tool_call_update", "in_progress"),
            ("tool_call_update", "completed")
        ],
        "{calls:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("note.txt")).unwrap(),
        "written over MCP"
    );

    // Rejected: the call fails and the server is never asked.
    client.close().await.unwrap();
    let client = spawn_example(&cwd, PermissionPolicy::RejectOnce).await;
    let session = client
        .new_session_with_mcp(vec![filesystem(&tag)])
        .await
        .unwrap();
    let args = json!({"path": cwd.join("other.txt"), "content": "no"});
    let (_, frames) = prompt(&client, session.id(), &format!("call write_file {args}")).await;
    let calls = tool_frames(&frames);
    assert_eq!(
        shape(&calls),
        [
            ("tool_call", "pending"),
            ("permission", ""),
            ("tool_call_update", "failed")
        ]
    );
    assert!(!cwd.join("other.txt").exists());
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_fails_the_call_with_the_servers_message() {
    let cwd = workspace();
    let tag = tag();
    let client = spawn_example(&cwd, PermissionPolicy::AllowOnce).await;
    let session = client
        .new_session_with_mcp(vec![everything("everything", &tag), filesystem(&tag)])
        .await
        .unwrap();
    // Arguments the server's own schema check refuses.
    let (answer, frames) = prompt(
        &client,
        session.id(),
        r#"call get-sum {"a": "one", "b": 2}"#,
    )
    .await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    let calls = tool_frames(&frames);
    assert_eq!(
        shape(&calls),
        [
            ("tool_call", "pending"),
            ("tool_call_update", "in_progress"),
            ("tool_call_update", "failed")
        ],
        "{calls:#?}"
    );
    let failed = calls[2].2.to_string();
    assert!(
        failed.contains("number") || failed.contains("Invalid"),
        "{failed}"
    );
    assert!(said(&frames).starts_with("error: "), "{}", said(&frames));

    // A tool error (`isError`): reading outside the allowed directories.
    let (_, frames) = prompt(
        &client,
        session.id(),
        r#"call read_text_file {"path": "/etc/hostname"}"#,
    )
    .await;
    let calls = tool_frames(&frames);
    assert_eq!(calls.last().unwrap().1, "failed", "{calls:#?}");
    assert!(
        calls.last().unwrap().2.to_string().contains("denied"),
        "{calls:#?}"
    );
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_turn_fails_the_call_and_tells_the_server() {
    let cwd = workspace();
    let tag = tag();
    // What the agent writes to the server, copied to a log on its way.
    let log = cwd.join("to-server.jsonl");
    let server = McpServer::Stdio(
        McpServerStdio::new("everything", "sh")
            .args(vec![
                "-c".into(),
                format!(
                    "tee '{}' | node '{}' stdio",
                    log.display(),
                    everything_js().display()
                ),
            ])
            .env(vec![EnvVariable::new("ACP_MCP_TEST_TAG", &tag)]),
    );
    let client = spawn_example(&cwd, PermissionPolicy::AllowOnce).await;
    let session = client.new_session_with_mcp(vec![server]).await.unwrap();
    let start = client.transcript().len();
    let id = client.send_request(
        "session/prompt",
        json!({"sessionId": session.id(), "prompt": [{"type": "text",
            "text": r#"call trigger-long-running-operation {"duration": 60, "steps": 60}"#}]}),
    );
    session
        .wait_for_update("the call in progress", |u| {
            matches!(u, acp::schema::SessionUpdate::ToolCallUpdate(c)
                if c.fields.status == Some(acp::schema::ToolCallStatus::InProgress))
        })
        .await
        .unwrap();
    let cancelled_at = Instant::now();
    session.cancel();
    let answer = client.wait_for_response(&id).await.unwrap();
    assert_eq!(answer["result"]["stopReason"], "cancelled");
    assert!(cancelled_at.elapsed() < Duration::from_secs(2));
    let frames: Vec<Value> = client.transcript()[start..]
        .iter()
        .filter(|f: &&Frame| f.direction == Direction::FromAgent)
        .map(|f| f.message.clone())
        .collect();
    let calls = tool_frames(&frames);
    assert_eq!(
        shape(&calls),
        [
            ("tool_call", "pending"),
            ("tool_call_update", "in_progress"),
            ("tool_call_update", "failed")
        ],
        "{calls:#?}"
    );
    // The server was told, for the `tools/call` it was running.
    let deadline = Instant::now() + Duration::from_secs(5);
    let (call_id, cancelled) = loop {
        let sent: Vec<Value> = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let call = sent
            .iter()
            .find(|m| m["method"] == "tools/call")
            .map(|m| m["id"].clone());
        let cancelled = sent
            .iter()
            .find(|m| m["method"] == "notifications/cancelled")
            .cloned();
        if let (Some(call), Some(cancelled)) = (&call, &cancelled) {
            break (call.clone(), cancelled.clone());
        }
        assert!(
            Instant::now() < deadline,
            "no notifications/cancelled sent: {sent:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(cancelled["params"]["requestId"], call_id);
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_fails_to_start_is_reported_and_the_others_work() {
    let cwd = workspace();
    let tag = tag();
    let client = spawn_example(&cwd, PermissionPolicy::AllowOnce).await;
    let broken = McpServer::Stdio(McpServerStdio::new("broken", cwd.join("no-such-server")));
    let session = client
        .new_session_with_mcp(vec![broken, everything("everything", &tag)])
        .await
        .unwrap();
    let (_, frames) = prompt(&client, session.id(), "status").await;
    let status = said(&frames);
    assert!(
        status.contains("broken: failed: could not start"),
        "{status}"
    );
    assert!(status.contains("everything: connected"), "{status}");
    let (_, frames) = prompt(
        &client,
        session.id(),
        r#"call echo {"message": "still here"}"#,
    )
    .await;
    assert_eq!(said(&frames), "Echo: still here");
    client.close().await.unwrap();
}

/// An agent served in process, to set a short start-up timeout.
struct Lister;

#[acp::agent(name = "lister")]
impl Lister {
    async fn prompt(&self, cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        let status: Vec<String> = cx
            .mcp_status()
            .await
            .into_iter()
            .map(|s| format!("{}: {:?}", s.name, s.state))
            .collect();
        cx.message(status.join("\n")).await?;
        Ok(StopReason::EndTurn)
    }
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_times_out_and_is_stopped() {
    let cwd = workspace();
    let tag = tag();
    let client = TestClient::builder()
        .cwd(&cwd)
        .serve(
            acp::Server::new(Lister)
                .no_store()
                .mcp_timeout(Duration::from_millis(800)),
        )
        .await
        .unwrap();
    // `sleep` never speaks MCP.
    let mute = McpServer::Stdio(
        McpServerStdio::new("mute", "sleep")
            .args(vec!["60".into()])
            .env(vec![EnvVariable::new("ACP_MCP_TEST_TAG", &tag)]),
    );
    let session = client.new_session_with_mcp(vec![mute]).await.unwrap();
    let started = Instant::now();
    let turn = session.prompt("status").await.unwrap();
    assert!(
        turn.text()
            .contains("mute: Failed(\"it did not finish starting within"),
        "{}",
        turn.text()
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(gone(&tag, Duration::from_secs(2)).await, Vec::<u32>::new());
    client.close().await.unwrap();
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_close_and_stdin_eof_leave_no_server_process() {
    let cwd = workspace();
    let client = spawn_example(&cwd, PermissionPolicy::AllowOnce).await;

    // session/close stops the session's servers.
    let first = tag();
    let session = client
        .new_session_with_mcp(vec![everything("a", &first), filesystem(&first)])
        .await
        .unwrap();
    let (_, frames) = prompt(&client, session.id(), "status").await;
    assert!(said(&frames).contains("a: connected"), "{}", said(&frames));
    assert_eq!(tagged(&first).len(), 2, "both servers run");
    session.close().await.unwrap();
    assert_eq!(
        gone(&first, Duration::from_secs(3)).await,
        Vec::<u32>::new()
    );

    // The end of the connection stops the rest, with the agent (a server that spawned a
    // child of its own included: the whole process group goes).
    let second = tag();
    let wrapped = McpServer::Stdio(
        McpServerStdio::new("wrapped", "sh")
            .args(vec![
                "-c".into(),
                format!("node '{}' stdio; true", everything_js().display()),
            ])
            .env(vec![EnvVariable::new("ACP_MCP_TEST_TAG", &second)]),
    );
    let session = client
        .new_session_with_mcp(vec![everything("b", &second), wrapped])
        .await
        .unwrap();
    let (_, frames) = prompt(&client, session.id(), "status").await;
    assert!(
        said(&frames).contains("wrapped: connected"),
        "{}",
        said(&frames)
    );
    assert!(tagged(&second).len() >= 3, "two servers and a shell run");
    client.close().await.unwrap();
    assert_eq!(
        gone(&second, Duration::from_secs(3)).await,
        Vec::<u32>::new()
    );
}

/// A free port on 127.0.0.1 (released for the server to take).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// server-everything listening on 127.0.0.1 (`streamableHttp` or `sse`), killed when dropped.
struct HttpServer {
    child: std::process::Child,
    port: u16,
    /// In its environment, to check it is gone.
    tag: String,
    /// Its stderr, where it logs its clients coming and going.
    log: PathBuf,
}

impl HttpServer {
    /// Starts server-everything in `mode` on a free port, and waits until it listens.
    async fn start(mode: &str) -> HttpServer {
        let port = free_port();
        let tag = tag();
        let log = workspace().join("server.log");
        let server = HttpServer {
            child: std::process::Command::new("node")
                .arg(everything_js())
                .arg(mode)
                .env("PORT", port.to_string())
                .env("ACP_MCP_TEST_TAG", &tag)
                .stdout(std::process::Stdio::null())
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .unwrap(),
            port,
            tag,
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "server-everything did not listen on {port}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        server
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Waits until its log says `text` (at most 5 s).
    async fn wait_for_log(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            if log.contains(text) {
                return;
            }
            assert!(Instant::now() < deadline, "no `{text}` in its log:\n{log}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Kills it, and checks nothing of it is left.
    async fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        #[cfg(target_os = "linux")]
        assert_eq!(
            gone(&self.tag, Duration::from_secs(3)).await,
            Vec::<u32>::new()
        );
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_servers_connect_over_streamable_http() {
    let server = HttpServer::start("streamableHttp").await;
    let cwd = workspace();
    let client = spawn_example(&cwd, PermissionPolicy::AllowOnce).await;
    let http = McpServer::Http(McpServerHttp::new("web", server.url("/mcp")));
    let session = client.new_session_with_mcp(vec![http]).await.unwrap();
    let (_, frames) = prompt(&client, session.id(), "tools").await;
    assert!(
        said(&frames).lines().any(|l| l == "echo"),
        "{}",
        said(&frames)
    );
    let (_, frames) = prompt(&client, session.id(), r#"call get-sum {"a": 2, "b": 40}"#).await;
    assert_eq!(
        shape(&tool_frames(&frames)),
        [
            ("tool_call", "pending"),
            ("tool_call_update", "in_progress"),
            ("tool_call_update", "completed")
        ]
    );
    assert!(said(&frames).contains("42"), "{}", said(&frames));
    client.close().await.unwrap();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_servers_connect_over_the_legacy_http_with_sse_transport() {
    // GET /sse for the stream; its `endpoint` event names /message?sessionId=… (relative).
    let server = HttpServer::start("sse").await;
    let cwd = workspace();
    let client = spawn_example(&cwd, PermissionPolicy::AllowOnce).await;
    let caps = &client.initialize_response()["agentCapabilities"]["mcpCapabilities"];
    assert_eq!(caps["sse"], json!(true), "{caps}");
    let sse = McpServer::Sse(
        McpServerSse::new("legacy", server.url("/sse"))
            .headers(vec![HttpHeader::new("X-Acp-Test", "1")]),
    );
    // The same server at a path it has no stream at: 404.
    let lost = McpServer::Sse(McpServerSse::new("lost", server.url("/nowhere")));
    let session = client.new_session_with_mcp(vec![sse, lost]).await.unwrap();
    let (_, frames) = prompt(&client, session.id(), "status").await;
    let status = said(&frames);
    assert!(status.contains("legacy: connected ("), "{status}");
    assert!(
        status.contains(
            "lost: failed: could not open its SSE stream: the server answered 404 Not Found"
        ),
        "{status}"
    );
    let (_, frames) = prompt(&client, session.id(), "tools").await;
    let names = said(&frames);
    for expected in ["say", "echo", "get-sum"] {
        assert!(names.lines().any(|l| l == expected), "{expected}: {names}");
    }
    let (answer, frames) = prompt(&client, session.id(), r#"call get-sum {"a": 2, "b": 40}"#).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    let calls = tool_frames(&frames);
    assert_eq!(
        shape(&calls),
        [
            ("tool_call", "pending"),
            ("tool_call_update", "in_progress"),
            ("tool_call_update", "completed")
        ],
        "{calls:#?}"
    );
    assert_eq!(calls[0].2["rawInput"], json!({"a": 2, "b": 40}));
    assert!(said(&frames).contains("42"), "{}", said(&frames));
    // session/close ends the stream, with the agent still running: the server sees it go.
    server.wait_for_log("Client Connected").await;
    session.close().await.unwrap();
    server.wait_for_log("Client Disconnected").await;
    client.close().await.unwrap();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_server_that_never_names_its_endpoint_times_out_and_is_hung_up_on() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // Answers the GET with an event stream, then says nothing but a comment.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/sse", listener.local_addr().unwrap());
    let mute = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = Vec::new();
        let mut buf = [0u8; 1024];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut buf).await.unwrap();
            assert!(n > 0, "the client hung up mid-request");
            request.extend_from_slice(&buf[..n]);
        }
        socket
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n: hello\n\n")
            .await
            .unwrap();
        // Until the client hangs up.
        while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
    });
    let client = TestClient::builder()
        .cwd(workspace())
        .serve(
            acp::Server::new(Lister)
                .no_store()
                .mcp_timeout(Duration::from_millis(800)),
        )
        .await
        .unwrap();
    let session = client
        .new_session_with_mcp(vec![McpServer::Sse(McpServerSse::new("mute", url))])
        .await
        .unwrap();
    let started = Instant::now();
    let turn = session.prompt("status").await.unwrap();
    assert!(
        turn.text()
            .contains("mute: Failed(\"it did not finish starting within"),
        "{}",
        turn.text()
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    // The stream was dropped with the attempt: the server sees its connection close.
    tokio::time::timeout(Duration::from_secs(5), mute)
        .await
        .expect("the GET stream was left open")
        .unwrap();
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_example_hands_mcp_tools_to_its_model() {
    let cwd = workspace();
    let tag = tag();
    let command = std::process::Command::new(support::example_binary("model"));
    let client = TestClient::builder()
        .cwd(&cwd)
        .deadline(Duration::from_secs(30))
        .spawn(command)
        .await
        .unwrap();
    let session = client
        .new_session_with_mcp(vec![everything("everything", &tag)])
        .await
        .unwrap();
    let (answer, frames) = prompt(&client, session.id(), r#"use get-sum {"a": 20, "b": 22}"#).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    let calls = tool_frames(&frames);
    assert_eq!(calls[0].2["title"], "Get Sum Tool", "{calls:#?}");
    assert_eq!(calls.last().unwrap().1, "completed", "{calls:#?}");
    assert!(said(&frames).contains("42"), "{}", said(&frames));
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_given_on_load_and_resume_are_connected_too() {
    let cwd = workspace();
    let tag = tag();
    let client = spawn_example(&cwd, PermissionPolicy::AllowOnce).await;
    let session = client.new_session().await.unwrap();
    let id = session.id().clone();
    session.close().await.unwrap();
    for method in ["session/resume", "session/load"] {
        client
            .request(
                method,
                json!({"sessionId": id, "cwd": cwd, "mcpServers": [everything("everything", &tag)]}),
            )
            .await
            .unwrap();
        let (_, frames) = prompt(&client, &id, "status").await;
        assert!(
            said(&frames).starts_with("everything: connected ("),
            "{method}: {}",
            said(&frames)
        );
        let (_, frames) = prompt(&client, &id, "tools").await;
        assert!(
            said(&frames).lines().any(|l| l == "echo"),
            "{method}: {}",
            said(&frames)
        );
        client
            .request("session/close", json!({"sessionId": id}))
            .await
            .unwrap();
    }
    #[cfg(target_os = "linux")]
    assert_eq!(gone(&tag, Duration::from_secs(3)).await, Vec::<u32>::new());
    client.close().await.unwrap();
}
