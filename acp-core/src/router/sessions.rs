//! Opening and closing sessions, and their settings: `session/new`, `session/load` (when the
//! agent loads sessions itself), what every opening shares (the authentication gate, the
//! answer with the session's modes and config options, its slash commands: right after the
//! answer, or last before it for `session/load`), `session/close`, `session/set_mode` and
//! `session/set_config_option`.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::value::RawValue;
use tracing::debug;

use super::routes::answer;
use super::{Router, history, params};
use crate::agent::{Agent, SessionSetup};
use crate::jsonrpc;
use crate::mcp;
use crate::peer::Frame;
use crate::protocol::methods;
use crate::schema::{
    self, AvailableCommand, Meta, RequestId, SessionConfigOption, SessionId, SessionModeState,
};
use crate::session::{Client, Connection, Request, Session, SessionState, registry};
use crate::sync::lock;
use crate::turn;
use crate::{Error, Result};

/// What the answer to an opened session carries.
pub(super) struct Opened {
    pub id: SessionId,
    pub modes: Option<SessionModeState>,
    pub config_options: Option<Vec<SessionConfigOption>>,
    pub meta: Option<Meta>,
}

/// `Err(AuthRequired)` unless the agent, which has authentication methods, says the user
/// is authenticated.
pub(super) async fn authenticated<A: Agent>(agent: &A, conn: &Arc<Connection>) -> Result<()> {
    if agent.auth_methods().is_empty() {
        return Ok(());
    }
    if agent.authenticated(&Client::new(conn.clone(), None)).await {
        Ok(())
    } else {
        Err(Error::AuthRequired)
    }
}

pub(super) fn new_session<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::NewSessionRequest = params(methods::SESSION_NEW, raw)?;
    let roots = r.conn.roots(req.cwd, req.additional_directories)?;
    let (agent, conn) = (r.agent.clone(), r.conn.clone());
    Ok(Box::pin(async move {
        if let Err(e) = authenticated(&*agent, &conn).await {
            return answer(&conn, &id, Err::<(), _>(e)).await;
        }
        let state = SessionState::new(&conn, registry::fresh_id(), roots, req.mcp_servers);
        connect_mcp(&*agent, &state);
        let request = Request::new(req.meta);
        let cx = Session::new(state.clone(), None).handling(request);
        let setup = agent.new_session(&cx).await;
        open_session(&*agent, &conn, &id, (state, None), setup, |o| {
            schema::NewSessionResponse::new(o.id)
                .modes(o.modes)
                .config_options(o.config_options)
                .meta(o.meta)
        })
        .await;
    }))
}

