//! Configuring and starting a [`TestClient`]: what the fake editor offers (file system,
//! terminal, permission answers), which requests the test answers by hand, the deadline, and
//! how the agent runs (in process, as a child process, or served by the test itself).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite};

use super::child::Child;
use super::editor::{Editor, MemoryFs, PermissionPolicy, TerminalStub};
use super::wire::Wire;
use super::{DEFAULT_DEADLINE, TestClient};
use crate::schema::{
    AuthCapabilities, BooleanConfigOptionCapabilities, ClientCapabilities, CompactionCapabilities,
    ElicitationCapabilities, ElicitationFormCapabilities, ElicitationUrlCapabilities,
    FileSystemCapabilities, Implementation, NoticeCapabilities, PlanCapabilities,
    SessionConfigOptionsCapabilities, SubagentCapabilities,
};
use crate::{Agent, Result};

/// Configures a [`TestClient`]; by default the client has no capabilities.
#[derive(Debug)]
pub struct TestClientBuilder {
    fs: Option<MemoryFs>,
    terminal: Option<TerminalStub>,
    permissions: PermissionPolicy,
    cwd: Option<PathBuf>,
    additional_directories: Vec<PathBuf>,
    deadline: Duration,
    held: HashSet<String>,
    initialize: bool,
    /// The capabilities besides fs and terminal.
    capabilities: ClientCapabilities,
    info: Option<Implementation>,
    protocol: u16,
}

