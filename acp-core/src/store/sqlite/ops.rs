//! The operations of [`SqliteStore`]: the SQL of each [`SessionStore`] method.

use std::collections::HashMap;
use std::path::PathBuf;

use futures_util::future::BoxFuture;
use rusqlite::{OptionalExtension, TransactionBehavior, params};

use super::{Db, SqliteStore};
use crate::error::{Error, Result};
use crate::schema;
use crate::store::{
    Batch, Cursor, ListFilter, Page, Record, SessionStore, StoredSession, cwd_key, path_text,
    storage_error, touch_time, unknown_session,
};

/// The metadata columns of `sessions`, as [`SessionRow::read`] reads them.
pub(super) const COLUMNS: &str = "s.id, s.cwd, s.additional_directories, s.title, s.created_at, s.updated_at, s.owner, s.archived";

/// How many rows `recent` holds before they move to `settled` in one sorted insert (see the
/// schema in `sqlite.rs`). Reading a session's rows scans `recent` (about 20 bytes a row: 640
/// KiB at most); settling writes each session's new entries side by side, where appending
/// them one commit at a time rewrote a page of the index per session per commit.
pub(super) const SETTLE_ROWS: i64 = 32 * 1024;

/// The cursors of session `?1`'s rows after cursor `?2`, the first `?3` of them, in order.
const ROWS_AFTER: &str = "SELECT cursor FROM (\
     SELECT * FROM (SELECT cursor FROM settled WHERE session = ?1 AND cursor > ?2 \
     ORDER BY cursor LIMIT ?3) \
     UNION ALL SELECT * FROM (SELECT cursor FROM recent WHERE session = ?1 AND cursor > ?2 \
     ORDER BY cursor LIMIT ?3)) ORDER BY cursor LIMIT ?3";

/// The last cursor of session `pk` (0 when it has no records).
fn last_cursor(tx: &rusqlite::Transaction<'_>, pk: i64) -> Result<i64> {
    tx.prepare_cached(
        "SELECT coalesce(max(c), 0) FROM (\
         SELECT max(cursor) AS c FROM settled WHERE session = ?1 \
         UNION ALL SELECT max(cursor) FROM recent WHERE session = ?1)",
    )
    .db()?
    .query_row([pk], |r| r.get(0))
    .db()
}

/// Moves the rows of `recent` to `settled` once there are [`SETTLE_ROWS`] of them.
fn settle_if_due(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    let rows: i64 = tx
        .prepare_cached("SELECT count(*) FROM recent")
        .db()?
        .query_row([], |r| r.get(0))
        .db()?;
    if rows >= SETTLE_ROWS {
        tx.prepare_cached(
            "INSERT INTO settled (session, cursor) \
             SELECT session, cursor FROM recent ORDER BY session, cursor",
        )
        .db()?
        .execute([])
        .db()?;
        tx.prepare_cached("DELETE FROM recent")
            .db()?
            .execute([])
            .db()?;
    }
    Ok(())
}

/// Takes the next touch sequence number for a change of the session `pk`.
fn touch(tx: &rusqlite::Transaction<'_>, pk: i64) -> Result<i64> {
    tx.prepare_cached("INSERT INTO touches (session) VALUES (?1)")
        .db()?
        .execute([pk])
        .db()?;
    Ok(tx.last_insert_rowid())
}

/// The `pk` and `updated_at` of session `id`, if it exists.
fn find(tx: &rusqlite::Transaction<'_>, id: &str) -> Result<Option<(i64, String)>> {
    tx.prepare_cached("SELECT pk, updated_at FROM sessions WHERE id = ?1")
        .db()?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .db()
}

/// A session's metadata as stored, read by a query selecting [`COLUMNS`] first.
pub(super) struct SessionRow {
    id: String,
    cwd: String,
    additional_directories: String,
    title: Option<String>,
    created_at: String,
    updated_at: String,
    owner: Option<String>,
    archived: bool,
}

impl SessionRow {
    /// The columns [`COLUMNS`] names, in its order (the next column is the query's own).
    pub(super) const LEN: usize = 8;

    pub(super) fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(SessionRow {
            id: row.get(0)?,
            cwd: row.get(1)?,
            additional_directories: row.get(2)?,
            title: row.get(3)?,
            created_at: row.get(4)?,
            updated_at: row.get(5)?,
            owner: row.get(6)?,
            archived: row.get(7)?,
        })
    }

    pub(super) fn into_session(self) -> Result<StoredSession> {
        let additional_directories: Vec<PathBuf> =
            serde_json::from_str(&self.additional_directories).map_err(|e| {
                storage_error(
                    format_args!("the directories of session `{}` are unreadable", self.id),
                    e,
                )
            })?;
        Ok(StoredSession {
            id: self.id.into(),
            cwd: self.cwd.into(),
            additional_directories,
            title: self.title,
            updated_at: self.updated_at,
            created_at: self.created_at,
            owner: self.owner,
            archived: self.archived,
        })
    }
}

