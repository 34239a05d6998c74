//! Serving an agent: wires a transport, the peer (reader and writer) and the router together,
//! and shuts everything down when the client goes away — running turns cancelled and answered,
//! requests awaiting the client failed, sessions freed, and the agent dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tracing::{Instrument, debug, debug_span, warn};

use crate::agent::Agent;
use crate::mcp::{self, McpConfig, McpPermission};
use crate::peer::{DEFAULT_MAX_IN_FLIGHT, Journal, Peer, read_loop, write_loop};
use crate::router::Router;
use crate::session::detached::Detach;
use crate::session::grant::Grant;
use crate::session::{Connection, Parts};
use crate::store::SessionStore;
use crate::tools::Tools;
use crate::transport::lines::DEFAULT_MAX_LINE;
use crate::transport::{LineReader, Sink, Source, stdio};
use crate::{Error, Result};

/// How long the last answers may take to reach a client that closed our input, after the
/// handlers' own wait ([`Router::shutdown`]): together well under a second, so an agent exits
/// promptly even when the client stops reading its output but keeps it open.
const DRAIN_WAIT: Duration = Duration::from_millis(300);

/// How long a connection whose client went away gives the store to record what its turns
/// sent after they ended.
const DETACHED_DRAIN_WAIT: Duration = Duration::from_secs(10);

/// How long turns run on after their client went away, on the network service (see
/// [`Server::detached_turns`]).
pub const DEFAULT_DETACHED_TURNS: Duration = Duration::from_secs(600);

/// How long the sessions' MCP servers get to stop when the connection ends, after which the
/// rest are killed (dropping a server kills its process group).
const MCP_STOP_WAIT: Duration = Duration::from_millis(300);

/// The variable [`Server::serve_stdio`] takes the session lease's period from, in ms.
const LEASE_VAR: &str = "ACP_SESSION_LEASE_MS";

/// The variable naming more of the service's secrets, which no child process inherits (see
/// [`Server::secret_env`]).
const SECRET_VARS_VAR: &str = "ACP_SECRET_VARS";

/// Serves `agent` on the process's stdin and stdout until the client closes stdin, with the
/// default limits and sessions recorded in the agent's default on-disk store, or in the one
/// `$ACP_DATABASE_URL` names ([`Server`] to change them).
///
/// stdout carries protocol frames and nothing else. On Linux and macOS the protocol's input
/// and output are first moved to private descriptors, fd 1 is pointed at stderr and fd 0 at
/// `/dev/null`: a `println!` anywhere in the process (author code, a dependency) or the output
/// of a child process ends up on stderr, and can neither corrupt the protocol stream nor
/// block the agent. Log through `tracing` (see `acp::init_logging`), which also writes to
/// stderr. Call it once per process.
///
/// Returns within a second of the client closing stdin, whatever the client does with
/// stdout (see [`serve`]).
pub async fn serve_stdio<A: Agent>(agent: A) -> Result<()> {
    Server::new(agent).serve_stdio().await
}

/// Serves `agent` over any byte stream pair until `reader` reaches end of file, with the
/// default limits ([`Server`] to change them).
///
/// On end of file, running turns are cancelled and answered, requests awaiting the client
/// fail with [`Error::ConnectionClosed`], every session is freed, and the call returns
/// `Ok(())` once the agent has been dropped (unless the author kept a session handle of it
/// somewhere else). Handlers get half a second to finish and the last answers 300 ms more to
/// be written: a client that stops reading cannot keep the agent alive.
pub async fn serve<A, R, W>(agent: A, reader: R, writer: W) -> Result<()>
where
    A: Agent,
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    Server::new(agent).serve(reader, writer).await
}

/// An agent to serve, with the limits of its connection.
///
/// ```no_run
/// # async fn demo(agent: impl acp_core::Agent) -> acp_core::Result<()> {
/// acp_core::Server::new(agent)
///     .max_line_bytes(8 * 1024 * 1024)
///     .serve_stdio()
///     .await
/// # }
/// ```
#[must_use = "a server does nothing until `serve_stdio` or `serve` is awaited"]
pub struct Server<A> {
    agent: A,
    pub(crate) config: Config,
}

