//! [`SqliteStore`]: sessions in an SQLite database on disk (WAL), the default store; where its
//! file goes by default ([`SqliteStore::default_path`]).
//!
//! # Threads
//!
//! SQLite calls block, so none runs on the async runtime's threads: each operation takes a
//! connection from the store's small pool (opening one if none is idle) and runs on tokio's
//! blocking pool (`spawn_blocking`). That works on a current-thread runtime, and under
//! `#[tokio::test(start_paused = true)]` tokio does not auto-advance its paused clock while a
//! blocking task runs, so a timeout around a store call cannot fire early (a dedicated thread
//! fed by a channel would allow that). The runtime's writer commits everything it took off
//! its queue with one `append_batches`: one transaction, whatever the number of sessions in
//! it. Reads run beside writes (WAL readers never wait on the
//! writer); writes, from this process or another sharing the file, take SQLite's write lock in
//! turn (`BEGIN IMMEDIATE`, waiting up to 10 s). Called outside a tokio runtime,
//! an operation runs on the polling thread.
//!
//! # Schema (version 5, in `PRAGMA user_version`)
//!
//! - `sessions`: one row per session: `pk` (the integer the other tables refer to it by, never
//!   reused), its id, its metadata, `touch` (its latest touch: its position in `list`),
//!   `cwd_key` (the cwd as `list` compares it) and `owner` (version 4: its user, `NULL` for
//!   none and for the sessions of older versions); indexed on `(touch)`, `(cwd_key, touch)`
//!   and `(owner, touch)` (a user's listing reads only that user's sessions); and
//!   `archived` (version 5: `session/archive`'s flag, 0 or 1).
//! - `touches`: every touch (`seq INTEGER PRIMARY KEY AUTOINCREMENT`, session), for the order
//!   of `list` as of a cursor's snapshot; indexed on `(session, seq)`.
//! - `records`: the logs, one row per session per `append` (a batch of records; one of more
//!   than 256 KiB takes several rows): `cursor` (`INTEGER PRIMARY
//!   KEY AUTOINCREMENT`, the cursor of the batch's *last* record), session, `count` (records in
//!   the batch) and the records as JSON, one per line. A batch of `count` records ending at `c`
//!   holds cursors `c - count + 1 ..= c`; the next batch starts after the largest cursor ever
//!   handed out (`sqlite_sequence`), so cursors are never reused, also after deletions. One row
//!   per batch rather than per record: the runtime appends a batch per write to the client, and
//!   a row costs far more than its bytes. (Version 1 had one record per row, which is a batch
//!   of one: `count` was added, defaulting to 1.)
//! - `recent` and `settled`: which rows of `records` are a session's, `(cursor, session)`. An
//!   append adds its rows to `recent` (keyed by cursor: always at its end); when `recent`
//!   holds `ops::SETTLE_ROWS` (32 Ki) rows, they move to `settled` (`(session, cursor)`, without
//!   rowid) in one sorted insert. A session's rows are those of both. (Version 2 indexed
//!   `records` on `(session, cursor)`: with many sessions appending at once, every commit
//!   rewrote an index page per session — two thirds of the pages it wrote; settled in sorted
//!   runs, a page takes many entries at once.)
//! - `state`: the agent's values, `(session, key)` → JSON.
//!
//! # Durability
//!
//! `journal_mode=WAL`, `synchronous=NORMAL`: a committed change is in the WAL file when the
//! call returns, so killing the process at any moment (`kill -9`) loses nothing committed;
//! SQLite ignores a torn or garbage WAL tail when it next opens the file. Only a power loss or
//! OS crash may lose the last transactions (never corrupting the file).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures_util::future::BoxFuture;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use super::storage_error;
use crate::error::{Error, Result};
use crate::sync::lock;

mod list;
mod location;
mod ops;

/// How long a write waits for another connection's (or process's) write to finish.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The environment variable that chooses the data directory of [`SqliteStore::open_default`].
const DATA_DIR_VAR: &str = "ACP_DATA_DIR";

