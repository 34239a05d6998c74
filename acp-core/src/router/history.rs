//! The methods answered from the session store, when the connection has one: `session/list`,
//! `session/load` (the whole conversation replayed, in order), `session/resume` (restored
//! without replay) and `session/delete`; and what `session/new` and a prompt turn add to it.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures_util::future::BoxFuture;
use serde_json::value::RawValue;
use tracing::{debug, warn};

use super::routes::{answer, open_session};
use super::{Router, params};
use crate::agent::{Agent, SessionSetup};
use crate::peer::Frame;
use crate::protocol::{methods, v1};
use crate::schema::{self, ContentBlock, ContentChunk, RequestId, SessionId, SessionUpdate};
use crate::session::roots::Roots;
use crate::session::{Connection, Session, SessionState};
use crate::store::{Record, SessionStore, StoredSession};
use crate::{Error, Result};

/// Sessions per `session/list` page.
const PAGE: usize = 50;

impl<A: Agent> Router<A> {
    /// The session store, if sessions are recorded.
    pub(crate) fn store(&self) -> Option<&Arc<dyn SessionStore>> {
        self.conn.peer.journal.store()
    }
}

/// What the store keeps of a session besides its records (timestamps are the store's).
fn stored(state: &SessionState) -> StoredSession {
    StoredSession {
        id: state.id.clone(),
        cwd: state.roots.cwd.clone(),
        additional_directories: state.roots.additional.clone(),
        title: None,
        updated_at: String::new(),
        created_at: String::new(),
    }
}

/// Saves a new (or reopened) session's metadata; a failure is logged, the session goes on.
pub(super) async fn save(conn: &Connection, state: &SessionState, title: Option<String>) {
    if let Some(store) = conn.peer.journal.store() {
        let mut session = stored(state);
        session.title = title;
        if let Err(e) = store.save_session(&session).await {
            warn!(session = %state.id, "could not save the session in the store: {e}");
        }
    }
}

/// Records the user's prompt as `user_message_chunk`s, before the turn runs (so before any of
/// its updates), straight into the store: the turn does not wait behind the output queue.
pub(super) async fn record_prompt(conn: &Connection, session: &SessionId, blocks: &[ContentBlock]) {
    let Some(store) = conn.peer.journal.store() else {
        return;
    };
    let records: Vec<Record> = blocks
        .iter()
        .filter_map(|block| {
            let update = SessionUpdate::UserMessageChunk(ContentChunk::new(block.clone()));
            Record::update(&update).ok()
        })
        .collect();
    if let Err(e) = store.append(session, &records).await {
        warn!(%session, "could not record the prompt: {e}");
    }
}

pub(super) fn list<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::ListSessionsRequest = params(methods::SESSION_LIST, raw)?;
    let (store, conn) = (r.store().cloned(), r.conn.clone());
    Ok(Box::pin(async move {
        let Some(store) = store else { return };
        let page = store
            .list(req.cwd.as_deref(), req.cursor.as_deref(), PAGE)
            .await
            .map(|page| {
                let sessions = page
                    .sessions
                    .into_iter()
                    .map(|s| {
                        schema::SessionInfo::new(s.id, s.cwd)
                            .additional_directories(s.additional_directories)
                            .title(s.title)
                            .updated_at(s.updated_at)
                    })
                    .collect();
                schema::ListSessionsResponse::new(sessions).next_cursor(page.next_cursor)
            });
        answer(&conn, &id, page).await;
    }))
}