pub(super) fn load_session<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::LoadSessionRequest = params(methods::SESSION_LOAD, raw)?;
    let roots = r.conn.roots(req.cwd, req.additional_directories)?;
    if r.store().is_some() {
        let reopen = history::Reopen {
            session_id: req.session_id,
            roots,
            mcp_servers: req.mcp_servers,
            meta: req.meta,
            replay: true,
        };
        return Ok(history::reopen(r, id, reopen));
    }
    // Another user's session is answered as one that does not exist.
    if !r.conn.owners.sees(&req.session_id, r.conn.user.as_deref()) {
        return Err(schema::Error::session_not_found(req.session_id));
    }
    let (agent, conn) = (r.agent.clone(), r.conn.clone());
    Ok(Box::pin(async move {
        if let Err(e) = authenticated(&*agent, &conn).await {
            return answer(&conn, &id, Err::<(), _>(e)).await;
        }
        let state = SessionState::new(&conn, req.session_id, roots, req.mcp_servers);
        connect_mcp(&*agent, &state);
        let cx = Session::new(state.clone(), None).handling(Request::new(req.meta));
        let setup = agent.load_session(&cx).await;
        open_session(&*agent, &conn, &id, (state, None), setup, |o| {
            schema::LoadSessionResponse::new()
                .modes(o.modes)
                .config_options(o.config_options)
                .meta(o.meta)
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

/// The answer to a request that opens a session, and where the session's slash commands
/// (`available_commands_update`) go relative to it.
pub(super) trait OpenAnswer: serde::Serialize {
    /// Whether the commands are sent before the answer rather than after it.
    const COMMANDS_FIRST: bool = false;
}

/// The client learns the session's id from the answer: updates for it come after.
impl OpenAnswer for schema::NewSessionResponse {}

/// The spec: a `session/resume` sends no `session/update` before its answer.
impl OpenAnswer for schema::ResumeSessionResponse {}

/// The answer ends the replay and nothing may follow it for the session: the client knows the
/// session (it named it), so the commands close the replay instead.
impl OpenAnswer for schema::LoadSessionResponse {
    const COMMANDS_FIRST: bool = true;
}

/// Answers a `session/new`, `load` or `resume` from the author's setup: the session is
/// registered and answered with `response` (its modes and config options as they are now),
/// and told its slash commands — after the answer for `new` (the client must know the session
/// before it gets updates for it) and `resume` (nothing goes before its answer), before it
/// for `load` (nothing may follow its answer): see [`OpenAnswer`]. An error of the author's is
/// answered instead, and the session dropped. `title` is the one the store keeps for a
/// reopened session.
pub(super) async fn open_session<A: Agent, T: OpenAnswer>(
    agent: &A,
    conn: &Connection,
    id: &RequestId,
    (state, title): (Arc<SessionState>, Option<String>),
    setup: Result<SessionSetup>,
    response: impl FnOnce(Opened) -> T,
) {
    let setup = match setup {
        Ok(setup) => setup,
        Err(e) => return answer(conn, id, Err::<(), _>(e)).await,
    };
    let mut commands = agent.commands();
    commands.extend(setup.commands);
    *lock(&state.commands) = commands.clone();
    let cx = Session::new(state.clone(), None);
    let (modes, config_options) = cx.settings_state();
    let opened = Opened {
        id: state.id.clone(),
        modes,
        config_options,
        meta: setup.meta,
    };
    let session_id = state.id.clone();
    if conn.peer.journal.store().is_none()
        && let Some(user) = &conn.user
    {
        conn.owners.record(&session_id, user);
    }
    history::save(conn, &state, title).await;
    if let Some(store) = conn.peer.journal.store() {
        super::lease::keep(store.clone(), &state);
    }
    conn.sessions.insert(state);
    if T::COMMANDS_FIRST {
        send_commands(conn, &session_id, commands).await;
        answer(conn, id, Ok(response(opened))).await;
    } else {
        answer(conn, id, Ok(response(opened))).await;
        send_commands(conn, &session_id, commands).await;
    }
}

/// Tells the client the session's slash commands, if it has any (not recorded: a reload sends
/// the commands of its own time).
async fn send_commands(conn: &Connection, session: &SessionId, commands: Vec<AvailableCommand>) {
    if commands.is_empty() {
        return;
    }
    let update = schema::SessionUpdate::AvailableCommandsUpdate(
        schema::AvailableCommandsUpdate::new(commands),
    );
    // Written in the connection's version; not recorded.
    if let Ok((frame, _)) = conn.peer.journal.session_update(session, &update)
        && !frame.is_empty()
    {
        let _ = conn
            .peer
            .send(Frame::new(frame, None).of_session(session))
            .await;
    }
}

/// The open session `id`, or `-32002`.
fn known(conn: &Connection, id: &SessionId) -> Result<Arc<SessionState>> {
    conn.sessions
        .get(id)
        .ok_or_else(|| Error::from_rpc(schema::Error::session_not_found(id.clone())))
}

pub(super) fn set_mode<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::SetSessionModeRequest = params(methods::SESSION_SET_MODE, raw)?;
    let conn = r.conn.clone();
    Ok(Box::pin(async move {
        let result = async {
            let state = known(&conn, &req.session_id)?;
            Session::new(state, None)
                .client_sets_mode(&req.mode_id.0)
                .await?;
            Ok(schema::SetSessionModeResponse::new())
        };
        answer(&conn, &id, result.await).await;
    }))
}

pub(super) fn set_config_option<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::SetSessionConfigOptionRequest =
        params(methods::SESSION_SET_CONFIG_OPTION, raw)?;
    let conn = r.conn.clone();
    Ok(Box::pin(async move {
        let result = async {
            let state = known(&conn, &req.session_id)?;
            let options = Session::new(state, None)
                .client_sets_option(&req.config_id.0, &req.value)
                .await?;
            Ok(schema::SetSessionConfigOptionResponse::new(options))
        };
        answer(&conn, &id, result.await).await;
    }))
}

/// The session a `session/close` (params `raw`) names, forgotten by the connection (which
/// closes it); `-32002` when it is not open.
pub(super) fn closing<A: Agent>(
    r: &Router<A>,
    raw: Option<&RawValue>,
) -> Result<Arc<SessionState>, schema::Error> {
    let req: schema::CloseSessionRequest = params(methods::SESSION_CLOSE, raw)?;
    r.conn
        .sessions
        .remove(&req.session_id)
        .ok_or_else(|| schema::Error::session_not_found(req.session_id))
}

/// Stops a closed session's MCP servers after the turn's grace, so that an MCP call its turn
/// was making can still tell its server.
pub(super) fn stop_after_grace(session: Arc<SessionState>) {
    tokio::spawn(async move {
        tokio::time::sleep(turn::CANCEL_GRACE).await;
        mcp::stop(&session).await;
    });
}

/// `session/close`: cancels the session's running turn (which still answers, `cancelled`),
/// stops its MCP servers, and forgets the session: its memory is freed once the turn has
/// wound down.
pub(super) fn close_session<A: Agent>(
    r: &Router<A>,
    id: &RequestId,
    raw: Option<&RawValue>,
) -> Result<Vec<u8>, schema::Error> {
    let session = closing(r, raw)?;
    debug!(session = %session.id, "session closed");
    stop_after_grace(session);
    Ok(jsonrpc::encode_result(
        id,
        &schema::CloseSessionResponse::new(),
    ))
}
