//! ACP over the network (feature `http`): the `/acp` endpoint of ACP's transport RFD
//! ("Streamable HTTP & WebSocket Transport"), served by axum.
//!
//! Each network connection is one [`serve`](crate::serve) of the agent over a pair of
//! bounded message channels (`bridge`), so every guarantee of the stdio runtime holds per
//! connection: ordering, cancellation, bounded queues, JSON-RPC errors for bad input, v1 and
//! v2 negotiated by `initialize`. The runtime hands over each message it sends with its
//! route (the session it is of, the request it answers): the network delivers it by that,
//! never parsing what the agent sends. This module owns what is the network's own:
//!
//! | module | owns |
//! | --- | --- |
//! | `config` | [`HttpConfig`]: the bearer tokens or host check (and the user each names), trusted origins, limits |
//! | here | the router, the guard every request passes first (Origin `403`, credentials `401`, the request's user), the connection limit and each user's share of it (`503`), binding and the accept loop |
//! | `socket` | each TCP connection's deadlines: admitted within the header timeout, closed when idle |
//! | `refused` | the refusals, counted by kind in the log |
//! | `bridge` | one connection as one `serve` over bounded message channels, for its user |
//! | `ws` | WebSocket: a GET with `Upgrade: websocket`, one connection per socket |
//! | `stream` | Streamable HTTP: POST, the connection-scoped and per-session SSE GETs, DELETE |
//! | `sse` | each SSE stream's queue and reader, its event ids, and resuming it (`Last-Event-ID`) |
//!
//! Start with [`Server::serve_http`](crate::Server::serve_http), or mount
//! [`Server::router`](crate::Server::router) in an existing axum application.

// A refusal is the response itself, built once per refused request: boxing it buys nothing.
#![allow(clippy::result_large_err)]

mod bridge;
mod config;
mod grants;
mod refused;
mod socket;
mod sse;
mod stream;
mod ws;

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, FromRequestParts, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http_body_util::BodyExt;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tracing::{debug, info};

/// The axum this service is built on (to mount [`Server::router`] with the same version).
pub use axum;
pub use config::{HttpConfig, TOKEN_FILE_VAR, TOKEN_VAR, TOKENS_FILE_VAR, TOKENS_VAR};
pub use grants::{ALLOW_PROVIDERS_VAR, MCP_COMMANDS_VAR, MCP_URLS_VAR, PASS_ENV_VAR, ROOTS_VAR};
/// What a host's check ([`HttpConfig::check`]) sees of a request: its method, URI and headers.
pub use http::request::Parts as RequestParts;

use crate::agent::Agent;
use crate::serve::Server;
use crate::sync::lock;
use crate::transport::Sink;
use crate::transport::messages::Messages;
use crate::{Error, Result};
use bridge::{ServeFn, Started};
use refused::{Refusal, Refusals};
use socket::{Expiry, Socket, Waiting};

/// The endpoint's path, as the RFD names it.
pub const PATH: &str = "/acp";

/// The header carrying a connection's id (the RFD's `Acp-Connection-Id`).
pub const CONNECTION_ID: &str = "acp-connection-id";

/// The header carrying a session's id (the RFD's `Acp-Session-Id`).
pub const SESSION_ID: &str = "acp-session-id";

/// What every request of the service shares.
#[derive(Clone)]
struct Shared {
    config: Arc<HttpConfig>,
    serve: ServeFn,
    permits: Arc<Semaphore>,
    /// How many connections each named user holds.
    users: UserCounts,
    refusals: Arc<Refusals>,
    connections: stream::Connections,
    /// Where the agent records its sessions (to tell a session stream's id from a bogus one).
    store: Option<Arc<dyn crate::store::SessionStore>>,
}

