//! The connection: one reader, one writer, the table of requests awaiting the client's answer,
//! and the routing of every incoming method to the [`Agent`].
//!
//! The reader never waits on a handler: requests run as their own tasks, while `initialize`
//! and `session/cancel` are handled inline so that a pipelined `session/new` sees the
//! initialization and a cancel takes effect at once. The writer is the only task that touches
//! the output: it coalesces queued frames into one buffered write and flushes when its queue
//! drains, and it drops the updates of a turn that arrive after that turn's answer.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures_util::FutureExt;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::io::{
    AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter,
};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{Instrument, debug, debug_span, warn};

use crate::agent::DynAgent;
use crate::rpc::{self, Incoming};
use crate::schema::{self, ErrorCode, ProtocolVersion, RequestId, SessionId};
use crate::{Agent, Error, Prompt, Result, Session};

/// Frames queued for the writer; a producer faster than the pipe waits here.
const QUEUE_FRAMES: usize = 1024;
/// How long a cancelled turn may keep running to wind down before it is dropped.
const CANCEL_GRACE: Duration = Duration::from_millis(50);
/// How long handlers may take to finish once the client has closed the connection.
const SHUTDOWN_WAIT: Duration = Duration::from_millis(500);
/// Longest accepted input line; a longer one is answered as a parse error and skipped.
const MAX_LINE: usize = 64 * 1024 * 1024;

/// Serves `agent` on the process's stdin and stdout until the client closes stdin.
///
/// Everything written to stdout is a protocol frame: log through `tracing` to stderr.
pub async fn serve_stdio<A: Agent>(agent: A) -> Result<()> {
    let (reader, writer) = stdio::open();
    let served = serve(agent, reader, writer).await;
    stdio::restore();
    served
}

/// The process's stdin and stdout as async streams.
///
/// When they are pipes (as under every ACP client), they are driven by the runtime's event
/// loop directly: `tokio::io::stdin()`/`stdout()` would hand every read and write to the
/// blocking thread pool, two extra thread hops on the path of each message. Anything else
/// (a terminal, a file) falls back to those.
mod stdio {
    use tokio::io::{AsyncRead, AsyncWrite};

    pub(super) type Reader = Box<dyn AsyncRead + Unpin + Send>;
    pub(super) type Writer = Box<dyn AsyncWrite + Unpin + Send>;

    #[cfg(unix)]
    pub(super) fn open() -> (Reader, Writer) {
        use std::os::fd::AsFd;
        use tokio::net::unix::pipe;
        let reader: Reader = match std::io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .and_then(pipe::Receiver::from_owned_fd)
        {
            Ok(pipe) => Box::new(pipe),
            Err(_) => Box::new(tokio::io::stdin()),
        };
        let writer: Writer = match std::io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .and_then(pipe::Sender::from_owned_fd)
        {
            Ok(pipe) => Box::new(pipe),
            Err(_) => Box::new(tokio::io::stdout()),
        };
        (reader, writer)
    }

    /// Puts stdin and stdout back in blocking mode (the pipe ends share their mode with the
    /// duplicates made by [`open`]), for whatever the process does after serving.
    #[cfg(unix)]
    pub(super) fn restore() {
        use std::os::fd::AsFd;
        use tokio::net::unix::pipe;
        if let Ok(pipe) = std::io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .and_then(pipe::Receiver::from_owned_fd)
        {
            let _ = pipe.into_blocking_fd();
        }
        if let Ok(pipe) = std::io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .and_then(pipe::Sender::from_owned_fd)
        {
            let _ = pipe.into_blocking_fd();
        }
    }