/// About the most text one row of `records` holds: a larger batch takes several rows, so that
/// SQLite's copy of a row (and the page cache it passes through) stays small.
const ROW_BYTES: usize = 256 << 10;

/// The lines of `text` in pieces of at most `max` bytes (a longer line is a piece of its own),
/// each with its number of lines.
fn rows(text: &str, max: usize) -> Vec<(&str, i64)> {
    let mut pieces = Vec::new();
    let (mut start, mut count, mut line_start) = (0, 0, 0);
    for line in text.split('\n') {
        let line_end = line_start + line.len();
        if count > 0 && line_end - start > max {
            // Up to the newline before this line.
            pieces.push((&text[start..line_start - 1], count));
            (start, count) = (line_start, 0);
        }
        count += 1;
        line_start = line_end + 1;
    }
    pieces.push((&text[start..], count));
    pieces
}

/// `u64` positions as SQLite's integers (beyond `i64::MAX` is past everything stored).
pub(super) fn sql_int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The records of session `id` after `after`, in order: the rows (batches) after it until
/// `limit` records are read, the last batch whole.
fn read_records(
    conn: &mut rusqlite::Connection,
    id: &str,
    after: Cursor,
    limit: usize,
) -> Result<Vec<(Cursor, Record)>> {
    let after = sql_int(after);
    // One read transaction: the rows found are all still there when read.
    let tx = conn.transaction().db()?;
    let Some((pk, _)) = find(&tx, id)? else {
        return Ok(Vec::new());
    };
    // Each row holds at least one record: `limit` rows are enough.
    let wanted = sql_int(u64::try_from(limit).unwrap_or(u64::MAX));
    let mut select = tx
        .prepare_cached(&format!(
            "SELECT cursor, count, record FROM records WHERE cursor IN ({ROWS_AFTER}) \
             ORDER BY cursor"
        ))
        .db()?;
    let mut rows = select.query(params![pk, after, wanted]).db()?;
    let mut out = Vec::new();
    while out.len() < limit {
        let Some(row) = rows.next().db()? else {
            break;
        };
        let (last, count): (i64, i64) = (row.get(0).db()?, row.get(1).db()?);
        let body = row.get_ref(2).db()?.as_str().map_err(|e| {
            storage_error(
                format_args!("the batch of session `{id}` ending at {last}"),
                e,
            )
        })?;
        let lines = body.split('\n');
        if count < 1 || lines.clone().count() as i64 != count {
            return Err(storage_error(
                format_args!("the batch of session `{id}` ending at {last} is torn"),
                format_args!("{count} records expected"),
            ));
        }
        for (cursor, text) in (last - count + 1..).zip(lines) {
            if cursor <= after {
                continue;
            }
            let record = serde_json::from_str(text).map_err(|e| {
                storage_error(
                    format_args!("record {cursor} of session `{id}` is unreadable"),
                    e,
                )
            })?;
            out.push((cursor as Cursor, record));
        }
    }
    Ok(out)
}

