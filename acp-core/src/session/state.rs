//! What the runtime keeps per connection ([`Connection`]: the peer, what the client said in
//! `initialize`, the session registry, typed extensions) and per session ([`SessionState`]).

use super::roots::Roots;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use tokio_util::sync::CancellationToken;

use super::config;
use super::local::{Backends, ObserverSlot, TerminalObserver};
use super::messages::Messages;
use super::persist::PersistedValues;
use super::registry::Registry;
use crate::peer::{Journaled, Peer};
use crate::protocol::Codec;
use crate::schema::{self, SessionId};
use crate::sync::lock;
use crate::turn::Turn;

type Values = Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>;

/// One value per type, created on first use (per-session state, connection extensions).
#[derive(Default)]
pub(crate) struct TypeMap(Values);

impl TypeMap {
    /// The value of type `T`, created with `make` if there is none yet.
    pub fn get_or_insert_with<T: Send + Sync + 'static>(&self, make: impl FnOnce() -> T) -> Arc<T> {
        let mut values = lock(&self.0);
        let value = values
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(make()));
        // The entry for `TypeId::of::<T>()` only ever holds a `T`.
        match value.clone().downcast::<T>() {
            Ok(v) => v,
            Err(_) => unreachable!("values are keyed by their type"),
        }
    }

    /// The value of type `T`, if there is one.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        lock(&self.0)
            .get(&TypeId::of::<T>())
            .and_then(|v| v.clone().downcast::<T>().ok())
    }

    /// Sets the value of type `T`.
    pub fn insert<T: Send + Sync + 'static>(&self, value: T) {
        lock(&self.0).insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// Drops every value.
    pub fn clear(&self) {
        lock(&self.0).clear();
    }
}

impl std::fmt::Debug for TypeMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TypeMap")
    }
}

/// Everything the sessions of one connection share, as typed parts with private fields: the
/// peer (JSON-RPC with the client), the codec (the protocol version, the only writer of
/// frames), the recorder (the peer's journal and its store), the client as `initialize`
/// described it, the session registry, the services layers above this one attach (the
/// agent's tools, the MCP settings, the agent's settings, the model endpoints: see
/// [`services`](Self::services)), where `cx.fs()` / `cx.terminal()` act, and what the
/// operator granted the client.
#[derive(Debug)]
pub(crate) struct Connection {
    peer: Arc<Peer>,
    codec: Codec,
    client: ClientState,
    sessions: Registry,
    services: TypeMap,
    local: Local,
    /// Who this connection is when it takes a session's ownership lease in the store
    /// ([`SessionStore::acquire_lease`](crate::store::SessionStore::acquire_lease)): unique
    /// across processes.
    lease_holder: String,
    parts: Parts,
}

/// What the client said of itself in `initialize`, and whether it signed in.
#[derive(Debug, Default)]
struct ClientState {
    /// What the client said it supports, once it said it.
    capabilities: OnceLock<schema::ClientCapabilities>,
    /// The client's `clientInfo`, once it sent `initialize`.
    info: OnceLock<Option<schema::Implementation>>,
    /// The client completed `authenticate` (and did not `logout` since).
    authenticated: AtomicBool,
}

/// Where `cx.fs()` / `cx.terminal()` act.
#[derive(Debug, Default)]
struct Local {
    /// Chosen when the connection is initialized.
    backends: OnceLock<Backends>,
    /// Watches every local terminal of the connection (see [`TerminalObserver`]).
    terminal_observer: ObserverSlot,
}

