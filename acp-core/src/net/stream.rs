//! Streamable HTTP on `/acp` (the RFD): `initialize` POSTed without a connection id creates a
//! connection (one `serve`) and is answered `200` with its JSON and `Acp-Connection-Id`;
//! later POSTs are written to the connection's runtime and answered `202`; what the agent
//! sends comes back on SSE GET streams, one connection-scoped and one per session; DELETE
//! ends the connection.
//!
//! Routing follows the RFD and the official TypeScript SDK's server, by the route the runtime
//! hands over with each message (never by reading it): an answer goes where its request came
//! from (the session its POST named, else the connection), but for the answers the runtime
//! says are the connection's (`session/load`'s); a request or notification of the agent to
//! the stream of the session it is of, else to the connection's. A POST that names a session
//! in its params must name it in `Acp-Session-Id` too, and the same one.
//! Each stream is a bounded queue that waits for its reader: a client that does not read
//! stalls its own connection only, and one that stays away past the idle timeout loses it.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Extension;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use super::bridge;
use super::config::{User, constant_time_eq};
use super::refused::Refusal;
use super::sse::{self, Outbox, Reader, Replay};
use super::{CONNECTION_ID, Place, SESSION_ID, Shared, admit, new_id, user_of};
use crate::schema::RequestId;
use crate::sync::lock;
use crate::transport::Route;
use crate::transport::messages::Input;
use crate::transport::sink::{Message, Receiver};

/// The header a client resuming a stream names the last event it got with.
const LAST_EVENT_ID: &str = "last-event-id";

/// Session streams one connection may have.
const MAX_SESSIONS: usize = 256;

/// How long `initialize` may take to be answered.
const INITIALIZE_WAIT: Duration = Duration::from_secs(30);

/// The live Streamable HTTP connections, by id.
#[derive(Clone, Default)]
pub(super) struct Connections(Arc<Mutex<HashMap<String, Arc<Conn>>>>);

impl Connections {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Conn>>> {
        lock(&self.0)
    }

    /// The connection `headers` name, if it exists and was opened with the same credentials
    /// by the same `user` (a connection id is no substitute for them).
    fn find(&self, headers: &HeaderMap, user: &User) -> Result<Arc<Conn>, Response> {
        let Some(id) = headers.get(CONNECTION_ID).and_then(|v| v.to_str().ok()) else {
            return Err(refuse(StatusCode::BAD_REQUEST, "Missing Acp-Connection-Id"));
        };
        let conn = self.lock().get(id).cloned();
        match conn {
            Some(conn)
                if constant_time_eq(&conn.credentials, &credentials(headers))
                    && conn.user == user.0 =>
            {
                Ok(conn)
            }
            _ => Err(refuse(StatusCode::NOT_FOUND, "Unknown Acp-Connection-Id")),
        }
    }

    fn remove(&self, id: &str) {
        if let Some(conn) = self.lock().remove(id) {
            conn.closed.cancel();
        }
    }
}

/// One connection: its runtime's input, where its output goes, and its streams.
struct Conn {
    id: String,
    /// The `Authorization` it was opened with.
    credentials: Vec<u8>,
    /// The user it was opened by (its runtime serves that user).
    user: Option<String>,
    /// Its SSE streams open now (an open stream is not idle).
    streams: std::sync::atomic::AtomicUsize,
    input: Input,
    routes: Mutex<Routes>,
    /// Cancelled when the connection ends (DELETE, idle, its runtime ended).
    closed: CancellationToken,
    /// When a request last came, or a stream was last open.
    seen: Mutex<Instant>,
    /// The places of the POSTs waiting for the agent (`max_requests_per_connection`).
    waiting: Arc<Semaphore>,
}

/// Where answers go, and the streams.
#[derive(Default)]
struct Routes {
    /// The session (or `None`: the connection) each request awaiting its answer came from.
    pending: HashMap<RequestId, Option<String>>,
    /// Who waits for the answer to `initialize`.
    initialize: Option<(RequestId, oneshot::Sender<String>)>,
    connection: Outbox,
    sessions: HashMap<String, Outbox>,
}

impl Conn {
    fn routes(&self) -> MutexGuard<'_, Routes> {
        lock(&self.routes)
    }

    fn touch(&self) {
        *lock(&self.seen) = Instant::now();
    }

    async fn send(&self, message: &[u8]) -> bool {
        bridge::send(&self.input, message).await
    }
}

