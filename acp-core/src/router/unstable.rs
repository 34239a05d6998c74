//! The schema crate's Unstable session-management methods, each behind its own feature, and
//! answered by the runtime from what it knows (the session store, the connection's open
//! sessions, the agent's declared settings): `session/fork`, `session/status`,
//! `session/set_title`, `session/archive` / `session/unarchive` and `session/options`. A
//! session of another user is answered exactly as `session/load` answers it (`-32002`, as
//! a session that does not exist: see [`owner`]).

// A helper here serves several of the methods: with only some of them compiled in, the others'
// helpers (and imports) are unused. With all of them, nothing may be.
#![cfg_attr(
    not(all(
        feature = "unstable-session-fork",
        feature = "unstable-session-status",
        feature = "unstable-session-set-title",
        feature = "unstable-session-archive",
        feature = "unstable-session-options"
    )),
    allow(dead_code, unused_imports)
)]

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::value::RawValue;

use super::history::{known, not_found};
use super::open::authenticated;
use super::{Router, answer, owner, params};
use crate::Result;
use crate::agent::Agent;
use crate::protocol::methods;
use crate::schema::{self, RequestId, SessionId};
use crate::session::Connection;
use crate::store::SessionStore;

/// Whether the connection may see stored session `id` and the store has it; else `-32002`
/// (another user's session is one that does not exist).
async fn visible(store: &dyn SessionStore, conn: &Connection, id: &SessionId) -> Result<()> {
    if !owner::sees(store, conn, id).await? {
        return Err(not_found(id));
    }
    known(store, id).await.map(drop)
}

/// Runs `work` (given the store) once the client is signed in, and answers request `id` with
/// its result: the shape of every store-backed handler here.
fn with_store<A, T, F, Fut>(r: &Router<A>, id: RequestId, work: F) -> BoxFuture<'static, ()>
where
    A: Agent,
    T: crate::protocol::Answer + Send + 'static,
    F: FnOnce(Arc<dyn SessionStore>, Arc<Connection>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<T>> + Send + 'static,
{
    let (store, conn, agent) = (r.store().cloned(), r.conn.clone(), r.agent.clone());
    Box::pin(async move {
        let Some(store) = store else { return };
        if let Err(e) = authenticated(&*agent, &conn).await {
            return answer(&conn, &id, Err::<(), _>(e)).await;
        }
        let result = work(store, conn.clone()).await;
        answer(&conn, &id, result).await;
    })
}

// ---- session/fork --------------------------------------------------------------------------

/// `session/fork`: a new session whose history is a copy of its parent's (records and the
/// agent's persisted values, the settings among them), opened as `session/resume` opens a
/// stored session (the agent's `load_session` when it loads sessions itself, else its
/// `new_session`, with the copied values restored) and answered with the new id. A
/// `cursorId` is refused with `-32602`: the runtime announces no session cursors, so none is
/// one the client may send, and the schema forbids falling back to the whole session.
#[cfg(feature = "unstable-session-fork")]
pub(super) fn fork<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    refuse_cursor(methods::SESSION_FORK, raw)?;
    let req: schema::ForkSessionRequest = params(methods::SESSION_FORK, raw)?;
    let roots = r.conn.roots(req.cwd, req.additional_directories)?;
    let system_prompt =
        super::open::system_prompt(&*r.agent, methods::SESSION_FORK, req.system_prompt)?;
    let initial = initial_options!(methods::SESSION_FORK, req);
    let (agent, conn) = (r.agent.clone(), r.conn.clone());
    let Some(store) = r.store().cloned() else {
        return Err(schema::Error::session_not_found(req.session_id));
    };
    Ok(Box::pin(async move {
        if let Err(e) = authenticated(&*agent, &conn).await {
            return answer(&conn, &id, Err::<(), _>(e)).await;
        }
        let parent = req.session_id;
        let copied = async {
            visible(&*store, &conn, &parent).await?;
            let title = known(&*store, &parent).await?.title;
            let child = crate::session::registry::fresh_id();
            let mut stored = crate::store::StoredSession::new(child.clone(), roots.cwd.clone());
            stored.additional_directories = roots.additional.clone();
            stored.title = title;
            stored.owner = conn.user().map(str::to_owned);
            store.copy_session(&parent, &stored).await?;
            tracing::debug!(session = %child, %parent, "forked the session");
            Ok(child)
        };
        let child = match copied.await {
            Ok(child) => child,
            Err(e) => return answer(&conn, &id, Err::<(), _>(e)).await,
        };
        let reopen = super::history::Reopen {
            session_id: child,
            roots,
            mcp_servers: req.mcp_servers,
            meta: req.meta,
            system_prompt,
            initial,
            replay: false,
        };
        super::history::reopened(agent, conn, store, id, reopen, super::history::Reply::Fork).await;
    }))
}

