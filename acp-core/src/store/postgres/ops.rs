//! The operations of [`PostgresStore`]: the SQL of each [`SessionStore`] method.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Row, Transaction};

use super::sql::*;
use super::{Conn, Db, PostgresStore};
use crate::error::{Error, Result};
use crate::schema;
use crate::store::{
    Batch, Cursor, ListFilter, Page, Record, SessionStore, StoredSession, cwd_key, path_text,
    storage_error, touch_time_at, unknown_session,
};

/// The counters, locked until commit, and the database's clock.
struct Counters {
    touch: i64,
    cursor: i64,
    now_ms: i64,
}

impl Counters {
    async fn lock(tx: &Transaction<'_>, statement: &tokio_postgres::Statement) -> Result<Self> {
        let row = tx.query_one(statement, &[]).await.db()?;
        Ok(Counters {
            touch: row.try_get(0).db()?,
            cursor: row.try_get(1).db()?,
            now_ms: row.try_get(2).db()?,
        })
    }
}

/// A session's metadata from a row of `id, cwd, additional_directories, title, created_at,
/// updated_at, owner, archived` (first).
pub(super) fn session_of(row: &Row) -> Result<StoredSession> {
    let id: String = row.try_get(0).db()?;
    let dirs: String = row.try_get(2).db()?;
    let additional_directories: Vec<PathBuf> = serde_json::from_str(&dirs).map_err(|e| {
        storage_error(
            format_args!("the directories of session `{id}` are unreadable"),
            e,
        )
    })?;
    Ok(StoredSession {
        cwd: row.try_get::<_, String>(1).db()?.into(),
        id: id.into(),
        additional_directories,
        title: row.try_get(3).db()?,
        created_at: row.try_get(4).db()?,
        updated_at: row.try_get(5).db()?,
        owner: row.try_get(6).db()?,
        archived: row.try_get(7).db()?,
    })
}