/// POST `/acp`: a JSON-RPC message from the client. Its body is read only once it has a
/// place: among the connections (and its user's) for one without a connection id, which can
/// only be `initialize`; among its connection's waiting POSTs for the others.
pub(super) async fn post(
    State(shared): State<Shared>,
    Extension(user): Extension<User>,
    request: Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let headers = &parts.headers;
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json",
        );
    }
    if !headers.contains_key(CONNECTION_ID) {
        let place = match admit(&shared, user.0.as_deref()) {
            Ok(place) => place,
            Err(refused) => return refused,
        };
        let (body, message) = match read(&shared, body).await {
            Ok(read) => read,
            Err(refused) => return refused,
        };
        if message.get("method").and_then(Value::as_str) != Some("initialize") {
            return refuse(StatusCode::BAD_REQUEST, "Missing Acp-Connection-Id");
        }
        return match message.get("id").and_then(request_id) {
            Some(id) => initialize(&shared, headers, user.0, place, &body, id).await,
            None => refuse(StatusCode::BAD_REQUEST, "initialize must be a request"),
        };
    }
    let conn = match shared.connections.find(headers, &user) {
        Ok(conn) => conn,
        Err(refused) => return refused,
    };
    conn.touch();
    let Ok(_waiting) = conn.waiting.clone().try_acquire_owned() else {
        debug!("refused a POST: its connection has too many waiting for the agent");
        shared.refusals.count(Refusal::Requests);
        let mut response = refuse(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many requests waiting on this connection",
        );
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return response;
    };
    let (body, message) = match read(&shared, body).await {
        Ok(read) => read,
        Err(refused) => return refused,
    };
    let method = message.get("method").and_then(Value::as_str);
    let id = message.get("id").and_then(request_id);
    if method == Some("initialize") {
        return refuse(
            StatusCode::BAD_REQUEST,
            "initialize on an existing connection",
        );
    }
    let header_session = headers.get(SESSION_ID).and_then(|v| v.to_str().ok());
    if method.is_some() {
        // A request or notification of a session names it in its params (the schema's
        // session-scoped methods all do): the header must name it too.
        let param_session = message.pointer("/params/sessionId");
        if param_session.is_some() && header_session.is_none() {
            return refuse(StatusCode::BAD_REQUEST, "Missing Acp-Session-Id");
        }
        if let (Some(h), Some(p)) = (header_session, param_session)
            && p.as_str() != Some(h)
        {
            return refuse(
                StatusCode::BAD_REQUEST,
                "Acp-Session-Id does not match sessionId",
            );
        }
        if let Some(id) = id {
            conn.routes()
                .pending
                .insert(id, header_session.map(str::to_owned));
        }
    }
    if conn.send(&body).await {
        StatusCode::ACCEPTED.into_response()
    } else {
        shared.connections.remove(&conn.id);
        refuse(StatusCode::NOT_FOUND, "Unknown Acp-Connection-Id")
    }
}

/// A POST's body, up to the size limit (`413`), as one JSON-RPC message (not a batch).
async fn read(shared: &Shared, body: Body) -> Result<(Bytes, Value), Response> {
    let Ok(body) = axum::body::to_bytes(body, shared.config.max_body).await else {
        // Over the limit, or the client went away meanwhile (then nobody reads this).
        return Err(refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            "Request body too large",
        ));
    };
    let message: Value = match serde_json::from_slice(&body) {
        Ok(message) => message,
        Err(_) => return Err(refuse(StatusCode::BAD_REQUEST, "Invalid JSON")),
    };
    if message.is_array() {
        return Err(refuse(
            StatusCode::NOT_IMPLEMENTED,
            "JSON-RPC batches are not supported",
        ));
    }
    if !message.is_object() {
        return Err(refuse(StatusCode::BAD_REQUEST, "Invalid JSON-RPC message"));
    }
    Ok((body, message))
}