/// `session/load` with a store: the conversation is replayed from it, then the agent gives the
/// session's setup; `session/resume` (`replay: false`) the same without the replay.
pub(super) fn reopen<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    session_id: SessionId,
    roots: Roots,
    mcp_servers: Vec<schema::McpServer>,
    replay: bool,
) -> BoxFuture<'static, ()> {
    let (agent, conn) = (r.agent.clone(), r.conn.clone());
    let store = r.store().cloned();
    Box::pin(async move {
        let Some(store) = store else { return };
        let stored = async {
            known(&*store, &session_id).await?;
            let records = store.records(&session_id, None).await?;
            Ok((records, store.state(&session_id).await?))
        };
        let (records, values) = match stored.await {
            Ok(stored) => stored,
            Err(e) => return answer(&conn, &id, Err::<(), _>(e)).await,
        };
        // A session open on this connection already is replaced (its turn cancelled).
        if let Some(open) = conn.sessions.remove(&session_id) {
            open.cancel_turn();
            tokio::spawn(async move { crate::mcp::stop(&open).await });
        }
        let state = SessionState::new(&conn, session_id, roots, mcp_servers);
        state.persisted.restore(values);
        super::routes::connect_mcp(&*agent, &state);
        continue_tool_call_ids(&state, &records);
        if replay {
            for (_, record) in &records {
                if let Record::Update { update } = record
                    && let Ok(bytes) = v1::raw_update(&state.id, update)
                {
                    let _ = conn.peer.send(Frame::new(bytes, None)).await;
                }
            }
            debug!(session = %state.id, records = records.len(), "replayed the session");
        }
        let cx = Session::new(state.clone(), None);
        // The agent's own setup (modes, config): its `load_session` when it handles loading
        // itself, otherwise what it gives a new session.
        let setup: Result<SessionSetup> = if agent.capabilities().load_session {
            agent.load_session(&cx).await
        } else {
            agent.new_session(&cx).await
        };
        if replay {
            open_session(&conn, &id, state, setup, |_, setup| {
                schema::LoadSessionResponse::new()
                    .modes(setup.modes)
                    .config_options(setup.config_options)
            })
            .await;
        } else {
            open_session(&conn, &id, state, setup, |_, setup| {
                schema::ResumeSessionResponse::new()
                    .modes(setup.modes)
                    .config_options(setup.config_options)
            })
            .await;
        }
    })
}

pub(super) fn resume<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::ResumeSessionRequest = params(methods::SESSION_RESUME, raw)?;
    let roots = Roots::new(req.cwd, req.additional_directories)?;
    Ok(reopen(r, id, req.session_id, roots, req.mcp_servers, false))
}

pub(super) fn delete<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::DeleteSessionRequest = params(methods::SESSION_DELETE, raw)?;
    let (store, conn) = (r.store().cloned(), r.conn.clone());
    Ok(Box::pin(async move {
        let Some(store) = store else { return };
        if let Some(open) = conn.sessions.remove(&req.session_id) {
            open.cancel_turn();
        }
        let deleted = store.delete(&req.session_id).await;
        answer(
            &conn,
            &id,
            deleted.map(|()| schema::DeleteSessionResponse::new()),
        )
        .await;
    }))
}

/// `-32002` unless the store has the session.
async fn known(store: &dyn SessionStore, id: &SessionId) -> Result<()> {
    match store.session(id).await? {
        Some(_) => Ok(()),
        None => Err(Error::from_rpc(schema::Error::session_not_found(
            id.clone(),
        ))),
    }
}

/// Tool calls numbered after the ones already recorded, so ids stay unique across restarts.
fn continue_tool_call_ids(state: &SessionState, records: &[(u64, Record)]) {
    /// The one field of an update read here.
    #[derive(serde::Deserialize)]
    struct ToolCallOf<'a> {
        #[serde(rename = "toolCallId", borrow)]
        tool_call_id: Option<std::borrow::Cow<'a, str>>,
    }
    let next = records
        .iter()
        .filter_map(|(_, record)| match record {
            Record::Update { update } => {
                serde_json::from_str::<ToolCallOf<'_>>(update.get())
                    .ok()?
                    .tool_call_id
            }
            Record::TurnEnded { .. } => None,
        })
        .filter_map(|id| id.strip_prefix("call_")?.parse::<u64>().ok())
        .max()
        .map_or(0, |n| n + 1);
    state.next_tool_call.fetch_max(next, Ordering::Relaxed);
}
