//! [`PostgresStore`]: sessions in a PostgreSQL database that several replicas of an agent
//! share (feature `postgres`), on `tokio-postgres`.
//!
//! How replicas sharing the database stay consistent is in [`PostgresStore`]'s docs.
//!
//! # Schema (version 3, in `acp_counters.schema_version`)
//!
//! All tables are prefixed `acp_`, so the store can live in an existing database (or a
//! schema of its own: `?options=-csearch_path%3Dacp` in the URL).
//!
//! - `acp_counters`: one row: the last touch and cursor handed out, and the schema version.
//! - `acp_sessions`: one row per session: `pk` (identity, what the others refer to), its id,
//!   metadata, `touch` (its latest touch: its position in `list`), `cwd_key` and `owner`
//!   (version 2, added to a version 1 database on open: its user, `NULL` for none); indexed
//!   on `(touch)`, `(cwd_key, touch)` and `(owner, touch)`.
//! - `acp_touches`: every touch `(session, seq)`, for the order of `list` as of a cursor's
//!   snapshot.
//! - `acp_records`: one row per appended batch, `(session, cursor)` → `count` and the records
//!   as JSON, one per line; `cursor` is the batch's *last* record's, so a batch of `count`
//!   records ending at `c` holds `c - count + 1 ..= c` (as in SQLite).
//! - `acp_state`: the agent's values, `(session, key)` → JSON text.
//! - `acp_leases`: `session` (the id) → `holder`, `expires_at`.
//!
//! The other tables refer to `acp_sessions` with `ON DELETE CASCADE`: deleting a session is
//! one statement.
//!
//! # Connections
//!
//! A store keeps up to 8 connections (`MAX_CONNECTIONS`), opened when needed and kept idle for
//! the next operation (no pool crate: the same few lines as `SqliteStore`'s). Each prepares
//! its statements once. A connection that broke (the server restarted) is dropped and the next
//! operation opens a new one; so is one whose operation was dropped midway (its transaction
//! rolls back with it). Operations need a tokio runtime.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_postgres::config::Host;
use tokio_postgres::{Client, Config, NoTls, Statement};

use crate::error::{Error, Result};
use crate::sync::lock;

mod list;
mod ops;
mod sql;
mod tls;

/// Operations running at once, each on a connection of its own (kept idle for the next):
/// beyond this they wait their turn instead of opening connections without bound (a
/// PostgreSQL server allows about a hundred in all, shared by every replica).
const MAX_CONNECTIONS: usize = 8;

/// How long opening a connection may take when the URL does not say (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The schema this version writes and reads.
const SCHEMA_VERSION: i32 = 3;

/// The key of the advisory lock held while the schema is created ("acp_sess").
const SCHEMA_LOCK: i64 = 0x6163_705f_7365_7373;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS acp_counters (
    id integer PRIMARY KEY CHECK (id = 1),
    touch bigint NOT NULL,
    cursor bigint NOT NULL,
    schema_version integer NOT NULL
);
INSERT INTO acp_counters (id, touch, cursor, schema_version) VALUES (1, 0, 0, 1)
    ON CONFLICT (id) DO NOTHING;
