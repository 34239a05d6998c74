//! Where sessions outlive the process: the [`SessionStore`] trait and its implementations,
//! [`MemoryStore`] (for tests and process-lifetime history), [`SqliteStore`] (the default, on
//! disk) and, with feature `postgres`, [`PostgresStore`] (a PostgreSQL database shared by
//! several replicas of an agent).
//!
//! This module owns what is kept about a session — its metadata ([`StoredSession`]), its
//! record log ([`Record`]s at increasing [`Cursor`]s) and the agent's own per-session values
//! (`put_state` / `state`) — the paging of `session/list` ([`Page`]), the ownership leases of
//! replicas ([`SessionStore::acquire_lease`]) and which store a database URL names
//! ([`open_url`], [`DATABASE_URL_VAR`]). It knows nothing of sessions' runtime state: the
//! runtime decides what to record and when, and answers `session/list`, `session/load`,
//! `session/resume`, `session/close` and `session/delete` from what a store returns.
//!
//! Shared by the implementations (so they behave the same): the list cursor codec and the
//! order of `list`, and the store's clock (`updated_at`).
//!
//! # Choosing the store with no code: `$ACP_DATABASE_URL`
//!
//! [`serve_stdio`](crate::serve_stdio) (and [`Server::serve_stdio`](crate::Server::serve_stdio)
//! without a [`store`](crate::Server::store) call) records into the store that
//! `$ACP_DATABASE_URL` names:
//!
//! - `postgres://…` or `postgresql://…`: a [`PostgresStore`] on that database (libpq's URL
//!   form; needs feature `postgres`, else serving fails saying so);
//! - `sqlite://PATH`: a [`SqliteStore`] in the file at `PATH` (`sqlite:///var/lib/a.db` is
//!   `/var/lib/a.db`; `sqlite://a.db` is relative to the working directory);
//! - unset or empty: the agent's default SQLite file ([`SqliteStore::default_path`]).
//!
//! Anything else fails serving at once with an error naming the variable (never the URL's
//! password). The store is opened in the background as always: `initialize` never waits for
//! the database.
//!
//! # The order of `list`, and why its cursor survives concurrent appends
//!
//! Every change of a session (a `save_session` or a non-empty `append`) takes the next number
//! of a store-wide *touch sequence* that is never reused; a session's position in `list` is its
//! latest touch, newest first. That is the order of `updated_at` (both move together), without
//! ties and without depending on the wall clock.
//!
//! A `next_cursor` carries the sequence number current when the first page was taken (the
//! *snapshot*) and the position of the last session shown. Later pages are ordered as of the
//! snapshot: a session touched since then is placed where its last touch *before* the snapshot
//! put it (each store keeps a session's touch history for this). So a session on page 3 that
//! gets an append while the client reads page 1 is neither skipped nor shown twice; sessions
//! created after the first page are not part of that listing (the next `session/list` shows
//! them), and deleted ones simply drop out.

//!
#![cfg_attr(feature = "postgres", doc = "[`PostgresStore`]: PostgresStore")]
#![cfg_attr(
    not(feature = "postgres"),
    doc = "[`PostgresStore`]: #choosing-the-store-with-no-code-acp_database_url"
)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::future::BoxFuture;

use crate::error::{Error, Result};
use crate::schema;

mod clock;
mod memory;
mod opening;
#[cfg(feature = "postgres")]
mod postgres;
mod record;
pub(crate) mod sqlite;
pub(crate) mod url;

pub use memory::MemoryStore;
pub(crate) use opening::Opening;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use postgres::PostgresStore;
pub use record::{Batch, Record};
pub use sqlite::SqliteStore;
pub use url::{DATABASE_URL_VAR, open_url};

use clock::touch_time;
#[cfg(feature = "postgres")]
use clock::touch_time_at;

