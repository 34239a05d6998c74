//! The SQL of [`PostgresStore`](super::PostgresStore)'s operations (`ops.rs`), each statement
//! prepared once per connection, and how values are put into its parameters.

/// `u64` positions as PostgreSQL's `bigint` (beyond `i64::MAX` is past everything stored).
pub(super) fn sql_int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A lease's ttl in milliseconds, rounded up, at least one.
pub(super) fn ttl_ms(ttl: std::time::Duration) -> f64 {
    ttl.as_micros().div_ceil(1000).max(1) as f64
}

/// Locks the counters (held until commit: every change that takes touches or cursors goes
/// one at a time, in commit order) and reads them, with the database's clock in milliseconds.
pub(super) const LOCK_COUNTERS: &str = "SELECT touch, cursor, \
     floor(extract(epoch FROM clock_timestamp()) * 1000)::int8 \
     FROM acp_counters WHERE id = 1 FOR UPDATE";
pub(super) const SET_COUNTERS: &str =
    "UPDATE acp_counters SET touch = $1, cursor = $2 WHERE id = 1";
/// A session's `pk` and `updated_at`, locked against a concurrent `delete` until commit.
pub(super) const FIND: &str =
    "SELECT pk, updated_at FROM acp_sessions WHERE id = $1 FOR NO KEY UPDATE";
pub(super) const FIND_MANY: &str = "SELECT pk, id, updated_at FROM acp_sessions WHERE id = ANY($1) \
     ORDER BY pk FOR NO KEY UPDATE";
/// A new session, with its owner and archived flag (never changed after: `UPDATE_SESSION`
/// keeps them).
pub(super) const INSERT_SESSION: &str = "INSERT INTO acp_sessions (id, cwd, cwd_key, \
     additional_directories, title, created_at, updated_at, touch, owner, archived) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING pk";
/// Sets session `$1`'s archived flag (no row: no such session).
pub(super) const SET_ARCHIVED: &str = "UPDATE acp_sessions SET archived = $2 WHERE id = $1";
/// A row when session `$1`'s lease is held and has not expired.
pub(super) const LEASED: &str =
    "SELECT 1 FROM acp_leases WHERE session = $1 AND expires_at > now()";
pub(super) const UPDATE_SESSION: &str = "UPDATE acp_sessions SET cwd = $2, cwd_key = $3, \
     additional_directories = $4, title = $5, updated_at = $6, touch = $7 WHERE pk = $1";
pub(super) const SET_TITLE: &str =
    "UPDATE acp_sessions SET title = $2, updated_at = $3, touch = $4 WHERE pk = $1";
pub(super) const TOUCH_SESSIONS: &str = "UPDATE acp_sessions s SET updated_at = u.updated_at, \
     touch = u.touch FROM unnest($1::int8[], $2::text[], $3::int8[]) AS u (pk, updated_at, touch) \
     WHERE s.pk = u.pk";
pub(super) const ADD_TOUCHES: &str =
    "INSERT INTO acp_touches (session, seq) SELECT * FROM unnest($1::int8[], $2::int8[])";
pub(super) const ADD_RECORDS: &str = "INSERT INTO acp_records (session, cursor, count, records) \
     SELECT * FROM unnest($1::int8[], $2::int8[], $3::int4[], $4::text[])";
pub(super) const LAST_CURSORS: &str = "SELECT session, max(cursor) FROM acp_records \
     WHERE session = ANY($1) GROUP BY session";
pub(super) const LAST_CURSOR: &str = "SELECT s.pk, coalesce((SELECT max(r.cursor) \
     FROM acp_records r WHERE r.session = s.pk), 0) FROM acp_sessions s WHERE s.id = $1";
/// Rows (batches) of session `$1` after cursor `$2`, the first `$3`.
pub(super) const READ_RECORDS: &str = "SELECT cursor, count, records FROM acp_records \
     WHERE session = (SELECT pk FROM acp_sessions WHERE id = $1) AND cursor > $2 \
     ORDER BY cursor LIMIT $3";
pub(super) const SESSION: &str = "SELECT id, cwd, additional_directories, title, \
     created_at, updated_at, owner, archived FROM acp_sessions WHERE id = $1";
pub(super) const LATEST: &str = "SELECT touch FROM acp_counters WHERE id = 1";
/// Deletes the session (the rest cascades) and its lease, in one statement.
pub(super) const DELETE: &str = "WITH lease AS (DELETE FROM acp_leases WHERE session = $1) \
     DELETE FROM acp_sessions WHERE id = $1";
pub(super) const PUT_STATE: &str = "INSERT INTO acp_state (session, key, value) \
     SELECT pk, $2, $3 FROM acp_sessions WHERE id = $1 \
     ON CONFLICT (session, key) DO UPDATE SET value = excluded.value";
pub(super) const STATE: &str = "SELECT key, value FROM acp_state \
     WHERE session = (SELECT pk FROM acp_sessions WHERE id = $1)";
/// Grants the lease (a row returned) when free, expired or already `$2`'s; `$3` is the ttl in
/// milliseconds. Expiry is the database's clock.
pub(super) const ACQUIRE: &str = "INSERT INTO acp_leases AS l (session, holder, expires_at) \
     VALUES ($1, $2, now() + $3::float8 * interval '1 millisecond') \
     ON CONFLICT (session) DO UPDATE SET holder = excluded.holder, \
     expires_at = excluded.expires_at \
     WHERE l.holder = excluded.holder OR l.expires_at <= now() RETURNING holder";
pub(super) const RELEASE: &str = "DELETE FROM acp_leases WHERE session = $1 AND holder = $2";
