//! `list` of [`SqliteStore`]: one page of sessions in the order of their touches as of the
//! listing's snapshot (see the module docs of `store`), the filters in the query itself so
//! that a page holds `limit` sessions of the filter whatever the others are.

use futures_util::future::BoxFuture;
use rusqlite::types::Value;

use super::ops::{COLUMNS, SessionRow, sql_int};
use super::{Db, SqliteStore};
use crate::error::Result;
use crate::store::{ListCursor, ListFilter, Page, cwd_key, page_of};

/// One page of the sessions `filter` lets through (see [`SessionStore::list`]).
///
/// [`SessionStore::list`]: crate::store::SessionStore::list
pub(super) fn list(
    store: &SqliteStore,
    filter: ListFilter<'_>,
    cursor: Option<&str>,
    limit: usize,
) -> BoxFuture<'static, Result<Page>> {
    let limit = limit.max(1);
    let cursor = cursor.map(str::to_owned);
    // The filters as conditions on `s` and their values, parameters from `?4` on.
    let mut values: Vec<Value> = Vec::new();
    let mut conditions = String::new();
    if let Some(cwd) = filter.cwd {
        let Some(key) = cwd_key(cwd).to_str().map(str::to_owned) else {
            // Not UTF-8: no stored session has it.
            return Box::pin(std::future::ready(Ok(Page::default())));
        };
        values.push(Value::Text(key));
        conditions += &format!(" AND s.cwd_key = ?{}", values.len() + 3);
    }
    if let Some(owner) = filter.owner {
        values.push(Value::Text(owner.to_owned()));
        conditions += &format!(" AND s.owner = ?{}", values.len() + 3);
    }
    if let Some(archived) = filter.archived {
        values.push(Value::Integer(i64::from(archived)));
        conditions += &format!(" AND s.archived = ?{}", values.len() + 3);
    }
    store.run(move |conn| {
        // One read transaction: every query sees the same snapshot of the file.
        let tx = conn.transaction().db()?;
        let latest: i64 = tx
            .query_row(
                "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'touches'), 0)",
                [],
                |r| r.get(0),
            )
            .db()?;
        let latest = u64::try_from(latest).unwrap_or(0);
        let cursor = match &cursor {
            Some(text) => ListCursor::decode(text, latest)?,
            None => ListCursor::first(latest),
        };
        let (snapshot, position) = (sql_int(cursor.snapshot), sql_int(cursor.position));
        let wanted = sql_int(limit as u64 + 1);
        // Unchanged since the snapshot: placed by their latest touch (the indexes on
        // `(touch)`, `(cwd_key, touch)` and `(owner, touch)` serve this in order).
        let unchanged = format!(
            "SELECT {COLUMNS}, s.touch FROM sessions s WHERE s.touch <= ?1 AND s.touch < ?2 \
             {conditions} ORDER BY s.touch DESC LIMIT ?3"
        );
        // Touched since: placed by their last touch up to the snapshot, if they existed.
        let touched = format!(
            "SELECT * FROM (SELECT {COLUMNS}, (SELECT max(t.seq) FROM touches t \
             WHERE t.session = s.pk AND t.seq <= ?1) AS position \
             FROM sessions s WHERE s.touch > ?1 {conditions}) \
             WHERE position < ?2 ORDER BY position DESC LIMIT ?3"
        );
        let params: Vec<Value> = [snapshot, position, wanted]
            .into_iter()
            .map(Value::Integer)
            .chain(values)
            .collect();
        let mut candidates = Vec::new();
        for sql in [unchanged, touched] {
            let mut select = tx.prepare_cached(&sql).db()?;
            let read = |r: &rusqlite::Row<'_>| {
                Ok((r.get::<_, i64>(SessionRow::LEN)?, SessionRow::read(r)?))
            };
            let rows = select
                .query_map(rusqlite::params_from_iter(&params), read)
                .db()?;
            for row in rows {
                let (position, row) = row.db()?;
                candidates.push((position as u64, row.into_session()?));
            }
        }
        Ok(page_of(candidates, cursor, limit))
    })
}