impl SessionStore for SqliteStore {
    fn save_session<'a>(&'a self, session: &'a StoredSession) -> BoxFuture<'a, Result<()>> {
        let prepared = (|| -> Result<_> {
            let dirs = session
                .additional_directories
                .iter()
                .map(|d| path_text(d))
                .collect::<Result<Vec<_>>>()?;
            Ok((
                session.id.0.to_string(),
                path_text(&session.cwd)?.to_owned(),
                path_text(&cwd_key(&session.cwd))?.to_owned(),
                serde_json::to_string(&dirs)?,
                session.title.clone(),
                session.created_at.clone(),
                session.owner.clone(),
                session.archived,
            ))
        })();
        let Ok((id, cwd, key, dirs, title, created_at, owner, archived)) = prepared else {
            return Box::pin(std::future::ready(prepared.map(drop)));
        };
        self.run(move |conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .db()?;
            let (pk, updated_at) = match find(&tx, &id)? {
                Some((pk, previous)) => (pk, touch_time(Some(&previous))),
                None => {
                    let updated_at = touch_time(None);
                    let created_at = if created_at.is_empty() {
                        updated_at.clone()
                    } else {
                        created_at
                    };
                    // The owner and the archived flag are the first save's: later saves
                    // keep them.
                    tx.prepare_cached(
                        "INSERT INTO sessions (id, cwd, cwd_key, additional_directories, \
                         created_at, updated_at, touch, owner, archived) \
                         VALUES (?1, '', '', '[]', ?2, ?3, 0, ?4, ?5)",
                    )
                    .db()?
                    .execute(params![id, created_at, updated_at, owner, archived])
                    .db()?;
                    (tx.last_insert_rowid(), updated_at)
                }
            };
            let touch = touch(&tx, pk)?;
            tx.prepare_cached(
                "UPDATE sessions SET cwd = ?2, cwd_key = ?3, additional_directories = ?4, \
                 title = ?5, updated_at = ?6, touch = ?7 WHERE pk = ?1",
            )
            .db()?
            .execute(params![pk, cwd, key, dirs, title, updated_at, touch])
            .db()?;
            tx.commit().db()
        })
    }

    fn append<'a>(
        &'a self,
        id: &'a schema::SessionId,
        records: &'a [Record],
    ) -> BoxFuture<'a, Result<Cursor>> {
        match Batch::of(records) {
            Ok(batch) => self.append_batch(id, batch),
            Err(e) => Box::pin(std::future::ready(Err(e))),
        }
    }

    fn append_batch<'a>(
        &'a self,
        id: &'a schema::SessionId,
        batch: Batch,
    ) -> BoxFuture<'a, Result<Cursor>> {
        if batch.is_empty() {
            let id = id.clone();
            return self.run(move |conn| {
                let tx = conn.transaction().db()?;
                let Some((pk, _)) = find(&tx, &id.0)? else {
                    return Err(unknown_session(&id));
                };
                Ok(last_cursor(&tx, pk)? as Cursor)
            });
        }
        let id = id.clone();
        let appended = self.append_batches(vec![(id.clone(), batch)]);
        Box::pin(async move {
            match appended.await?.first() {
                Some(Some(cursor)) => Ok(*cursor),
                _ => Err(unknown_session(&id)),
            }
        })
    }

    fn append_batches<'a>(
        &'a self,
        batches: Vec<(schema::SessionId, Batch)>,
    ) -> BoxFuture<'a, Result<Vec<Option<Cursor>>>> {
        self.run(move |conn| {
            // One transaction for every session in the call: one commit per writer batch.
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .db()?;
            // Batches take the cursors after the largest ever handed out; a row is keyed by
            // its last one (which moves `sqlite_sequence` past it).
            let mut handed_out: i64 = tx
                .prepare_cached(
                    "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'records'), 0)",
                )
                .db()?
                .query_row([], |r| r.get(0))
                .db()?;
            let mut cursors = Vec::with_capacity(batches.len());
            for (id, batch) in batches {
                let Some((pk, previous)) = find(&tx, &id.0)? else {
                    cursors.push(None);
                    continue;
                };
                if batch.is_empty() {
                    cursors.push(Some(last_cursor(&tx, pk)? as Cursor));
                    continue;
                }
                // The batch's text is the row, one record per line (JSON has no raw newlines);
                // a large batch is cut into rows of about `ROW_BYTES`.
                let mut insert = tx
                    .prepare_cached(
                        "INSERT INTO records (cursor, session, count, record) \
                         VALUES (?1, ?2, ?3, ?4)",
                    )
                    .db()?;
                let mut recent = tx
                    .prepare_cached("INSERT INTO recent (cursor, session) VALUES (?1, ?2)")
                    .db()?;
                for (text, count) in rows(batch.as_str(), ROW_BYTES) {
                    handed_out = handed_out.saturating_add(count);
                    insert.execute(params![handed_out, pk, count, text]).db()?;
                    recent.execute(params![handed_out, pk]).db()?;
                }
                drop((insert, recent));
                let touch = touch(&tx, pk)?;
                tx.prepare_cached("UPDATE sessions SET updated_at = ?2, touch = ?3 WHERE pk = ?1")
                    .db()?
                    .execute(params![pk, touch_time(Some(&previous)), touch])
                    .db()?;
                cursors.push(Some(handed_out as Cursor));
            }
            settle_if_due(&tx)?;
            tx.commit().db()?;
            Ok(cursors)
        })
    }

    fn session<'a>(
        &'a self,
        id: &'a schema::SessionId,
    ) -> BoxFuture<'a, Result<Option<StoredSession>>> {
        let id = id.0.to_string();
        self.run(move |conn| {
            conn.prepare_cached(&format!("SELECT {COLUMNS} FROM sessions s WHERE s.id = ?1"))
                .db()?
                .query_row([&id], SessionRow::read)
                .optional()
                .db()?
                .map(SessionRow::into_session)
                .transpose()
        })
    }

    fn records<'a>(
        &'a self,
        id: &'a schema::SessionId,
        after: Option<Cursor>,
    ) -> BoxFuture<'a, Result<Vec<(Cursor, Record)>>> {
        let id = id.0.to_string();
        self.run(move |conn| read_records(conn, &id, after.unwrap_or(0), usize::MAX))
    }

    fn records_page<'a>(
        &'a self,
        id: &'a schema::SessionId,
        after: Option<Cursor>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<(Cursor, Record)>>> {
        let id = id.0.to_string();
        self.run(move |conn| read_records(conn, &id, after.unwrap_or(0), limit.max(1)))
    }

    fn list<'a>(
        &'a self,
        filter: ListFilter<'a>,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Page>> {
        super::list::list(self, filter, cursor, limit)
    }

    fn delete<'a>(&'a self, id: &'a schema::SessionId) -> BoxFuture<'a, Result<()>> {
        let id = id.0.to_string();
        self.run(move |conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .db()?;
            let Some((pk, _)) = find(&tx, &id)? else {
                return Ok(());
            };
            for sql in [
                "DELETE FROM records WHERE cursor IN (\
                 SELECT cursor FROM settled WHERE session = ?1 \
                 UNION ALL SELECT cursor FROM recent WHERE session = ?1)",
                "DELETE FROM settled WHERE session = ?1",
                "DELETE FROM recent WHERE session = ?1",
                "DELETE FROM touches WHERE session = ?1",
                "DELETE FROM state WHERE session = ?1",
                "DELETE FROM sessions WHERE pk = ?1",
            ] {
                tx.prepare_cached(sql).db()?.execute([pk]).db()?;
            }
            tx.commit().db()?;
            // Give the freed pages back to the file system (a no-op on files created before
            // auto_vacuum was set). The deletion itself is done: a failure here only leaves
            // free pages for later writes.
            // It frees a page per row it answers: read them all.
            let vacuum = conn
                .prepare("PRAGMA incremental_vacuum")
                .and_then(|mut pragma| {
                    let mut freed = pragma.query([])?;
                    while freed.next()?.is_some() {}
                    Ok(())
                });
            if let Err(e) = vacuum {
                tracing::debug!("session store: incremental vacuum failed: {e}");
            }
            Ok(())
        })
    }

    fn set_archived<'a>(
        &'a self,
        id: &'a schema::SessionId,
        archived: bool,
    ) -> BoxFuture<'a, Result<()>> {
        let sid = id.clone();
        self.run(move |conn| {
            let changed = conn
                .prepare_cached("UPDATE sessions SET archived = ?2 WHERE id = ?1")
                .db()?
                .execute(params![sid.0.as_ref(), archived])
                .db()?;
            if changed == 0 {
                return Err(unknown_session(&sid));
            }
            Ok(())
        })
    }

    fn put_state<'a>(
        &'a self,
        id: &'a schema::SessionId,
        key: &'a str,
        value: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<()>> {
        let (sid, key) = (id.clone(), key.to_owned());
        let value = match serde_json::to_string(value) {
            Ok(value) => value,
            Err(e) => return Box::pin(std::future::ready(Err(Error::Json(e)))),
        };
        self.run(move |conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .db()?;
            let Some((pk, _)) = find(&tx, &sid.0)? else {
                return Err(unknown_session(&sid));
            };
            tx.prepare_cached(
                "INSERT INTO state (session, key, value) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (session, key) DO UPDATE SET value = excluded.value",
            )
            .db()?
            .execute(params![pk, key, value])
            .db()?;
            tx.commit().db()
        })
    }

    fn state<'a>(
        &'a self,
        id: &'a schema::SessionId,
    ) -> BoxFuture<'a, Result<HashMap<String, serde_json::Value>>> {
        let id = id.0.to_string();
        self.run(move |conn| {
            let mut select = conn
                .prepare_cached(
                    "SELECT key, value FROM state \
                     WHERE session = (SELECT pk FROM sessions WHERE id = ?1)",
                )
                .db()?;
            let rows = select
                .query_map([&id], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                })
                .db()?;
            rows.map(|row| {
                let (key, text) = row.db()?;
                let value = serde_json::from_str(&text).map_err(|e| {
                    storage_error(
                        format_args!("state `{key}` of session `{id}` is unreadable"),
                        e,
                    )
                })?;
                Ok((key, value))
            })
            .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rows_cut_at_line_ends_and_keep_every_line() {
        assert_eq!(super::rows("a", 10), [("a", 1)]);
        assert_eq!(super::rows("a\nb\nc", 3), [("a\nb", 2), ("c", 1)]);
        assert_eq!(super::rows("a\nb\nc", 1), [("a", 1), ("b", 1), ("c", 1)]);
        assert_eq!(super::rows("long\nb", 2), [("long", 1), ("b", 1)]);
        let text = (0..1000)
            .map(|i| format!("line {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let pieces = super::rows(&text, 100);
        assert!(pieces.iter().all(|(p, _)| p.len() <= 100));
        assert_eq!(pieces.iter().map(|(_, n)| n).sum::<i64>(), 1000);
        let joined: Vec<&str> = pieces.iter().map(|(p, _)| *p).collect();
        assert_eq!(joined.join("\n"), text);
    }
}
