//! An in-process ACP client for agent authors' tests: no subprocess, no editor.
//!
//! [`TestClient`] runs the agent on an in-memory pipe and plays the editor: it answers
//! file-system requests from an in-memory file system ([`MemoryFs`]), permission requests from
//! a scripted [`PermissionPolicy`], terminal requests from a stub, and records every frame in
//! both directions. [`Turn`] sums up one prompt turn for assertions.
//!
//! ```
//! use acp_core::testing::TestClient;
//! use acp_core::{Agent, Prompt, Result, Session, schema::StopReason};
//!
//! struct Hello;
//! impl Agent for Hello {
//!     async fn prompt(&self, cx: &Session, _prompt: Prompt) -> Result<StopReason> {
//!         cx.message("hello").await?;
//!         Ok(StopReason::EndTurn)
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let client = TestClient::builder().connect(Hello).await.unwrap();
//! let session = client.new_session().await.unwrap();
//! let turn = session.prompt("hi").await.unwrap();
//! assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
//! assert_eq!(turn.text(), "hello");
//! # }
//! ```

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use crate::schema::{
    self, ClientCapabilities, FileSystemCapabilities, PermissionOptionKind, SessionId,
    SessionUpdate, StopReason, ToolCallContent, ToolCallStatus, ToolKind,
};
use crate::{Agent, Error, Result};

/// Which way a recorded frame went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the client (the test) to the agent.
    ToAgent,
    /// From the agent to the client.
    FromAgent,
}

/// One JSON-RPC frame as it crossed the pipe.
#[derive(Debug, Clone)]
pub struct Frame {
    /// Which way it went.
    pub direction: Direction,
    /// The frame, parsed.
    pub message: Value,
}

impl Frame {
    /// The frame's `method`, if it is a request or notification.
    pub fn method(&self) -> Option<&str> {
        self.message.get("method").and_then(Value::as_str)
    }
}

/// How the test client answers `session/request_permission`.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum PermissionPolicy {
    /// Pick the first option of kind `allow_once` (else `allow_always`).
    #[default]
    AllowOnce,
    /// Pick the first option of kind `allow_always`.
    AllowAlways,
    /// Pick the first option of kind `reject_once` (else `reject_always`).
    RejectOnce,
    /// Pick the first option of kind `reject_always`.
    RejectAlways,
    /// Answer with the `cancelled` outcome.
    Cancelled,
    /// Never answer (until the agent stops waiting, e.g. on cancel).
    Never,
    /// Answer each request with the next policy in the list; [`Never`](Self::Never) when empty.
    Script(Vec<PermissionPolicy>),
}

/// An in-memory file system served to the agent as the client's `fs/*` methods.
///
/// Clones share the same files, so a test keeps one to seed and inspect.
#[derive(Debug, Clone, Default)]
pub struct MemoryFs {
    files: Arc<Mutex<BTreeMap<PathBuf, String>>>,
}

impl MemoryFs {
    /// An empty file system.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces a file.
    #[must_use]
    pub fn with(self, path: impl Into<PathBuf>, content: impl Into<String>) -> Self {
        self.write(path, content);
        self
    }

    /// Adds or replaces a file.
    pub fn write(&self, path: impl Into<PathBuf>, content: impl Into<String>) {
        self.lock().insert(path.into(), content.into());
    }