/// What the server gives each of its connections.
#[derive(Debug, Clone)]
pub(crate) struct Parts {
    /// [`Server::local_fallback`](crate::Server::local_fallback): in v1, `cx.fs()` /
    /// `cx.terminal()` act locally where the client lacks the capability.
    pub local_fallback: bool,
    /// Where the local backend keeps files instead of this machine's disk (the test client's
    /// in-memory file system); `None`: the disk.
    pub local_files: Option<Arc<dyn super::local::fs::Files>>,
    /// How long a lease lasts unless renewed ([`Server::session_lease`](crate::Server::session_lease)).
    pub lease_ttl: std::time::Duration,
    /// Set when the connection's turns keep running after its client went away
    /// ([`Server::detached_turns`](crate::Server::detached_turns)).
    pub detach: Option<super::detached::Detach>,
    /// The user this connection serves (the network service's, see `net::HttpConfig`): its
    /// new sessions are stamped with it, and it sees only its own sessions of the store;
    /// `None` (stdio, one bearer token): every session of the store.
    pub user: Option<String>,
    /// What the operator granted this connection's client on the agent's machine (see
    /// [`Grant`](super::grant::Grant)): everything over stdio.
    pub grant: super::grant::Grant,
    /// Who opened the sessions of the server when it keeps no store (shared by its
    /// connections).
    pub owners: Arc<super::registry::Owners>,
}

impl Default for Parts {
    fn default() -> Self {
        Parts {
            local_fallback: false,
            local_files: None,
            lease_ttl: DEFAULT_LEASE_TTL,
            detach: None,
            user: None,
            grant: super::grant::Grant::host(),
            owners: Arc::default(),
        }
    }
}

impl Connection {
    /// A connection over `peer`, with what its server gives it.
    pub fn new(peer: Arc<Peer>, parts: Parts) -> Self {
        Connection {
            peer,
            codec: Codec::default(),
            client: ClientState::default(),
            sessions: Registry::default(),
            services: TypeMap::default(),
            local: Local::default(),
            lease_holder: {
                static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                super::registry::process_unique("conn", &NEXT)
            },
            parts,
        }
    }

    /// JSON-RPC with the client: the output queue, requests to it, the journal.
    pub fn peer(&self) -> &Arc<Peer> {
        &self.peer
    }

    /// The protocol version the connection speaks, as the writer of its frames: nothing else
    /// on the connection knows the version.
    pub fn codec(&self) -> &Codec {
        &self.codec
    }

    /// The sessions of this connection.
    pub fn sessions(&self) -> &Registry {
        &self.sessions
    }

    /// Values the layers above sessions attach to the connection, one per type, each typed by
    /// the layer that owns it (the agent's tools, the MCP settings, the agent's settings, the
    /// model endpoints); never the author's (theirs are per session, `cx.state::<T>()`).
    pub fn services(&self) -> &TypeMap {
        &self.services
    }

    /// Takes what `initialize` said of the client: its capabilities (the first ones stay: a
    /// second `initialize` is logged) and its `clientInfo`.
    pub fn initialized(
        &self,
        capabilities: schema::ClientCapabilities,
        info: Option<schema::Implementation>,
    ) {
        if self.client.capabilities.set(capabilities).is_err() {
            tracing::debug!("`initialize` sent twice; keeping the first client capabilities");
        }
        let _ = self.client.info.set(info);
    }

    /// Whether the client sent `initialize`.
    pub fn is_initialized(&self) -> bool {
        self.client.capabilities.get().is_some()
    }

    /// The client's `clientInfo`, if it sent one.
    pub fn client_info(&self) -> Option<&schema::Implementation> {
        self.client.info.get().and_then(Option::as_ref)
    }

    /// Records that the client signed in (`authenticate`) or out (`logout`).
    pub fn set_authenticated(&self, yes: bool) {
        self.client.authenticated.store(yes, Ordering::Release);
    }

    /// Whether the client signed in and did not sign out since.
    pub fn is_authenticated(&self) -> bool {
        self.client.authenticated.load(Ordering::Acquire)
    }

    /// The user this connection serves, if the network service names users.
    pub fn user(&self) -> Option<&str> {
        self.parts.user.as_deref()
    }

    /// What the operator granted this connection's client.
    pub fn grant(&self) -> &super::grant::Grant {
        &self.parts.grant
    }