CREATE TABLE IF NOT EXISTS acp_sessions (
    pk bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id text NOT NULL UNIQUE,
    cwd text NOT NULL,
    cwd_key text NOT NULL,
    additional_directories text NOT NULL,
    title text,
    created_at text NOT NULL,
    updated_at text NOT NULL,
    touch bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS acp_sessions_by_touch ON acp_sessions (touch);
CREATE INDEX IF NOT EXISTS acp_sessions_by_cwd ON acp_sessions (cwd_key, touch);
CREATE TABLE IF NOT EXISTS acp_touches (
    session bigint NOT NULL REFERENCES acp_sessions (pk) ON DELETE CASCADE,
    seq bigint NOT NULL,
    PRIMARY KEY (session, seq)
);
CREATE TABLE IF NOT EXISTS acp_records (
    session bigint NOT NULL REFERENCES acp_sessions (pk) ON DELETE CASCADE,
    cursor bigint NOT NULL,
    count integer NOT NULL,
    records text NOT NULL,
    PRIMARY KEY (session, cursor)
);
CREATE TABLE IF NOT EXISTS acp_state (
    session bigint NOT NULL REFERENCES acp_sessions (pk) ON DELETE CASCADE,
    key text NOT NULL,
    value text NOT NULL,
    PRIMARY KEY (session, key)
);
CREATE TABLE IF NOT EXISTS acp_leases (
    session text PRIMARY KEY,
    holder text NOT NULL,
    expires_at timestamptz NOT NULL
);
ALTER TABLE acp_sessions ADD COLUMN IF NOT EXISTS owner text;
CREATE INDEX IF NOT EXISTS acp_sessions_by_owner ON acp_sessions (owner, touch);
UPDATE acp_counters SET schema_version = 2 WHERE id = 1 AND schema_version < 2;
ALTER TABLE acp_sessions ADD COLUMN IF NOT EXISTS archived boolean NOT NULL DEFAULT false;
UPDATE acp_counters SET schema_version = 3 WHERE id = 1 AND schema_version < 3;
";

/// A [`SessionStore`](super::SessionStore) in a PostgreSQL database, shared by every replica
/// of an agent that opens it. Also what `$ACP_DATABASE_URL=postgres://…` picks with no code.
///
/// Clones are cheap and share the connections (at most 8 at once, opened when needed; one
/// that broke, e.g. when the server restarted, is replaced by the next operation). Operations
/// need a tokio runtime. The tables, all prefixed `acp_`, are created on first use, so the
/// store can live in an existing database (or a schema of its own:
/// `?options=-csearch_path%3Dacp` in the URL).
///
/// ```no_run
/// use acp_core::store::PostgresStore;
/// # async fn demo(agent: impl acp_core::Agent) -> acp_core::Result<()> {
/// let store = PostgresStore::connect("postgres://acp:secret@db.internal/agents").await?;
/// acp_core::Server::new(agent).store(store).serve_stdio().await
/// # }
/// ```
///
/// # Several replicas, one database
///
/// Every replica opens its own `PostgresStore` on the same database; each sees what the
/// others committed: `list` shows every session, a session whose replica died is read whole
/// by another. What keeps them consistent lives in the database, not in any process:
///
/// - **Cursors and touches are handed out in commit order.** Every change that takes them (a
///   save, an append, a title) first locks the one row of `acp_counters`, takes the next
///   numbers from it and writes them back in the same transaction, so the row lock is held
///   until commit. Two appends to one session, from two processes, are therefore ordered
///   whole, the first to commit holding the lower cursors; a reader that saw cursor `c` never
///   gets a record below `c` committed later, and a `list` snapshot (the touch number in that
///   row) never misses a touch below it that commits later. This makes the database's writes
///   of sessions one at a time, as SQLite's are: each is one short transaction (a writer
///   batch, whatever the number of sessions in it).
/// - **`updated_at` is the database's clock** (`clock_timestamp()`, read under that lock), so
///   the order of `updated_at` is the order of `list` whatever the replicas' clocks say.
/// - **Leases** ([`SessionStore::acquire_lease`](super::SessionStore::acquire_lease)) are rows
///   of `acp_leases` whose expiry is computed with the database's `now()`; one `INSERT … ON
///   CONFLICT DO UPDATE … WHERE` grants or refuses, atomically.
/// - **The schema is created on open**, idempotently (`CREATE … IF NOT EXISTS`), in a
///   transaction holding a transaction-scoped advisory lock, so two processes opening a new
///   database at once do not race.
#[derive(Clone)]
pub struct PostgresStore {
    shared: Arc<Shared>,
}

struct Shared {
    config: Config,
    /// How connections are encrypted (`None`: they are not).
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    /// Where the database is, for messages: host, port, database and user (no password).
    target: String,
    idle: Mutex<Vec<Conn>>,
    /// One permit per operation running ([`MAX_CONNECTIONS`]).
    running: Arc<Semaphore>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("database", &self.shared.target)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to the database `url` names (`postgres://user:password@host:port/database`,
    /// with libpq's parameters, e.g. `?host=/run/postgresql` for a Unix socket or
    /// `?connect_timeout=5`; 10 s when not given) and creates the schema if missing (checking
    /// its version otherwise).
    ///
    /// Fails, naming the host, port, database and user (never the password), when the URL is
    /// malformed, the server cannot be reached or refuses the login, or the database was
    /// written by a newer schema.
    ///
    /// TLS, as libpq's URLs say it: `?sslmode=require` (or `verify-ca`, `verify-full`)
    /// connects over TLS only, checking the server's certificate and name against the
    /// certificates in the file `sslrootcert=` names (PEM; `$PGSSLROOTCERT` when the URL names
    /// none), else the system's (also with `sslrootcert=system`). Without it (`disable`,
    /// `prefer`, no `sslmode`) connections are not encrypted: fine on a Unix socket or a
    /// private network, not across anyone else's.
    pub async fn connect(url: &str) -> Result<PostgresStore> {
        let parsed = tls::parse(url);
        let tls = match &parsed.tls {
            Some(root) => Some(tls::connector(root.as_deref())?),
            None => None,
        };
        let mut config: Config = parsed.url.parse().map_err(|e: tokio_postgres::Error| {
            Error::msg(format!(
                "session store: the PostgreSQL URL is malformed: {}",
                chain(&e)
            ))
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("acp");
        }
        let shared = Arc::new(Shared {
            target: target(&config),
            config,
            tls,
            idle: Mutex::new(Vec::new()),
            running: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
        });
        let mut conn = shared.conn().await?;
        create_schema(&mut conn.client)
            .await
            .map_err(|e| shared.naming(e))?;
        conn.done();
        Ok(PostgresStore { shared })
    }

    /// Where the database is: host, port, database and user (never the password).
    pub fn database(&self) -> &str {
        &self.shared.target
    }
}

/// The database a configuration connects to, for messages: `host:port/database as user`.
fn target(config: &Config) -> String {
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            match host {
                Host::Tcp(name) => format!("{name}:{port}"),
                #[cfg(unix)]
                Host::Unix(dir) => format!("{}/.s.PGSQL.{port}", dir.display()),
            }
        })
        .collect();
    let hosts = if hosts.is_empty() {
        "no host".to_owned()
    } else {
        hosts.join(",")
    };
    let user = config.get_user().unwrap_or("the default user");
    let database = config.get_dbname().unwrap_or(user);
    format!("{hosts}, database `{database}` as `{user}`")
}

/// Creates the tables if missing and checks the schema version, one process at a time.
async fn create_schema(client: &mut Client) -> Result<()> {
    let tx = client.transaction().await.db()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
        .await
        .db()?;
    tx.batch_execute(SCHEMA).await.db()?;
    let version: i32 = tx
        .query_one("SELECT schema_version FROM acp_counters WHERE id = 1", &[])
        .await
        .db()?
        .try_get(0)
        .db()?;
    if version > SCHEMA_VERSION {
        return Err(Error::msg(format!(
            "session store: the database has schema version {version}, written by a newer \
             version of acp (this one knows up to {SCHEMA_VERSION})"
        )));
    }
    tx.commit().await.db()
}

/// One connection and the statements prepared on it.
struct Conn {
    client: Client,
    statements: HashMap<&'static str, Statement>,
}

impl Conn {
    /// The statements of `sql`, prepared on this connection once (those not prepared yet, at
    /// once). Call it before a transaction starts: a prepared statement outlives it.
    async fn prepare<const N: usize>(&mut self, sql: [&'static str; N]) -> Result<[Statement; N]> {
        let missing: Vec<&'static str> = sql
            .iter()
            .copied()
            .filter(|s| !self.statements.contains_key(s))
            .collect();
        let prepared =
            futures_util::future::join_all(missing.iter().map(|s| self.client.prepare(s))).await;
        for (s, statement) in missing.into_iter().zip(prepared) {
            self.statements.insert(s, statement.db()?);
        }
        Ok(sql.map(|s| self.statements[s].clone()))
    }
}

/// A connection taken for one operation. [`Pooled::done`] gives it back; dropped without it
/// (the operation's future dropped midway), the connection closes.
struct Pooled {
    conn: Option<Conn>,
    shared: Arc<Shared>,
    _permit: OwnedSemaphorePermit,
}

impl Pooled {
    /// The operation ran to its end: the connection is kept for the next, unless it broke.
    fn done(mut self) {
        if let Some(conn) = self.conn.take()
            && !conn.client.is_closed()
        {
            self.shared.idle().push(conn);
        }
    }
}

impl Deref for Pooled {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        self.conn.as_ref().expect("taken only by `done`")
    }
}

impl DerefMut for Pooled {
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn.as_mut().expect("taken only by `done`")
    }
}