    /// A file's content, if it exists.
    pub fn read(&self, path: impl AsRef<Path>) -> Option<String> {
        self.lock().get(path.as_ref()).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<PathBuf, String>> {
        self.files.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The terminal the test client pretends to run: every command "prints" `output` and exits
/// with `exit_code`, unless it is set to [`hang`](TerminalStub::hang) until killed.
#[derive(Debug, Clone, Default)]
pub struct TerminalStub {
    output: String,
    exit_code: u32,
    hang: bool,
}

impl TerminalStub {
    /// A terminal whose commands print nothing and exit 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// What every command prints.
    #[must_use]
    pub fn output(mut self, output: impl Into<String>) -> Self {
        self.output = output.into();
        self
    }

    /// The exit code of every command.
    #[must_use]
    pub fn exit_code(mut self, code: u32) -> Self {
        self.exit_code = code;
        self
    }

    /// Commands never exit on their own: `wait_for_exit` waits until they are killed.
    #[must_use]
    pub fn hang(mut self) -> Self {
        self.hang = true;
        self
    }
}

/// Configures a [`TestClient`]; by default the client has no capabilities.
#[derive(Debug, Default)]
pub struct TestClientBuilder {
    fs: Option<MemoryFs>,
    terminal: Option<TerminalStub>,
    permissions: PermissionPolicy,
    cwd: Option<PathBuf>,
}

impl TestClientBuilder {
    /// Advertises `fs.readTextFile` and `fs.writeTextFile`, served from `fs`.
    #[must_use]
    pub fn fs(mut self, fs: MemoryFs) -> Self {
        self.fs = Some(fs);
        self
    }

    /// Advertises the `terminal` capability, served by `stub`.
    #[must_use]
    pub fn terminal(mut self, stub: TerminalStub) -> Self {
        self.terminal = Some(stub);
        self
    }

    /// How permission requests are answered (default: allow once).
    #[must_use]
    pub fn permissions(mut self, policy: PermissionPolicy) -> Self {
        self.permissions = policy;
        self
    }

    /// The cwd of new sessions (default `/workspace`).
    #[must_use]
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Starts `agent` on an in-memory pipe and sends `initialize`.
    pub async fn connect<A: Agent>(self, agent: A) -> Result<TestClient> {
        let (client_io, agent_io) = tokio::io::duplex(1 << 16);
        let (agent_read, agent_write) = tokio::io::split(agent_io);
        let (client_read, client_write) = tokio::io::split(client_io);
        let served = tokio::spawn(crate::serve(agent, agent_read, agent_write));

        let capabilities = ClientCapabilities::new()
            .fs(FileSystemCapabilities::new()
                .read_text_file(self.fs.is_some())
                .write_text_file(self.fs.is_some()))
            .terminal(self.terminal.is_some());
        let shared = Arc::new(Shared {
            transcript: Mutex::new(Vec::new()),
            pending: Mutex::new(HashMap::new()),
            fs: self.fs.unwrap_or_default(),
            terminal: self.terminal.unwrap_or_default(),
            terminals: Mutex::new(TerminalLog::default()),
            permissions: Mutex::new(self.permissions),
            cancel_on: Mutex::new(Vec::new()),
        });
        let (out_tx, out_rx) = mpsc::unbounded_channel::<Value>();
        tokio::spawn(write_loop(out_rx, client_write, shared.clone()));
        tokio::spawn(read_loop(client_read, shared.clone(), out_tx.downgrade()));

        let client = TestClient {
            shared,
            out: out_tx,
            next_id: Arc::new(AtomicI64::new(1)),
            cwd: self.cwd.unwrap_or_else(|| PathBuf::from("/workspace")),
            served: Mutex::new(Some(served)),
            initialize: Value::Null,
        };
        let init = client
            .request(
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": capabilities}),
            )
            .await?;
        Ok(TestClient {
            initialize: init,
            ..client
        })
    }
}

#[derive(Debug, Default)]
struct TerminalLog {
    created: Vec<(String, Vec<String>)>,
    killed: Vec<String>,
    released: Vec<String>,
    exit_waiters: HashMap<String, Vec<oneshot::Sender<()>>>,
}

struct Shared {
    transcript: Mutex<Vec<Frame>>,
    pending: Mutex<HashMap<i64, oneshot::Sender<(Value, usize)>>>,
    fs: MemoryFs,
    terminal: TerminalStub,
    terminals: Mutex<TerminalLog>,
    permissions: Mutex<PermissionPolicy>,
    /// Sessions to cancel when an update matching the predicate arrives.
    cancel_on: Mutex<Vec<CancelTrigger>>,
}

type CancelTrigger = (SessionId, Box<dyn Fn(&SessionUpdate) -> bool + Send>);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn record(&self, direction: Direction, message: Value) -> usize {
        let mut t = lock(&self.transcript);
        t.push(Frame { direction, message });
        t.len() - 1
    }

    fn next_permission(&self) -> PermissionPolicy {
        match &mut *lock(&self.permissions) {
            PermissionPolicy::Script(list) if list.is_empty() => PermissionPolicy::Never,
            PermissionPolicy::Script(list) => list.remove(0),
            policy => policy.clone(),
        }
    }
}

async fn write_loop(
    mut rx: mpsc::UnboundedReceiver<Value>,
    mut w: impl tokio::io::AsyncWrite + Unpin,
    shared: Arc<Shared>,
) {
    while let Some(message) = rx.recv().await {
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        shared.record(Direction::ToAgent, message);
        if w.write_all(&line).await.is_err() || w.flush().await.is_err() {
            return;
        }
    }
    let _ = w.shutdown().await;
}

async fn read_loop(
    r: impl tokio::io::AsyncRead + Unpin,
    shared: Arc<Shared>,
    // Weak, so that closing the client closes the pipe.
    out: mpsc::WeakUnboundedSender<Value>,
) {
    let mut lines = BufReader::new(r).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            shared.record(Direction::FromAgent, Value::String(line));
            continue;
        };
        let index = shared.record(Direction::FromAgent, message.clone());
        let method = message.get("method").and_then(Value::as_str);
        match (method, message.get("id")) {
            (Some("session/update"), None) => {
                if let Some(params) = message.get("params")
                    && let Ok(n) =
                        serde_json::from_value::<schema::SessionNotification>(params.clone())
                {
                    let fire: Vec<SessionId> = {
                        let mut triggers = lock(&shared.cancel_on);
                        let mut fire = Vec::new();
                        triggers.retain(|(id, pred)| {
                            let hit = *id == n.session_id && pred(&n.update);
                            if hit {
                                fire.push(id.clone());
                            }
                            !hit
                        });
                        fire
                    };
                    for id in fire {
                        let Some(out) = out.upgrade() else { break };
                        let _ = out.send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": id}}));
                    }
                }
            }
            (Some(method), Some(id)) => {
                let method = method.to_owned();
                let id = id.clone();
                let params = message.get("params").cloned().unwrap_or(Value::Null);
                let shared = shared.clone();
                let out = out.clone();
                tokio::spawn(async move {
                    if let Some(answer) = answer_request(&shared, &method, params).await
                        && let Some(out) = out.upgrade()
                    {
                        let frame = match answer {
                            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                            Err((code, message)) => {
                                json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
                            }
                        };
                        let _ = out.send(frame);
                    }
                });
            }
            (None, Some(Value::Number(id))) => {
                if let Some(id) = id.as_i64()
                    && let Some(tx) = lock(&shared.pending).remove(&id)
                {
                    let _ = tx.send((message, index));
                }
            }
            _ => {}
        }
    }
    // The agent closed its output: fail everyone still waiting.
    lock(&shared.pending).clear();
}