    /// Who opened the sessions of the server when it keeps no store.
    pub fn owners(&self) -> &super::registry::Owners {
        &self.parts.owners
    }

    /// Set when the connection's turns keep running after its client went away.
    pub fn detach(&self) -> Option<&super::detached::Detach> {
        self.parts.detach.as_ref()
    }

    /// Who this connection is when it takes a session's lease, and how long a lease lasts.
    pub fn lease(&self) -> (&str, std::time::Duration) {
        (&self.lease_holder, self.parts.lease_ttl)
    }

    /// Where the local backend keeps files instead of the disk, if not the disk.
    pub fn local_files(&self) -> Option<&Arc<dyn super::local::fs::Files>> {
        self.parts.local_files.as_ref()
    }

    /// Chooses where `cx.fs()` / `cx.terminal()` act for a protocol v1 client, from the
    /// capabilities it advertised in `initialize` (see [`Backends::v1`]). A choice made
    /// before stays (a second `initialize`, or [`use_local_backend`](Self::use_local_backend)).
    pub fn choose_v1_backends(&self) {
        let _ = self.local.backends.set(Backends::v1(
            self.client_capabilities(),
            self.parts.local_fallback,
        ));
    }

    /// Makes `cx.fs()` and `cx.terminal()` act on the agent's machine for every session of
    /// this connection, whatever the client advertised: for a protocol version whose clients
    /// have no `fs/*` or `terminal/*` methods (v2). Call it when the connection is initialized,
    /// before any session exists; the first choice made stays.
    #[allow(dead_code)] // For the v2 connection.
    pub fn use_local_backend(&self) {
        let _ = self.local.backends.set(Backends::local());
    }

    /// Where `cx.fs()` / `cx.terminal()` act (the client's methods until the connection is
    /// initialized).
    pub fn backends(&self) -> Backends {
        self.local.backends.get().copied().unwrap_or_default()
    }

    /// Calls `observer` with everything that happens to this connection's local terminals
    /// from now on (the first observer set stays): the hook a v2 encoder turns into
    /// `terminal_update` / `terminal_output_chunk`.
    #[allow(dead_code)] // For the v2 encoder.
    pub fn observe_local_terminals(&self, observer: TerminalObserver) {
        self.local.terminal_observer.set(observer);
    }

    /// The observer of local terminals, if one was set.
    pub fn terminal_observer(&self) -> Option<TerminalObserver> {
        self.local.terminal_observer.get()
    }

    /// The directories of a session the client opens (`cwd`, `additionalDirectories`):
    /// absolute (the spec's MUST) and within what the operator granted the client (the
    /// network's users), resolved through symbolic links then; the `-32602` to answer with
    /// otherwise.
    pub fn roots(
        &self,
        cwd: std::path::PathBuf,
        additional: Vec<std::path::PathBuf>,
    ) -> Result<Roots, schema::Error> {
        self.parts.grant.check_roots(Roots::new(cwd, additional)?)
    }

    /// The `session/update` frame carrying `update` of `session`, in the connection's
    /// version, and its record when sessions are recorded.
    pub fn update_frame(
        &self,
        session: &SessionId,
        update: &schema::SessionUpdate,
    ) -> crate::Result<(Vec<u8>, Option<Journaled>)> {
        let encoded = self
            .codec
            .update(session, update, self.client_capabilities())?;
        let record = encoded
            .account
            .and_then(|account| self.peer.journal.update(session, account));
        Ok((encoded.bytes, record))
    }

    /// Sends the client a request of `method` (`params` are the runtime's, v1's; the codec
    /// writes them in the connection's version), made for `session` if any, and waits for its
    /// answer, or for `cancel`.
    pub async fn request<P: serde::Serialize, T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        cancel: Option<&CancellationToken>,
        session: Option<&SessionId>,
    ) -> crate::Result<T> {
        let encode = |id| self.codec.request(id, method, params);
        self.peer.request(method, encode, cancel, session).await
    }

    /// The client's capabilities (none before `initialize`).
    pub fn client_capabilities(&self) -> &schema::ClientCapabilities {
        static NONE: OnceLock<schema::ClientCapabilities> = OnceLock::new();
        self.client
            .capabilities
            .get()
            .unwrap_or_else(|| NONE.get_or_init(schema::ClientCapabilities::default))
    }
}