/// `initialize` without a connection id: a new connection of `user`'s, answered with its id.
async fn initialize(
    shared: &Shared,
    headers: &HeaderMap,
    user: Option<String>,
    place: Place,
    body: &[u8],
    id: RequestId,
) -> Response {
    let conn_id = match new_id() {
        Ok(id) => id,
        Err(failed) => return failed,
    };
    let bridge = bridge::start(&shared.serve, place, user.clone());
    let (answered, answer) = oneshot::channel();
    let conn = Arc::new(Conn {
        id: conn_id.clone(),
        credentials: credentials(headers),
        user,
        input: bridge.input,
        routes: Mutex::new(Routes {
            initialize: Some((id, answered)),
            ..Routes::default()
        }),
        streams: std::sync::atomic::AtomicUsize::new(0),
        closed: CancellationToken::new(),
        seen: Mutex::new(Instant::now()),
        waiting: Arc::new(Semaphore::new(shared.config.max_requests)),
    });
    tokio::spawn(route(
        conn.clone(),
        bridge.output,
        shared.connections.clone(),
    ));
    tokio::spawn(expire(
        conn.clone(),
        shared.connections.clone(),
        shared.config.idle_timeout,
    ));
    shared
        .connections
        .lock()
        .insert(conn_id.clone(), conn.clone());
    let answer = async {
        if !conn.send(body).await {
            return None;
        }
        answer.await.ok()
    };
    match tokio::time::timeout(INITIALIZE_WAIT, answer).await {
        Ok(Some(answer)) => {
            let mut response = (
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                answer,
            )
                .into_response();
            if let Ok(value) = HeaderValue::from_str(&conn_id) {
                response.headers_mut().insert(CONNECTION_ID, value);
            }
            response
        }
        _ => {
            shared.connections.remove(&conn_id);
            refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "initialize was not answered",
            )
        }
    }
}

/// Carries the agent's output to the streams until the runtime ends or the connection does.
async fn route(conn: Arc<Conn>, mut output: Receiver, connections: Connections) {
    loop {
        let message = tokio::select! {
            message = output.next() => message,
            () = conn.closed.cancelled() => None,
        };
        let Some(message) = message else { break };
        let Some((tx, text)) = destination(&conn, message) else {
            continue;
        };
        let sent = tokio::select! {
            sent = tx.send(text) => sent.is_ok(),
            () = conn.closed.cancelled() => false,
        };
        if !sent {
            break;
        }
    }
    connections.remove(&conn.id);
    // The runtime sees its end of file once every holder of the connection let go of it; the
    // turns it still runs go on, their output discarded here.
    drop(conn);
    output.discard_rest();
}

/// The queue a message of the agent's goes to, by its route, and its text (`None`:
/// delivered, or dropped, here).
fn destination(conn: &Conn, message: Message) -> Option<(mpsc::Sender<String>, String)> {
    let Message { text, route } = message;
    let mut routes = conn.routes();
    let session = match route {
        Route::Answer(id) | Route::ConnectionAnswer(id)
            if routes
                .initialize
                .as_ref()
                .is_some_and(|(waiting, _)| *waiting == id) =>
        {
            if let Some((_, answered)) = routes.initialize.take() {
                let _ = answered.send(text);
            }
            return None;
        }
        Route::Answer(id) => routes.pending.remove(&id).flatten(),
        Route::ConnectionAnswer(id) => {
            routes.pending.remove(&id);
            None
        }
        Route::Session(session) => Some(session.0.to_string()),
        Route::Connection => None,
    };
    let tx = match session {
        Some(session) => {
            if !routes.sessions.contains_key(&session) && routes.sessions.len() >= MAX_SESSIONS {
                routes.connection.tx.clone()
            } else {
                routes.sessions.entry(session).or_default().tx.clone()
            }
        }
        None => routes.connection.tx.clone(),
    };
    Some((tx, text))
}

/// Ends the connection once nobody used it for `idle` (no request, no stream open).
async fn expire(conn: Arc<Conn>, connections: Connections, idle: Duration) {
    loop {
        let seen = *lock(&conn.seen);
        let deadline = seen + idle;
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => {}
            () = conn.closed.cancelled() => return,
        }
        if conn.streams.load(Ordering::Relaxed) > 0 {
            conn.touch();
        } else if *lock(&conn.seen) + idle <= Instant::now() {
            debug!("ending a Streamable HTTP connection idle for {idle:?}");
            connections.remove(&conn.id);
            return;
        }
    }
}

