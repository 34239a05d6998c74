//! `list` of [`PostgresStore`](super::PostgresStore): like SQLite's (see `sqlite/list.rs`),
//! one page of sessions in the order of their touches as of the listing's snapshot, the
//! filters (cwd, owner, archived) in the queries themselves so that a page holds `limit` sessions of
//! the filter whatever the others are. Each combination of filters is its own statement,
//! prepared once per connection.

use std::sync::LazyLock;

use tokio_postgres::IsolationLevel;
use tokio_postgres::types::ToSql;

use super::ops::session_of;
use super::sql::{LATEST, sql_int};
use super::{Conn, Db};
use crate::error::Result;
use crate::store::{ListCursor, ListFilter, Page, cwd_key, page_of};

/// The metadata columns of `acp_sessions s`, as `session_of` reads them (then the position).
const COLUMNS: &str = "s.id, s.cwd, s.additional_directories, s.title, s.created_at, s.updated_at, s.owner, s.archived";

/// The column of a row's position, after [`COLUMNS`].
const POSITION: usize = 8;

/// A listing's filters as the queries' parameters (`$4` on).
pub(super) struct Filter {
    cwd_key: Option<String>,
    owner: Option<String>,
    archived: Option<bool>,
}

impl Filter {
    /// `None` when the cwd is not UTF-8 (no stored session has it).
    pub(super) fn of(filter: ListFilter<'_>) -> Option<Filter> {
        let cwd_key = match filter.cwd {
            Some(cwd) => Some(cwd_key(cwd).to_str()?.to_owned()),
            None => None,
        };
        Some(Filter {
            cwd_key,
            owner: filter.owner.map(str::to_owned),
            archived: filter.archived,
        })
    }

    /// Which of the [`STATEMENTS`] this filter uses.
    fn index(&self) -> usize {
        usize::from(self.cwd_key.is_some())
            | usize::from(self.owner.is_some()) << 1
            | usize::from(self.archived.is_some()) << 2
    }
}

/// The `unchanged` and `touched` queries (see `sqlite/list.rs`) of each combination of
/// filters, by [`Filter::index`].
static STATEMENTS: LazyLock<[(String, String); 8]> = LazyLock::new(|| {
    std::array::from_fn(|index| {
        let mut conditions = String::new();
        let mut next = 4;
        for (bit, column) in [(1, "cwd_key"), (2, "owner"), (4, "archived")] {
            if index & bit != 0 {
                conditions += &format!(" AND s.{column} = ${next}");
                next += 1;
            }
        }
        let unchanged = format!(
            "SELECT {COLUMNS}, s.touch FROM acp_sessions s WHERE s.touch <= $1 AND s.touch < $2\
             {conditions} ORDER BY s.touch DESC LIMIT $3"
        );
        let touched = format!(
            "SELECT * FROM (SELECT {COLUMNS}, (SELECT max(t.seq) FROM acp_touches t \
             WHERE t.session = s.pk AND t.seq <= $1) AS position \
             FROM acp_sessions s WHERE s.touch > $1{conditions}) c \
             WHERE position < $2 ORDER BY position DESC LIMIT $3"
        );
        (unchanged, touched)
    })
});

/// One page of the sessions `filter` lets through.
pub(super) async fn list(
    conn: &mut Conn,
    filter: Filter,
    cursor: Option<&str>,
    limit: usize,
) -> Result<Page> {
    let (unchanged, touched) = &STATEMENTS[filter.index()];
    let [latest, unchanged, touched] = conn
        .prepare([LATEST, unchanged.as_str(), touched.as_str()])
        .await?;
    // One snapshot for every query.
    let tx = conn
        .client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .db()?;
    let latest: i64 = tx.query_one(&latest, &[]).await.db()?.try_get(0).db()?;
    let latest = u64::try_from(latest).unwrap_or(0);
    let cursor = match cursor {
        Some(text) => ListCursor::decode(text, latest)?,
        None => ListCursor::first(latest),
    };
    let (snapshot, position) = (sql_int(cursor.snapshot), sql_int(cursor.position));
    let wanted = sql_int(limit as u64 + 1);
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&snapshot, &position, &wanted];
    params.extend(filter.cwd_key.as_ref().map(|v| v as &(dyn ToSql + Sync)));
    params.extend(filter.owner.as_ref().map(|v| v as &(dyn ToSql + Sync)));
    params.extend(filter.archived.as_ref().map(|v| v as &(dyn ToSql + Sync)));
    let (unchanged, touched) =
        futures_util::future::try_join(tx.query(&unchanged, &params), tx.query(&touched, &params))
            .await
            .db()?;
    let mut candidates = Vec::with_capacity(unchanged.len() + touched.len());
    for row in unchanged.iter().chain(&touched) {
        let position: i64 = row.try_get(POSITION).db()?;
        candidates.push((position as u64, session_of(row)?));
    }
    tx.commit().await.db()?;
    Ok(page_of(candidates, cursor, limit))
}
