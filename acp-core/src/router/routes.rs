//! The method table and its handlers: one entry per method the runtime answers or handles.
//! Adding a protocol method is one entry here (plus one in the macro's table of recognised
//! methods, when the author implements it).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::Serialize;
use serde_json::value::RawValue;
use tracing::{Instrument, debug, debug_span};

use super::{Handler, NotificationRoute, Route, Router, history, params};
use crate::agent::{Agent, Prompt, SessionSetup};
use crate::jsonrpc;
use crate::mcp;
use crate::peer::Frame;
use crate::protocol::{methods, v1};
use crate::schema::{self, ErrorCode, ProtocolVersion, RequestId};
use crate::session::roots::Roots;
use crate::session::{Connection, Session, SessionState, registry};
use crate::turn::{self, Turn};
use crate::{Error, Result};

/// The requests the runtime answers.
pub(super) fn requests<A: Agent>() -> Vec<Route<A>> {
    fn always<A>(_: &Router<A>) -> bool {
        true
    }
    fn recorded<A: Agent>(r: &Router<A>) -> bool {
        r.store().is_some()
    }
    vec![
        Route {
            method: methods::INITIALIZE,
            gate: always,
            handler: Handler::Inline(initialize),
        },
        Route {
            method: methods::AUTHENTICATE,
            gate: |r: &Router<A>| !r.agent.auth_methods().is_empty(),
            handler: Handler::Spawned(authenticate),
        },
        Route {
            method: methods::SESSION_NEW,
            gate: always,
            handler: Handler::Spawned(new_session),
        },
        Route {
            method: methods::SESSION_LOAD,
            gate: |r: &Router<A>| recorded(r) || r.agent.capabilities().load_session,
            handler: Handler::Spawned(load_session),
        },
        Route {
            method: methods::SESSION_RESUME,
            gate: recorded,
            handler: Handler::Spawned(history::resume),
        },
        Route {
            method: methods::SESSION_LIST,
            gate: recorded,
            handler: Handler::Spawned(history::list),
        },
        Route {
            method: methods::SESSION_DELETE,
            gate: recorded,
            handler: Handler::Spawned(history::delete),
        },
        Route {
            method: methods::SESSION_PROMPT,
            gate: always,
            handler: Handler::Spawned(prompt),
        },
        Route {
            method: methods::SESSION_CLOSE,
            gate: always,
            handler: Handler::Inline(close_session),
        },
        Route {
            method: methods::SESSION_SET_MODE,
            gate: always,
            handler: Handler::Spawned(set_mode),
        },
        Route {
            method: methods::SESSION_SET_CONFIG_OPTION,
            gate: always,
            handler: Handler::Spawned(set_config_option),
        },
    ]
}

/// The notifications the runtime handles; any other is ignored.
pub(super) fn notifications<A: Agent>() -> Vec<NotificationRoute<A>> {
    vec![
        NotificationRoute {
            method: methods::SESSION_CANCEL,
            handler: cancel,
        },
        NotificationRoute {
            method: methods::CANCEL_REQUEST,
            handler: cancel_request,
        },
    ]
}

/// Queues the answer to request `id`.
pub(super) async fn answer<T: Serialize>(conn: &Connection, id: &RequestId, result: Result<T>) {
    let _ = conn
        .peer
        .send(Frame::new(v1::answer(id, result), None))
        .await;
}

fn known(conn: &Connection, id: &schema::SessionId) -> Result<Arc<SessionState>> {
    conn.sessions
        .get(id)
        .ok_or_else(|| Error::from_rpc(schema::Error::session_not_found(id.clone())))
}

fn initialize<A: Agent>(
    r: &Router<A>,
    id: &RequestId,
    raw: Option<&RawValue>,
) -> Result<Vec<u8>, schema::Error> {
    let req: schema::InitializeRequest = params(methods::INITIALIZE, raw)?;
    let version = if req.protocol_version == ProtocolVersion::V1 {
        req.protocol_version
    } else {
        ProtocolVersion::LATEST
    };
    debug!(capabilities = ?req.client_capabilities, "initialized");
    if r.conn.client.set(req.client_capabilities).is_err() {
        debug!("`initialize` sent twice; keeping the first client capabilities");
    }
    // What the runtime answers for every agent, beside what the agent advertises.
    let mut capabilities = r.agent.capabilities();
    capabilities.session_capabilities.close = Some(schema::SessionCloseCapabilities::new());
    capabilities.mcp_capabilities = mcp::capabilities();
    if r.store().is_some() {
        capabilities.load_session = true;
        let sessions = &mut capabilities.session_capabilities;
        sessions.list = Some(schema::SessionListCapabilities::new());
        sessions.resume = Some(schema::SessionResumeCapabilities::new());
        sessions.delete = Some(schema::SessionDeleteCapabilities::new());
    }
    let response = schema::InitializeResponse::new(version)
        .agent_capabilities(capabilities)
        .auth_methods(r.agent.auth_methods())
        .agent_info(r.agent.info());
    Ok(jsonrpc::encode_result(id, &response))
}

