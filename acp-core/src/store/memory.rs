//! [`MemoryStore`]: sessions kept in memory, for tests and for agents that want history only
//! for the life of the process.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::future::BoxFuture;

use super::{
    Cursor, ListCursor, ListFilter, Page, Record, SessionStore, StoredSession, cwd_key, page_of,
    touch_time, unknown_session,
};
use crate::error::Result;
use crate::schema;
use crate::sync::lock;

/// A [`SessionStore`] in memory: everything is gone when the last clone is dropped.
///
/// Clones are cheap and share the same sessions, so a test can restart an agent "on the same
/// store" by handing a clone to the new one. Every operation takes one lock for a moment and
/// never waits on anything else.
///
/// ```
/// use acp_core::store::{MemoryStore, SessionStore, StoredSession};
/// # async fn demo() -> acp_core::Result<()> {
/// let store = MemoryStore::new();
/// store.save_session(&StoredSession::new("sess_1", "/home/me/project")).await?;
/// let again = store.clone(); // the same sessions
/// assert!(again.session(&"sess_1".into()).await?.is_some());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    /// The last touch sequence number handed out (see the module docs of `store`).
    last_touch: u64,
    /// The last record cursor handed out.
    last_cursor: Cursor,
    sessions: HashMap<schema::SessionId, Entry>,
}

#[derive(Debug)]
struct Entry {
    meta: StoredSession,
    /// `cwd_key(meta.cwd)`, for `list`.
    cwd_key: PathBuf,
    /// Every touch of the session, ascending; the last one is its position in `list`.
    touches: Vec<u64>,
    records: Vec<(Cursor, Record)>,
    state: HashMap<String, serde_json::Value>,
}

impl Entry {
    /// The session's position as of touch `snapshot`: its last touch up to then, if it
    /// existed.
    fn position_at(&self, snapshot: u64) -> Option<u64> {
        let upto = self.touches.partition_point(|&t| t <= snapshot);
        upto.checked_sub(1).map(|i| self.touches[i])
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // No operation leaves the data half changed before a panic could occur, so a poisoned
        // lock still guards consistent data.
        lock(&self.inner)
    }
}

impl MemoryStore {
    /// At most `limit` of the session's records after `after`, in order.
    fn records_after(
        &self,
        id: &schema::SessionId,
        after: Option<Cursor>,
        limit: usize,
    ) -> Vec<(Cursor, Record)> {
        let inner = self.lock();
        let Some(entry) = inner.sessions.get(id) else {
            return Vec::new();
        };
        let after = after.unwrap_or(0);
        let from = entry.records.partition_point(|&(c, _)| c <= after);
        let to = from.saturating_add(limit).min(entry.records.len());
        entry.records[from..to].to_vec()
    }
}

impl Inner {
    fn touch(&mut self) -> u64 {
        self.last_touch += 1;
        self.last_touch
    }
}

