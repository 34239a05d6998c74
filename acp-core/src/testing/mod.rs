//! A scripted ACP client for agent authors' tests: in process, or driving a built agent binary
//! over real pipes.
//!
//! [`TestClient`] plays the editor: it answers file-system requests from an in-memory file
//! system ([`MemoryFs`]), permission requests from a scripted [`PermissionPolicy`], terminal
//! requests from a [`TerminalStub`], and records every frame in both directions. [`Turn`] sums
//! up one prompt turn for assertions.
//!
//! Two safety nets make a broken agent fail a test quickly and clearly instead of hanging it
//! or passing it by accident:
//! - every wait of the client (an answer, a frame, the agent's exit) has a deadline
//!   ([`TestClientBuilder::deadline`], 10 s by default; under a paused tokio clock a stuck
//!   agent fails at once);
//! - every line the agent writes must be a JSON-RPC 2.0 message, each `session/update` must
//!   match the schema; anything else fails every later operation of the client with
//!   a message quoting the bad output (see [`TestClient::problems`]).
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
//! client.close().await.unwrap();
//! # }
//! ```
//!
//! The same test can drive the agent's built binary, as an editor would:
//!
//! ```no_run
//! # use acp_core::testing::TestClient;
//! # async fn demo() -> acp_core::Result<()> {
//! let client = TestClient::builder()
//!     .spawn(std::process::Command::new("target/debug/my-agent"))
//!     .await?;
//! let session = client.new_session().await?;
//! session.prompt("hi").await?;
//! client.close().await // stdin closed; the agent must exit 0
//! # }
//! ```

mod editor;
mod trace;
mod wire;

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

pub use editor::{MemoryFs, PermissionPolicy, TerminalStub};
pub use trace::{Direction, Frame, ToolCallTrace, Turn};

use crate::schema::{ClientCapabilities, FileSystemCapabilities, SessionId, SessionUpdate};
use crate::{Agent, Error, Result};
use editor::{Editor, lock};
use wire::{Outgoing, Wire};

/// The default deadline of every wait of a [`TestClient`].
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(10);

/// Configures a [`TestClient`]; by default the client has no capabilities.
#[derive(Debug)]
pub struct TestClientBuilder {
    fs: Option<MemoryFs>,
    terminal: Option<TerminalStub>,
    permissions: PermissionPolicy,
    cwd: Option<PathBuf>,
    deadline: Duration,
}

impl Default for TestClientBuilder {
    fn default() -> Self {
        TestClientBuilder {
            fs: None,
            terminal: None,
            permissions: PermissionPolicy::default(),
            cwd: None,
            deadline: DEFAULT_DEADLINE,
        }
    }
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

    /// How long any one wait of the client may take before it fails (default
    /// [`DEFAULT_DEADLINE`]): an agent that deadlocks fails the test instead of hanging it.
    #[must_use]
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// Starts `agent` in this process on an in-memory pipe and sends `initialize`.
    pub async fn connect<A: Agent>(self, agent: A) -> Result<TestClient> {
        let (client_io, agent_io) = tokio::io::duplex(1 << 16);
        let (agent_read, agent_write) = tokio::io::split(agent_io);
        let (client_read, client_write) = tokio::io::split(client_io);
        let served = tokio::spawn(crate::serve(agent, agent_read, agent_write));
        let no_stderr = Arc::default();
        self.start(client_read, client_write, Agent_::Task(served), no_stderr)
            .await
    }