type Answer = std::result::Result<Value, (i32, String)>;

/// Plays the editor's side of one agent request; `None` means "never answer".
async fn answer_request(shared: &Shared, method: &str, params: Value) -> Option<Answer> {
    let str_param = |key: &str| {
        params
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    Some(match method {
        "fs/read_text_file" => match shared.fs.read(str_param("path")) {
            Some(content) => {
                let line = params.get("line").and_then(Value::as_u64);
                let limit = params.get("limit").and_then(Value::as_u64);
                let content = if line.is_some() || limit.is_some() {
                    let skip = line.map_or(0, |l| l.saturating_sub(1)) as usize;
                    let take = limit.map_or(usize::MAX, |l| l as usize);
                    content
                        .lines()
                        .skip(skip)
                        .take(take)
                        .map(|l| format!("{l}\n"))
                        .collect()
                } else {
                    content
                };
                Ok(json!({"content": content}))
            }
            None => Err((-32002, format!("Resource not found: {}", str_param("path")))),
        },
        "fs/write_text_file" => {
            shared.fs.write(str_param("path"), str_param("content"));
            Ok(json!({}))
        }
        "session/request_permission" => {
            let options: Vec<schema::PermissionOption> =
                serde_json::from_value(params.get("options").cloned().unwrap_or_default())
                    .unwrap_or_default();
            let pick = |kinds: &[PermissionOptionKind]| {
                kinds
                    .iter()
                    .find_map(|k| options.iter().find(|o| o.kind == *k))
                    .map(|o| o.option_id.to_string())
            };
            use PermissionOptionKind as K;
            let chosen = match shared.next_permission() {
                PermissionPolicy::AllowOnce => pick(&[K::AllowOnce, K::AllowAlways]),
                PermissionPolicy::AllowAlways => pick(&[K::AllowAlways]),
                PermissionPolicy::RejectOnce => pick(&[K::RejectOnce, K::RejectAlways]),
                PermissionPolicy::RejectAlways => pick(&[K::RejectAlways]),
                PermissionPolicy::Cancelled => None,
                PermissionPolicy::Never | PermissionPolicy::Script(_) => return None,
            };
            Ok(match chosen {
                Some(id) => json!({"outcome": {"outcome": "selected", "optionId": id}}),
                None => json!({"outcome": {"outcome": "cancelled"}}),
            })
        }
        "terminal/create" => {
            let mut log = lock(&shared.terminals);
            let id = format!("term_{}", log.created.len());
            let args = params
                .get("args")
                .and_then(|a| serde_json::from_value(a.clone()).ok())
                .unwrap_or_default();
            log.created.push((str_param("command"), args));
            Ok(json!({"terminalId": id}))
        }
        "terminal/output" => {
            let id = str_param("terminalId");
            let killed = lock(&shared.terminals).killed.contains(&id);
            let exit = if killed {
                json!({"exitCode": null, "signal": "SIGKILL"})
            } else if shared.terminal.hang {
                Value::Null
            } else {
                json!({"exitCode": shared.terminal.exit_code})
            };
            Ok(json!({"output": shared.terminal.output, "truncated": false, "exitStatus": exit}))
        }
        "terminal/wait_for_exit" => {
            let id = str_param("terminalId");
            if shared.terminal.hang {
                let rx = {
                    let mut log = lock(&shared.terminals);
                    if log.killed.contains(&id) {
                        None
                    } else {
                        let (tx, rx) = oneshot::channel();
                        log.exit_waiters.entry(id).or_default().push(tx);
                        Some(rx)
                    }
                };
                if let Some(rx) = rx {
                    rx.await.ok()?;
                }
                Ok(json!({"exitCode": null, "signal": "SIGKILL"}))
            } else {
                Ok(json!({"exitCode": shared.terminal.exit_code}))
            }
        }
        "terminal/kill" | "terminal/release" => {
            let id = str_param("terminalId");
            let mut log = lock(&shared.terminals);
            if let Some(waiters) = log.exit_waiters.remove(&id) {
                for w in waiters {
                    let _ = w.send(());
                }
            }
            if method == "terminal/kill" {
                log.killed.push(id);
            } else {
                log.released.push(id);
            }
            Ok(json!({}))
        }
        other => Err((-32601, format!("method not found: {other}"))),
    })
}

/// An in-process client connected to an agent; see the [module docs](self).
pub struct TestClient {
    shared: Arc<Shared>,
    out: mpsc::UnboundedSender<Value>,
    next_id: Arc<AtomicI64>,
    cwd: PathBuf,
    served: Mutex<Option<tokio::task::JoinHandle<Result<()>>>>,
    initialize: Value,
}

impl std::fmt::Debug for TestClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestClient")
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

impl TestClient {
    /// Starts configuring a client.
    pub fn builder() -> TestClientBuilder {
        TestClientBuilder::default()
    }

    /// The agent's answer to `initialize`.
    pub fn initialize_response(&self) -> &Value {
        &self.initialize
    }

    /// The in-memory file system the agent sees (empty if none was configured).
    pub fn fs(&self) -> &MemoryFs {
        &self.shared.fs
    }

    /// Every frame so far, in the order it crossed the pipe.
    pub fn transcript(&self) -> Vec<Frame> {
        lock(&self.shared.transcript).clone()
    }

    /// The requests the agent sent to the client, by method, in order.
    pub fn requests_from_agent(&self, method: &str) -> Vec<Value> {
        self.transcript()
            .into_iter()
            .filter(|f| {
                f.direction == Direction::FromAgent
                    && f.method() == Some(method)
                    && f.message.get("id").is_some()
            })
            .map(|f| f.message.get("params").cloned().unwrap_or(Value::Null))
            .collect()
    }

    /// Terminals the agent created (command, args), in order.
    pub fn terminals_created(&self) -> Vec<(String, Vec<String>)> {
        lock(&self.shared.terminals).created.clone()
    }

    /// Ids of terminals the agent killed.
    pub fn terminals_killed(&self) -> Vec<String> {
        lock(&self.shared.terminals).killed.clone()
    }

    /// Ids of terminals the agent released.
    pub fn terminals_released(&self) -> Vec<String> {
        lock(&self.shared.terminals).released.clone()
    }

    /// Sends any raw JSON-RPC frame, exactly as given.
    pub fn send(&self, message: Value) {
        let _ = self.out.send(message);
    }

    /// Sends a raw notification.
    pub fn notify(&self, method: &str, params: Value) {
        let _ = self
            .out
            .send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a raw request and waits for its answer: the `result`, or the `error` as
    /// [`Error::Rpc`].
    pub async fn request(&self, method: &str, params: Value) -> Result<Value> {
        let (answer, _) = self.request_indexed(method, params).await?;
        answer
    }

    async fn request_indexed(&self, method: &str, params: Value) -> Result<(Result<Value>, usize)> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.pending).insert(id, tx);
        let _ = self
            .out
            .send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let (mut message, index) = rx.await.map_err(|_| Error::ConnectionClosed)?;
        let answer = match message.get_mut("error") {
            Some(error) => {
                let error: schema::Error = serde_json::from_value(error.take())?;
                Err(Error::Rpc {
                    code: error.code.into(),
                    message: error.message,
                    data: error.data,
                })
            }
            None => Ok(message
                .get_mut("result")
                .map(Value::take)
                .unwrap_or(Value::Null)),
        };
        Ok((answer, index))
    }

    /// Creates a session (`session/new`) in the configured cwd.
    pub async fn new_session(&self) -> Result<TestSession<'_>> {
        let answer = self
            .request("session/new", json!({"cwd": self.cwd, "mcpServers": []}))
            .await?;
        let id: SessionId = serde_json::from_value(answer["sessionId"].clone())?;
        Ok(TestSession {
            client: self,
            id,
            answer,
        })
    }

    /// Closes the client's side of the pipe and waits for the agent's `serve` to return.
    pub async fn close(self) -> Result<()> {
        drop(self.out);
        let served = lock(&self.served).take();
        match served {
            Some(handle) => handle
                .await
                .map_err(|e| Error::msg(format!("serve panicked: {e}")))?,
            None => Ok(()),
        }
    }
}