impl<A: Agent> Server<A> {
    /// The `/acp` endpoint as an axum router, to mount in an existing application (or serve
    /// with [`serve_http`](Server::serve_http)): WebSocket and Streamable HTTP, behind
    /// `config`'s checks (see [`HttpConfig`]). Sessions are recorded in the store the server
    /// was given, else in the one `$ACP_DATABASE_URL` names, else in the agent's default
    /// on-disk store (and the session lease is `$ACP_SESSION_LEASE_MS` unless set), shared by
    /// every connection: a client that reconnects loads its
    /// sessions (`session/load`, `session/resume`) on its new connection. A turn whose client
    /// went away keeps running (up to [`DEFAULT_DETACHED_TURNS`](crate::DEFAULT_DETACHED_TURNS) unless
    /// [`detached_turns`](Server::detached_turns) says otherwise), and the client that comes
    /// back gets all of it.
    ///
    /// Fails when `config` would let anyone in (an empty token) or the store cannot be
    /// opened.
    ///
    /// ```no_run
    /// # async fn demo(agent: impl acp_core::Agent) -> acp_core::Result<()> {
    /// let acp = acp_core::Server::new(agent).router(acp_core::net::HttpConfig::from_env()?)?;
    /// // beside the application's own routes
    /// let app = acp_core::net::axum::Router::new().merge(acp);
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
    /// acp_core::net::axum::serve(listener, app).await?;
    /// # Ok(()) }
    /// ```
    pub fn router(self, config: HttpConfig) -> Result<axum::Router> {
        Ok(self.build(config)?.0)
    }

    /// The router, what its requests share, and where sessions are recorded (for the log).
    fn build(self, config: HttpConfig) -> Result<(axum::Router, Shared, String)> {
        config.validate()?;
        let grants = Arc::new(config.grants.resolve(&self.agent_name())?);
        let recorded = self.describe_store();
        let mut server = self.env_defaults()?;
        server
            .config
            .detach
            .get_or_insert(crate::serve::DEFAULT_DETACHED_TURNS);
        let server = Arc::new(server.into_shared());
        let store = server.store();
        let serve: ServeFn = Arc::new(move |user| {
            let server = server.clone();
            let grant = grants.grant(user.as_deref());
            let (input, messages) = Messages::channel(server.max_line());
            let (sink, output) = Sink::messages();
            let running = Box::pin(async move {
                if let Err(e) = server.serve_on(messages, sink, user, grant).await {
                    debug!("a network connection ended: {e}");
                }
            });
            Started {
                input,
                output,
                running,
            }
        });
        let max_body = config.max_body;
        let shared = Shared {
            permits: Arc::new(Semaphore::new(config.max_connections)),
            users: Arc::default(),
            refusals: Arc::default(),
            config: Arc::new(config),
            serve,
            connections: stream::Connections::default(),
            store,
        };
        let endpoint = get(get_acp)
            .post(stream::post)
            .delete(stream::delete)
            .layer(middleware::from_fn_with_state(shared.clone(), guard));
        let router = axum::Router::new()
            .route(PATH, endpoint)
            .layer(DefaultBodyLimit::max(max_body))
            .with_state(shared.clone());
        Ok((router, shared, recorded))
    }

    /// Serves the agent on `addr` (`http://ADDR/acp`) until the process ends (it returns
    /// only if it cannot listen): see [`router`](Server::router). HTTP/1.1 and HTTP/2
    /// (cleartext, prior knowledge; TLS is a proxy's job). Bind a loopback address (`127.0.0.1:8080`) unless the
    /// agent is meant to be reached from other machines, and then behind TLS.
    pub async fn serve_http(self, addr: SocketAddr, config: HttpConfig) -> Result<()> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| Error::io(format_args!("listening on {addr}"), e))?;
        self.serve_http_on(listener, config).await
    }

    /// Serves the agent on a listener already bound (e.g. to port 0): see
    /// [`serve_http`](Server::serve_http).
    pub async fn serve_http_on(
        self,
        listener: tokio::net::TcpListener,
        config: HttpConfig,
    ) -> Result<()> {
        let (router, shared, recorded) = self.build(config)?;
        let config = &shared.config;
        if let Ok(addr) = listener.local_addr() {
            info!(
                "serving ACP on http://{addr}{PATH}: WebSocket and Streamable HTTP, over \
                 HTTP/1.1 and HTTP/2 (cleartext); {}; sessions recorded in {recorded}; at most \
                 {} connections{}, {} sockets awaiting credentials, {:?} to send them",
                config.describe_users(),
                config.max_connections,
                if config.names_users() {
                    format!(" ({} per user)", config.user_share())
                } else {
                    String::new()
                },
                config.max_unadmitted,
                config.header_timeout,
            );
        }
        accept(listener, router, shared).await
    }
}

