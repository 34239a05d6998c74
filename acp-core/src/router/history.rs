//! The methods answered from the session store, when the connection has one: `session/list`,
//! `session/load` (the whole conversation replayed, in order), `session/resume` (restored
//! without replay) and `session/delete`; and what `session/new` and a prompt turn add to it.

use std::collections::HashSet;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::value::RawValue;
use tracing::debug;

use super::open::{authenticated, connect_mcp, open_session};
use super::{Router, answer, owner, params};
use crate::agent::{Agent, SessionSetup};
use crate::peer::Frame;
use crate::protocol::methods;
use crate::schema::{self, Meta, RequestId, SessionId};
use crate::session::config::{InitialOptions, STORE_KEY};
use crate::session::roots::Roots;
use crate::session::{Connection, Request, Session, SessionState};
use crate::store::{ListFilter, Record, SessionStore, StoredSession};
use crate::{Error, Result};

/// Sessions per `session/list` page.
const PAGE: usize = 50;

/// Records read from the store at a time when a session is reopened.
const REPLAY_PAGE: usize = 256;

impl<A: Agent> Router<A> {
    /// The session store, if sessions are recorded.
    pub(crate) fn store(&self) -> Option<&Arc<dyn SessionStore>> {
        self.conn.peer().journal.store()
    }
}

pub(super) fn list<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::ListSessionsRequest = params(methods::SESSION_LIST, raw)?;
    #[cfg(feature = "unstable-session-archive")]
    let archived = super::unstable::archived_filter(req.archived.as_ref())?;
    let (store, conn, agent) = (r.store().cloned(), r.conn.clone(), r.agent.clone());
    Ok(Box::pin(async move {
        let Some(store) = store else { return };
        // The user's conversations are shown to a signed-in user only.
        if let Err(e) = authenticated(&*agent, &conn).await {
            return answer(&conn, &id, Err::<(), _>(e)).await;
        }
        let mut filter = ListFilter::all();
        filter.cwd = req.cwd.as_deref();
        #[cfg(feature = "unstable-session-archive")]
        {
            filter.archived = archived;
        }
        let page = store
            .list(owner::listed(&conn, filter), req.cursor.as_deref(), PAGE)
            .await
            .map(|page| {
                let sessions = page
                    .sessions
                    .into_iter()
                    .map(|s| {
                        let info = schema::SessionInfo::new(s.id, s.cwd)
                            .additional_directories(s.additional_directories)
                            .title(s.title)
                            .updated_at(s.updated_at);
                        with_archived(info, s.archived)
                    })
                    .collect();
                schema::ListSessionsResponse::new(sessions).next_cursor(page.next_cursor)
            });
        answer(&conn, &id, page).await;
    }))
}

/// `info` with its archived flag, reported on every listed session when `session/archive` is
/// compiled in (the schema's MUST); as it is otherwise.
fn with_archived(info: schema::SessionInfo, archived: bool) -> schema::SessionInfo {
    #[cfg(feature = "unstable-session-archive")]
    return info.archived(archived);
    #[cfg(not(feature = "unstable-session-archive"))]
    {
        let _ = archived;
        info
    }
}

/// A `session/load` or `session/resume` to answer from the store.
pub(super) struct Reopen {
    pub session_id: SessionId,
    pub roots: Roots,
    pub mcp_servers: Vec<schema::McpServer>,
    pub meta: Option<Meta>,
    /// The editor's system prompt, checked; none keeps the session's.
    pub system_prompt: Option<schema::SystemPrompt>,
    /// The initial config option values the request carries, checked.
    pub initial: InitialOptions,
    /// Replay the conversation (`load`) or not (`resume`).
    pub replay: bool,
}

/// What a reopened session is answered with.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Reply {
    /// `session/load` (or v2's `session/resume` with a replay).
    Load,
    /// `session/resume`.
    Resume,
    /// `session/fork`: the new session, its history copied from its parent.
    #[cfg(feature = "unstable-session-fork")]
    Fork,
}

/// `session/load` with a store: the conversation is replayed from it, then the agent gives the
/// session's setup; `session/resume` (`replay: false`) the same without the replay. The
/// session's modes and config options, and the agent's persisted values, come back as they
/// were saved.
pub(super) fn reopen<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    req: Reopen,
) -> BoxFuture<'static, ()> {
    let (agent, conn) = (r.agent.clone(), r.conn.clone());
    let store = r.store().cloned();
    Box::pin(async move {
        let Some(store) = store else { return };
        if let Err(e) = authenticated(&*agent, &conn).await {
            return answer(&conn, &id, Err::<(), _>(e)).await;
        }
        let reply = if req.replay {
            Reply::Load
        } else {
            Reply::Resume
        };
        reopened(agent, conn, store, id, req, reply).await;
    })
}