/// A position in a session's record log: strictly increasing per session, never reused (also
/// after deletions of other sessions). Kept as a cursor for a later `replayFrom`.
///
/// Cursors are store-wide (two sessions never share one) and start at 1, so `0` is before
/// every record.
pub type Cursor = u64;

/// What is stored about a session besides its records.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StoredSession {
    /// The session's id.
    pub id: schema::SessionId,
    /// The session's working directory (absolute, as the client gave it).
    pub cwd: PathBuf,
    /// The client's additional workspace roots for the session, in order.
    pub additional_directories: Vec<PathBuf>,
    /// A human-readable title, if the agent set one.
    pub title: Option<String>,
    /// RFC 3339 UTC with milliseconds, e.g. `"2026-11-23T16:20:00.123Z"`; set by the store on
    /// every save/append (the value passed to `save_session` is ignored). Strictly increases
    /// with each change of the session.
    pub updated_at: String,
    /// When the session was first saved, in the same format. Kept from the first save: the
    /// value passed to the first `save_session` if it is not empty (e.g. a session imported
    /// from elsewhere), else the store's clock; later saves never change it.
    pub created_at: String,
    /// The user the session belongs to: the network service's user who created it (see
    /// `net::HttpConfig`, feature `http`), `None` for a session created without one
    /// (over stdio, or by a service with one bearer token). Kept from the first save, as
    /// `created_at` is: later saves never change it. [`ListFilter::owner`] lists a user's.
    #[serde(default)]
    pub owner: Option<String>,
    /// Whether the session is archived (`session/archive`): hidden from `session/list`
    /// unless asked for. Taken from the first save; later saves keep it, and only
    /// [`SessionStore::set_archived`] changes it.
    #[serde(default)]
    pub archived: bool,
}

impl StoredSession {
    /// A session with no title and no additional directories, for `save_session`; the store
    /// fills in both timestamps.
    pub fn new(id: impl Into<schema::SessionId>, cwd: impl Into<PathBuf>) -> Self {
        StoredSession {
            id: id.into(),
            cwd: cwd.into(),
            additional_directories: Vec::new(),
            title: None,
            updated_at: String::new(),
            created_at: String::new(),
            owner: None,
            archived: false,
        }
    }

    /// The same session, belonging to `owner` (see [`StoredSession::owner`]).
    pub fn owned_by(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }
}

/// Which sessions [`SessionStore::list`] lists: every session by default; each filter set
/// narrows it, in the store's query (paging stays exact under the filters).
///
/// ```
/// # use std::path::Path;
/// use acp_core::store::ListFilter;
/// let alices_in_project = ListFilter::all()
///     .cwd(Path::new("/home/alice/project"))
///     .owner("alice");
/// # let _ = alices_in_project;
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListFilter<'a> {
    /// Only sessions whose cwd is this path exactly (equal as paths: a trailing separator
    /// does not matter; no symlinks are resolved).
    pub cwd: Option<&'a Path>,
    /// Only sessions whose [`owner`](StoredSession::owner) is this user (sessions with no
    /// owner are not listed).
    pub owner: Option<&'a str>,
    /// Only sessions whose [`archived`](StoredSession::archived) flag is this (`None`: both).
    pub archived: Option<bool>,
}

impl<'a> ListFilter<'a> {
    /// Every session.
    pub fn all() -> Self {
        ListFilter::default()
    }

    /// Only the sessions in `cwd`.
    pub fn cwd(mut self, cwd: &'a Path) -> Self {
        self.cwd = Some(cwd);
        self
    }

    /// Only `owner`'s sessions.
    pub fn owner(mut self, owner: &'a str) -> Self {
        self.owner = Some(owner);
        self
    }

    /// Only the archived sessions (`true`) or only those not archived (`false`).
    pub fn archived(mut self, archived: bool) -> Self {
        self.archived = Some(archived);
        self
    }
}

/// One page of [`SessionStore::list`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Page {
    /// The sessions of this page, most recently updated first.
    pub sessions: Vec<StoredSession>,
    /// The cursor of the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// Where sessions are kept. Object safe (the runtime holds `Arc<dyn SessionStore>`), so the