/// A session of a [`TestClient`].
#[derive(Debug)]
pub struct TestSession<'a> {
    client: &'a TestClient,
    id: SessionId,
    answer: Value,
}

impl TestSession<'_> {
    /// The session's id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// The agent's answer to `session/new` (modes, config options…).
    pub fn new_session_response(&self) -> &Value {
        &self.answer
    }

    /// Sends a text prompt and waits for the turn to end.
    pub async fn prompt(&self, text: &str) -> Result<Turn> {
        self.prompt_blocks(json!([{"type": "text", "text": text}]))
            .await
    }

    /// Sends a prompt made of raw content blocks and waits for the turn to end.
    pub async fn prompt_blocks(&self, blocks: Value) -> Result<Turn> {
        let start = lock(&self.client.shared.transcript).len();
        let (answer, end) = self
            .client
            .request_indexed(
                "session/prompt",
                json!({"sessionId": self.id, "prompt": blocks}),
            )
            .await?;
        let frames = lock(&self.client.shared.transcript)[start..].to_vec();
        let updates = frames
            .iter()
            .enumerate()
            .filter(|(i, f)| {
                start + i < end
                    && f.direction == Direction::FromAgent
                    && f.method() == Some("session/update")
            })
            .filter_map(|(_, f)| {
                serde_json::from_value::<schema::SessionNotification>(f.message["params"].clone())
                    .ok()
            })
            .filter(|n| n.session_id == self.id)
            .map(|n| n.update)
            .collect();
        Ok(Turn {
            session: self.id.clone(),
            answer,
            updates,
            frames,
        })
    }

    /// Sends `session/cancel` for this session now.
    pub fn cancel(&self) {
        self.client
            .notify("session/cancel", json!({"sessionId": self.id}));
    }

    /// Sends `session/cancel` as soon as the agent sends an update matching `when`.
    pub fn cancel_when(&self, when: impl Fn(&SessionUpdate) -> bool + Send + 'static) {
        lock(&self.client.shared.cancel_on).push((self.id.clone(), Box::new(when)));
    }

    /// Sets the session's mode (`session/set_mode`).
    pub async fn set_mode(&self, mode: &str) -> Result<Value> {
        self.client
            .request(
                "session/set_mode",
                json!({"sessionId": self.id, "modeId": mode}),
            )
            .await
    }
}