/// GET `/acp` without an upgrade: the connection's stream, or a session's.
pub(super) async fn get(shared: Shared, parts: Parts) -> Response {
    let accepts = parts
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("text/event-stream"));
    if !accepts {
        return refuse(
            StatusCode::NOT_ACCEPTABLE,
            "Accept must include text/event-stream",
        );
    }
    let user = User(user_of(&parts.extensions));
    let conn = match shared.connections.find(&parts.headers, &user) {
        Ok(conn) => conn,
        Err(refused) => return refused,
    };
    conn.touch();
    let session = parts
        .headers
        .get(SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(session) = &session
        && let Err(refused) = known(&shared, &conn, session).await
    {
        return refused;
    }
    let last_event_id = parts
        .headers
        .get(LAST_EVENT_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let reader = {
        let mut routes = conn.routes();
        let outbox = match &session {
            None => Some(&mut routes.connection),
            Some(session) => {
                if !routes.sessions.contains_key(session) && routes.sessions.len() >= MAX_SESSIONS {
                    None
                } else {
                    Some(routes.sessions.entry(session.clone()).or_default())
                }
            }
        };
        outbox.and_then(|outbox| outbox.take())
    };
    let Some(reader) = reader else {
        return refuse(StatusCode::CONFLICT, "This stream already has a reader");
    };
    let replay = match last_event_id {
        None => Replay::new(),
        Some(last) => match reader.after(&last) {
            Some(replay) => replay,
            None => {
                give_back(&conn, session.as_deref(), reader);
                return refuse(
                    StatusCode::CONFLICT,
                    "Last-Event-ID names no event this stream still keeps; reopen the session \
                     (session/load or session/resume)",
                );
            }
        },
    };
    conn.streams.fetch_add(1, Ordering::Relaxed);
    let closed = conn.closed.clone();
    sse::respond(reader, replay, closed, move |reader| {
        conn.streams.fetch_sub(1, Ordering::Relaxed);
        conn.touch();
        give_back(&conn, session.as_deref(), reader);
    })
}

/// `Ok` when `session` is known to the connection (its frames were routed), or to the
/// agent's store as a session of the connection's user (a client opens a session's stream
/// before it loads the session); `404` otherwise. Without a store a session cannot be told from a bogus id: it is accepted.
async fn known(shared: &Shared, conn: &Conn, session: &str) -> Result<(), Response> {
    if conn.routes().sessions.contains_key(session) {
        return Ok(());
    }
    let Some(store) = &shared.store else {
        return Ok(());
    };
    let id = crate::schema::SessionId::new(session.to_owned());
    match store.session(&id).await {
        // Another user's session is as unknown as a made-up id.
        Ok(Some(stored)) if conn.user.is_none() || stored.owner == conn.user => Ok(()),
        Ok(_) => Err(refuse(StatusCode::NOT_FOUND, "Unknown Acp-Session-Id")),
        Err(e) => {
            tracing::warn!("could not look a session up in the store: {e}");
            Err(refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "The session store is unavailable",
            ))
        }
    }
}

/// Puts a stream's reader back, for the next GET.
fn give_back(conn: &Conn, session: Option<&str>, reader: Reader) {
    let mut routes = conn.routes();
    let outbox = match session {
        None => Some(&mut routes.connection),
        Some(session) => routes.sessions.get_mut(session),
    };
    if let Some(outbox) = outbox {
        outbox.give_back(reader);
    }
}

/// DELETE `/acp`: ends the connection (its runtime sees the client's end of file).
pub(super) async fn delete(
    State(shared): State<Shared>,
    Extension(user): Extension<User>,
    headers: HeaderMap,
) -> Response {
    match shared.connections.find(&headers, &user) {
        Ok(conn) => {
            shared.connections.remove(&conn.id);
            StatusCode::ACCEPTED.into_response()
        }
        Err(refused) => refused,
    }
}

/// A POST's JSON-RPC id, as the runtime reads it (`None`: not a valid id).
fn request_id(id: &Value) -> Option<RequestId> {
    RequestId::deserialize(id).ok()
}

/// What binds a connection to whoever opened it.
fn credentials(headers: &HeaderMap) -> Vec<u8> {
    headers
        .get(header::AUTHORIZATION)
        .map(|v| v.as_bytes().to_vec())
        .unwrap_or_default()
}

fn refuse(status: StatusCode, why: &'static str) -> Response {
    (status, why).into_response()
}