/// methods return boxed futures.
///
/// Every method is atomic: a change is either wholly done or not at all, also when its future
/// is dropped before it completes (the change may then still be done). Errors are storage
/// failures ([`Error::Other`], naming the store), an unknown session where one must exist (an
/// error for which [`Error::is_not_found`] is true), and a malformed list cursor
/// ([`Error::InvalidParams`]).
pub trait SessionStore: Send + Sync + 'static {
    /// Creates the session or updates its metadata (cwd, directories, title); `updated_at`
    /// is set by the store; `created_at` and `owner` are kept from the first save.
    fn save_session<'a>(&'a self, session: &'a StoredSession) -> BoxFuture<'a, Result<()>>;

    /// Appends `records` to the session's log, in order, atomically (all or none), and touches
    /// `updated_at`. Returns the cursor of the last record appended. Appending to an unknown
    /// session is an error ([`Error::is_not_found`]).
    ///
    /// Appending no records changes nothing and returns the session's last cursor (`0` if it
    /// has no records).
    fn append<'a>(
        &'a self,
        id: &'a schema::SessionId,
        records: &'a [Record],
    ) -> BoxFuture<'a, Result<Cursor>>;

    /// [`append`](Self::append) of records already encoded: what the runtime calls as it
    /// records. The default reads the records back and appends them; a store that keeps the
    /// encoded lines can take them as they are.
    fn append_batch<'a>(
        &'a self,
        id: &'a schema::SessionId,
        batch: Batch,
    ) -> BoxFuture<'a, Result<Cursor>> {
        Box::pin(async move {
            let records = batch.records()?;
            self.append(id, &records).await
        })
    }

    /// Appends each batch to its session's log, as [`append_batch`](Self::append_batch) does,
    /// for several sessions at once: what the runtime calls with everything its writer took
    /// off the output queue, so that recording costs one commit per writer batch whatever the
    /// number of sessions in it. A session may appear more than once (its batches are
    /// appended in order).
    ///
    /// Returns, per batch in order, the cursor of its last record, or `None` when its session
    /// is unknown (nothing is appended for it; the others are). A storage failure fails the
    /// whole call. The default appends one batch after the other; a store that can should do
    /// it in one transaction, as [`SqliteStore`] does (then a failure appends nothing).
    fn append_batches<'a>(
        &'a self,
        batches: Vec<(schema::SessionId, Batch)>,
    ) -> BoxFuture<'a, Result<Vec<Option<Cursor>>>> {
        Box::pin(async move {
            let mut cursors = Vec::with_capacity(batches.len());
            for (id, batch) in batches {
                match self.append_batch(&id, batch).await {
                    Ok(cursor) => cursors.push(Some(cursor)),
                    Err(e) if e.is_not_found() => cursors.push(None),
                    Err(e) => return Err(e),
                }
            }
            Ok(cursors)
        })
    }

    /// The session's metadata, if it exists.
    fn session<'a>(
        &'a self,
        id: &'a schema::SessionId,
    ) -> BoxFuture<'a, Result<Option<StoredSession>>>;

    /// The session's records after `after` (all with `None`), in order, with their cursors.
    /// An unknown session has none.
    fn records<'a>(
        &'a self,
        id: &'a schema::SessionId,
        after: Option<Cursor>,
    ) -> BoxFuture<'a, Result<Vec<(Cursor, Record)>>>;

    /// One page of [`records`](Self::records): the session's records after `after`, in
    /// order, about `limit` of them (at least one when any is left; a store that keeps
    /// records in batches may finish the batch it is in, going past `limit`). An empty page
    /// means there are no more. Replay reads a long session this way, a page at a time,
    /// instead of holding the whole log in memory.
    ///
    /// The default reads every record after `after` and keeps the first `limit`; a store
    /// should read only what it returns.
    fn records_page<'a>(
        &'a self,
        id: &'a schema::SessionId,
        after: Option<Cursor>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<(Cursor, Record)>>> {
        Box::pin(async move {
            let mut records = self.records(id, after).await?;
            records.truncate(limit.max(1));
            Ok(records)
        })
    }

    /// Sessions, most recently updated first, those `filter` lets through (its cwd, its
    /// owner); at most `limit` per page (a `limit` of 0 is taken as 1); `cursor` is an
    /// opaque string from a previous page's `next_cursor` of the same filter (a malformed
    /// cursor is an `Error::InvalidParams`). Stable under concurrent appends (no session
    /// twice, none skipped that existed before the first page; see the [module docs](self)).
    /// Every page but the last holds `limit` sessions, also under a filter.
    fn list<'a>(
        &'a self,
        filter: ListFilter<'a>,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Page>>;

    /// Removes the session, its records and its state. Deleting an unknown session is Ok.
    fn delete<'a>(&'a self, id: &'a schema::SessionId) -> BoxFuture<'a, Result<()>>;

    /// Saves the agent's own per-session value under `key` (JSON), replacing the previous.
    /// Saving for an unknown session is an error ([`Error::is_not_found`]); it does not touch
    /// `updated_at`.
    fn put_state<'a>(
        &'a self,
        id: &'a schema::SessionId,
        key: &'a str,
        value: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<()>>;

    /// Every saved value of the session, by key (empty for an unknown session).
    fn state<'a>(
        &'a self,
        id: &'a schema::SessionId,
    ) -> BoxFuture<'a, Result<HashMap<String, serde_json::Value>>>;

    /// Sets (or, with `None`, clears) the session's title, shown by `session/list`; touches
    /// `updated_at`. Setting it for an unknown session is an error ([`Error::is_not_found`]).
    ///
    /// The default reads the session and saves it back with the new title; a store can do it
    /// in one step.
    fn set_title<'a>(
        &'a self,
        id: &'a schema::SessionId,
        title: Option<&'a str>,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let mut session = self.session(id).await?.ok_or_else(|| unknown_session(id))?;
            session.title = title.map(str::to_owned);
            self.save_session(&session).await
        })
    }

    /// Archives (`true`) or unarchives (`false`) the session: the flag
    /// [`StoredSession::archived`], which [`ListFilter::archived`] filters on. Its records,
    /// state and `updated_at` are untouched; setting the flag it already has succeeds. An
    /// unknown session is an error ([`Error::is_not_found`]).
    ///
    /// The default, for a store that cannot keep the flag, is an error saying so (the
    /// runtime's `session/archive` answers it); every store of this crate keeps it.
    fn set_archived<'a>(
        &'a self,
        id: &'a schema::SessionId,
        archived: bool,
    ) -> BoxFuture<'a, Result<()>> {
        let _ = (id, archived);
        Box::pin(std::future::ready(Err(Error::msg(
            "session store: this store cannot archive sessions",
        ))))
    }

    /// Copies session `from` (its records, in order, and its state) into the new session
    /// `to`, saved first with `to`'s metadata (`session/fork`). Returns the cursor of the
    /// last record copied (`0` for none). `from` unknown is an error ([`Error::is_not_found`]),
    /// and nothing is created.
    ///
    /// The default copies through the other methods, a page of records at a time, and
    /// deletes `to` again if a step fails; a store can do it in one transaction.
    fn copy_session<'a>(
        &'a self,
        from: &'a schema::SessionId,
        to: &'a StoredSession,
    ) -> BoxFuture<'a, Result<Cursor>> {
        Box::pin(async move {
            if self.session(from).await?.is_none() {
                return Err(unknown_session(from));
            }
            self.save_session(to).await?;
            let copied = async {
                let mut last = 0;
                let mut after = None;
                loop {
                    let page = self.records_page(from, after, 256).await?;
                    let Some(&(cursor, _)) = page.last() else {
                        break;
                    };
                    after = Some(cursor);
                    let records: Vec<Record> = page.into_iter().map(|(_, r)| r).collect();
                    last = self.append(&to.id, &records).await?;
                }
                for (key, value) in self.state(from).await? {
                    self.put_state(&to.id, &key, &value).await?;
                }
                Ok(last)
            };
            match copied.await {
                Ok(last) => Ok(last),
                Err(e) => {
                    let _ = self.delete(&to.id).await;
                    Err(e)
                }
            }
        })
    }

    /// Whether some holder holds session `id`'s lease now, unexpired (see
    /// [`acquire_lease`](Self::acquire_lease)): the session is open on another replica of
    /// the agent. Reads only, takes nothing (`session/status`). The default (one process, no
    /// lease recorded) is `false`.
    fn leased<'a>(&'a self, id: &'a schema::SessionId) -> BoxFuture<'a, Result<bool>> {
        let _ = id;
        Box::pin(std::future::ready(Ok(false)))
    }

    /// Takes or renews the *ownership lease* of session `id` for `holder`: the right to run
    /// the session's turns, so that two replicas of an agent sharing a store never run turns
    /// of one session at once. Returns whether `holder` holds the lease now.
    ///
    /// - **Granted** (`true`) when the session has no lease, when its lease has expired, or
    ///   when `holder` already holds it. The lease is then `holder`'s until `ttl` from now
    ///   (a renewal moves the expiry to `ttl` from now, also when that is sooner).
    /// - **Refused** (`false`) while another holder's lease has not expired; nothing changes.
    ///
    /// `holder` is an opaque name, the same for every call of one owner (e.g. a replica's id);
    /// two owners must never share one. `ttl` counts in milliseconds (rounded up, at least
    /// one). A holder keeps the lease by renewing it well before it expires (e.g. every third
    /// of `ttl`) and must stop running the session's turns as soon as a renewal is refused or
    /// fails: from its expiry on, another holder may take it over. Leases are independent of
    /// the session's records: a session id may be leased before it is saved; deleting the
    /// session removes its lease.
    ///
    /// A store shared between processes decides with its own clock (for `PostgresStore`,
    /// the database's `now()`), so the replicas' clocks do not matter. The default is for a
    /// store used by one process (as [`MemoryStore`] and [`SqliteStore`] are meant to be):
    /// always granted, never recorded.
    fn acquire_lease<'a>(
        &'a self,
        id: &'a schema::SessionId,
        holder: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool>> {
        let _ = (id, holder, ttl);
        Box::pin(std::future::ready(Ok(true)))
    }

    /// Gives up `holder`'s lease of session `id` (see [`acquire_lease`](Self::acquire_lease)):
    /// any holder may take it at once. Does nothing when `holder` does not hold it (another
    /// holder's lease is never touched), also for an unknown session. The default (one
    /// process) does nothing.
    fn release_lease<'a>(
        &'a self,
        id: &'a schema::SessionId,
        holder: &'a str,
    ) -> BoxFuture<'a, Result<()>> {
        let _ = (id, holder);
        Box::pin(std::future::ready(Ok(())))
    }
}

