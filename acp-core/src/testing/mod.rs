//! A scripted ACP client for agent authors' tests: in process, driving a built agent binary
//! over real pipes, or (feature `http`) an agent served on the network, over WebSocket
//! (`TestClientBuilder::websocket`) or Streamable HTTP (`TestClientBuilder::http`).
//!
//! [`TestClient`] plays the editor: it answers file-system requests from an in-memory file
//! system ([`MemoryFs`]), permission requests from a scripted [`PermissionPolicy`], terminal
//! requests from a [`TerminalStub`], and records every frame in both directions. [`Turn`] sums
//! up one prompt turn for assertions.
//!
//! For tests that need more control than a whole turn:
//! - start a prompt without waiting ([`TestSession::start_prompt`]), do what the test needs
//!   while it runs, and sum it up as the same [`Turn`] when it ends ([`TestSession::finish`]);
//! - [`TestClientBuilder::hold`] a method and answer its requests by hand
//!   ([`TestClient::next_request`] → [`HeldRequest`]), e.g. to check what the agent does while
//!   it waits for a permission answer;
//! - step through the agent's frames in order with a read cursor ([`TestClient::next_frame`],
//!   [`TestClient::take_unread`]) to assert every frame of a turn;
//! - send anything, malformed included ([`TestClient::send_raw`], [`TestClient::send`],
//!   [`TestClient::send_request`], [`TestClientBuilder::skip_initialize`]), to test the
//!   agent's JSON-RPC error handling.
//!
//! Two safety nets make a broken agent fail a test quickly and clearly instead of hanging it
//! or passing it by accident:
//! - every wait of the client (an answer, a frame, the agent's exit) has a deadline
//!   ([`TestClientBuilder::deadline`], 10 s by default; under a paused tokio clock a stuck
//!   agent fails at once);
//! - every line the agent writes must be a JSON-RPC 2.0 message ending in a bare `\n`, each
//!   `session/update` must match the schema; anything else fails every later operation of
//!   the client with a message quoting the bad output (see [`TestClient::problems`]).
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
//! The same test body runs on protocol v2 with [`TestClientBuilder::protocol`]`(2)`: the
//! client reads the agent's v2 frames back in v1's shape, so every assertion above holds on
//! both versions.
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
//!
//! | file | owns |
//! | --- | --- |
//! | `mod.rs` | [`TestClient`]: requests, raw frames, the read cursor, waits, closing |
//! | `builder.rs` | [`TestClientBuilder`]: capabilities, held methods, deadline, how the agent runs |
//! | `session.rs` | [`TestSession`]: prompt turns (awaited, or started and finished), cancellation, waiting for updates |
//! | `held.rs` | [`HeldRequest`]: an agent request the test answers by hand |
//! | `editor.rs` | the fake editor: [`MemoryFs`], [`PermissionPolicy`], [`TerminalStub`] |
//! | `wire.rs` | the pipe loops, transcript and cursor, deadlines, reporting malformed output |
//! | `trace.rs` | what was seen: [`Frame`], [`Turn`], [`ToolCallTrace`]; what makes a frame malformed |
//! | `v2.rs` | protocol v2 ([`TestClientBuilder::protocol`]): frames read back in v1's shape, a turn's `idle` as its answer |
//! | `net.rs` | the client over WebSocket (feature `http`): the socket bridged to the same wire |
//! | `view.rs` | a session as the client sees it: [`SessionView`] (mode, options, commands, title) |
//! | `tests.rs` | unit tests of the cursor, held requests and output checks |

mod builder;
mod child;
mod editor;
mod held;
mod history;
#[cfg(feature = "http")]
mod net;
mod session;
#[cfg(test)]
mod tests;
mod trace;
mod unstable;
#[cfg(feature = "v2")]
mod v2;
mod view;
mod wire;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};

pub use builder::TestClientBuilder;
pub use editor::{MemoryFs, PermissionPolicy, TerminalStub};
pub use held::HeldRequest;
pub use history::Loaded;
pub use session::TestSession;
pub use trace::{Direction, Frame, ToolCallTrace, Turn};
pub use view::SessionView;

use crate::protocol::methods;
use crate::schema::SessionId;
use crate::sync::lock;
use crate::{Error, Result};
use builder::Agent_;
use wire::{Outgoing, Wire};