impl Shared {
    fn idle(&self) -> MutexGuard<'_, Vec<Conn>> {
        lock(&self.idle)
    }

    /// A connection for one operation: an idle one, else a new one.
    async fn conn(self: &Arc<Self>) -> Result<Pooled> {
        let permit = self
            .running
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| Error::msg("session store: closed"))?;
        let idle = loop {
            let Some(conn) = self.idle().pop() else {
                break None;
            };
            if !conn.client.is_closed() {
                break Some(conn);
            }
        };
        let conn = match idle {
            Some(conn) => conn,
            None => self.connect().await?,
        };
        Ok(Pooled {
            conn: Some(conn),
            shared: self.clone(),
            _permit: permit,
        })
    }

    async fn connect(&self) -> Result<Conn> {
        let connected = match &self.tls {
            Some(tls) => self
                .config
                .connect(tls.clone())
                .await
                .map(|(client, connection)| {
                    tokio::spawn(drive(connection));
                    client
                }),
            None => self
                .config
                .connect(NoTls)
                .await
                .map(|(client, connection)| {
                    tokio::spawn(drive(connection));
                    client
                }),
        };
        let client = connected.map_err(|e| {
            Error::msg(format!(
                "session store: cannot connect to PostgreSQL at {}: {}",
                self.target,
                chain(&e)
            ))
        })?;
        Ok(Conn {
            client,
            statements: HashMap::new(),
        })
    }

    /// A storage error of an operation, naming the database.
    fn naming(&self, e: Error) -> Error {
        match e {
            Error::Other(m) => Error::msg(format!("{m} (database {})", self.target)),
            e => e,
        }
    }
}

/// Runs a connection's I/O until it ends.
async fn drive<S, T>(connection: tokio_postgres::Connection<S, T>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    if let Err(e) = connection.await {
        tracing::debug!("session store: PostgreSQL connection ended: {}", chain(&e));
    }
}

/// An error and its sources, `: `-separated (`db error` says nothing without them).
fn chain(error: &dyn std::error::Error) -> String {
    crate::error::chain(error).replace('\n', " ")
}

/// PostgreSQL's errors as the crate's.
trait Db<T> {
    fn db(self) -> Result<T>;
}

impl<T> Db<T> for std::result::Result<T, tokio_postgres::Error> {
    fn db(self) -> Result<T> {
        self.map_err(|e| super::storage_error("PostgreSQL", chain(&e)))
    }
}