impl SessionStore for MemoryStore {
    fn save_session<'a>(&'a self, session: &'a StoredSession) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let mut inner = self.lock();
            let touch = inner.touch();
            match inner.sessions.get_mut(&session.id) {
                Some(entry) => {
                    entry.meta = StoredSession {
                        updated_at: touch_time(Some(&entry.meta.updated_at)),
                        created_at: entry.meta.created_at.clone(),
                        owner: entry.meta.owner.clone(),
                        archived: entry.meta.archived,
                        ..session.clone()
                    };
                    entry.cwd_key = cwd_key(&session.cwd);
                    entry.touches.push(touch);
                }
                None => {
                    let updated_at = touch_time(None);
                    let created_at = if session.created_at.is_empty() {
                        updated_at.clone()
                    } else {
                        session.created_at.clone()
                    };
                    let entry = Entry {
                        meta: StoredSession {
                            updated_at,
                            created_at,
                            ..session.clone()
                        },
                        cwd_key: cwd_key(&session.cwd),
                        touches: vec![touch],
                        records: Vec::new(),
                        state: HashMap::new(),
                    };
                    inner.sessions.insert(session.id.clone(), entry);
                }
            }
            Ok(())
        })
    }

    fn append<'a>(
        &'a self,
        id: &'a schema::SessionId,
        records: &'a [Record],
    ) -> BoxFuture<'a, Result<Cursor>> {
        Box::pin(async move {
            let mut guard = self.lock();
            let inner = &mut *guard;
            let entry = inner
                .sessions
                .get_mut(id)
                .ok_or_else(|| unknown_session(id))?;
            if records.is_empty() {
                return Ok(entry.records.last().map_or(0, |&(c, _)| c));
            }
            for record in records {
                inner.last_cursor += 1;
                entry.records.push((inner.last_cursor, record.clone()));
            }
            inner.last_touch += 1;
            entry.touches.push(inner.last_touch);
            entry.meta.updated_at = touch_time(Some(&entry.meta.updated_at));
            Ok(inner.last_cursor)
        })
    }

    fn session<'a>(
        &'a self,
        id: &'a schema::SessionId,
    ) -> BoxFuture<'a, Result<Option<StoredSession>>> {
        Box::pin(async move { Ok(self.lock().sessions.get(id).map(|e| e.meta.clone())) })
    }

    fn records<'a>(
        &'a self,
        id: &'a schema::SessionId,
        after: Option<Cursor>,
    ) -> BoxFuture<'a, Result<Vec<(Cursor, Record)>>> {
        Box::pin(async move { Ok(self.records_after(id, after, usize::MAX)) })
    }

    fn records_page<'a>(
        &'a self,
        id: &'a schema::SessionId,
        after: Option<Cursor>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<(Cursor, Record)>>> {
        Box::pin(async move { Ok(self.records_after(id, after, limit.max(1))) })
    }

    fn list<'a>(
        &'a self,
        filter: ListFilter<'a>,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Page>> {
        Box::pin(async move {
            let limit = limit.max(1);
            let inner = self.lock();
            let cursor = match cursor {
                Some(text) => ListCursor::decode(text, inner.last_touch)?,
                None => ListCursor::first(inner.last_touch),
            };
            let cwd = filter.cwd.map(cwd_key);
            let mut candidates: Vec<(u64, &Entry)> = inner
                .sessions
                .values()
                .filter(|e| cwd.as_ref().is_none_or(|cwd| e.cwd_key == *cwd))
                .filter(|e| {
                    let owner = e.meta.owner.as_deref();
                    filter.owner.is_none_or(|wanted| owner == Some(wanted))
                })
                .filter(|e| filter.archived.is_none_or(|a| e.meta.archived == a))
                .filter_map(|e| Some((e.position_at(cursor.snapshot)?, e)))
                .filter(|&(position, _)| position < cursor.position)
                .collect();
            // Only the newest `limit + 1` are needed; clone just those.
            if candidates.len() > limit + 1 {
                candidates.select_nth_unstable_by(limit, |a, b| b.0.cmp(&a.0));
                candidates.truncate(limit + 1);
            }
            let candidates = candidates
                .into_iter()
                .map(|(position, e)| (position, e.meta.clone()))
                .collect();
            Ok(page_of(candidates, cursor, limit))
        })
    }

    fn delete<'a>(&'a self, id: &'a schema::SessionId) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let removed = self.lock().sessions.remove(id);
            drop(removed); // outside the lock
            Ok(())
        })
    }

    fn set_archived<'a>(
        &'a self,
        id: &'a schema::SessionId,
        archived: bool,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let mut inner = self.lock();
            let entry = inner
                .sessions
                .get_mut(id)
                .ok_or_else(|| unknown_session(id))?;
            entry.meta.archived = archived;
            Ok(())
        })
    }

    fn put_state<'a>(
        &'a self,
        id: &'a schema::SessionId,
        key: &'a str,
        value: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let mut inner = self.lock();
            let entry = inner
                .sessions
                .get_mut(id)
                .ok_or_else(|| unknown_session(id))?;
            entry.state.insert(key.to_owned(), value.clone());
            Ok(())
        })
    }

    fn state<'a>(
        &'a self,
        id: &'a schema::SessionId,
    ) -> BoxFuture<'a, Result<HashMap<String, serde_json::Value>>> {
        Box::pin(async move {
            Ok(self
                .lock()
                .sessions
                .get(id)
                .map(|e| e.state.clone())
                .unwrap_or_default())
        })
    }
}