    /// Starts the agent binary `command` with piped stdin, stdout and stderr, and sends
    /// `initialize`: the agent is driven over real pipes, exactly as an editor drives it.
    /// Its stderr is kept for failure messages; it is killed if the client is dropped.
    pub async fn spawn(self, command: std::process::Command) -> Result<TestClient> {
        let mut command = tokio::process::Command::from(command);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| Error::msg(format!("starting the agent failed: {e}")))?;
        let (Some(stdin), Some(stdout), Some(mut stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(Error::msg("the agent's stdio could not be piped"));
        };
        let log = Arc::new(Mutex::new(String::new()));
        let sink = log.clone();
        tokio::spawn(async move {
            let mut buf = vec![0; 8192];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                lock(&sink).push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        self.start(stdout, stdin, Agent_::Process(child), log).await
    }

    /// Attaches to an agent already served at the other end of `read` (the agent's output)
    /// and `write` (its input), e.g. by a test that runs [`serve`](crate::serve) itself over
    /// streams it instruments, and sends `initialize`. [`TestClient::close`] then waits for
    /// the agent's output to end.
    pub async fn attach(
        self,
        read: impl tokio::io::AsyncRead + Unpin + Send + 'static,
        write: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
    ) -> Result<TestClient> {
        self.start(read, write, Agent_::Attached, Arc::default())
            .await
    }

    async fn start(
        self,
        read: impl tokio::io::AsyncRead + Unpin + Send + 'static,
        write: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
        agent: Agent_,
        stderr: Arc<Mutex<String>>,
    ) -> Result<TestClient> {
        let capabilities = ClientCapabilities::new()
            .fs(FileSystemCapabilities::new()
                .read_text_file(self.fs.is_some())
                .write_text_file(self.fs.is_some()))
            .terminal(self.terminal.is_some());
        let editor = Editor::new(
            self.fs.unwrap_or_default(),
            self.terminal.unwrap_or_default(),
            self.permissions,
        );
        let wire = Wire::start(read, write, editor, self.deadline, stderr);
        let mut client = TestClient {
            wire,
            cwd: self.cwd.unwrap_or_else(|| PathBuf::from("/workspace")),
            agent: Mutex::new(Some(agent)),
            initialize: Value::Null,
        };
        client.initialize = client
            .request(
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": capabilities}),
            )
            .await?;
        Ok(client)
    }
}

/// The agent a client drives.
enum Agent_ {
    /// In this process: `serve`'s task.
    Task(tokio::task::JoinHandle<Result<()>>),
    /// A child process.
    Process(tokio::process::Child),
    /// Served by the test itself.
    Attached,
}

/// A client connected to an agent; see the [module docs](self).
pub struct TestClient {
    wire: Arc<Wire>,
    cwd: PathBuf,
    agent: Mutex<Option<Agent_>>,
    initialize: Value,
}

impl std::fmt::Debug for TestClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestClient")
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

impl Drop for TestClient {
    fn drop(&mut self) {
        self.wire.close_input();
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
        &self.wire.editor.fs
    }

    /// Every frame so far, in the order it crossed the pipe.
    pub fn transcript(&self) -> Vec<Frame> {
        self.wire.transcript()
    }

    /// Malformed output the agent wrote so far (non-JSON lines, frames that are not JSON-RPC
    /// 2.0, `session/update`s that do not match the schema), one description each. Once there
    /// is any, every operation of the client fails with it.
    pub fn problems(&self) -> Vec<String> {
        self.wire.problems()
    }

    /// What a spawned agent wrote to stderr so far (empty for an agent in this process).
    pub fn stderr(&self) -> String {
        lock(&self.wire.stderr).clone()
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
        lock(&self.wire.editor.terminals).created.clone()
    }

    /// Ids of terminals the agent killed.
    pub fn terminals_killed(&self) -> Vec<String> {
        lock(&self.wire.editor.terminals).killed.clone()
    }

    /// Ids of terminals the agent released.
    pub fn terminals_released(&self) -> Vec<String> {
        lock(&self.wire.editor.terminals).released.clone()
    }

    /// Sends any raw JSON-RPC frame, exactly as given.
    pub fn send(&self, message: Value) {
        self.wire.send(Outgoing::json(message));
    }

    /// Sends raw bytes exactly as given (add the `\n` yourself): for malformed input.
    pub fn send_raw(&self, bytes: impl Into<Vec<u8>>) {
        self.wire.send(Outgoing::raw(bytes.into()));
    }

    /// Sends a raw notification.
    pub fn notify(&self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a raw request and waits for its answer: the `result`, or the `error` as
    /// [`Error::Rpc`].
    pub async fn request(&self, method: &str, params: Value) -> Result<Value> {
        let (answer, _) = self.wire.request(method, params).await?;
        answer
    }

    /// Waits until the agent sends a frame for which `pred` holds (searching the whole
    /// transcript), and returns it; fails after the deadline or when the agent's output ends.
    pub async fn wait_for(&self, what: &str, pred: impl Fn(&Frame) -> bool) -> Result<Frame> {
        self.wire
            .wait_for(what, |f| f.direction == Direction::FromAgent && pred(f))
            .await
    }

    /// Waits for the agent's answer to the request with this `id` (one sent with
    /// [`send`](Self::send)), and returns the whole frame.
    pub async fn wait_for_response(&self, id: &Value) -> Result<Value> {
        let frame = self
            .wait_for(&format!("the response to id {id}"), |f| {
                f.is_response_to(id)
            })
            .await?;
        Ok(frame.message)
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

    /// Closes the agent's input (end of file on its stdin), as an editor does when it quits.
    /// The agent's output goes on being read: wait for answers, then [`close`](Self::close).
    pub fn close_input(&self) {
        self.wire.close_input();
    }

    /// Closes the agent's input and waits for the agent to finish: `serve` must return `Ok`
    /// (in process) or the process must exit with status 0, its output must end, and it must
    /// never have written malformed output.
    pub async fn close(self) -> Result<()> {
        self.wire.close_input();
        let agent = lock(&self.agent).take();
        let finished = match agent {
            Some(Agent_::Task(handle)) => {
                self.wire
                    .within("`serve` to return after stdin closed", async {
                        handle
                            .await
                            .map_err(|e| Error::msg(format!("serve panicked: {e}")))?
                    })
                    .await
            }
            Some(Agent_::Process(mut child)) => {
                let status = self
                    .wire
                    .within("the agent to exit after stdin closed", async {
                        child.wait().await.map_err(Error::Io)
                    })
                    .await;
                match status {
                    Ok(s) if s.success() => Ok(()),
                    Ok(s) => Err(Error::msg(format!(
                        "the agent exited with {s} after stdin closed{}",
                        self.wire.stderr_tail()
                    ))),
                    Err(e) => Err(e),
                }
            }
            Some(Agent_::Attached) | None => Ok(()),
        };
        finished?;
        self.wire.wait_ended().await?;
        self.wire.check()
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
        let wire = &self.client.wire;
        let start = wire.len();
        let (answer, end) = wire
            .request(
                "session/prompt",
                json!({"sessionId": self.id, "prompt": blocks}),
            )
            .await?;
        let frames = wire.frames_since(start);
        let updates = frames
            .iter()
            .enumerate()
            .filter(|(i, f)| start + i < end && f.direction == Direction::FromAgent)
            .filter_map(|(_, f)| f.session_update())
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

    /// Sends `session/cancel` as soon as the agent sends an update matching `when` (the cancel
    /// is written before the client answers any request the agent sends after that update).
    pub fn cancel_when(&self, when: impl Fn(&SessionUpdate) -> bool + Send + 'static) {
        self.client
            .wire
            .cancel_when(self.id.clone(), Box::new(when));
    }

    /// Waits until the agent sends an update of this session for which `pred` holds.
    pub async fn wait_for_update(
        &self,
        what: &str,
        pred: impl Fn(&SessionUpdate) -> bool,
    ) -> Result<SessionUpdate> {
        let frame = self
            .client
            .wait_for(what, |f| {
                f.session_update()
                    .is_some_and(|n| n.session_id == self.id && pred(&n.update))
            })
            .await?;
        frame
            .session_update()
            .map(|n| n.update)
            .ok_or_else(|| Error::msg("the update vanished"))
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