/// Registers the session, answers, then announces its slash commands (the client must know
/// the session id before it receives updates for it).
async fn start_session<T: Serialize>(
    conn: &Connection,
    id: &RequestId,
    state: Arc<SessionState>,
    response: T,
    commands: Vec<schema::AvailableCommand>,
) {
    let session_id = state.id.clone();
    history::save(conn, &state, None).await;
    conn.sessions.insert(state);
    answer(conn, id, Ok(response)).await;
    if !commands.is_empty() {
        let update = schema::SessionUpdate::AvailableCommandsUpdate(
            schema::AvailableCommandsUpdate::new(commands),
        );
        if let Ok(frame) = v1::session_update(&session_id, update) {
            let _ = conn.peer.send(Frame::new(frame, None)).await;
        }
    }
}

fn new_session<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::NewSessionRequest = params(methods::SESSION_NEW, raw)?;
    let roots = Roots::new(req.cwd, req.additional_directories)?;
    let (agent, conn) = (r.agent.clone(), r.conn.clone());
    Ok(Box::pin(async move {
        let state = SessionState::new(&conn, registry::fresh_id(), roots, req.mcp_servers);
        connect_mcp(&*agent, &state);
        let setup = agent.new_session(&Session::new(state.clone(), None)).await;
        open_session(&conn, &id, state, setup, |s, setup| {
            schema::NewSessionResponse::new(s.id.clone())
                .modes(setup.modes)
                .config_options(setup.config_options)
        })
        .await;
    }))
}

fn load_session<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::LoadSessionRequest = params(methods::SESSION_LOAD, raw)?;
    let roots = Roots::new(req.cwd, req.additional_directories)?;
    if r.store().is_some() {
        return Ok(history::reopen(
            r,
            id,
            req.session_id,
            roots,
            req.mcp_servers,
            true,
        ));
    }
    let (agent, conn) = (r.agent.clone(), r.conn.clone());
    Ok(Box::pin(async move {
        let state = SessionState::new(&conn, req.session_id, roots, req.mcp_servers);
        connect_mcp(&*agent, &state);
        let setup = agent.load_session(&Session::new(state.clone(), None)).await;
        open_session(&conn, &id, state, setup, |_, setup| {
            schema::LoadSessionResponse::new()
                .modes(setup.modes)
                .config_options(setup.config_options)
        })
        .await;
    }))
}

/// Starts connecting the session's MCP servers in the background (their tools named around
/// the agent's own).
pub(super) fn connect_mcp<A: Agent>(agent: &A, state: &Arc<SessionState>) {
    let reserved = agent
        .tools()
        .into_iter()
        .map(|t| t.name.into_owned())
        .collect();
    mcp::attach(state, reserved);
}

/// Answers a `session/new` or `session/load` from the author's setup: the session is started
/// with `response(state, setup)` as the answer, or the author's error is answered.
pub(super) async fn open_session<T: Serialize>(
    conn: &Connection,
    id: &RequestId,
    state: Arc<SessionState>,
    setup: Result<SessionSetup>,
    response: impl FnOnce(&SessionState, SessionSetup) -> T,
) {
    match setup {
        Ok(mut setup) => {
            let commands = std::mem::take(&mut setup.commands);
            let answer = response(&state, setup);
            start_session(conn, id, state, answer, commands).await;
        }
        Err(e) => answer(conn, id, Err::<(), _>(e)).await,
    }
}