    #[cfg(not(unix))]
    pub(super) fn open() -> (Reader, Writer) {
        (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
    }

    #[cfg(not(unix))]
    pub(super) fn restore() {}
}

/// Serves `agent` over any byte stream pair until `reader` reaches end of file.
///
/// On end of file, running turns are cancelled and answered, requests awaiting the client
/// fail with [`Error::ConnectionClosed`], and the call returns `Ok(())`.
pub async fn serve<A, R, W>(agent: A, reader: R, writer: W) -> Result<()>
where
    A: Agent,
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    static CONNECTIONS: AtomicU64 = AtomicU64::new(0);
    let span = debug_span!("acp", conn = CONNECTIONS.fetch_add(1, Ordering::Relaxed));
    let (tx, rx) = mpsc::channel(QUEUE_FRAMES);
    let agent = Arc::new(agent);
    let conn = Arc::new(Conn::new(tx, agent.clone()));
    let writer_task = tokio::spawn(write_loop(rx, writer, conn.clone()).instrument(span.clone()));
    let router = Router {
        agent,
        conn: conn.clone(),
        tasks: TaskTracker::new(),
    };
    let read = router.read_loop(reader).instrument(span.clone()).await;

    // Shut down: cancel every turn, fail pending requests, let the turns answer, then stop the
    // writer once everything queued before the stop marker is written.
    // Every turn's token is a child of `closed`.
    conn.closed.cancel();
    conn.pending
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
    router.tasks.close();
    if tokio::time::timeout(SHUTDOWN_WAIT, router.tasks.wait())
        .await
        .is_err()
    {
        warn!("some handlers did not finish after the client closed the connection");
    }
    let _ = conn.out.send(Frame::stop()).await;
    let written = writer_task.await;
    debug!(parent: &span, "connection closed");
    read?;
    match written {
        Ok(result) => result.or_else(|e| {
            // The client going away first is a normal way for a session to end.
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                Ok(())
            } else {
                Err(Error::Io(e))
            }
        }),
        Err(join) => Err(Error::msg(format!("the writer task failed: {join}"))),
    }
}

/// One serialized frame on its way to the client.
pub(crate) struct Frame {
    bytes: Vec<u8>,
    /// The turn this frame belongs to: dropped if that turn was already answered.
    turn: Option<Arc<Turn>>,
    kind: FrameKind,
}

#[derive(PartialEq, Eq)]
enum FrameKind {
    Normal,
    /// The answer to `turn`'s `session/prompt`: nothing of that turn may follow it.
    EndsTurn,
    /// Stops the writer after everything queued before it.
    Stop,
}

impl Frame {
    pub(crate) fn new(bytes: Vec<u8>, turn: Option<Arc<Turn>>) -> Self {
        Frame {
            bytes,
            turn,
            kind: FrameKind::Normal,
        }
    }

    fn stop() -> Self {
        Frame {
            bytes: Vec::new(),
            turn: None,
            kind: FrameKind::Stop,
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut rx: mpsc::Receiver<Frame>,
    writer: W,
    conn: Arc<Conn>,
) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(64 * 1024, writer);
    let result = async {
        while let Some(mut frame) = rx.recv().await {
            // Write everything already queued, then flush once.
            loop {
                match frame.kind {
                    FrameKind::Stop => {
                        out.flush().await?;
                        return Ok(());
                    }
                    _ if frame
                        .turn
                        .as_ref()
                        .is_some_and(|t| t.answered.load(Ordering::Acquire)) =>
                    {
                        debug!("dropped an update sent after its turn was answered");
                    }
                    kind => {
                        out.write_all(&frame.bytes).await?;
                        if kind == FrameKind::EndsTurn
                            && let Some(turn) = &frame.turn
                        {
                            turn.answered.store(true, Ordering::Release);
                        }
                    }
                }
                match rx.try_recv() {
                    Ok(next) => frame = next,
                    Err(_) => break,
                }
            }
            out.flush().await?;
        }
        Ok(())
    }
    .await;
    if let Err(e) = &result {
        debug!("writing to the client failed: {e}");
    }
    // Nothing more can reach the client: wake everyone waiting on it.
    conn.closed.cancel();
    conn.pending
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
    result
}

/// What the client told us in `initialize`.
#[derive(Debug)]
pub(crate) struct ClientInfo {
    pub capabilities: schema::ClientCapabilities,
}

type PendingMap = HashMap<i64, oneshot::Sender<std::result::Result<Box<RawValue>, schema::Error>>>;

/// State shared by the reader, the writer and every [`Session`] handle.
pub(crate) struct Conn {
    out: mpsc::Sender<Frame>,
    pending: Mutex<PendingMap>,
    next_id: AtomicI64,
    pub(crate) client: OnceLock<ClientInfo>,
    sessions: Mutex<HashMap<SessionId, Arc<SessionState>>>,
    /// Running turns by the id of their `session/prompt`, for `$/cancel_request`.
    prompts: Mutex<HashMap<RequestId, Arc<Turn>>>,
    /// Cancelled when the connection is closing: no answer from the client will come.
    pub(crate) closed: CancellationToken,
    /// The agent, for tool calls by name.
    pub(crate) agent: Arc<dyn DynAgent>,
}

impl Conn {
    fn new(out: mpsc::Sender<Frame>, agent: Arc<dyn DynAgent>) -> Self {
        Conn {
            out,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(0),
            client: OnceLock::new(),
            sessions: Mutex::new(HashMap::new()),
            prompts: Mutex::new(HashMap::new()),
            closed: CancellationToken::new(),
            agent,
        }
    }