/// [`reopen`] once the client is signed in: the session `req` names, answered as `reply`.
pub(super) async fn reopened<A: Agent>(
    agent: Arc<A>,
    conn: Arc<crate::session::Connection>,
    store: Arc<dyn SessionStore>,
    id: RequestId,
    req: Reopen,
    reply: Reply,
) {
    {
        // Another user's session is not there for this one (before its lease: not even a wait).
        match owner::sees(&*store, &conn, &req.session_id).await {
            Ok(true) => {}
            Ok(false) => return answer(&conn, &id, Err::<(), _>(not_found(&req.session_id))).await,
            Err(e) => return answer(&conn, &id, Err::<(), _>(e)).await,
        }
        // A turn left running by this client's previous connection ends and is recorded
        // first; then the lease: another replica that holds the session runs its turns.
        if conn.sessions().get(&req.session_id).is_none() {
            if let Some(detach) = conn.detach() {
                detach.sessions.wait(&req.session_id).await;
            }
            if let Err(e) = super::lease::take(&*store, &conn, &req.session_id).await {
                return answer(&conn, &id, Err::<(), _>(e)).await;
            }
        }
        // What the session was; its records are read a page at a time, so that a long
        // session's replay holds one page in memory, not the whole log.
        let stored = async {
            let session = known(&*store, &req.session_id).await?;
            let values = store.state(&req.session_id).await?;
            let first = store
                .records_page(&req.session_id, None, REPLAY_PAGE)
                .await?;
            Ok((session, values, first))
        };
        let (session, mut values, mut page) = match stored.await {
            Ok(stored) => stored,
            Err(e) => return answer(&conn, &id, Err::<(), _>(e)).await,
        };
        // A session open on this connection already is replaced (its turn cancelled).
        if let Some(open) = conn.sessions().remove(&req.session_id) {
            tokio::spawn(async move { crate::mcp::stop(&open).await });
        }
        let settings = values.remove(STORE_KEY);
        let state = SessionState::new(&conn, req.session_id, req.roots, req.mcp_servers);
        state.restore_persisted(values);
        Session::new(state.clone(), None).set_system_prompt(req.system_prompt);
        connect_mcp(&*agent, &state);
        let mut replayed = 0usize;
        let mut children = HashSet::new();
        while let Some(&(last, _)) = page.last() {
            continue_numbering(&state, &page);
            if req.replay {
                for (_, record) in &page {
                    replay_record(&conn, &*store, state.id(), record, &mut children).await;
                }
            }
            replayed += page.len();
            page = match store
                .records_page(state.id(), Some(last), REPLAY_PAGE)
                .await
            {
                Ok(page) => page,
                Err(e) => return answer(&conn, &id, Err::<(), _>(e)).await,
            };
        }
        debug!(session = %state.id(), records = replayed, replay = req.replay, "reopened the session");
        // Where the version says so (v2): the replay asked for is over, and the session's
        // state, before the answer.
        let background = super::queue::background_terminal_ids(&state);
        for bytes in conn
            .codec()
            .replayed_to_end(state.id(), req.replay, &background)
        {
            let frame = Frame::new(bytes, None).of_session(state.id());
            let _ = conn.peer().send(frame).await;
        }
        let cx = Session::new(state.clone(), None).handling(Request::new(req.meta));
        cx.restore_settings(settings.as_ref());
        // The agent's own setup: its `load_session` when it handles loading itself,
        // otherwise what it gives a new session.
        let setup: Result<SessionSetup> = if agent.capabilities().load_session {
            agent.load_session(&cx).await
        } else {
            agent.new_session(&cx).await
        };
        cx.apply_initial_options(req.initial).await;
        let opened = (state, session.title);
        match reply {
            Reply::Load => {
                open_session(&*agent, &conn, &id, opened, setup, |o| {
                    schema::LoadSessionResponse::new()
                        .modes(o.modes)
                        .config_options(o.config_options)
                        .meta(o.meta)
                })
                .await;
            }
            Reply::Resume => {
                open_session(&*agent, &conn, &id, opened, setup, |o| {
                    schema::ResumeSessionResponse::new()
                        .modes(o.modes)
                        .config_options(o.config_options)
                        .meta(o.meta)
                })
                .await;
            }
            #[cfg(feature = "unstable-session-fork")]
            Reply::Fork => {
                open_session(&*agent, &conn, &id, opened, setup, |o| {
                    schema::ForkSessionResponse::new(o.id)
                        .modes(o.modes)
                        .config_options(o.config_options)
                        .meta(o.meta)
                })
                .await;
            }
        }
    }
}

pub(super) fn resume<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::ResumeSessionRequest = params(methods::SESSION_RESUME, raw)?;
    super::not_a_live_subagent(&r.conn, &req.session_id, methods::SESSION_RESUME)?;
    let roots = r.conn.roots(req.cwd, req.additional_directories)?;
    let system_prompt =
        super::open::system_prompt(&*r.agent, methods::SESSION_RESUME, req.system_prompt)?;
    let initial = initial_options!(methods::SESSION_RESUME, req);
    let reopen_ = Reopen {
        initial,
        session_id: req.session_id,
        roots,
        mcp_servers: req.mcp_servers,
        meta: req.meta,
        system_prompt,
        replay: false,
    };
    Ok(reopen(r, id, reopen_))
}