/// What happened in one prompt turn: the answer and the session's updates before it.
#[derive(Debug)]
pub struct Turn {
    session: SessionId,
    answer: Result<Value>,
    updates: Vec<SessionUpdate>,
    frames: Vec<Frame>,
}

/// One tool call of a turn, folded from its `tool_call` and `tool_call_update`s.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallTrace {
    /// The tool call id.
    pub id: String,
    /// The latest title.
    pub title: String,
    /// The kind.
    pub kind: ToolKind,
    /// Every status it went through, in order (starting with the initial one).
    pub statuses: Vec<ToolCallStatus>,
    /// The latest content.
    pub content: Vec<ToolCallContent>,
    /// The raw input, if any.
    pub raw_input: Option<Value>,
    /// The raw output, if any.
    pub raw_output: Option<Value>,
    /// Files it touched.
    pub locations: Vec<PathBuf>,
}

impl ToolCallTrace {
    /// The last status.
    pub fn status(&self) -> Option<ToolCallStatus> {
        self.statuses.last().copied()
    }

    /// The text of every text content block, joined.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|c| match c {
                ToolCallContent::Content(c) => match &c.content {
                    schema::ContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }

    /// The diffs in the content.
    pub fn diffs(&self) -> Vec<&schema::Diff> {
        self.content
            .iter()
            .filter_map(|c| match c {
                ToolCallContent::Diff(d) => Some(d),
                _ => None,
            })
            .collect()
    }
}