/// Everything a [`Server`] is told (its builder methods set it), in one value: what its
/// connections share is made from it once ([`Server::into_shared`]).
pub(crate) struct Config {
    max_line: usize,
    max_in_flight: usize,
    store: Store,
    mcp_timeout: Duration,
    mcp_permission: McpPermission,
    local_fallback: bool,
    /// See [`Connection::local_files`](crate::session::Connection::local_files).
    local_files: Option<Arc<dyn crate::session::local::fs::Files>>,
    /// How long a session's ownership lease lasts unless renewed; `None`: `$ACP_SESSION_LEASE_MS`
    /// under `serve_stdio`, else the default.
    lease_ttl: Option<Duration>,
    /// How long turns run on after their client went away; `None`: not set (the network
    /// service's default, none elsewhere).
    pub(crate) detach: Option<Duration>,
    /// The variables no child process inherits, beside the built-in ones.
    secrets: Vec<String>,
    /// The endpoints the editor may configure (`providers/*`).
    #[cfg(feature = "llm-providers")]
    llm_providers: Option<crate::llm::providers::Endpoints>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_line: DEFAULT_MAX_LINE,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            store: Store::Default,
            mcp_timeout: mcp::DEFAULT_TIMEOUT,
            mcp_permission: McpPermission::default(),
            local_fallback: false,
            local_files: None,
            lease_ttl: None,
            detach: None,
            secrets: Vec::new(),
            #[cfg(feature = "llm-providers")]
            llm_providers: None,
        }
    }
}

/// Where a server records its sessions.
enum Store {
    /// The on-disk default under [`serve_stdio`](Server::serve_stdio); none under `serve`.
    Default,
    None,
    Given(Arc<dyn SessionStore>),
}

impl<A> std::fmt::Debug for Server<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("max_line", &self.config.max_line)
            .field("max_in_flight", &self.config.max_in_flight)
            .field("recorded", &!matches!(self.config.store, Store::None))
            .field("mcp_timeout", &self.config.mcp_timeout)
            .field("mcp_permission", &self.config.mcp_permission)
            .field("local_fallback", &self.config.local_fallback)
            .finish_non_exhaustive()
    }
}

impl<A: Agent> Server<A> {
    /// `agent`, with the default limits: 64 MiB lines, 1,024 requests in flight.
    pub fn new(agent: A) -> Self {
        Server {
            agent,
            config: Config::default(),
        }
    }

    /// The agent's name (`info().name`).
    #[cfg(feature = "http")]
    pub(crate) fn agent_name(&self) -> String {
        self.agent.info().name
    }