    pub(crate) fn client_capabilities(&self) -> &schema::ClientCapabilities {
        static NONE: OnceLock<schema::ClientCapabilities> = OnceLock::new();
        match self.client.get() {
            Some(info) => &info.capabilities,
            None => NONE.get_or_init(schema::ClientCapabilities::default),
        }
    }

    /// Queues a frame without waiting; `false` if the queue is full or closed.
    pub(crate) fn try_send(&self, frame: Frame) -> bool {
        self.out.try_send(frame).is_ok()
    }

    pub(crate) async fn send(&self, frame: Frame) -> Result<()> {
        self.out
            .send(frame)
            .await
            .map_err(|_| Error::ConnectionClosed)
    }

    fn session(&self, id: &SessionId) -> Option<Arc<SessionState>> {
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
    }

    /// Sends a request to the client and waits for its answer, or for `cancel`.
    pub(crate) async fn request<P: Serialize, T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        cancel: Option<&CancellationToken>,
    ) -> Result<T> {
        if self.closed.is_cancelled() {
            return Err(Error::ConnectionClosed);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        // Whatever happens next, the entry must not outlive this call.
        struct Forget<'a>(&'a Conn, i64);
        impl Drop for Forget<'_> {
            fn drop(&mut self) {
                self.0
                    .pending
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&self.1);
            }
        }
        let _forget = Forget(self, id);
        self.send(Frame::new(rpc::encode_request(id, method, params), None))
            .await?;
        let cancelled = async {
            match cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        // A cancel read before the answer wins, even when both are ready: once the reader has
        // seen `session/cancel`, no client call of the turn succeeds.
        let answer = tokio::select! {
            biased;
            () = cancelled => return Err(Error::Cancelled),
            answer = rx => answer.map_err(|_| Error::ConnectionClosed)?,
            () = self.closed.cancelled() => return Err(Error::ConnectionClosed),
        };
        let raw = answer.map_err(Error::from_rpc)?;
        serde_json::from_str(raw.get()).map_err(|e| {
            Error::msg(format!(
                "the client's answer to `{method}` does not match the protocol: {e}"
            ))
        })
    }
}

/// One session known to this connection.
pub(crate) struct SessionState {
    pub id: SessionId,
    pub cwd: PathBuf,
    pub mcp_servers: Vec<schema::McpServer>,
    pub conn: Arc<Conn>,
    /// The running prompt turn, if any.
    turn: Mutex<Option<Arc<Turn>>>,
    /// Answers the user gave with "always", per permission key (see [`Session`]).
    pub remembered: Mutex<HashMap<String, bool>>,
    pub next_tool_call: AtomicU64,
    /// The author's per-session values, one per type (see [`Session::state`]).
    pub values: Mutex<HashMap<std::any::TypeId, Arc<dyn std::any::Any + Send + Sync>>>,
}

impl SessionState {
    fn cancel_turn(&self) {
        if let Some(turn) = self.turn.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            turn.cancel.cancel();
        }
    }
}