impl Turn {
    /// The raw answer to `session/prompt`: its result, or its error as [`Error::Rpc`].
    pub fn answer(&self) -> std::result::Result<&Value, &Error> {
        self.answer.as_ref()
    }

    /// The stop reason, if the turn ended without an error.
    pub fn stop_reason(&self) -> Option<StopReason> {
        let result = self.answer.as_ref().ok()?;
        serde_json::from_value(result.get("stopReason")?.clone()).ok()
    }

    /// The error code, if the turn ended with an error.
    pub fn error_code(&self) -> Option<i32> {
        match &self.answer {
            Err(Error::Rpc { code, .. }) => Some(*code),
            _ => None,
        }
    }

    /// Every `session/update` of this session sent before the answer, in order.
    pub fn updates(&self) -> &[SessionUpdate] {
        &self.updates
    }

    /// Every frame exchanged from the prompt until now (the answer and anything after).
    pub fn frames(&self) -> &[Frame] {
        &self.frames
    }

    /// The concatenated text of the agent's message chunks.
    pub fn text(&self) -> String {
        self.chunks(|u| match u {
            SessionUpdate::AgentMessageChunk(c) => Some(&c.content),
            _ => None,
        })
    }

    /// The concatenated text of the agent's thought chunks.
    pub fn thoughts(&self) -> String {
        self.chunks(|u| match u {
            SessionUpdate::AgentThoughtChunk(c) => Some(&c.content),
            _ => None,
        })
    }