/// An HTTP/2 connection idle this long is pinged, ...
const H2_PING_EVERY: Duration = Duration::from_secs(30);

/// ... and closed when the ping is not answered within this.
const H2_PING_TIMEOUT: Duration = Duration::from_secs(20);

/// Streams one HTTP/2 connection may have open at once (its SSE streams and WebSockets
/// included): a connection has at most 256 session streams.
const H2_MAX_STREAMS: u32 = 300;

/// Serves `router` on every connection `listener` accepts, over HTTP/1.1 or HTTP/2 (the RFD
/// requires 2; cleartext HTTP/2 with prior knowledge is accepted), WebSocket upgrades
/// included. Like `axum::serve`, plus each socket's deadlines (see `socket`): one that has
/// not sent a request with valid credentials within the header timeout is closed, whatever
/// it sent; at most `max_unadmitted` wait for that at once (a new one beyond closes the
/// oldest waiting); an admitted one with nothing in progress for the idle timeout is closed.
async fn accept(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    shared: Shared,
) -> Result<()> {
    let config = shared.config.clone();
    let waiting = Waiting::new(config.max_unadmitted);
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(H2_PING_EVERY)
        .keep_alive_timeout(H2_PING_TIMEOUT)
        .max_concurrent_streams(H2_MAX_STREAMS)
        .enable_connect_protocol();
    loop {
        let (tcp, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            // A connection reset before it was accepted: next one.
            Err(e) if is_connection_error(&e) => continue,
            // Out of file descriptors, or the like: the listener itself is fine, and
            // connections ending free what it lacks. Wait, as `axum::serve` does.
            Err(e) => {
                tracing::error!("accepting a connection failed: {e}");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let accepted = tokio::time::Instant::now();
        let _ = tcp.set_nodelay(true);
        let socket = Socket::new();
        if waiting.push(socket.clone()) {
            shared.refusals.count(Refusal::Unadmitted);
        }
        let service = TowerToHyperService::new(PerSocket {
            router: router.clone(),
            socket: socket.clone(),
        });
        let builder = builder.clone();
        let (config, refusals) = (config.clone(), shared.refusals.clone());
        tokio::spawn(async move {
            let served = builder.serve_connection_with_upgrades(TokioIo::new(tcp), service);
            tokio::pin!(served);
            let expired = socket.expired(accepted, config.header_timeout, config.idle_timeout);
            let ended = tokio::select! {
                ended = served.as_mut() => ended,
                why = expired => {
                    if why == Expiry::Unadmitted {
                        debug!("closed a connection that sent no request with valid credentials in time");
                        refusals.count(Refusal::Deadline);
                    }
                    if why != Expiry::Idle {
                        socket.end();
                        return;
                    }
                    debug!("closing a connection idle for {:?}", config.idle_timeout);
                    served.as_mut().graceful_shutdown();
                    match tokio::time::timeout(config.header_timeout, served).await {
                        Ok(ended) => ended,
                        Err(_) => return,
                    }
                }
            };
            socket.end();
            if let Err(e) = ended {
                debug!("an HTTP connection ended: {e}");
            }
        });
    }
}

/// The router for one TCP connection: each request finds the connection's [`Socket`] in its
/// extensions (the guard admits it), and keeps it busy until its response body has been sent.
#[derive(Clone)]
struct PerSocket {
    router: axum::Router,
    socket: Arc<Socket>,
}

impl<B> tower_service::Service<http::Request<B>> for PerSocket
where
    axum::Router: tower_service::Service<
            http::Request<B>,
            Response = Response,
            Error = Infallible,
            Future: Send + 'static,
        >,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        let busy = self.socket.busy();
        request.extensions_mut().insert(self.socket.clone());
        let response = tower_service::Service::call(&mut self.router, request);
        Box::pin(async move {
            let response = response.await?;
            Ok(response.map(|body| {
                axum::body::Body::new(body.map_frame(move |frame| {
                    let _in_progress = &busy;
                    frame
                }))
            }))
        })
    }
}

fn is_connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | ConnectionRefused
    )
}