/// How long a session's ownership lease lasts unless renewed: a replica that dies leaves its
/// sessions to the others after this long.
pub(crate) const DEFAULT_LEASE_TTL: std::time::Duration = std::time::Duration::from_secs(30);

/// One session known to a connection. Its fields are the session module's; the layers above
/// reach it through its methods.
#[derive(Debug)]
pub(crate) struct SessionState {
    pub(super) id: SessionId,
    /// The session's directories: `cwd` and the client's additional ones.
    pub(super) roots: Roots,
    pub(super) mcp_servers: Vec<schema::McpServer>,
    pub(super) conn: Arc<Connection>,
    /// The running prompt turn, if any.
    pub(super) turn: Mutex<Option<Arc<Turn>>>,
    /// Answers the user gave with "always", per permission key.
    pub(super) remembered: Mutex<HashMap<String, bool>>,
    pub(super) next_tool_call: AtomicU64,
    /// The message ids of the chunks it sends.
    pub(super) messages: Messages,
    /// The current values of the agent's modes and config options.
    pub(super) settings: config::Values,
    /// The slash commands the client was last told about.
    pub(super) commands: Mutex<Vec<schema::AvailableCommand>>,
    /// The session was closed (or reopened elsewhere): handles outside a turn may no longer
    /// send anything for it.
    pub(super) closed: AtomicBool,
    /// Cancelled when the session is closed (what waits on its end, e.g. its lease keeper).
    pub(super) ended: CancellationToken,
    /// The author's per-session values, one per type.
    pub(super) values: TypeMap,
    /// Which of them persist, and the stored ones not asked for yet.
    pub(super) persisted: PersistedValues,
    /// Cancelled (and replaced) by a cancel of the session: drops the prompts waiting for
    /// their turn, where prompts wait (the router's queue).
    pub(super) waiting: Mutex<CancellationToken>,
    /// The session's local terminals (see [`local`](super::local)), while they may run.
    pub(super) local_terminals: Mutex<Vec<std::sync::Weak<super::local::LocalTerminal>>>,
    /// For a subagent's session: its parent, which drives it.
    pub(super) parent: Option<super::subagent::Parent>,
}

impl SessionState {
    pub fn new(
        conn: &Arc<Connection>,
        id: SessionId,
        roots: Roots,
        mcp_servers: Vec<schema::McpServer>,
    ) -> Arc<Self> {
        Self::build(conn, id, roots, mcp_servers, None)
    }

    /// A subagent's session, driven by `parent` (in its roots, without MCP servers of its own).
    pub(super) fn child(
        conn: &Arc<Connection>,
        id: SessionId,
        roots: Roots,
        parent: super::subagent::Parent,
    ) -> Arc<Self> {
        Self::build(conn, id, roots, Vec::new(), Some(parent))
    }

    fn build(
        conn: &Arc<Connection>,
        id: SessionId,
        roots: Roots,
        mcp_servers: Vec<schema::McpServer>,
        parent: Option<super::subagent::Parent>,
    ) -> Arc<Self> {
        Arc::new(SessionState {
            id,
            roots,
            mcp_servers,
            conn: conn.clone(),
            turn: Mutex::new(None),
            remembered: Mutex::new(HashMap::new()),
            next_tool_call: AtomicU64::new(0),
            messages: Messages::default(),
            settings: config::Values::default(),
            commands: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            ended: CancellationToken::new(),
            values: TypeMap::default(),
            persisted: PersistedValues::default(),
            waiting: Mutex::new(CancellationToken::new()),
            local_terminals: Mutex::new(Vec::new()),
            parent,
        })
    }