/// Runs each test body on every protocol version this build speaks: each name is an
/// `async fn(protocol: u16)` in the calling module, and the macro writes a `#[tokio::test]`
/// `v1::name` that calls it with `1` and, when `acp` is built with its `v2` feature, a
/// `v2::name` that calls it with `2`. Give the number to
/// [`TestClientBuilder::protocol`]: the same assertions then hold whichever version the agent
/// speaks ([`Frame::as_v1`] and what is built on it read v2 back in v1's shape). The calling
/// crate needs `tokio` with its `macros` and `rt` features, as any async test does.
///
/// ```
/// use acp_core::schema::StopReason;
/// use acp_core::testing::TestClient;
/// use acp_core::{Agent, Prompt, Result, Session};
///
/// struct Hello;
/// impl Agent for Hello {
///     async fn prompt(&self, cx: &Session, _: Prompt) -> Result<StopReason> {
///         cx.message("hello").await?;
///         Ok(StopReason::EndTurn)
///     }
/// }
///
/// async fn says_hello(protocol: u16) {
///     let client = TestClient::builder().protocol(protocol).connect(Hello).await.unwrap();
///     let session = client.new_session().await.unwrap();
///     assert_eq!(session.prompt("hi").await.unwrap().text(), "hello");
/// }
///
/// acp_core::testing::on_both_versions!(says_hello);
/// # fn main() {}
/// ```
#[cfg(feature = "v2")]
#[macro_export]
macro_rules! on_both_versions {
    ($($name:ident),* $(,)?) => {
        mod v1 {
            $(#[::tokio::test]
            async fn $name() {
                super::$name(1).await
            })*
        }
        mod v2 {
            $(#[::tokio::test]
            async fn $name() {
                super::$name(2).await
            })*
        }
    };
}

/// Runs each test body on every protocol version this build speaks: each name is an
/// `async fn(protocol: u16)` in the calling module, and the macro writes a `#[tokio::test]`
/// `v1::name` that calls it with `1` (and `v2::name` with `2` when `acp` is built with its `v2`
/// feature, which this build is not). The calling crate needs `tokio` with its `macros` and
/// `rt` features, as any async test does.
#[cfg(not(feature = "v2"))]
#[macro_export]
macro_rules! on_both_versions {
    ($($name:ident),* $(,)?) => {
        mod v1 {
            $(#[::tokio::test]
            async fn $name() {
                super::$name(1).await
            })*
        }
    };
}

#[doc(inline)]
pub use crate::on_both_versions;

/// The default deadline of every wait of a [`TestClient`].
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(10);

/// A client connected to an agent; see the [module docs](self).
pub struct TestClient {
    wire: Arc<Wire>,
    cwd: PathBuf,
    /// The `additionalDirectories` of the sessions it opens.
    additional_directories: Vec<PathBuf>,
    agent: Mutex<Option<Agent_>>,
    /// The `clientCapabilities` of `initialize`.
    capabilities: Value,
    /// The `clientInfo` of `initialize`, if any.
    info: Option<Value>,
    /// The first successful answer to [`TestClient::initialize`].
    initialize: OnceLock<Value>,
    /// The protocol version `initialize` asks for.
    protocol: u16,
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

    /// Sends `initialize` with the configured protocol version (1 unless
    /// [`TestClientBuilder::protocol`] says otherwise) and client capabilities, and returns
    /// the answer. The builder does this when the client connects, unless told to
    /// [`skip_initialize`](TestClientBuilder::skip_initialize).
    pub async fn initialize(&self) -> Result<Value> {
        let params = match self.protocol {
            #[cfg(feature = "v2")]
            2 => v2::initialize_params(&self.capabilities, self.info.as_ref()),
            version => {
                let mut params =
                    json!({"protocolVersion": version, "clientCapabilities": self.capabilities});
                if let Some(info) = &self.info {
                    params["clientInfo"] = info.clone();
                }
                params
            }
        };
        let answer = self.request(methods::INITIALIZE, params).await?;
        let _ = self.initialize.set(answer.clone());
        Ok(answer)
    }

    /// The agent's answer to `initialize` (to the first successful
    /// [`initialize`](Self::initialize); `null` before it).
    pub fn initialize_response(&self) -> &Value {
        static NONE: Value = Value::Null;
        self.initialize.get().unwrap_or(&NONE)
    }

