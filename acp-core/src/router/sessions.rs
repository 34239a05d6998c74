//! Opening and closing sessions, and their settings: `session/new`, `session/load` (when the
//! agent loads sessions itself; what every opening shares is [`open`](super::open)'s),
//! `session/close`, `session/set_mode` and `session/set_config_option`.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::value::RawValue;
use tracing::debug;

use super::open::{authenticated, connect_mcp, open_session, system_prompt};
use super::{Router, answer, history, params};
use crate::agent::Agent;
use crate::jsonrpc;
use crate::mcp;
use crate::protocol::methods;
use crate::schema::{self, RequestId, SessionId};
use crate::session::{Connection, Request, Session, SessionState, registry};
use crate::turn;
use crate::{Error, Result};

pub(super) fn new_session<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::NewSessionRequest = params(methods::SESSION_NEW, raw)?;
    let roots = r.conn.roots(req.cwd, req.additional_directories)?;
    let system_prompt = system_prompt(&*r.agent, methods::SESSION_NEW, req.system_prompt)?;
    let initial = initial_options!(methods::SESSION_NEW, req);
    let (agent, conn) = (r.agent.clone(), r.conn.clone());
    Ok(Box::pin(async move {
        if let Err(e) = authenticated(&*agent, &conn).await {
            return answer(&conn, &id, Err::<(), _>(e)).await;
        }
        let state = SessionState::new(&conn, registry::fresh_id(), roots, req.mcp_servers);
        connect_mcp(&*agent, &state);
        let request = Request::new(req.meta);
        let cx = Session::new(state.clone(), None).handling(request);
        cx.set_system_prompt(system_prompt);
        let setup = agent.new_session(&cx).await;
        cx.apply_initial_options(initial).await;
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
    super::not_a_live_subagent(&r.conn, &req.session_id, methods::SESSION_LOAD)?;
    let roots = r.conn.roots(req.cwd, req.additional_directories)?;
    let system_prompt = system_prompt(&*r.agent, methods::SESSION_LOAD, req.system_prompt)?;
    let initial = initial_options!(methods::SESSION_LOAD, req);
    if r.store().is_some() {
        let reopen = history::Reopen {
            session_id: req.session_id,
            roots,
            mcp_servers: req.mcp_servers,
            meta: req.meta,
            system_prompt,
            initial,
            replay: true,
        };
        return Ok(history::reopen(r, id, reopen));
    }
    // Another user's session is answered as one that does not exist.
    if !r.conn.owners().sees(&req.session_id, r.conn.user()) {
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
        cx.set_system_prompt(system_prompt);
        let setup = agent.load_session(&cx).await;
        cx.apply_initial_options(initial).await;
        open_session(&*agent, &conn, &id, (state, None), setup, |o| {
            schema::LoadSessionResponse::new()
                .modes(o.modes)
                .config_options(o.config_options)
                .meta(o.meta)
        })
        .await;
    }))
}

/// The open session `id`, or `-32002`; a live subagent's is refused (its parent drives it).
fn known(conn: &Connection, id: &SessionId, method: &str) -> Result<Arc<SessionState>> {
    super::not_a_live_subagent(conn, id, method).map_err(Error::from_rpc)?;
    conn.sessions()
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
            let state = known(&conn, &req.session_id, methods::SESSION_SET_MODE)?;
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
            let state = known(&conn, &req.session_id, methods::SESSION_SET_CONFIG_OPTION)?;
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
    super::not_a_live_subagent(&r.conn, &req.session_id, methods::SESSION_CLOSE)?;
    r.conn
        .sessions()
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
    debug!(session = %session.id(), "session closed");
    stop_after_grace(session);
    Ok(jsonrpc::encode_result(
        id,
        &schema::CloseSessionResponse::new(),
    ))
}