/// One prompt turn.
pub(crate) struct Turn {
    pub cancel: CancellationToken,
    /// Set by the turn's task just before its answer is queued.
    pub closing: AtomicBool,
    /// Set by the writer when the answer is written; later frames of the turn are dropped.
    answered: AtomicBool,
    /// Tool calls started and not yet finished, failed by the runtime when the turn ends.
    pub open_tool_calls: Mutex<Vec<schema::ToolCallId>>,
}

impl Turn {
    fn new(parent: &CancellationToken) -> Self {
        Turn {
            cancel: parent.child_token(),
            closing: AtomicBool::new(false),
            answered: AtomicBool::new(false),
            open_tool_calls: Mutex::new(Vec::new()),
        }
    }
}

/// What routing a request did: answered it on the spot, or started a task that will.
enum Routed {
    Answer(Box<schema::InitializeResponse>),
    Spawned,
}

struct Router<A> {
    agent: Arc<A>,
    conn: Arc<Conn>,
    tasks: TaskTracker,
}

impl<A: Agent> Router<A> {
    async fn read_loop<R: AsyncRead + Unpin>(&self, reader: R) -> Result<()> {
        let mut reader = BufReader::with_capacity(64 * 1024, reader);
        let mut line = Vec::with_capacity(4096);
        loop {
            line.clear();
            let mut limited = (&mut reader).take(MAX_LINE as u64 + 1);
            let n = tokio::select! {
                n = limited.read_until(b'\n', &mut line) => n?,
                // The writer failed: the client cannot hear us any more.
                () = self.conn.closed.cancelled() => return Ok(()),
            };
            if n == 0 {
                debug!("the client closed the connection");
                return Ok(());
            }
            if line.len() > MAX_LINE && !line.ends_with(b"\n") {
                // Skip the rest of the oversized line.
                while !line.ends_with(b"\n") {
                    line.clear();
                    if (&mut reader)
                        .take(1 << 20)
                        .read_until(b'\n', &mut line)
                        .await?
                        == 0
                    {
                        break;
                    }
                }
                let error = schema::Error::new(
                    ErrorCode::ParseError.into(),
                    format!("message longer than {MAX_LINE} bytes"),
                );
                self.reply_err(&RequestId::Null, error).await;
                continue;
            }
            let text = line.trim_ascii();
            if text.is_empty() {
                continue;
            }
            self.handle_line(text).await;
        }
    }