pub(super) fn delete<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::DeleteSessionRequest = params(methods::SESSION_DELETE, raw)?;
    super::not_a_live_subagent(&r.conn, &req.session_id, methods::SESSION_DELETE)?;
    let (store, conn, agent) = (r.store().cloned(), r.conn.clone(), r.agent.clone());
    Ok(Box::pin(async move {
        let Some(store) = store else { return };
        if let Err(e) = authenticated(&*agent, &conn).await {
            return answer(&conn, &id, Err::<(), _>(e)).await;
        }
        // Another user's session is left as it is, and answered as an unknown one: done.
        let deleted = match owner::sees(&*store, &conn, &req.session_id).await {
            Ok(true) => {
                // Closing it cancels its turn.
                conn.sessions().remove(&req.session_id);
                store.delete(&req.session_id).await
            }
            Ok(false) => Ok(()),
            Err(e) => Err(e),
        };
        answer(
            &conn,
            &id,
            deleted.map(|()| schema::DeleteSessionResponse::new()),
        )
        .await;
    }))
}

/// The stored session, or `-32002`.
/// Sends the client the replay of `record` of `session`, as the connection's version and
/// the client's capabilities show it; when it announces a subagent the client is shown, the
/// subagent's own records follow it (once per child, in `children`).
async fn replay_record(
    conn: &Connection,
    store: &dyn SessionStore,
    session: &SessionId,
    record: &Record,
    children: &mut HashSet<SessionId>,
) {
    let Record::Update { update } = record else {
        return;
    };
    let Ok(Some(bytes)) = conn
        .codec()
        .replayed(session, update, conn.client_capabilities())
    else {
        return;
    };
    let frame = Frame::new(bytes, None).of_session(session);
    let _ = conn.peer().send(frame).await;
    if let Some(child) = announced_child(update)
        && children.insert(child.clone())
    {
        Box::pin(replay_child(conn, store, &child, children)).await;
    }
}

/// The child session a recorded `subagent_update` names.
fn announced_child(update: &RawValue) -> Option<SessionId> {
    if !update
        .get()
        .starts_with(r#"{"sessionUpdate":"subagent_update""#)
    {
        return None;
    }
    match serde_json::from_str(update.get()).ok()? {
        schema::SessionUpdate::SubagentUpdate(subagent) => Some(subagent.session_id),
        _ => None,
    }
}

/// Replays every record of the subagent session `child` (and of its own subagents).
async fn replay_child(
    conn: &Connection,
    store: &dyn SessionStore,
    child: &SessionId,
    children: &mut HashSet<SessionId>,
) {
    let mut after = None;
    loop {
        let page = match store.records_page(child, after, REPLAY_PAGE).await {
            Ok(page) => page,
            Err(e) => {
                tracing::warn!(session = %child, "could not replay a subagent's records: {e}");
                return;
            }
        };
        let Some(&(last, _)) = page.last() else {
            return;
        };
        for (_, record) in &page {
            replay_record(conn, store, child, record, children).await;
        }
        after = Some(last);
    }
}

pub(super) async fn known(store: &dyn SessionStore, id: &SessionId) -> Result<StoredSession> {
    match store.session(id).await? {
        Some(session) => Ok(session),
        None => Err(not_found(id)),
    }
}

/// `-32002` for session `id`.
pub(super) fn not_found(id: &SessionId) -> Error {
    Error::from_rpc(schema::Error::session_not_found(id.clone()))
}

/// Tool calls and messages numbered after the ones already recorded, so ids stay unique in
/// the session across restarts.
fn continue_numbering(state: &SessionState, records: &[(u64, Record)]) {
    /// The fields of an update read here.
    #[derive(serde::Deserialize)]
    struct Ids<'a> {
        #[serde(rename = "toolCallId", borrow)]
        tool_call_id: Option<std::borrow::Cow<'a, str>>,
        #[serde(rename = "messageId", borrow)]
        message_id: Option<std::borrow::Cow<'a, str>>,
    }
    let number = |id: Option<std::borrow::Cow<'_, str>>, prefix: &str| {
        id.and_then(|id| id.strip_prefix(prefix)?.parse::<u64>().ok())
    };
    let (mut calls, mut messages) = (None::<u64>, None::<u64>);
    for (_, record) in records {
        let Record::Update { update } = record else {
            continue;
        };
        let Ok(ids) = serde_json::from_str::<Ids<'_>>(update.get()) else {
            continue;
        };
        calls = calls.max(number(ids.tool_call_id, "call_"));
        messages = messages.max(number(ids.message_id, "msg_"));
    }
    if let Some(n) = calls {
        state.continue_tool_calls_after(n);
    }
    if let Some(n) = messages {
        state.messages().continue_after(n);
    }
}