    /// The protocol version the agent answered `initialize` with (1 before it is answered).
    pub fn protocol(&self) -> u16 {
        if self.wire.is_v2() { 2 } else { 1 }
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

    /// The last 40 frames of the transcript (`->` to the agent, `<-` from it) and the end of
    /// the agent's stderr, for assertion messages.
    pub fn describe(&self) -> String {
        let frames = self.transcript();
        let mut out = format!("--- transcript ({} frames, last 40) ---\n", frames.len());
        for f in &frames[frames.len().saturating_sub(40)..] {
            let arrow = match f.direction {
                Direction::ToAgent => "->",
                Direction::FromAgent => "<-",
            };
            out.push_str(&format!("{arrow} {}\n", f.message));
        }
        out + &self.wire.stderr_tail()
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

    /// Sends a request with a fresh id without waiting, and returns the id. Its answer is not
    /// consumed: it comes through [`next_frame`](Self::next_frame), or wait for it with
    /// [`wait_for_response`](Self::wait_for_response).
    pub fn send_request(&self, method: &str, params: Value) -> Value {
        let id = json!(self.wire.next_id());
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Sends a request and waits for its answer: the `result`, or the `error` as
    /// [`Error::Rpc`]. The answer is taken: [`next_frame`](Self::next_frame) skips it.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value> {
        let (answer, _) = self.wire.request(method, params).await?;
        answer
    }

    /// Waits for the agent's next frame after the client's read cursor, and moves the cursor
    /// past it: successive calls return every frame the agent sends, once each, in order. The
    /// answers to the client's own waited-for requests ([`request`](Self::request),
    /// [`new_session`](Self::new_session), [`TestSession::prompt`], `initialize`…) are
    /// skipped; everything else is returned (updates, the agent's requests, held or not,
    /// answers to [`send_request`](Self::send_request) and to raw frames). The cursor starts
    /// at the beginning of the transcript; [`wait_for`](Self::wait_for) does not move it.
    pub async fn next_frame(&self) -> Result<Frame> {
        self.wire.next_frame().await
    }

    /// Every frame the agent sent after the read cursor that has arrived so far (as
    /// [`next_frame`](Self::next_frame) would return them, without waiting), and moves the
    /// cursor past them: to skip what a test does not care about, or to assert that nothing
    /// unexpected arrived (on a paused clock, after a `tokio::time::sleep`).
    pub fn take_unread(&self) -> Vec<Frame> {
        self.wire.take_unread()
    }

    /// Waits for the agent's next request of `method`, which must be
    /// [held](TestClientBuilder::hold), and hands it over to be answered by hand. Requests are
    /// handed over once each, oldest first (independently of the read cursor).
    pub async fn next_request(&self, method: &str) -> Result<HeldRequest> {
        if !self.wire.holds(method) {
            return Err(Error::msg(format!(
                "`{method}` requests are answered by the test client: hold them with \
                 `TestClientBuilder::hold({method:?})` to answer them by hand"
            )));
        }
        let message = self.wire.next_held(method).await?;
        Ok(HeldRequest::new(self.wire.clone(), message))
    }

    /// Waits until the agent sends a frame for which `pred` holds (searching the whole
    /// transcript), and returns it; fails after the deadline or when the agent's output ends.
    pub async fn wait_for(&self, what: &str, pred: impl Fn(&Frame) -> bool) -> Result<Frame> {
        self.wire
            .wait_for(what, |f| f.direction == Direction::FromAgent && pred(f))
            .await
    }

    /// Waits for the agent's answer to the request with this `id` (one sent with
    /// [`send`](Self::send) or [`send_request`](Self::send_request)), and returns the whole
    /// frame.
    pub async fn wait_for_response(&self, id: &Value) -> Result<Value> {
        let frame = self
            .wait_for(&format!("the response to id {id}"), |f| {
                f.is_response_to(id)
            })
            .await?;
        Ok(frame.message)
    }

    /// Changes the deadline of every later wait of the client (see
    /// [`TestClientBuilder::deadline`]), e.g. to hold one step, such as
    /// [`close`](Self::close), to a tighter limit.
    pub fn set_deadline(&self, deadline: Duration) {
        self.wire.set_deadline(deadline);
    }

    /// A handle on the session `id` this client knows (one opened with a request of its own,
    /// [`request`](Self::request), say), to prompt it like any other.
    pub fn session(&self, id: &SessionId) -> TestSession<'_> {
        TestSession {
            client: self,
            id: id.clone(),
            answer: Value::Null,
        }
    }

    /// Creates a session (`session/new`) in the configured cwd (and additional directories).
    pub async fn new_session(&self) -> Result<TestSession<'_>> {
        self.new_session_with_mcp(Vec::new()).await
    }

    /// Creates a session (`session/new`) in the configured cwd, giving the agent these MCP
    /// servers to connect (`mcpServers`).
    ///
    /// ```no_run
    /// # async fn demo(client: &acp_core::testing::TestClient) -> acp_core::Result<()> {
    /// use acp_core::schema::{McpServer, McpServerStdio};
    /// let server = McpServer::Stdio(McpServerStdio::new("files", "mcp-server-filesystem").args(vec![".".into()]));
    /// let session = client.new_session_with_mcp(vec![server]).await?;
    /// # Ok(()) }
    /// ```
    pub async fn new_session_with_mcp(
        &self,
        servers: Vec<crate::schema::McpServer>,
    ) -> Result<TestSession<'_>> {
        let mut servers = json!(servers);
        if self.wire.is_v2() {
            // v2 tags every server with its transport, stdio included.
            for server in servers.as_array_mut().into_iter().flatten() {
                if server.get("type").is_none() {
                    server["type"] = "stdio".into();
                }
            }
        }
        let answer = self
            .request(
                methods::SESSION_NEW,
                self.opening(json!({"mcpServers": servers})),
            )
            .await?;
        let id: SessionId = serde_json::from_value(answer["sessionId"].clone())?;
        Ok(TestSession {
            client: self,
            id,
            answer,
        })
    }

    /// The params of a request opening a session: `params` with the cwd, and the additional
    /// directories if there are any.
    pub(super) fn opening(&self, mut params: Value) -> Value {
        params["cwd"] = json!(self.cwd);
        if !self.additional_directories.is_empty() {
            params["additionalDirectories"] = json!(self.additional_directories);
        }
        params
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
                        child.wait().await
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