impl Default for TestClientBuilder {
    fn default() -> Self {
        TestClientBuilder {
            fs: None,
            terminal: None,
            permissions: PermissionPolicy::default(),
            cwd: None,
            additional_directories: Vec::new(),
            deadline: DEFAULT_DEADLINE,
            held: HashSet::new(),
            initialize: true,
            capabilities: ClientCapabilities::default(),
            info: None,
            protocol: 1,
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

    /// Advertises boolean config options (`session.configOptions.boolean`): the agent may
    /// then offer its switch options.
    #[must_use]
    pub fn boolean_config_options(mut self) -> Self {
        let mut session = self.capabilities.session.take().unwrap_or_default();
        session.config_options = Some(
            SessionConfigOptionsCapabilities::new().boolean(BooleanConfigOptionCapabilities::new()),
        );
        self.capabilities.session = Some(session);
        self
    }

    /// Advertises plan operations (`plan`): the agent's plans then arrive as `plan_update` /
    /// `plan_removed` instead of legacy `plan` checklists.
    #[must_use]
    pub fn plan(mut self) -> Self {
        self.capabilities.plan = Some(PlanCapabilities::new());
        self
    }

    /// Advertises subagents (`subagents`): the agent's child sessions are then announced
    /// (`subagent_update`) and their updates arrive on their own session ids
    /// ([`Turn::subagents`](super::Turn::subagents), [`Turn::updates_of`](super::Turn::updates_of)).
    #[must_use]
    pub fn subagents(mut self) -> Self {
        self.capabilities.subagents = Some(SubagentCapabilities::new());
        self
    }

    /// Advertises session notices (`session.notices`): the agent's `cx.notice(..)` then reaches
    /// the client.
    #[must_use]
    pub fn notices(mut self) -> Self {
        let mut session = self.capabilities.session.take().unwrap_or_default();
        session.notices = Some(NoticeCapabilities::new());
        self.capabilities.session = Some(session);
        self
    }

    /// Advertises session compaction (`session.compaction`): the agent's compactions
    /// (`compaction_update`, `compaction_summary_chunk`) then reach the client.
    #[must_use]
    pub fn compaction(mut self) -> Self {
        let mut session = self.capabilities.session.take().unwrap_or_default();
        session.compaction = Some(CompactionCapabilities::new());
        self.capabilities.session = Some(session);
        self
    }

    /// Advertises terminal authentication (`auth.terminal`): the agent may then offer its
    /// `terminal` authentication methods.
    #[must_use]
    pub fn terminal_auth(mut self) -> Self {
        self.capabilities.auth = AuthCapabilities::new().terminal(true);
        self
    }

    /// Asks for (`true`) or declines Zed's rendering of the commands the agent runs itself:
    /// `clientCapabilities._meta.terminal_output`, which Zed sends. A local terminal (see
    /// [`Server::local_fallback`](crate::Server::local_fallback)) created in a tool call is then
    /// shown through the call's `_meta.terminal_info` / `terminal_output` / `terminal_exit`
    /// instead of as text. Not set by default (the key is left out).
    #[must_use]
    pub fn terminal_output(self, on: bool) -> Self {
        self.capability_meta(crate::session::terminal_meta::ASKED_BY, on)
    }

    /// Advertises (`true`) or declines Zed's `_meta["terminal-auth"]` sign-in convention:
    /// `clientCapabilities._meta["terminal-auth"]`, which Zed sends. The agent's `terminal`
    /// authentication methods are then offered with the command line to run in
    /// `_meta["terminal-auth"]`. Not set by default (the key is left out).
    #[must_use]
    pub fn terminal_auth_meta(self, on: bool) -> Self {
        self.capability_meta(crate::router::TERMINAL_AUTH_META, on)
    }

    /// Asks for (`true`) or declines the unstable end-of-turn token `usage` in v1's answer to
    /// `session/prompt`: `clientCapabilities._meta.unstable_end_turn_token_usage`. A v1 client
    /// that did not ask gets no `usage` (a stable client's schema has no such key); v2 tells it
    /// on the `idle` state update whatever this says. Not set by default (the key is left out).
    #[must_use]
    pub fn end_turn_usage(self, on: bool) -> Self {
        self.capability_meta(crate::protocol::END_TURN_USAGE, on)
    }

    /// Sets `clientCapabilities._meta[key]` to `on`.
    fn capability_meta(mut self, key: &str, on: bool) -> Self {
        let meta = self.capabilities.meta.get_or_insert_with(Default::default);
        meta.insert(key.to_owned(), on.into());
        self
    }

    /// Advertises elicitation (`elicitation/create`) in form mode, and in URL mode when `url`.
    /// Hold `"elicitation/create"` ([`hold`](Self::hold)) to answer the agent's requests.
    #[must_use]
    pub fn elicitation(mut self, url: bool) -> Self {
        let mut elicitation =
            ElicitationCapabilities::new().form(ElicitationFormCapabilities::new());
        if url {
            elicitation.url = Some(ElicitationUrlCapabilities::new());
        }
        self.capabilities.elicitation = Some(elicitation);
        self
    }

    /// The client capabilities to advertise besides the file system and terminal (which
    /// [`fs`](Self::fs) and [`terminal`](Self::terminal) set): for a capability this builder
    /// has no method for.
    #[must_use]
    pub fn client_capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// The `clientInfo` sent in `initialize` (none by default).
    #[must_use]
    pub fn client_info(mut self, info: Implementation) -> Self {
        self.info = Some(info);
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

    /// More workspace roots beside the cwd, sent as `additionalDirectories` with every
    /// session the client opens ([`TestClient::new_session`], `load_session`,
    /// `resume_session`); none by default. The agent's `cx.fs()` reaches files in them.
    ///
    /// ```
    /// use acp_core::schema::StopReason;
    /// use acp_core::testing::{MemoryFs, TestClient};
    /// use acp_core::{Agent, Prompt, Result, Session};
    ///
    /// /// Reads the file it is given.
    /// struct Reader;
    /// impl Agent for Reader {
    ///     async fn prompt(&self, cx: &Session, prompt: Prompt) -> Result<StopReason> {
    ///         let answer = match cx.fs().read_text_file(prompt.text()).await {
    ///             Ok(text) => text,
    ///             Err(e) => e.to_string(),
    ///         };
    ///         cx.message(answer).await?;
    ///         Ok(StopReason::EndTurn)
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let fs = MemoryFs::new()
    ///     .with("/libs/shared/VERSION", "1.2")
    ///     .with("/etc/passwd", "root");
    /// let client = TestClient::builder()
    ///     .fs(fs)
    ///     .additional_directories(["/libs/shared"])
    ///     .connect(Reader)
    ///     .await
    ///     .unwrap();
    /// let session = client.new_session().await.unwrap();
    /// assert_eq!(session.prompt("/libs/shared/VERSION").await.unwrap().text(), "1.2");
    /// let refused = session.prompt("/etc/passwd").await.unwrap().text();
    /// assert!(refused.contains("outside the session's directories"), "{refused}");
    /// assert_eq!(client.requests_from_agent("fs/read_text_file").len(), 1);
    /// # }
    /// ```
    #[must_use]
    pub fn additional_directories(
        mut self,
        directories: impl IntoIterator<Item = impl Into<PathBuf>>,
    ) -> Self {
        self.additional_directories = directories.into_iter().map(Into::into).collect();
        self
    }

    /// How long any one wait of the client may take before it fails (default
    /// [`DEFAULT_DEADLINE`]): an agent that deadlocks fails the test instead of hanging it.
    /// [`TestClient::set_deadline`] changes it later.
    #[must_use]
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// Holds every request of `method` the agent sends (e.g. `"session/request_permission"`
    /// or `"fs/read_text_file"`) instead of answering it: the test takes each one with
    /// [`TestClient::next_request`] and answers it by hand, when it wants and how it wants,
    /// so it can check what the agent does (and does not do) while it waits. A held method
    /// overrides the [permission policy](Self::permissions), the file system and the terminal
    /// stub for that method. Call it once per method.
    ///
    /// ```
    /// use acp_core::schema::{PermissionOption, PermissionOptionKind, StopReason};
    /// use acp_core::testing::TestClient;
    /// use acp_core::{Agent, Prompt, Result, Session};
    ///
    /// /// Asks before it works.
    /// struct Careful;
    /// impl Agent for Careful {
    ///     async fn prompt(&self, cx: &Session, _prompt: Prompt) -> Result<StopReason> {
    ///         let call = cx.tool_call("Delete the build").start().await?;
    ///         let allow = PermissionOption::new("yes", "Yes", PermissionOptionKind::AllowOnce);
    ///         call.request_permission(vec![allow]).await?;
    ///         call.in_progress().await?;
    ///         call.complete(vec![]).await?;
    ///         Ok(StopReason::EndTurn)
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let client = TestClient::builder()
    ///     .hold("session/request_permission")
    ///     .connect(Careful)
    ///     .await
    ///     .unwrap();
    /// let session = client.new_session().await.unwrap();
    /// let prompt_id = session.start_prompt("clean up");
    ///
    /// // Frame by frame, in the order the agent sent them.
    /// let call = client.next_frame().await.unwrap();
    /// assert_eq!(call.message["params"]["update"]["sessionUpdate"], "tool_call");
    /// let ask = client.next_request("session/request_permission").await.unwrap();
    /// assert_eq!(client.next_frame().await.unwrap().message, *ask.message());
    ///
    /// // While the question is open the agent does nothing else (on a paused clock this
    /// // sleep returns as soon as the agent is idle).
    /// tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    /// assert!(client.take_unread().is_empty());
    ///
    /// ask.select("yes");
    /// let status = |f: acp_core::testing::Frame| f.message["params"]["update"]["status"].clone();
    /// assert_eq!(status(client.next_frame().await.unwrap()), "in_progress");
    /// assert_eq!(status(client.next_frame().await.unwrap()), "completed");
    /// assert!(client.next_frame().await.unwrap().is_response_to(&prompt_id));
    /// drop(session);
    /// client.close().await.unwrap();
    /// # }
    /// ```
    #[must_use]
    pub fn hold(mut self, method: impl Into<String>) -> Self {
        self.held.insert(method.into());
        self
    }

    /// The protocol version `initialize` asks for: 1 (the default) or 2 (with the `v2`
    /// feature). The same test body holds on both: on v2 the client reads what the agent
    /// writes back in v1's shape ([`Frame::as_v1`](super::Frame::as_v1)), a turn ends at its
    /// `idle` `state_update` (read as v1's answer: [`Turn::stop_reason`](super::Turn::stop_reason),
    /// [`Turn::error_code`](super::Turn::error_code)), [`TestSession::set_mode`](super::TestSession::set_mode)
    /// sets the mode's config option, and [`TestClient::load_session`] resumes with replay.
    ///
    /// v2 has no `fs/*` or `terminal/*`: the agent reads and writes files and runs commands
    /// itself. An agent served in this process ([`connect`](Self::connect),
    /// [`serve`](Self::serve)) reads and writes the client's [`MemoryFs`] all the same (the
    /// runtime's local file backend is pointed at it), so file assertions hold on both
    /// versions; its commands run for real on this machine ([`TerminalStub`] is not used).
    ///
    /// ```
    /// use acp_core::testing::TestClient;
    /// use acp_core::{Agent, Prompt, Result, Session, schema::StopReason};
    ///
    /// struct Hello;
    /// impl Agent for Hello {
    ///     async fn prompt(&self, cx: &Session, _prompt: Prompt) -> Result<StopReason> {
    ///         cx.message("hello").await?;
    ///         Ok(StopReason::EndTurn)
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// for protocol in [1, 2] {
    ///     let client = TestClient::builder().protocol(protocol).connect(Hello).await.unwrap();
    ///     assert_eq!(client.protocol(), protocol);
    ///     let session = client.new_session().await.unwrap();
    ///     let turn = session.prompt("hi").await.unwrap();
    ///     assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    ///     assert_eq!(turn.text(), "hello");
    /// }
    /// # }
    /// ```
    #[must_use]
    pub fn protocol(mut self, version: u16) -> Self {
        self.protocol = version;
        self
    }

    /// Connects without sending `initialize`: for tests of what the agent does before it, or
    /// with a malformed one. Send it with [`TestClient::initialize`] or
    /// [`TestClient::request`].
    #[must_use]
    pub fn skip_initialize(mut self) -> Self {
        self.initialize = false;
        self
    }

    /// Starts `agent` in this process on an in-memory pipe and sends `initialize`.
    pub async fn connect<A: Agent>(self, agent: A) -> Result<TestClient> {
        self.serve(crate::Server::new(agent)).await
    }

    /// Starts `server` (an agent with its limits and store) in this process on an in-memory
    /// pipe and sends `initialize`. With a store shared between two clients, the second one
    /// sees the agent restarted on the same history.
    pub async fn serve<A: Agent>(
        #[cfg_attr(not(feature = "v2"), allow(unused_mut))] mut self,
        server: crate::Server<A>,
    ) -> Result<TestClient> {
        #[cfg(feature = "v2")]
        let server = if self.protocol == 2 {
            // v2 has no `fs/*`: the agent's local backend uses the client's files instead.
            let files = self.fs.get_or_insert_with(MemoryFs::default).clone();
            server.local_files(Arc::new(files))
        } else {
            server
        };
        let (client_io, agent_io) = tokio::io::duplex(1 << 16);
        let (agent_read, agent_write) = tokio::io::split(agent_io);
        let (client_read, client_write) = tokio::io::split(client_io);
        let served = tokio::spawn(server.serve(agent_read, agent_write));
        let no_stderr = Arc::default();
        self.start(client_read, client_write, Agent_::Task(served), no_stderr)
            .await
    }

    /// Starts the agent binary `command` with piped stdin, stdout and stderr, and sends
    /// `initialize`: the agent is driven over real pipes, exactly as an editor drives it.
    /// Its stderr is kept for failure messages; it is killed if the client is dropped.
    pub async fn spawn(self, command: std::process::Command) -> Result<TestClient> {
        let (child, pipes) = Child::spawn(command)?;
        self.start(
            pipes.read,
            pipes.write,
            Agent_::Process(child),
            pipes.stderr,
        )
        .await
    }

    /// Attaches to an agent already served at the other end of `read` (the agent's output)
    /// and `write` (its input), e.g. by a test that runs [`serve`](crate::serve) itself over
    /// streams it instruments, and sends `initialize`. [`TestClient::close`] then waits for
    /// the agent's output to end.
    pub async fn attach(
        self,
        read: impl AsyncRead + Unpin + Send + 'static,
        write: impl AsyncWrite + Unpin + Send + 'static,
    ) -> Result<TestClient> {
        self.start(read, write, Agent_::Attached, Arc::default())
            .await
    }

    async fn start(
        self,
        read: impl AsyncRead + Unpin + Send + 'static,
        write: impl AsyncWrite + Unpin + Send + 'static,
        agent: Agent_,
        stderr: Arc<Mutex<String>>,
    ) -> Result<TestClient> {
        let mut capabilities = self.capabilities;
        capabilities.fs = FileSystemCapabilities::new()
            .read_text_file(self.fs.is_some())
            .write_text_file(self.fs.is_some());
        capabilities.terminal = self.terminal.is_some();
        let editor = Editor::new(
            self.fs.unwrap_or_default(),
            self.terminal.unwrap_or_default(),
            self.permissions,
        );
        let wire = Wire::start(read, write, editor, self.held, self.deadline, stderr);
        let client = TestClient {
            wire,
            cwd: self.cwd.unwrap_or_else(|| PathBuf::from("/workspace")),
            additional_directories: self.additional_directories,
            agent: Mutex::new(Some(agent)),
            capabilities: json!(capabilities),
            info: self.info.map(|i| json!(i)),
            initialize: OnceLock::new(),
            protocol: self.protocol,
        };
        if self.initialize {
            client.initialize().await?;
        }
        Ok(client)
    }
}

/// The agent a client drives.
pub(super) enum Agent_ {
    /// In this process: `serve`'s task.
    Task(tokio::task::JoinHandle<Result<()>>),
    /// A child process.
    Process(Child),
    /// Served by the test itself.
    Attached,
}