    async fn handle_line(&self, line: &[u8]) {
        match rpc::parse(line) {
            Err(rejected) => {
                debug!(error = %rejected.error.message, "rejected an incoming line");
                self.reply_err(&rejected.id, rejected.error).await;
            }
            Ok(Incoming::Response { id, result }) => {
                let RequestId::Number(n) = id else {
                    debug!(%id, "ignored a response to an id we never used");
                    return;
                };
                let waiter = self
                    .conn
                    .pending
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&n);
                match waiter {
                    Some(tx) => {
                        let _ = tx.send(result.map(RawValue::to_owned));
                    }
                    None => debug!(id = n, "ignored a response nobody waits for"),
                }
            }
            Ok(Incoming::Notification { method, params }) => self.notification(&method, params),
            Ok(Incoming::Request { id, method, params }) => {
                self.request(id, &method, params).await;
            }
        }
    }

    fn notification(&self, method: &str, params: Option<&RawValue>) {
        match method {
            "session/cancel" => match rpc::params::<schema::CancelNotification>(method, params) {
                Ok(cancel) => match self.conn.session(&cancel.session_id) {
                    Some(session) => {
                        debug!(session = %cancel.session_id, "cancel requested");
                        session.cancel_turn();
                    }
                    None => debug!(session = %cancel.session_id, "cancel for an unknown session"),
                },
                Err(e) => debug!(error = %e.message, "ignored a malformed session/cancel"),
            },
            // Protocol-level cancellation of one request: for a prompt, cancels its turn.
            "$/cancel_request" => {
                if let Ok(cancel) = rpc::params::<schema::CancelRequestNotification>(method, params)
                    && let Some(turn) = self
                        .conn
                        .prompts
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get(&cancel.request_id)
                {
                    debug!(request = %cancel.request_id, "prompt cancelled by request id");
                    turn.cancel.cancel();
                }
            }
            other => debug!(method = other, "ignored a notification"),
        }
    }

    async fn reply_err(&self, id: &RequestId, error: schema::Error) {
        let _ = self
            .conn
            .send(Frame::new(rpc::encode_error(id, &error), None))
            .await;
    }

    async fn reply<T: Serialize>(&self, id: &RequestId, result: Result<T>) {
        reply(&self.conn, id, result).await;
    }

    async fn request(&self, id: RequestId, method: &str, params: Option<&RawValue>) {
        let initialized = self.conn.client.get().is_some();
        // Params are parsed here, so bad params are answered without spawning anything.
        let routed = match method {
            "initialize" => rpc::params(method, params)
                .map(|req| Routed::Answer(Box::new(self.initialize(req)))),
            _ if !initialized && self.routes(method) => Err(schema::Error::new(
                ErrorCode::InvalidRequest.into(),
                format!("`{method}` was sent before `initialize`; call `initialize` first"),
            )),
            "session/new" => rpc::params(method, params).map(|r| self.spawn(&id, r, new_session)),
            "session/load" if self.routes(method) => {
                rpc::params(method, params).map(|r| self.spawn(&id, r, load_session))
            }
            "session/prompt" => match rpc::params(method, params) {
                Ok(req) => self.prompt(&id, req),
                Err(e) => Err(e),
            },
            "session/set_mode" => rpc::params(method, params).map(|r| self.spawn(&id, r, set_mode)),
            "session/set_config_option" => {
                rpc::params(method, params).map(|r| self.spawn(&id, r, set_config_option))
            }
            "authenticate" if self.routes(method) => {
                rpc::params(method, params).map(|r| self.spawn(&id, r, authenticate))
            }
            _ => Err(Error::method_not_found(method).to_rpc()),
        };
        match routed {
            Ok(Routed::Answer(answer)) => self.reply(&id, Ok(answer)).await,
            Ok(Routed::Spawned) => {}
            Err(e) => self.reply_err(&id, e).await,
        }
    }

    /// Whether `method` is routed to the agent (advertised where it needs advertising).
    fn routes(&self, method: &str) -> bool {
        match method {
            "session/new" | "session/prompt" | "session/set_mode" | "session/set_config_option" => {
                true
            }
            "session/load" => self.agent.capabilities().load_session,
            "authenticate" => !self.agent.auth_methods().is_empty(),
            _ => false,
        }
    }

    fn initialize(&self, req: schema::InitializeRequest) -> schema::InitializeResponse {
        let version = if req.protocol_version == ProtocolVersion::V1 {
            req.protocol_version
        } else {
            ProtocolVersion::LATEST
        };
        let info = ClientInfo {
            capabilities: req.client_capabilities,
        };
        debug!(?info, "initialized");
        if self.conn.client.set(info).is_err() {
            debug!("`initialize` sent twice; keeping the first client capabilities");
        }
        schema::InitializeResponse::new(version)
            .agent_capabilities(self.agent.capabilities())
            .auth_methods(self.agent.auth_methods())
            .agent_info(self.agent.info())
    }

    /// Runs a request handler as its own task; the handler answers, or a panic does.
    fn spawn<P, F>(
        &self,
        id: &RequestId,
        params: P,
        handler: fn(Arc<A>, Arc<Conn>, RequestId, P) -> F,
    ) -> Routed
    where
        P: Send + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        let id = id.clone();
        let conn = self.conn.clone();
        let fut = handler(self.agent.clone(), conn.clone(), id.clone(), params);
        self.tasks.spawn(async move {
            if let Err(panic) = AssertUnwindSafe(fut).catch_unwind().await {
                reply(
                    &conn,
                    &id,
                    Err::<(), _>(Error::panicked("the agent", panic.as_ref())),
                )
                .await;
            }
        });
        Routed::Spawned
    }

    fn prompt(
        &self,
        id: &RequestId,
        req: schema::PromptRequest,
    ) -> std::result::Result<Routed, schema::Error> {
        let id = id.clone();
        let state = self
            .conn
            .session(&req.session_id)
            .ok_or_else(|| schema::Error::session_not_found(req.session_id.clone()))?;
        let turn = Arc::new(Turn::new(&self.conn.closed));
        {
            let mut slot = state.turn.lock().unwrap_or_else(|e| e.into_inner());
            if slot.is_some() {
                return Err(schema::Error::new(
                    ErrorCode::InvalidRequest.into(),
                    format!(
                        "session `{}` is already running a prompt turn; wait for its answer or cancel it",
                        state.id
                    ),
                ));
            }
            *slot = Some(turn.clone());
        }
        self.conn
            .prompts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.clone(), turn.clone());
        let agent = self.agent.clone();
        let span = debug_span!("turn", session = %state.id);
        self.tasks.spawn(
            async move {
                let cx = Session::new(state.clone(), Some(turn.clone()));
                let result = run_turn(&*agent, &cx, Prompt::from_request(req), &turn.cancel).await;
                let cancelled = turn.cancel.is_cancelled();
                debug!(cancelled, ok = result.is_ok(), "turn finished");
                crate::tool::fail_open_tool_calls(&cx, &turn).await;
                turn.closing.store(true, Ordering::Release);
                // Free the session before the answer leaves: a client may send its next
                // prompt the moment it reads the answer.
                state.turn.lock().unwrap_or_else(|e| e.into_inner()).take();
                state
                    .conn
                    .prompts
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&id);
                let bytes = match result {
                    // `?` on a cancelled call ends the turn as cancelled, as does a cancel.
                    _ if cancelled => rpc::encode_result(
                        &id,
                        &schema::PromptResponse::new(schema::StopReason::Cancelled),
                    ),
                    Err(Error::Cancelled) => rpc::encode_result(
                        &id,
                        &schema::PromptResponse::new(schema::StopReason::Cancelled),
                    ),
                    Ok(reason) => rpc::encode_result(&id, &schema::PromptResponse::new(reason)),
                    Err(e) => {
                        warn!("the prompt turn failed: {e}");
                        rpc::encode_error(&id, &e.to_rpc())
                    }
                };
                let frame = Frame {
                    bytes,
                    turn: Some(turn.clone()),
                    kind: FrameKind::EndsTurn,
                };
                let _ = state.conn.send(frame).await;
            }
            .instrument(span),
        );
        Ok(Routed::Spawned)
    }
}