/// `-32602` when the params of `method` carry a `cursorId` (not `null`): a cursor the runtime
/// never announced.
#[cfg(feature = "unstable-session-fork")]
fn refuse_cursor(method: &str, raw: Option<&RawValue>) -> Result<(), schema::Error> {
    #[derive(serde::Deserialize)]
    struct Cursor {
        #[serde(rename = "cursorId", default)]
        cursor_id: Option<serde_json::Value>,
    }
    let cursor = raw.and_then(|raw| serde_json::from_str::<Cursor>(raw.get()).ok());
    match cursor.and_then(|c| c.cursor_id) {
        None | Some(serde_json::Value::Null) => Ok(()),
        Some(cursor) => Err(crate::Error::InvalidParams(format!(
            "invalid params for `{method}`: field `cursorId`: this agent announces no session \
             cursors, so it cannot fork at {cursor}; omit `cursorId` to fork the whole session"
        ))
        .to_rpc()),
    }
}

// ---- session/status ------------------------------------------------------------------------

/// What `session/status` found: open here (and whether a turn runs), open elsewhere (another
/// connection's departed client or another replica holds it), or saved.
#[cfg(feature = "unstable-session-status")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    /// In memory; `Some(running)` when its turn state is known here.
    Open(Option<bool>),
    /// Stored, in memory nowhere.
    Saved,
}

/// `session/status`: side-effect free, never loads the session. Open when the session is
/// open on this connection (on v2 with its foreground state, running or idle), when a
/// departed client's turn of it runs on here, or when its lease is held (a replica of the
/// agent sharing the store has it open); saved when only the store has it; `-32002` when
/// neither has it or it is another user's.
#[cfg(feature = "unstable-session-status")]
pub(super) fn status<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::SessionStatusRequest = params(methods::SESSION_STATUS, raw)?;
    let (store, conn) = (r.store().cloned(), r.conn.clone());
    Ok(Box::pin(async move {
        let found = found(store.as_deref(), &conn, &req.session_id).await;
        #[cfg(feature = "v2")]
        if conn.codec().version() == crate::protocol::Version::V2 {
            let bytes = match found {
                Ok(found) => crate::jsonrpc::encode_result(&id, &status_v2(found)),
                Err(e) => crate::jsonrpc::encode_error(&id, &e.to_rpc()),
            };
            let frame = crate::peer::Frame::new(bytes, None).answering(&id);
            let _ = conn.peer().send(frame).await;
            return;
        }
        let answered = found.map(|found| {
            schema::SessionStatusResponse::new(match found {
                Found::Open(_) => schema::SessionStatus::Open,
                Found::Saved => schema::SessionStatus::Saved,
            })
        });
        answer(&conn, &id, answered).await;
    }))
}

/// Where session `id` is, for `session/status` (see [`status`]).
#[cfg(feature = "unstable-session-status")]
async fn found(
    store: Option<&dyn SessionStore>,
    conn: &Connection,
    id: &SessionId,
) -> Result<Found> {
    let seen = match store {
        Some(store) => owner::sees(store, conn, id).await?,
        None => conn.owners().sees(id, conn.user()),
    };
    if !seen {
        return Err(not_found(id));
    }
    if let Some(open) = conn.sessions().get(id) {
        return Ok(Found::Open(Some(open.is_running())));
    }
    if conn.detach().is_some_and(|d| d.sessions.holds(id)) {
        return Ok(Found::Open(Some(true)));
    }
    let Some(store) = store else {
        return Err(not_found(id));
    };
    known(store, id).await?;
    if store.leased(id).await? {
        return Ok(Found::Open(None));
    }
    Ok(Found::Saved)
}

/// v2's answer to `session/status`: with the foreground state when it is known here.
#[cfg(all(feature = "unstable-session-status", feature = "v2"))]
fn status_v2(found: Found) -> schema::v2::SessionStatusResponse {
    use schema::v2 as t;
    match found {
        Found::Open(running) => {
            t::SessionStatusResponse::new(t::SessionStatus::Open).state(running.map(|running| {
                if running {
                    t::StateUpdate::Running(t::RunningStateUpdate::new())
                } else {
                    t::StateUpdate::Idle(t::IdleStateUpdate::new())
                }
            }))
        }
        Found::Saved => t::SessionStatusResponse::new(t::SessionStatus::Saved),
    }
}

// ---- session/set_title ---------------------------------------------------------------------

/// The longest title kept, in characters (a longer one is truncated).
#[cfg(feature = "unstable-session-set-title")]
const MAX_TITLE: usize = 256;