/// The records of session `id` after `after`: the rows (batches) after it until `limit`
/// records are read, the last batch whole.
async fn read_records(
    conn: &mut Conn,
    id: &str,
    after: Cursor,
    limit: usize,
) -> Result<Vec<(Cursor, Record)>> {
    let [read] = conn.prepare([READ_RECORDS]).await?;
    let after = sql_int(after);
    // Each row holds at least one record: `limit` rows are enough.
    let rows = sql_int(u64::try_from(limit).unwrap_or(u64::MAX));
    let rows = conn.client.query(&read, &[&id, &after, &rows]).await.db()?;
    let mut out = Vec::new();
    for row in rows {
        if out.len() >= limit {
            break;
        }
        let (last, count, body): (i64, i32, &str) = (
            row.try_get(0).db()?,
            row.try_get(1).db()?,
            row.try_get(2).db()?,
        );
        let lines = body.split('\n');
        if count < 1 || lines.clone().count() != count as usize {
            return Err(storage_error(
                format_args!("the batch of session `{id}` ending at {last} is torn"),
                format_args!("{count} records expected"),
            ));
        }
        for (cursor, text) in (last - i64::from(count) + 1..).zip(lines) {
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

async fn append_batches(
    conn: &mut Conn,
    batches: Vec<(schema::SessionId, Batch)>,
) -> Result<Vec<Option<Cursor>>> {
    if batches.is_empty() {
        return Ok(Vec::new());
    }
    let [
        lock,
        find,
        last_cursors,
        add_records,
        add_touches,
        touch_sessions,
        set_counters,
    ] = conn
        .prepare([
            LOCK_COUNTERS,
            FIND_MANY,
            LAST_CURSORS,
            ADD_RECORDS,
            ADD_TOUCHES,
            TOUCH_SESSIONS,
            SET_COUNTERS,
        ])
        .await?;
    let tx = conn.client.transaction().await.db()?;
    let mut counters = Counters::lock(&tx, &lock).await?;
    let ids: Vec<&str> = batches.iter().map(|(id, _)| &*id.0).collect();
    // pk and updated_at by id, locked in pk order (no deadlock with another writer).
    let mut known: HashMap<String, (i64, String)> = HashMap::new();
    for row in tx.query(&find, &[&ids]).await.db()? {
        known.insert(
            row.try_get(1).db()?,
            (row.try_get(0).db()?, row.try_get(2).db()?),
        );
    }
    // Empty batches answer their session's last cursor as of their place in the call: read
    // those the database has, then follow the call's appends.
    let needed: Vec<i64> = batches
        .iter()
        .filter(|(_, batch)| batch.is_empty())
        .filter_map(|(id, _)| known.get(&*id.0).map(|&(pk, _)| pk))
        .collect();
    let mut last: HashMap<i64, i64> = HashMap::new();
    if !needed.is_empty() {
        for row in tx.query(&last_cursors, &[&needed]).await.db()? {
            last.insert(row.try_get(0).db()?, row.try_get(1).db()?);
        }
    }
    let (mut sessions, mut cursors, mut counts, mut texts) = (vec![], vec![], vec![], vec![]);
    let mut touches: (Vec<i64>, Vec<i64>) = (vec![], vec![]);
    // pk → (updated_at, touch), the latest of the call.
    let mut touched: HashMap<i64, (String, i64)> = HashMap::new();
    let mut out = Vec::with_capacity(batches.len());
    for (id, batch) in &batches {
        let Some((pk, updated_at)) = known.get_mut(&*id.0) else {
            out.push(None);
            continue;
        };
        if batch.is_empty() {
            out.push(Some(last.get(pk).copied().unwrap_or(0) as Cursor));
            continue;
        }
        let count = i32::try_from(batch.len())
            .map_err(|_| Error::msg("session store: a batch of more than 2^31 records"))?;
        counters.cursor += i64::from(count);
        counters.touch += 1;
        *updated_at = touch_time_at(Some(updated_at), counters.now_ms);
        sessions.push(*pk);
        cursors.push(counters.cursor);
        counts.push(count);
        texts.push(batch.as_str());
        touches.0.push(*pk);
        touches.1.push(counters.touch);
        touched.insert(*pk, (updated_at.clone(), counters.touch));
        last.insert(*pk, counters.cursor);
        out.push(Some(counters.cursor as Cursor));
    }
    if !sessions.is_empty() {
        let (pks, rest): (Vec<i64>, Vec<(String, i64)>) = touched.into_iter().unzip();
        let (times, touch): (Vec<String>, Vec<i64>) = rest.into_iter().unzip();
        // Sent at once, answered in order.
        futures_util::future::try_join4(
            tx.execute(&add_records, &[&sessions, &cursors, &counts, &texts]),
            tx.execute(&add_touches, &[&touches.0, &touches.1]),
            tx.execute(&touch_sessions, &[&pks, &times, &touch]),
            tx.execute(&set_counters, &[&counters.touch, &counters.cursor]),
        )
        .await
        .db()?;
    }
    tx.commit().await.db()?;
    Ok(out)
}

/// What `save_session` writes, checked before anything is sent.
struct Saved {
    id: String,
    cwd: String,
    cwd_key: String,
    dirs: String,
    title: Option<String>,
    created_at: String,
    owner: Option<String>,
    archived: bool,
}

impl Saved {
    fn of(session: &StoredSession) -> Result<Saved> {
        let dirs = session
            .additional_directories
            .iter()
            .map(|d| path_text(d))
            .collect::<Result<Vec<_>>>()?;
        Ok(Saved {
            id: session.id.0.to_string(),
            cwd: path_text(&session.cwd)?.to_owned(),
            cwd_key: path_text(&cwd_key(&session.cwd))?.to_owned(),
            dirs: serde_json::to_string(&dirs)?,
            title: session.title.clone(),
            created_at: session.created_at.clone(),
            owner: session.owner.clone(),
            archived: session.archived,
        })
    }
}

async fn save_session(conn: &mut Conn, s: Saved) -> Result<()> {
    let [lock, find, insert, update, add_touches, set_counters] = conn
        .prepare([
            LOCK_COUNTERS,
            FIND,
            INSERT_SESSION,
            UPDATE_SESSION,
            ADD_TOUCHES,
            SET_COUNTERS,
        ])
        .await?;
    let tx = conn.client.transaction().await.db()?;
    let mut counters = Counters::lock(&tx, &lock).await?;
    counters.touch += 1;
    let touch = counters.touch;
    let pk: i64 = match tx.query_opt(&find, &[&s.id]).await.db()? {
        Some(row) => {
            let (pk, previous): (i64, String) = (row.try_get(0).db()?, row.try_get(1).db()?);
            let updated_at = touch_time_at(Some(&previous), counters.now_ms);
            tx.execute(
                &update,
                &[
                    &pk,
                    &s.cwd,
                    &s.cwd_key,
                    &s.dirs,
                    &s.title,
                    &updated_at,
                    &touch,
                ],
            )
            .await
            .db()?;
            pk
        }
        None => {
            let updated_at = touch_time_at(None, counters.now_ms);
            let created_at = if s.created_at.is_empty() {
                &updated_at
            } else {
                &s.created_at
            };
            let row = tx
                .query_one(
                    &insert,
                    &[
                        &s.id,
                        &s.cwd,
                        &s.cwd_key,
                        &s.dirs,
                        &s.title,
                        created_at,
                        &updated_at,
                        &touch,
                        &s.owner,
                        &s.archived,
                    ],
                )
                .await
                .db()?;
            row.try_get(0).db()?
        }
    };
    futures_util::future::try_join(
        tx.execute(&add_touches, &[&vec![pk], &vec![touch]]),
        tx.execute(&set_counters, &[&counters.touch, &counters.cursor]),
    )
    .await
    .db()?;
    tx.commit().await.db()
}

async fn set_title(conn: &mut Conn, id: &schema::SessionId, title: Option<&str>) -> Result<()> {
    let [lock, find, set_title, add_touches, set_counters] = conn
        .prepare([LOCK_COUNTERS, FIND, SET_TITLE, ADD_TOUCHES, SET_COUNTERS])
        .await?;
    let tx = conn.client.transaction().await.db()?;
    let mut counters = Counters::lock(&tx, &lock).await?;
    let Some(row) = tx.query_opt(&find, &[&&*id.0]).await.db()? else {
        return Err(unknown_session(id));
    };
    let (pk, previous): (i64, String) = (row.try_get(0).db()?, row.try_get(1).db()?);
    counters.touch += 1;
    let updated_at = touch_time_at(Some(&previous), counters.now_ms);
    futures_util::future::try_join3(
        tx.execute(&set_title, &[&pk, &title, &updated_at, &counters.touch]),
        tx.execute(&add_touches, &[&vec![pk], &vec![counters.touch]]),
        tx.execute(&set_counters, &[&counters.touch, &counters.cursor]),
    )
    .await
    .db()?;
    tx.commit().await.db()
}

async fn put_state(conn: &mut Conn, id: &schema::SessionId, key: &str, value: &str) -> Result<()> {
    let [put] = conn.prepare([PUT_STATE]).await?;
    match conn.client.execute(&put, &[&&*id.0, &key, &value]).await {
        Ok(0) => Err(unknown_session(id)),
        Ok(_) => Ok(()),
        // Deleted between the read of its pk and the insert.
        Err(e) if e.code() == Some(&SqlState::FOREIGN_KEY_VIOLATION) => Err(unknown_session(id)),
        Err(e) => Err(e).db(),
    }
}

async fn state(conn: &mut Conn, id: &str) -> Result<HashMap<String, serde_json::Value>> {
    let [state] = conn.prepare([STATE]).await?;
    let rows = conn.client.query(&state, &[&id]).await.db()?;
    rows.iter()
        .map(|row| {
            let (key, text): (String, &str) = (row.try_get(0).db()?, row.try_get(1).db()?);
            let value = serde_json::from_str(text).map_err(|e| {
                storage_error(
                    format_args!("state `{key}` of session `{id}` is unreadable"),
                    e,
                )
            })?;
            Ok((key, value))
        })
        .collect()
}

/// Runs `op` with a connection of the store; its errors name the database.
macro_rules! run {
    ($store:expr, |$conn:ident| $op:expr) => {{
        let shared = $store.shared.clone();
        Box::pin(async move {
            let mut pooled = shared.conn().await?;
            let $conn: &mut Conn = &mut pooled;
            let out = $op.await;
            pooled.done();
            out.map_err(|e| shared.naming(e))
        })
    }};
}

impl SessionStore for PostgresStore {
    fn save_session<'a>(&'a self, session: &'a StoredSession) -> BoxFuture<'a, Result<()>> {
        let saved = match Saved::of(session) {
            Ok(saved) => saved,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        run!(self, |conn| save_session(conn, saved))
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
            return run!(self, |conn| async {
                let [last] = conn.prepare([LAST_CURSOR]).await?;
                match conn.client.query_opt(&last, &[&&*id.0]).await.db()? {
                    Some(row) => Ok(row.try_get::<_, i64>(1).db()? as Cursor),
                    None => Err(unknown_session(id)),
                }
            });
        }
        let appended = self.append_batches(vec![(id.clone(), batch)]);
        Box::pin(async move {
            match appended.await?.first() {
                Some(Some(cursor)) => Ok(*cursor),
                _ => Err(unknown_session(id)),
            }
        })
    }

    fn append_batches<'a>(
        &'a self,
        batches: Vec<(schema::SessionId, Batch)>,
    ) -> BoxFuture<'a, Result<Vec<Option<Cursor>>>> {
        run!(self, |conn| append_batches(conn, batches))
    }

    fn session<'a>(
        &'a self,
        id: &'a schema::SessionId,
    ) -> BoxFuture<'a, Result<Option<StoredSession>>> {
        run!(self, |conn| async {
            let [session] = conn.prepare([SESSION]).await?;
            let row = conn.client.query_opt(&session, &[&&*id.0]).await.db()?;
            row.as_ref().map(session_of).transpose()
        })
    }

    fn records<'a>(
        &'a self,
        id: &'a schema::SessionId,
        after: Option<Cursor>,
    ) -> BoxFuture<'a, Result<Vec<(Cursor, Record)>>> {
        run!(self, |conn| read_records(
            conn,
            &id.0,
            after.unwrap_or(0),
            usize::MAX
        ))
    }

    fn records_page<'a>(
        &'a self,
        id: &'a schema::SessionId,
        after: Option<Cursor>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<(Cursor, Record)>>> {
        run!(self, |conn| read_records(
            conn,
            &id.0,
            after.unwrap_or(0),
            limit.max(1)
        ))
    }

    fn list<'a>(
        &'a self,
        filter: ListFilter<'a>,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Page>> {
        let Some(filter) = super::list::Filter::of(filter) else {
            // A cwd that is not UTF-8: no stored session has it.
            return Box::pin(std::future::ready(Ok(Page::default())));
        };
        run!(self, |conn| super::list::list(
            conn,
            filter,
            cursor,
            limit.max(1)
        ))
    }

    fn delete<'a>(&'a self, id: &'a schema::SessionId) -> BoxFuture<'a, Result<()>> {
        run!(self, |conn| async {
            let [delete] = conn.prepare([DELETE]).await?;
            conn.client.execute(&delete, &[&&*id.0]).await.db()?;
            Ok(())
        })
    }

    fn put_state<'a>(
        &'a self,
        id: &'a schema::SessionId,
        key: &'a str,
        value: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<()>> {
        let value = match serde_json::to_string(value) {
            Ok(value) => value,
            Err(e) => return Box::pin(std::future::ready(Err(Error::Json(e)))),
        };
        run!(self, |conn| put_state(conn, id, key, &value))
    }

    fn state<'a>(
        &'a self,
        id: &'a schema::SessionId,
    ) -> BoxFuture<'a, Result<HashMap<String, serde_json::Value>>> {
        run!(self, |conn| state(conn, &id.0))
    }

    fn set_title<'a>(
        &'a self,
        id: &'a schema::SessionId,
        title: Option<&'a str>,
    ) -> BoxFuture<'a, Result<()>> {
        run!(self, |conn| set_title(conn, id, title))
    }

    fn set_archived<'a>(
        &'a self,
        id: &'a schema::SessionId,
        archived: bool,
    ) -> BoxFuture<'a, Result<()>> {
        run!(self, |conn| async {
            let [set] = conn.prepare([SET_ARCHIVED]).await?;
            match conn
                .client
                .execute(&set, &[&&*id.0, &archived])
                .await
                .db()?
            {
                0 => Err(unknown_session(id)),
                _ => Ok(()),
            }
        })
    }

    fn leased<'a>(&'a self, id: &'a schema::SessionId) -> BoxFuture<'a, Result<bool>> {
        run!(self, |conn| async {
            let [leased] = conn.prepare([LEASED]).await?;
            let row = conn.client.query_opt(&leased, &[&&*id.0]).await.db()?;
            Ok(row.is_some())
        })
    }

    fn acquire_lease<'a>(
        &'a self,
        id: &'a schema::SessionId,
        holder: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool>> {
        run!(self, |conn| async {
            let [acquire] = conn.prepare([ACQUIRE]).await?;
            let granted = conn
                .client
                .query_opt(&acquire, &[&&*id.0, &holder, &ttl_ms(ttl)])
                .await
                .db()?;
            Ok(granted.is_some())
        })
    }

    fn release_lease<'a>(
        &'a self,
        id: &'a schema::SessionId,
        holder: &'a str,
    ) -> BoxFuture<'a, Result<()>> {
        run!(self, |conn| async {
            let [release] = conn.prepare([RELEASE]).await?;
            conn.client
                .execute(&release, &[&&*id.0, &holder])
                .await
                .db()?;
            Ok(())
        })
    }
}