/// Every request passes here first: a browser origin not trusted is `403`, missing or wrong
/// credentials `401`, before the WebSocket upgrade, `initialize` or any connection id is
/// looked at. An admitted request carries its [`User`](config::User) in its extensions, and
/// admits its TCP connection (see `socket`).
async fn guard(State(shared): State<Shared>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    if !shared.config.origin_allowed(&parts) {
        debug!("refused a request from an untrusted Origin");
        shared.refusals.count(Refusal::Origin);
        return (StatusCode::FORBIDDEN, "Origin not allowed").into_response();
    }
    let Some(user) = shared.config.admits(&parts) else {
        debug!("refused a request without valid credentials");
        shared.refusals.count(Refusal::Credentials);
        let mut response = (StatusCode::UNAUTHORIZED, "Unauthorized").into_response();
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"acp\""),
        );
        return response;
    };
    if let Some(socket) = parts.extensions.get::<Arc<Socket>>() {
        socket.admit();
    }
    parts.extensions.insert(user);
    let response = next.run(Request::from_parts(parts, body)).await;
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE {
        shared.refusals.count(Refusal::BodySize);
    }
    response
}

/// GET `/acp`: a WebSocket upgrade, else an SSE stream.
async fn get_acp(State(shared): State<Shared>, request: Request) -> Response {
    let (mut parts, _body) = request.into_parts();
    let upgrade = parts
        .headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    // Over HTTP/2 a WebSocket is an extended CONNECT (RFC 8441), without `Upgrade`.
    let upgrade = upgrade || parts.method == http::Method::CONNECT;
    if !upgrade {
        return stream::get(shared, parts).await;
    }
    let user = user_of(&parts.extensions);
    let busy = parts.extensions.get::<Arc<Socket>>().map(Socket::busy);
    match axum::extract::ws::WebSocketUpgrade::from_request_parts(&mut parts, &()).await {
        Ok(upgrade) => ws::upgrade(shared, upgrade, user, busy),
        Err(rejection) => rejection.into_response(),
    }
}

/// The user the guard admitted the request as.
fn user_of(extensions: &http::Extensions) -> Option<String> {
    extensions
        .get::<config::User>()
        .and_then(|user| user.0.clone())
}

/// How many connections each named user holds.
type UserCounts = Arc<Mutex<HashMap<String, usize>>>;

/// A connection's place among those allowed (and among its user's): released when dropped.
pub(crate) struct Place {
    _permit: OwnedSemaphorePermit,
    /// The user's count, decremented when the place is released.
    user: Option<(UserCounts, String)>,
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Some((users, user)) = self.user.take() {
            let mut users = lock(&users);
            if let Some(n) = users.get_mut(&user) {
                *n -= 1;
                if *n == 0 {
                    users.remove(&user);
                }
            }
        }
    }
}

/// A place among the connections allowed for `user` (within their share when the service
/// names users), or `503` with `Retry-After`.
fn admit(shared: &Shared, user: Option<&str>) -> Result<Place, Response> {
    let unavailable = |why: &'static str| {
        let mut response = (StatusCode::SERVICE_UNAVAILABLE, why).into_response();
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        response
    };
    let refused = {
        let mut users = lock(&shared.users);
        if user
            .is_some_and(|user| users.get(user).copied().unwrap_or(0) >= shared.config.user_share())
        {
            Refusal::UserShare
        } else if let Ok(permit) = shared.permits.clone().try_acquire_owned() {
            let user = user.map(|user| {
                *users.entry(user.to_owned()).or_default() += 1;
                (shared.users.clone(), user.to_owned())
            });
            return Ok(Place {
                _permit: permit,
                user,
            });
        } else {
            Refusal::ConnectionLimit
        }
    };
    shared.refusals.count(refused);
    Err(if refused == Refusal::UserShare {
        debug!("refused a connection: its user holds their share of the connection limit");
        unavailable("Too many connections for this user")
    } else {
        debug!("refused a connection: the server is at its connection limit");
        unavailable("Too many connections")
    })
}

/// A new connection id: 128 bits from the operating system's CSPRNG, in hex.
fn new_id() -> Result<String, Response> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| {
        tracing::error!("no randomness for a connection id: {e}");
        StatusCode::INTERNAL_SERVER_ERROR.into_response()
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