/// `session/set_title`: the title trimmed (and cut at [`MAX_TITLE`] characters), stored, and
/// answered once stored; a session open on this connection tells its client
/// (`session_info_update`). An empty title is `-32602`.
#[cfg(feature = "unstable-session-set-title")]
pub(super) fn set_title<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::SetSessionTitleRequest = params(methods::SESSION_SET_TITLE, raw)?;
    let title: String = req.title.trim().chars().take(MAX_TITLE).collect();
    let title = title.trim_end().to_owned();
    if title.is_empty() {
        return Err(crate::Error::InvalidParams(format!(
            "invalid params for `{}`: field `title`: the title is empty (after trimming \
             whitespace)",
            methods::SESSION_SET_TITLE
        ))
        .to_rpc());
    }
    let session = req.session_id;
    Ok(with_store(r, id, move |store, conn| async move {
        visible(&*store, &conn, &session).await?;
        store.set_title(&session, Some(&title)).await?;
        if let Some(open) = conn.sessions().get(&session) {
            let update = schema::SessionUpdate::SessionInfoUpdate(
                schema::SessionInfoUpdate::new().title(title.clone()),
            );
            // Best effort: the title is stored whatever happens to the notification.
            if let Err(e) = crate::Session::new(open, None).update(update).await {
                tracing::debug!(%session, "could not tell the client the new title: {e}");
            }
        }
        Ok(schema::SetSessionTitleResponse::new(title))
    }))
}

// ---- session/archive, session/unarchive ----------------------------------------------------

/// `session/archive`: a session open on this connection is closed first (as `session/close`
/// closes it: its turn cancelled, its MCP servers stopped), then flagged in the store.
/// Archiving an archived session succeeds.
#[cfg(feature = "unstable-session-archive")]
pub(super) fn archive<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::ArchiveSessionRequest = params(methods::SESSION_ARCHIVE, raw)?;
    let session = req.session_id;
    Ok(with_store(r, id, move |store, conn| async move {
        visible(&*store, &conn, &session).await?;
        if let Some(open) = conn.sessions().remove(&session) {
            super::sessions::stop_after_grace(open);
        }
        store.set_archived(&session, true).await?;
        Ok(schema::ArchiveSessionResponse::new())
    }))
}

/// `session/unarchive`: the flag cleared; the session is not loaded.
#[cfg(feature = "unstable-session-archive")]
pub(super) fn unarchive<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::UnarchiveSessionRequest = params(methods::SESSION_UNARCHIVE, raw)?;
    let session = req.session_id;
    Ok(with_store(r, id, move |store, conn| async move {
        visible(&*store, &conn, &session).await?;
        store.set_archived(&session, false).await?;
        Ok(schema::UnarchiveSessionResponse::new())
    }))
}

/// The store's archived filter for `session/list`'s `archived` (omitted: `exclude`); an
/// unknown value is `-32602`, as the schema requires.
#[cfg(feature = "unstable-session-archive")]
pub(super) fn archived_filter(
    archived: Option<&schema::SessionArchiveFilter>,
) -> Result<Option<bool>, schema::Error> {
    use schema::SessionArchiveFilter as F;
    match archived {
        None | Some(F::Exclude) => Ok(Some(false)),
        Some(F::Include) => Ok(None),
        Some(F::Only) => Ok(Some(true)),
        Some(other) => Err(crate::Error::InvalidParams(format!(
            "invalid params for `{}`: field `archived`: `{}` is not a filter this agent \
             supports (`exclude`, `include`, `only`)",
            methods::SESSION_LIST,
            serde_json::to_string(other).unwrap_or_default()
        ))
        .to_rpc()),
    }
}

// ---- session/options -----------------------------------------------------------------------

/// `session/options`: the modes and config options a new session would start with (the
/// agent's declared ones, at their defaults), or, for a stored `sessionId`, the ones a
/// `session/load` would restore. Nothing is opened, recorded or sent, and no MCP server is
/// connected: the answer comes from a session state that is never registered.
#[cfg(feature = "unstable-session-options")]
pub(super) fn options<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::SessionOptionsRequest = params(methods::SESSION_OPTIONS, raw)?;
    let roots = r.conn.roots(req.cwd, req.additional_directories)?;
    let (store, conn) = (r.store().cloned(), r.conn.clone());
    Ok(Box::pin(async move {
        let result = async {
            let saved = match (&req.session_id, &store) {
                (None, _) => None,
                (Some(session), Some(store)) => {
                    visible(&**store, &conn, session).await?;
                    let mut values = store.state(session).await?;
                    values.remove(crate::session::config::STORE_KEY)
                }
                (Some(session), None) => return Err(not_found(session)),
            };
            let session = req
                .session_id
                .clone()
                .unwrap_or_else(crate::session::registry::fresh_id);
            let state = crate::session::SessionState::new(&conn, session, roots, Vec::new());
            let cx = crate::Session::new(state, None);
            cx.restore_settings(saved.as_ref());
            let (modes, config_options) = cx.settings_state();
            Ok(schema::SessionOptionsResponse::new()
                .modes(modes)
                .config_options(config_options))
        };
        let result = result.await;
        answer(&conn, &id, result).await;
    }))
}