/// Runs one turn: the author's future, raced against cancellation with a short grace period,
/// with panics turned into errors.
async fn run_turn<A: Agent>(
    agent: &A,
    cx: &Session,
    prompt: Prompt,
    cancel: &CancellationToken,
) -> Result<schema::StopReason> {
    let mut fut = std::pin::pin!(AssertUnwindSafe(agent.prompt(cx, prompt)).catch_unwind());
    let outcome = tokio::select! {
        out = &mut fut => out,
        () = cancel.cancelled() => match tokio::time::timeout(CANCEL_GRACE, &mut fut).await {
            Ok(out) => out,
            Err(_) => {
                debug!("the turn ignored cancellation; dropped it");
                return Err(Error::Cancelled);
            }
        },
    };
    outcome.unwrap_or_else(|panic| Err(Error::panicked("the agent", panic.as_ref())))
}

async fn reply<T: Serialize>(conn: &Conn, id: &RequestId, result: Result<T>) {
    let bytes = match result {
        Ok(value) => rpc::encode_result(id, &value),
        Err(e) => rpc::encode_error(id, &e.to_rpc()),
    };
    let _ = conn.send(Frame::new(bytes, None)).await;
}

fn new_state(
    conn: &Arc<Conn>,
    id: SessionId,
    cwd: PathBuf,
    mcp_servers: Vec<schema::McpServer>,
) -> Arc<SessionState> {
    Arc::new(SessionState {
        id,
        cwd,
        mcp_servers,
        conn: conn.clone(),
        turn: Mutex::new(None),
        remembered: Mutex::new(HashMap::new()),
        next_tool_call: AtomicU64::new(0),
        values: Mutex::new(HashMap::new()),
    })
}