    /// Keeps the environment variables `names` from every process the agent starts for a
    /// client (the client's MCP servers, local commands and terminals), as it keeps its own
    /// secrets: `$ACP_TOKEN`, `$ACP_TOKENS`, `$ACP_DATABASE_URL`, `$OPENAI_API_KEY` and
    /// `$ANTHROPIC_API_KEY` are never passed on. `$ACP_SECRET_VARS` (names separated by commas
    /// or whitespace) adds more with no code. Over the network a child starts from an empty
    /// environment anyway, but for `PATH`, `HOME`, the locale and what the operator passes
    /// (see `net::HttpConfig::pass_env`).
    ///
    /// ```no_run
    /// # async fn demo(agent: impl acp_core::Agent) -> acp_core::Result<()> {
    /// acp_core::Server::new(agent)
    ///     .secret_env(["GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY"])
    ///     .serve_stdio()
    ///     .await
    /// # }
    /// ```
    pub fn secret_env<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.config
            .secrets
            .extend(names.into_iter().map(Into::into));
        self
    }

    /// Keeps a connection's running turns going for up to `limit` after its client went
    /// away (default: [`DEFAULT_DETACHED_TURNS`] on the network service, [`Server::router`]; `ZERO`
    /// elsewhere, where a client that closes the connection cancels its turns).
    ///
    /// What such a turn sends is recorded as before (with a store) and goes nowhere; what it
    /// asks of the client (a permission, the client's files) fails as for a client that
    /// closed the connection. A client that reconnects and reopens the session
    /// (`session/load`, `session/resume`) on another connection of this server waits until
    /// the turn has ended and is recorded, then gets the whole conversation: nothing it
    /// missed is lost, and no turn of the session runs twice. Turns still running after
    /// `limit` are cancelled. `ZERO` cancels them at once.
    ///
    /// [`Server::router`]: Server::router
    pub fn detached_turns(mut self, limit: Duration) -> Self {
        self.config.detach = Some(limit);
        self
    }

    /// How long a session's ownership lease lasts unless renewed (default 30 s): with a
    /// store shared by several replicas of the agent (PostgreSQL), a session open on a
    /// connection is held by it, renewed every third of this, so that no two replicas run
    /// its turns at once; a replica that dies leaves its sessions to the others after this
    /// long, and loading one of them on another replica waits for that. Closing a session
    /// gives it up at once. Stores used by one process grant every lease: nothing waits.
    /// Clamped to at least 100 ms. Without a call, [`serve_stdio`](Self::serve_stdio) takes
    /// it from `$ACP_SESSION_LEASE_MS` (milliseconds) when set.
    pub fn session_lease(mut self, ttl: Duration) -> Self {
        self.config.lease_ttl = Some(ttl.max(Duration::from_millis(100)));
        self
    }

    /// Lets the editor configure these model endpoints (Unstable: ACP's "Configurable LLM
    /// Providers" RFD): the agent advertises `agentCapabilities.providers` and answers
    /// `providers/list` (each endpoint's id, the API types it can be set to, whether it is
    /// required, and where it sends requests now, never its headers), `providers/set` (an
    /// unknown id or an API type it cannot speak is `-32602`) and `providers/disable` (a
    /// required endpoint is `-32602`, an unknown id is done). What the editor sets is the
    /// process's: every connection sees it, from the next model call on; it is never written
    /// to disk. See [`llm::Endpoint`](crate::llm::Endpoint).
    #[cfg(feature = "llm-providers")]
    pub fn llm_providers(
        mut self,
        endpoints: impl IntoIterator<Item = crate::llm::Endpoint>,
    ) -> Self {
        self.config.llm_providers = Some(crate::llm::providers::Endpoints(
            endpoints.into_iter().collect(),
        ));
        self
    }

    /// Points the local file backend at `files` instead of this machine's disk (for
    /// [`acp::testing`](crate::testing)).
    #[cfg(all(feature = "testing", feature = "v2"))]
    pub(crate) fn local_files(mut self, files: Arc<dyn crate::session::local::fs::Files>) -> Self {
        self.config.local_files = Some(files);
        self
    }

    /// Lets [`Session::fs`](crate::Session::fs) and [`Session::terminal`](crate::Session::terminal)
    /// act on the agent's own machine when the client does not offer them (default `false`:
    /// they fail with [`Error::Unsupported`], sending nothing).
    ///
    /// Decided per connection when the client initializes it, for each of reading files,
    /// writing files and terminals on its own: what the client advertised
    /// (`fs.readTextFile`, `fs.writeTextFile`, `terminal`) still goes through the client,
    /// exactly as without this option; what it did not is done locally. Files are read and
    /// written on disk within the session's directories (the same boundary, the same
    /// [`Error::OutsideRoots`]); commands run as child processes of the agent in the
    /// session's cwd, stopped with their whole process group on `kill`, `release`, drop and
    /// cancel. Tools that `requires(..)` a capability the client lacks are then offered
    /// and run. The client cannot show a terminal it did not create: a local terminal
    /// embedded in a tool call is shown as text. See [`Fs`](crate::session::Fs) and
    /// [`Terminals`](crate::Terminals) for the details.
    ///
    /// Turn it on for an agent that needs files and commands whatever the editor offers,
    /// and that runs on the machine the user's files are on: the commands run with the
    /// agent's own permissions, so ask the user first (`#[acp::tool(permission)]`).
    ///
    /// ```no_run
    /// # async fn demo(agent: impl acp_core::Agent) -> acp_core::Result<()> {
    /// acp_core::Server::new(agent)
    ///     .local_fallback(true)
    ///     .serve_stdio()
    ///     .await
    /// # }
    /// ```
    pub fn local_fallback(mut self, enabled: bool) -> Self {
        self.config.local_fallback = enabled;
        self
    }

    /// How long each of the client's MCP servers may take to start, complete the MCP
    /// handshake and list its tools (default 10 s). Servers connect in the background: a
    /// session is answered at once, and [`Session::tools`](crate::Session::tools) /
    /// [`Session::call_tool`](crate::Session::call_tool) wait for the servers still starting,
    /// at most this long. A server that takes longer is stopped and reported failed
    /// ([`Session::mcp_status`](crate::Session::mcp_status)).
    pub fn mcp_timeout(mut self, timeout: Duration) -> Self {
        self.config.mcp_timeout = timeout;
        self
    }

    /// When a call of an MCP tool asks the user first (default
    /// [`McpPermission::UnlessReadOnly`]: ask unless the server annotates the tool
    /// read-only).
    pub fn mcp_permission(mut self, permission: McpPermission) -> Self {
        self.config.mcp_permission = permission;
        self
    }

    /// Records every session in `store` and answers `session/list`, `session/load` (the whole
    /// conversation replayed), `session/resume` and `session/delete` from it, advertising
    /// them. The agent writes nothing for it: the user's prompts, every update sent, each
    /// turn's stop reason are recorded as they happen, each update committed before the
    /// client receives it.
    ///
    /// Without a call to `store` or [`no_store`](Self::no_store), [`serve_stdio`](Self::serve_stdio)
    /// records into the store `$ACP_DATABASE_URL` names (a PostgreSQL database shared by
    /// replicas, an SQLite file; see [`store`](crate::store#choosing-the-store-with-no-code-acp_database_url)),
    /// else into the default on-disk store of the agent (its `info().name`), see
    /// [`SqliteStore::open_default`](crate::store::SqliteStore::open_default); `serve` records
    /// nothing.
    pub fn store(mut self, store: impl SessionStore) -> Self {
        self.config.store = Store::Given(Arc::new(store));
        self
    }

    /// [`store`](Self::store), with a store shared with other code (e.g. a test that
    /// restarts the agent on the same store).
    pub fn shared_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.config.store = Store::Given(store);
        self
    }

    /// Records nothing: the history methods are neither advertised nor answered.
    pub fn no_store(mut self) -> Self {
        self.config.store = Store::None;
        self
    }

    /// The longest message accepted, in bytes (default 64 MiB). A longer line is skipped
    /// without being buffered and answered `-32700` with a null id; the connection goes on.
    pub fn max_line_bytes(mut self, bytes: usize) -> Self {
        self.config.max_line = bytes;
        self
    }

    /// How many of the client's requests may be in flight (read and not yet answered) at
    /// once (default 1,024, at least 1). Beyond it the agent stops reading until one is
    /// answered: a client that writes requests without reading the answers cannot grow the
    /// agent's memory. Running prompt turns count, one per session.
    pub fn max_in_flight(mut self, requests: usize) -> Self {
        self.config.max_in_flight = requests.max(1);
        self
    }

    /// Serves on the process's stdin and stdout: see [`serve_stdio`]. Unless told otherwise,
    /// sessions are recorded in the store `$ACP_DATABASE_URL` names, else in the agent's
    /// default on-disk store, opened in the background: `initialize` is answered at once, and
    /// only what needs the store (recording, the history methods) waits for it. If it cannot
    /// be opened, the agent says why on stderr and goes on without history: the history
    /// methods are answered with that error. A `$ACP_DATABASE_URL` this build cannot open (an
    /// unknown scheme, PostgreSQL without feature `postgres`) fails at once, before serving.
    pub async fn serve_stdio(self) -> Result<()> {
        let server = self.env_defaults()?;
        let (reader, writer) = stdio::take();
        server.serve(reader, writer).await
    }

    /// Serves over any byte stream pair: see [`serve`].
    pub async fn serve<R, W>(self, reader: R, writer: W) -> Result<()>
    where
        R: AsyncRead + Unpin + Send,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        self.into_shared()
            .serve(reader, writer, Grant::host())
            .await
    }

    /// What every connection of this server shares (the network serves many).
    pub(crate) fn into_shared(self) -> Shared<A> {
        let Server { agent, config } = self;
        let detach = config
            .detach
            .filter(|limit| !limit.is_zero())
            .map(|limit| Detach {
                limit,
                sessions: Arc::default(),
            });
        let store = match &config.store {
            Store::Given(store) => Some(store.clone()),
            Store::Default | Store::None => None,
        };
        Shared {
            agent: Arc::new(agent),
            store,
            detach,
            secrets: config.secrets.clone().into(),
            owners: Arc::default(),
            config,
        }
    }

    /// What the environment sets unless the code did: the session lease's period
    /// (`$ACP_SESSION_LEASE_MS`) and the store (`$ACP_DATABASE_URL`, else the agent's on-disk
    /// default, unless the server was given one or told to keep none).
    pub(crate) fn env_defaults(mut self) -> Result<Self> {
        if self.config.lease_ttl.is_none()
            && let Some(ms) = std::env::var_os(LEASE_VAR)
        {
            let ms = ms.to_str().and_then(|ms| ms.trim().parse::<u64>().ok());
            let ms = ms.ok_or_else(|| {
                Error::msg(format!("{LEASE_VAR} must be a number of milliseconds"))
            })?;
            self = self.session_lease(Duration::from_millis(ms));
        }
        if let Some(names) = std::env::var_os(SECRET_VARS_VAR) {
            let names = names.to_string_lossy().into_owned();
            self.config.secrets.extend(
                names
                    .split(|c: char| c == ',' || c.is_whitespace())
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned),
            );
        }
        if matches!(self.config.store, Store::Default) {
            let opening = crate::store::url::opening_default(&self.agent.info().name)?;
            self.config.store = Store::Given(Arc::new(opening));
        }
        Ok(self)
    }
}