/// Operations running at once, each on a connection of its own (kept idle for the next):
/// beyond this, operations wait their turn instead of opening connections (and blocking
/// threads) without bound — a client flooding `session/new` must not grow the agent.
const MAX_IDLE: usize = 4;

const SCHEMA_VERSION: i64 = 5;

const SCHEMA_V1: &str = "
CREATE TABLE sessions (
    pk INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    cwd TEXT NOT NULL,
    cwd_key TEXT NOT NULL,
    additional_directories TEXT NOT NULL,
    title TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    touch INTEGER NOT NULL
);
CREATE INDEX sessions_by_touch ON sessions (touch);
CREATE INDEX sessions_by_cwd ON sessions (cwd_key, touch);
CREATE TABLE touches (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session INTEGER NOT NULL
);
CREATE INDEX touches_by_session ON touches (session, seq);
CREATE TABLE records (
    cursor INTEGER PRIMARY KEY AUTOINCREMENT,
    session INTEGER NOT NULL,
    record TEXT NOT NULL
);
-- v2 (below) adds: count INTEGER NOT NULL DEFAULT 1
CREATE INDEX records_by_session ON records (session, cursor);
CREATE TABLE state (
    session INTEGER NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (session, key)
) WITHOUT ROWID;
";

/// From version 1 to 2: a row of `records` holds a batch of `count` records, one JSON per line.
const SCHEMA_V2: &str = "ALTER TABLE records ADD COLUMN count INTEGER NOT NULL DEFAULT 1;";

/// From version 2 to 3: the index of `records` by session becomes `settled` (kept up to date
/// in sorted runs, see [`ops`]) plus `recent` (the rows not settled yet, appended in order).
const SCHEMA_V3: &str = "
CREATE TABLE settled (
    session INTEGER NOT NULL,
    cursor INTEGER NOT NULL,
    PRIMARY KEY (session, cursor)
) WITHOUT ROWID;
INSERT INTO settled (session, cursor) SELECT session, cursor FROM records ORDER BY session, cursor;
CREATE TABLE recent (
    cursor INTEGER PRIMARY KEY,
    session INTEGER NOT NULL
);
DROP INDEX records_by_session;
";

/// From version 3 to 4: a session's owner (its user), listed by owner in `list`'s order.
const SCHEMA_V4: &str = "
ALTER TABLE sessions ADD COLUMN owner TEXT;
CREATE INDEX sessions_by_owner ON sessions (owner, touch);
";

/// From version 4 to 5: whether a session is archived (`session/archive`), a `list` filter.
const SCHEMA_V5: &str = "ALTER TABLE sessions ADD COLUMN archived INTEGER NOT NULL DEFAULT 0;";

/// A [`SessionStore`](super::SessionStore) in an SQLite database file: the default store.
///
/// Several stores — in one process or in several, e.g. two editor windows running the same
/// agent — may share one file. Clones are cheap and share the connections.
///
/// ```no_run
/// use acp_core::store::SqliteStore;
/// # fn demo() -> acp_core::Result<()> {
/// // `$ACP_DATA_DIR/scribe/sessions.sqlite3`, else e.g. `~/.local/share/acp/scribe/...`
/// let store = SqliteStore::open_default("scribe")?;
/// let for_tests = SqliteStore::open("/tmp/test/sessions.sqlite3")?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SqliteStore {
    shared: Arc<Shared>,
}