/// The error of an operation on a session the store does not have.
fn unknown_session(id: &schema::SessionId) -> Error {
    Error::rpc(
        schema::ErrorCode::ResourceNotFound.into(),
        format!("session store: no session `{id}`"),
    )
}

/// The error of a failing store, naming what failed.
fn storage_error(what: impl std::fmt::Display, e: impl std::fmt::Display) -> Error {
    Error::msg(format!("session store: {what}: {e}"))
}

/// A path as the stores keep it: UTF-8 (the protocol's paths are JSON strings).
fn path_text(path: &Path) -> Result<&str> {
    path.to_str().ok_or_else(|| {
        Error::msg(format!(
            "session store: `{}` is not valid UTF-8",
            path.display()
        ))
    })
}

/// The key `list` filters cwd on: the path's components, so `/a/b/` and `/a//b` are `/a/b`
/// (what `Path`'s equality does).
fn cwd_key(path: &Path) -> PathBuf {
    path.components().collect()
}

// ---- the list cursor ---------------------------------------------------------------------

/// Where a listing goes on: `snapshot` is the touch sequence number current when its first page
/// was taken; the next page holds the sessions whose last touch up to `snapshot` is below
/// `position`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ListCursor {
    snapshot: u64,
    position: u64,
}

const CURSOR_PREFIX: &str = "s1";