/// Starts a prompt turn. The session is checked and marked busy here, on the reader's task, so
/// a second prompt for a busy session is refused in the order the client sent them.
fn prompt<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::PromptRequest = params(methods::SESSION_PROMPT, raw)?;
    let state = r
        .conn
        .sessions
        .get(&req.session_id)
        .ok_or_else(|| schema::Error::session_not_found(req.session_id.clone()))?;
    let turn = Arc::new(Turn::new(&r.conn.peer.closed));
    if !state.start_turn(&turn) {
        return Err(schema::Error::new(
            ErrorCode::InvalidRequest.into(),
            format!(
                "session `{}` is already running a prompt turn; wait for its answer or cancel it",
                state.id
            ),
        ));
    }
    let prompts = r.prompts.clone();
    prompts
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id.clone(), turn.clone());
    let agent = r.agent.clone();
    let span = debug_span!("turn", session = %state.id);
    Ok(Box::pin(
        async move {
            // Running turns are bounded by sessions (one each), not by the requests in flight.
            crate::peer::release_admission();
            if state.conn.peer.journal.is_recording() {
                history::record_prompt(&state.conn, &state.id, &req.prompt).await;
            }
            let cx = Session::new(state.clone(), Some(turn.clone()));
            let outcome =
                turn::run(agent.prompt(&cx, Prompt::from_request(req)), &turn.cancel).await;
            // Before the answer: a client that has it may kill the agent and load the session.
            state.save_persisted().await;
            let frame = turn.end(&state.conn.peer, &state.id, &id, outcome).await;
            // Free the session before the answer leaves: a client may send its next prompt the
            // moment it reads the answer.
            state.end_turn();
            prompts
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
            // The answer skips the writer's queue when nothing is waiting in it.
            let _ = state.conn.peer.send_now(frame).await;
        }
        .instrument(span),
    ))
}

fn set_mode<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::SetSessionModeRequest = params(methods::SESSION_SET_MODE, raw)?;
    let (agent, conn) = (r.agent.clone(), r.conn.clone());
    Ok(Box::pin(async move {
        let result = async {
            let state = known(&conn, &req.session_id)?;
            agent
                .set_mode(&Session::new(state, None), req.mode_id)
                .await?;
            Ok(schema::SetSessionModeResponse::new())
        };
        answer(&conn, &id, result.await).await;
    }))
}

fn set_config_option<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::SetSessionConfigOptionRequest =
        params(methods::SESSION_SET_CONFIG_OPTION, raw)?;
    let (agent, conn) = (r.agent.clone(), r.conn.clone());
    Ok(Box::pin(async move {
        let result = async {
            let state = known(&conn, &req.session_id)?;
            let options = agent
                .set_config_option(&Session::new(state, None), req.config_id, req.value)
                .await?;
            Ok(schema::SetSessionConfigOptionResponse::new(options))
        };
        answer(&conn, &id, result.await).await;
    }))
}

fn authenticate<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::AuthenticateRequest = params(methods::AUTHENTICATE, raw)?;
    let (agent, conn) = (r.agent.clone(), r.conn.clone());
    Ok(Box::pin(async move {
        let result = agent.authenticate(req.method_id).await;
        answer(
            &conn,
            &id,
            result.map(|()| schema::AuthenticateResponse::new()),
        )
        .await;
    }))
}

/// `session/close`: cancels the session's running turn (which still answers, `cancelled`),
/// stops its MCP servers, and forgets the session: its memory is freed once the turn has
/// wound down.
fn close_session<A: Agent>(
    r: &Router<A>,
    id: &RequestId,
    raw: Option<&RawValue>,
) -> Result<Vec<u8>, schema::Error> {
    let req: schema::CloseSessionRequest = params(methods::SESSION_CLOSE, raw)?;
    let session = r
        .conn
        .sessions
        .remove(&req.session_id)
        .ok_or_else(|| schema::Error::session_not_found(req.session_id.clone()))?;
    debug!(session = %session.id, "session closed");
    session.cancel_turn();
    // After the turn's grace, so that an MCP call it was making can tell its server.
    tokio::spawn(async move {
        tokio::time::sleep(turn::CANCEL_GRACE).await;
        mcp::stop(&session).await;
    });
    Ok(jsonrpc::encode_result(
        id,
        &schema::CloseSessionResponse::new(),
    ))
}

fn cancel<A: Agent>(r: &Router<A>, raw: Option<&RawValue>) {
    match params::<schema::CancelNotification>(methods::SESSION_CANCEL, raw) {
        Ok(cancel) => match r.conn.sessions.get(&cancel.session_id) {
            Some(session) => {
                debug!(session = %cancel.session_id, "cancel requested");
                session.cancel_turn();
            }
            None => debug!(session = %cancel.session_id, "cancel for an unknown session"),
        },
        Err(e) => debug!(error = %e.message, "ignored a malformed session/cancel"),
    }
}

/// Protocol-level cancellation of one request: for a prompt, cancels its turn.
fn cancel_request<A: Agent>(r: &Router<A>, raw: Option<&RawValue>) {
    if let Ok(cancel) = params::<schema::CancelRequestNotification>(methods::CANCEL_REQUEST, raw)
        && let Some(turn) = r
            .prompts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&cancel.request_id)
    {
        debug!(request = %cancel.request_id, "prompt cancelled by request id");
        turn.cancel.cancel();
    }
}