struct Shared {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    /// One permit per operation running ([`MAX_IDLE`]).
    running: Arc<tokio::sync::Semaphore>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.shared.path)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens the store in the database file at `path`, creating the file, its parent
    /// directories and the schema if missing (checking the schema version otherwise). Blocks:
    /// call it before starting the runtime, or in `spawn_blocking`.
    ///
    /// Fails on a file that is not such a database, or one written by a newer schema.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore> {
        let path = path.as_ref();
        // Connections are opened later too: a relative path must not follow the process's cwd.
        let path = std::path::absolute(path)
            .map_err(|e| storage_error(format_args!("cannot open `{}`", path.display()), e))?;
        if let Some(parent) = path.parent() {
            private_dir(parent).map_err(|e| {
                storage_error(format_args!("cannot create `{}`", parent.display()), e)
            })?;
        }
        private_file(&path)
            .map_err(|e| storage_error(format_args!("cannot create `{}`", path.display()), e))?;
        let conn = connect(&path)
            .and_then(|mut conn| migrate(&mut conn).map(|()| conn))
            .map_err(|e| naming(&path, e))?;
        Ok(SqliteStore {
            shared: Arc::new(Shared {
                path,
                idle: Mutex::new(vec![conn]),
                running: Arc::new(tokio::sync::Semaphore::new(MAX_IDLE)),
            }),
        })
    }

    /// Opens the store at [`SqliteStore::default_path`] for this agent. Blocks.
    pub fn open_default(agent_name: &str) -> Result<SqliteStore> {
        let path = Self::default_path(agent_name).ok_or_else(|| {
            Error::msg(format!(
                "session store: no data directory (set {DATA_DIR_VAR} or HOME)"
            ))
        })?;
        // The agent's own directory holds every transcript: its owner's only, even when an
        // earlier version created it readable by others.
        #[cfg(unix)]
        if let Some(dir) = path.parent() {
            use std::os::unix::fs::PermissionsExt;
            private_dir(dir)
                .map_err(|e| storage_error(format_args!("cannot create `{}`", dir.display()), e))?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(|e| {
                storage_error(format_args!("cannot make `{}` private", dir.display()), e)
            })?;
        }
        Self::open(path)
    }

    /// Where [`SqliteStore::open_default`] keeps this agent's sessions:
    /// `<data dir>/<agent>/sessions.sqlite3`, where `<data dir>` is `$ACP_DATA_DIR` if set and
    /// not empty, else `acp` in the platform's user data directory (`$XDG_DATA_HOME` or
    /// `~/.local/share` on Linux, `~/Library/Application Support` on macOS, `%APPDATA%` on
    /// Windows), and `<agent>` is the agent's name made a safe directory name (ASCII letters,
    /// digits, `-`, `_` and `.`; a name that had to be changed gets a short hash of the
    /// original so that two agents never share a directory). `None` when there is no data
    /// directory.
    pub fn default_path(agent_name: &str) -> Option<PathBuf> {
        let dir = location::data_dir_from(std::env::var_os(DATA_DIR_VAR), dirs::data_dir())?;
        Some(
            dir.join(location::dir_name(agent_name))
                .join("sessions.sqlite3"),
        )
    }

    /// The directory of this agent's own data under the data directory (see
    /// [`default_path`](Self::default_path)), e.g. where the network service keeps each
    /// user's default workspace.
    #[cfg(feature = "http")]
    pub(crate) fn agent_dir(agent_name: &str) -> Option<PathBuf> {
        let dir = location::data_dir_from(std::env::var_os(DATA_DIR_VAR), dirs::data_dir())?;
        Some(dir.join(location::dir_name(agent_name)))
    }

    /// The database file (absolute).
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Runs `job` with a connection, off the async runtime's threads.
    fn run<T, F>(&self, job: F) -> BoxFuture<'static, Result<T>>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    {
        let shared = self.shared.clone();
        Box::pin(async move {
            let Ok(_running) = shared.running.clone().acquire_owned().await else {
                return Err(Error::msg("session store: closed"));
            };
            let work = move || shared.with_connection(job);
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => runtime
                    .spawn_blocking(work)
                    .await
                    .unwrap_or_else(|e| Err(storage_error("the operation did not finish", e))),
                Err(_) => work(),
            }
        })
    }
}