    fn chunks(&self, pick: impl Fn(&SessionUpdate) -> Option<&schema::ContentBlock>) -> String {
        self.updates
            .iter()
            .filter_map(pick)
            .filter_map(|b| match b {
                schema::ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The plans sent, in order.
    pub fn plans(&self) -> Vec<&schema::Plan> {
        self.updates
            .iter()
            .filter_map(|u| match u {
                SessionUpdate::Plan(p) => Some(p),
                _ => None,
            })
            .collect()
    }

    /// The tool calls of the turn, in the order they started.
    pub fn tool_calls(&self) -> Vec<ToolCallTrace> {
        let mut calls: Vec<ToolCallTrace> = Vec::new();
        for update in &self.updates {
            match update {
                SessionUpdate::ToolCall(c) => calls.push(ToolCallTrace {
                    id: c.tool_call_id.to_string(),
                    title: c.title.clone(),
                    kind: c.kind,
                    statuses: vec![c.status],
                    content: c.content.clone(),
                    raw_input: c.raw_input.clone(),
                    raw_output: c.raw_output.clone(),
                    locations: c.locations.iter().map(|l| l.path.clone()).collect(),
                }),
                SessionUpdate::ToolCallUpdate(u) => {
                    let id = u.tool_call_id.to_string();
                    if let Some(call) = calls.iter_mut().find(|c| c.id == id) {
                        let f = &u.fields;
                        if let Some(s) = f.status {
                            call.statuses.push(s);
                        }
                        if let Some(t) = &f.title {
                            call.title.clone_from(t);
                        }
                        if let Some(k) = f.kind {
                            call.kind = k;
                        }
                        if let Some(c) = &f.content {
                            call.content.clone_from(c);
                        }
                        if let Some(v) = &f.raw_input {
                            call.raw_input = Some(v.clone());
                        }
                        if let Some(v) = &f.raw_output {
                            call.raw_output = Some(v.clone());
                        }
                        if let Some(l) = &f.locations {
                            call.locations = l.iter().map(|l| l.path.clone()).collect();
                        }
                    }
                }
                _ => {}
            }
        }
        calls
    }

    /// The permission requests the agent made during the turn (their params), in order.
    pub fn permission_requests(&self) -> Vec<&Value> {
        self.frames
            .iter()
            .filter(|f| {
                f.direction == Direction::FromAgent
                    && f.method() == Some("session/request_permission")
                    && f.message["params"]["sessionId"].as_str() == Some(&*self.session.0)
            })
            .map(|f| &f.message["params"])
            .collect()
    }
}