    /// For a subagent's session, its parent's id: the client may not prompt, configure,
    /// close or reopen it while it is live (its parent drives it), only cancel it.
    pub fn parent_id(&self) -> Option<&SessionId> {
        self.parent.as_ref().map(|p| p.session.id())
    }

    /// The session's id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// The session's directories: `cwd` and the client's additional ones.
    pub fn roots(&self) -> &Roots {
        &self.roots
    }

    /// The MCP servers the client gave the session.
    pub fn mcp_servers(&self) -> &[schema::McpServer] {
        &self.mcp_servers
    }

    /// The connection the session is open on.
    pub fn conn(&self) -> &Arc<Connection> {
        &self.conn
    }

    /// The message ids of the chunks it sends.
    pub fn messages(&self) -> &Messages {
        &self.messages
    }

    /// Values of the session, one per type: the author's (`cx.state::<T>()`) and those of the
    /// layers above sessions (the session's MCP servers and tools, its prompt queue), each
    /// typed by the layer that owns it.
    pub fn values(&self) -> &TypeMap {
        &self.values
    }

    /// Cancelled when the session is closed (what waits on its end, e.g. its lease keeper).
    pub fn ended(&self) -> &CancellationToken {
        &self.ended
    }

    /// The token a cancel of the session cancels (and replaces): prompts waiting for their turn
    /// give up on it.
    pub fn waiting(&self) -> CancellationToken {
        lock(&self.waiting).clone()
    }

    /// Sets the slash commands the client is told about.
    pub fn set_commands(&self, commands: Vec<schema::AvailableCommand>) {
        *lock(&self.commands) = commands;
    }

    /// Whether the client was told of the slash command `name`.
    pub fn offers_command(&self, name: &str) -> bool {
        lock(&self.commands).iter().any(|c| c.name == name)
    }

    /// Restores the stored values of the author's [`Persist`](super::Persist) types (a
    /// reopened session).
    pub fn restore_persisted(&self, values: HashMap<String, serde_json::Value>) {
        self.persisted.restore(values);
    }

    /// Numbers new tool calls after `n` (the highest `call_<n>` recorded) at least.
    pub fn continue_tool_calls_after(&self, n: u64) {
        self.next_tool_call.fetch_max(n + 1, Ordering::Relaxed);
    }

    /// The session's local terminals whose command still runs.
    pub fn running_local_terminals(&self) -> Vec<Arc<super::local::LocalTerminal>> {
        lock(&self.local_terminals)
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .filter(|t| t.is_running())
            .collect()
    }

    /// Remembers a local terminal of the session (forgetting those that are gone).
    pub fn add_local_terminal(&self, terminal: &Arc<super::local::LocalTerminal>) {
        let mut all = lock(&self.local_terminals);
        all.retain(|t| t.upgrade().is_some_and(|t| t.is_running()));
        all.push(Arc::downgrade(terminal));
    }

    /// Cancels the running turn, if any, and the prompts waiting for their turn.
    pub fn cancel_turn(&self) {
        if let Some(turn) = lock(&self.turn).as_ref() {
            turn.cancel.cancel();
        }
        std::mem::take(&mut *lock(&self.waiting)).cancel();
    }

    /// Makes `turn` the running turn; `false` if one is already running.
    pub fn start_turn(&self, turn: &Arc<Turn>) -> bool {
        let mut slot = lock(&self.turn);
        if slot.is_some() {
            return false;
        }
        *slot = Some(turn.clone());
        true
    }

    /// Whether a turn of the session is running.
    #[cfg(feature = "unstable-session-status")]
    pub fn is_running(&self) -> bool {
        lock(&self.turn).is_some()
    }

    /// Frees the session for its next turn.
    pub fn end_turn(&self) {
        lock(&self.turn).take();
    }

    /// Marks the session closed and cancels its running turn, if any.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.cancel_turn();
        self.ended.cancel();
    }

    /// Whether the session was closed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}