impl Shared {
    fn idle(&self) -> MutexGuard<'_, Vec<Connection>> {
        lock(&self.idle)
    }

    fn with_connection<T>(&self, job: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
        let idle = self.idle().pop();
        let mut conn = match idle {
            Some(conn) => conn,
            None => connect(&self.path).map_err(|e| naming(&self.path, e))?,
        };
        let out = job(&mut conn);
        let mut idle = self.idle();
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
        out
    }
}

/// A storage error while opening the file at `path`, naming it.
fn naming(path: &Path, e: Error) -> Error {
    match e {
        Error::Other(m) => Error::msg(format!("{m} (opening `{}`)", path.display())),
        e => e,
    }
}

/// A connection to the database file, set up (the schema is [`migrate`]'s).
fn connect(path: &Path) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).db()?;
    conn.busy_timeout(BUSY_TIMEOUT).db()?;
    // Every statement of the store stays prepared (about 25 of them).
    conn.set_prepared_statement_cache_capacity(64);
    conn.pragma_update(None, "synchronous", "NORMAL").db()?;
    // Copy the WAL into the database file (a checkpoint, with its fsyncs) every 32 MiB of
    // records rather than SQLite's 4 MiB: two thirds of what recording a fast stream cost
    // (measured with `perf` on the bench agent) was checkpoints in the middle of the turn. A
    // turn streaming a model's answer writes far less than that; the WAL file is cut back to
    // 64 MiB after a checkpoint.
    conn.pragma_update(None, "wal_autocheckpoint", 8192).db()?;
    conn.pragma_update(None, "journal_size_limit", 64 << 20)
        .db()?;
    // 512 KiB of page cache per connection instead of SQLite's 2 MiB: the writes (a batch's
    // records as one row, mostly overflow pages written once) gain nothing from a cache, and
    // each connection's cache fills up to its limit and stays there.
    conn.pragma_update(None, "cache_size", -512).db()?;
    Ok(conn)
}

/// Puts the file in WAL mode and creates or checks the schema.
fn migrate(conn: &mut Connection) -> Result<()> {
    // Only takes effect on a file with no tables yet: lets `delete` give space back.
    conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")
        .db()?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .db()?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!("session store: SQLite kept journal mode `{mode}` instead of WAL");
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .db()?;
    let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0)).db()?;
    match version {
        0..SCHEMA_VERSION => {
            // Each step from the file's version up (a new file: all of them).
            let steps = [SCHEMA_V1, SCHEMA_V2, SCHEMA_V3, SCHEMA_V4, SCHEMA_V5];
            for step in &steps[usize::try_from(version).unwrap_or(0)..] {
                tx.execute_batch(step).db()?;
            }
            tx.pragma_update(None, "user_version", SCHEMA_VERSION)
                .db()?;
        }
        SCHEMA_VERSION => {}
        newer => {
            return Err(Error::msg(format!(
                "session store: the database has schema version {newer}, written by a newer \
                 version of acp (this one knows up to {SCHEMA_VERSION})"
            )));
        }
    }
    tx.commit().db()
}

/// SQLite's errors as the crate's.
trait Db<T> {
    fn db(self) -> Result<T>;
}

impl<T> Db<T> for rusqlite::Result<T> {
    fn db(self) -> Result<T> {
        self.map_err(|e| storage_error("SQLite", e))
    }
}

/// Creates `dir` and the directories above it that are missing; the ones created are
/// readable by their owner only (`0700` on Unix): the data directory holds every transcript.
pub(crate) fn private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Creates the database file `path` readable and writable by its owner only (`0600` on
/// Unix), or narrows an existing one, and the journal files beside it, to that: SQLite gives
/// its `-wal` and `-shm` files the mode of the database file.
fn private_file(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)?;
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            let file = Path::new(&name);
            if let Ok(meta) = std::fs::metadata(file)
                && meta.permissions().mode() & 0o077 != 0
            {
                std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600))?;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}