impl<A: Agent> Server<A> {
    /// Where the server will record its sessions, for the operator's log (never a password).
    #[cfg(feature = "http")]
    pub(crate) fn describe_store(&self) -> String {
        match &self.config.store {
            Store::None => "no store (sessions are not recorded)".to_owned(),
            Store::Given(_) => "the store the agent was given".to_owned(),
            Store::Default => match std::env::var(crate::store::url::DATABASE_URL_VAR) {
                Ok(url) if !url.is_empty() => {
                    let (scheme, rest) = url.split_once("://").unwrap_or(("", &url));
                    // `user:password@` is never shown.
                    let place = rest.rsplit_once('@').map_or(rest, |(_, place)| place);
                    format!(
                        "{scheme}://{place} (${})",
                        crate::store::url::DATABASE_URL_VAR
                    )
                }
                _ => match crate::store::SqliteStore::default_path(&self.agent.info().name) {
                    Some(path) => format!("{} (SQLite)", path.display()),
                    None => "the default SQLite store (no data directory yet)".to_owned(),
                },
            },
        }
    }
}

/// A server's agent and limits, shared by all its connections: one [`Shared::serve`] per
/// connection (stdio has one; the network many, each its own `serve`).
pub(crate) struct Shared<A> {
    agent: Arc<A>,
    /// What the server was told.
    config: Config,
    /// Where sessions are recorded (the config's store, resolved).
    store: Option<Arc<dyn SessionStore>>,
    /// The turns its connections' clients left running (the config's `detach`, resolved).
    detach: Option<Detach>,
    secrets: Arc<[String]>,
    /// Who opened which session, for the owner check without a store.
    owners: Arc<crate::session::registry::Owners>,
}