fn fresh_session_id() -> SessionId {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static PROCESS: OnceLock<u64> = OnceLock::new();
    let process = *PROCESS.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        nanos ^ u64::from(std::process::id()).rotate_left(32)
    });
    SessionId::new(format!(
        "sess_{process:016x}_{}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Registers the session, answers, then announces its slash commands (the client must know
/// the session id before it receives updates for it).
async fn start_session<T: Serialize>(
    conn: &Conn,
    id: &RequestId,
    state: Arc<SessionState>,
    answer: T,
    commands: Vec<schema::AvailableCommand>,
) {
    let session_id = state.id.clone();
    conn.sessions
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(session_id.clone(), state);
    reply(conn, id, Ok(answer)).await;
    if !commands.is_empty() {
        let update = schema::SessionNotification::new(
            session_id,
            schema::SessionUpdate::AvailableCommandsUpdate(schema::AvailableCommandsUpdate::new(
                commands,
            )),
        );
        let frame = rpc::encode_notification("session/update", &update);
        let _ = conn.send(Frame::new(frame, None)).await;
    }
}

async fn new_session<A: Agent>(
    agent: Arc<A>,
    conn: Arc<Conn>,
    id: RequestId,
    req: schema::NewSessionRequest,
) {
    let state = new_state(&conn, fresh_session_id(), req.cwd, req.mcp_servers);
    match agent.new_session(&Session::new(state.clone(), None)).await {
        Ok(setup) => {
            let answer = schema::NewSessionResponse::new(state.id.clone())
                .modes(setup.modes)
                .config_options(setup.config_options);
            start_session(&conn, &id, state, answer, setup.commands).await;
        }
        Err(e) => reply(&conn, &id, Err::<(), _>(e)).await,
    }
}

async fn load_session<A: Agent>(
    agent: Arc<A>,
    conn: Arc<Conn>,
    id: RequestId,
    req: schema::LoadSessionRequest,
) {
    let state = new_state(&conn, req.session_id, req.cwd, req.mcp_servers);
    match agent.load_session(&Session::new(state.clone(), None)).await {
        Ok(setup) => {
            let answer = schema::LoadSessionResponse::new()
                .modes(setup.modes)
                .config_options(setup.config_options);
            start_session(&conn, &id, state, answer, setup.commands).await;
        }
        Err(e) => reply(&conn, &id, Err::<(), _>(e)).await,
    }
}

fn known(conn: &Conn, id: &SessionId) -> Result<Arc<SessionState>> {
    conn.session(id)
        .ok_or_else(|| Error::from_rpc(schema::Error::session_not_found(id.clone())))
}

async fn set_mode<A: Agent>(
    agent: Arc<A>,
    conn: Arc<Conn>,
    id: RequestId,
    req: schema::SetSessionModeRequest,
) {
    let result = async {
        let state = known(&conn, &req.session_id)?;
        agent
            .set_mode(&Session::new(state, None), req.mode_id)
            .await?;
        Ok(schema::SetSessionModeResponse::new())
    };
    reply(&conn, &id, result.await).await;
}

async fn set_config_option<A: Agent>(
    agent: Arc<A>,
    conn: Arc<Conn>,
    id: RequestId,
    req: schema::SetSessionConfigOptionRequest,
) {
    let result = async {
        let state = known(&conn, &req.session_id)?;
        let options = agent
            .set_config_option(&Session::new(state, None), req.config_id, req.value)
            .await?;
        Ok(schema::SetSessionConfigOptionResponse::new(options))
    };
    reply(&conn, &id, result.await).await;
}

async fn authenticate<A: Agent>(
    agent: Arc<A>,
    conn: Arc<Conn>,
    id: RequestId,
    req: schema::AuthenticateRequest,
) {
    let result = agent.authenticate(req.method_id).await;
    reply(
        &conn,
        &id,
        result.map(|()| schema::AuthenticateResponse::new()),
    )
    .await;
}