impl ListCursor {
    /// The first page of a listing over a store whose latest touch is `snapshot`.
    fn first(snapshot: u64) -> Self {
        ListCursor {
            snapshot,
            position: snapshot.saturating_add(1),
        }
    }

    fn encode(self) -> String {
        format!(
            "{CURSOR_PREFIX}{:016x}{:016x}",
            self.snapshot, self.position
        )
    }

    /// Reads a cursor from a previous page of a store whose latest touch is `latest`.
    fn decode(text: &str, latest: u64) -> Result<Self> {
        let invalid = || Error::InvalidParams(format!("invalid session list cursor `{text}`"));
        let hex = text.strip_prefix(CURSOR_PREFIX).ok_or_else(invalid)?;
        if hex.len() != 32 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(invalid());
        }
        let snapshot = u64::from_str_radix(&hex[..16], 16).map_err(|_| invalid())?;
        let position = u64::from_str_radix(&hex[16..], 16).map_err(|_| invalid())?;
        // A cursor always points at a session shown at or before its snapshot, and no store
        // hands out a snapshot it has not reached.
        if position == 0 || position > snapshot || snapshot > latest {
            return Err(invalid());
        }
        Ok(ListCursor { snapshot, position })
    }
}

/// The page out of `candidates` (a session and its position as of the cursor's snapshot, all
/// below the cursor's position, at least `limit + 1` of them when there are that many):
/// newest first, at most `limit`, with the cursor of the next page if more remain.
fn page_of(mut candidates: Vec<(u64, StoredSession)>, cursor: ListCursor, limit: usize) -> Page {
    candidates.sort_unstable_by_key(|c| std::cmp::Reverse(c.0));
    let more = candidates.len() > limit;
    candidates.truncate(limit);
    let next_cursor = match candidates.last() {
        Some(&(position, _)) if more => Some(
            ListCursor {
                snapshot: cursor.snapshot,
                position,
            }
            .encode(),
        ),
        _ => None,
    };
    Page {
        sessions: candidates.into_iter().map(|(_, s)| s).collect(),
        next_cursor,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_cursors_round_trip_and_reject_anything_else() {
        let c = ListCursor {
            snapshot: 41,
            position: 7,
        };
        assert_eq!(ListCursor::decode(&c.encode(), 41).unwrap(), c);
        assert!(
            ListCursor::decode(&c.encode(), 40).is_err(),
            "from the future"
        );
        let first = ListCursor::first(41);
        assert!(
            ListCursor::decode(&first.encode(), 41).is_err(),
            "never handed out"
        );
        for bad in [
            "",
            "s1",
            "garbage",
            "eyJwYWdlIjogMn0=",
            &c.encode().to_uppercase(),
        ] {
            assert!(
                matches!(ListCursor::decode(bad, 100), Err(Error::InvalidParams(_))),
                "{bad}"
            );
        }
        let zero = ListCursor {
            snapshot: 5,
            position: 0,
        };
        assert!(ListCursor::decode(&zero.encode(), 5).is_err());
    }

    #[test]
    fn cwd_keys_compare_as_paths() {
        assert_eq!(cwd_key(Path::new("/a/b/")), PathBuf::from("/a/b"));
        assert_eq!(cwd_key(Path::new("/a//b")), PathBuf::from("/a/b"));
        assert_ne!(cwd_key(Path::new("/a/B")), PathBuf::from("/a/b"));
    }
}