impl<A: Agent> Shared<A> {
    /// Where the server records its sessions, if it does.
    #[cfg(feature = "http")]
    pub(crate) fn store(&self) -> Option<Arc<dyn SessionStore>> {
        self.store.clone()
    }

    /// The longest message accepted, in bytes.
    #[cfg(feature = "http")]
    pub(crate) fn max_line(&self) -> usize {
        self.config.max_line
    }

    /// Serves one connection over a byte stream pair (one message per line each way), with
    /// what the operator granted its client (everything over stdio): see [`serve`].
    pub(crate) async fn serve<R, W>(&self, reader: R, writer: W, grant: Grant) -> Result<()>
    where
        R: AsyncRead + Unpin + Send,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let lines = LineReader::new(reader, self.config.max_line);
        self.serve_on(lines, Sink::lines(writer), None, grant).await
    }

    /// Serves one connection reading messages from `input` and handing them to `output`, for
    /// `user` if the network service named one (see `Connection::user`), with what the
    /// operator granted its client: see [`serve`].
    pub(crate) async fn serve_on(
        &self,
        input: impl Source,
        output: Sink,
        user: Option<String>,
        grant: Grant,
    ) -> Result<()> {
        let Shared {
            agent,
            config,
            store,
            detach,
            secrets,
            owners,
        } = self;
        static CONNECTIONS: AtomicU64 = AtomicU64::new(0);
        let span = debug_span!("acp", conn = CONNECTIONS.fetch_add(1, Ordering::Relaxed));
        let settings = agent.settings();
        settings
            .check()
            .map_err(|e| Error::msg(format!("the agent's settings are invalid: {e}")))?;
        let journal = Journal::new(store.clone());
        let (peer, queue) = Peer::new(output, config.max_in_flight, journal, detach.is_some());
        let parts = Parts {
            local_fallback: config.local_fallback,
            local_files: config.local_files.clone(),
            lease_ttl: config
                .lease_ttl
                .unwrap_or(crate::session::DEFAULT_LEASE_TTL),
            detach: detach.clone(),
            user,
            grant: grant.secrets(secrets.clone()),
            owners: owners.clone(),
        };
        let conn = Arc::new(Connection::new(peer.clone(), parts));
        conn.services().insert(settings.clone());
        conn.services().insert(McpConfig {
            timeout: config.mcp_timeout,
            permission: config.mcp_permission,
            client: agent.info(),
        });
        conn.services().insert(Tools(agent.clone()));
        #[cfg(feature = "llm-providers")]
        if let Some(endpoints) = config.llm_providers.clone() {
            conn.services().insert(endpoints);
        }
        let writer_task = tokio::spawn(write_loop(queue, peer.clone()).instrument(span.clone()));
        let router = Router::new(agent.clone(), conn.clone(), Arc::new(settings));
        let read = read_loop(input, &peer, &router)
            .instrument(span.clone())
            .await;

        // Shut down: cancel every turn (their tokens are children of the peer's), fail pending
        // requests, let the turns answer, then stop the writer once everything queued before the
        // stop is written — unless the client does not read it in time. A connection that
        // keeps its turns lets them run first, holding its sessions for a client that comes
        // back (its output goes on being recorded, and read by the network side).
        peer.close();
        let held = conn.detach().map(|detach| {
            let held = detach.sessions.hold(conn.sessions().weak(), conn.user());
            (detach.limit, held)
        });
        if let Some((limit, _)) = &held {
            router.finish(*limit).await;
        }
        peer.turns.cancel();
        router.shutdown().await;
        // While the last answers drain, the sessions' MCP servers stop (no orphan processes:
        // one that does not stop in time is killed when its session is dropped below).
        let sessions = conn.sessions().clear();
        let stopping = futures_util::future::join_all(sessions.iter().map(|s| mcp::stop(s)));
        let stopping = async {
            if tokio::time::timeout(MCP_STOP_WAIT, stopping).await.is_err() {
                warn!(parent: &span, "MCP servers did not stop in time; killed them");
            }
        };
        let mut writer_task = writer_task;
        // Detached, nobody reads the output but the network side, which discards it: the wait
        // is for the store.
        let drain_wait = if held.is_some() {
            DETACHED_DRAIN_WAIT
        } else {
            DRAIN_WAIT
        };
        let drain = tokio::time::timeout(drain_wait, async {
            peer.stop().await;
            (&mut writer_task).await
        });
        let (drained, ()) = tokio::join!(drain, stopping);
        let written = drained.unwrap_or_else(|_| {
            warn!(parent: &span, "the client did not read the last answers in time; dropped them");
            writer_task.abort();
            Ok(Ok(()))
        });
        // Free the sessions and what the connection holds of the agent, then the agent itself.
        drop(sessions);
        conn.services().clear();
        drop(router);
        // Now a client that came back may reopen the sessions.
        drop(held);
        debug!(parent: &span, "connection closed");
        read.map_err(|e| Error::io("reading the client's input", e))?;
        match written {
            Ok(result) => result.or_else(|e| {
                // The client going away first is a normal way for a session to end.
                if e.kind() == std::io::ErrorKind::BrokenPipe {
                    Ok(())
                } else {
                    Err(Error::io("writing to the client", e))
                }
            }),
            Err(join) => Err(Error::msg(format!("the writer task failed: {join}"))),
        }
    }
}

#[cfg(test)]
#[path = "serve_tests.rs"]
mod tests;
