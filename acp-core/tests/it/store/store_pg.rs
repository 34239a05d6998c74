//! What only the PostgreSQL store promises, on a real server (`pg_support`): several stores —
//! replicas, each with its own connections — on one database see one history, in one order;
//! the schema is created once however many open it at once; leases go to one holder at a
//! time; and errors say where the database is, never its password.

use std::sync::Arc;
use std::time::{Duration, Instant};

use acp_core::store::{ListFilter, PostgresStore, Record, SessionStore, StoredSession};

use super::{Store, chunk, get, list_all, save, sid, strictly_increasing};
use crate::pg_support::PgServer;

/// A store on the database at `url`: a replica of its own (its own connections).
async fn replica(url: &str) -> Store {
    Arc::new(PostgresStore::connect(url).await.unwrap())
}

/// A record naming its writer, its batch and its place in the batch.
fn tagged(writer: usize, batch: usize, i: usize) -> Record {
    chunk(&format!("{writer}/{batch}/{i}"))
}

fn tag(record: &Record) -> (usize, usize, usize) {
    let Record::Update { update } = record else {
        panic!("not a chunk: {record:?}")
    };
    let update: serde_json::Value = serde_json::from_str(update.get()).unwrap();
    let text = update["content"]["text"].as_str().unwrap();
    let mut parts = text.split('/').map(|p| p.parse().unwrap());
    (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    )
}

/// Two replicas append batches to one session at once while a third follows the log a page
/// at a time: every record is there once, each batch whole and in order, both replicas read
/// the same log, and the follower — who only ever asks for what comes after the last cursor
/// it saw — missed nothing (cursors are handed out in commit order).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_appending_to_one_session_at_once_keep_one_order() {
    const BATCHES: usize = 60;
    const PER_BATCH: usize = 3;
    let url = PgServer::shared().database().await;
    let (a, b, follower) = (
        replica(&url).await,
        replica(&url).await,
        replica(&url).await,
    );
    save(&a, "s", "/p").await;
    let writer = |store: Store, w: usize| {
        tokio::spawn(async move {
            let mut cursors = Vec::new();
            for batch in 0..BATCHES {
                let records: Vec<_> = (0..PER_BATCH).map(|i| tagged(w, batch, i)).collect();
                cursors.push(store.append(&sid("s"), &records).await.unwrap());
            }
            cursors
        })
    };
    let (wa, wb) = (writer(a.clone(), 0), writer(b.clone(), 1));
    let follow = tokio::spawn(async move {
        let (mut seen, mut after) = (Vec::new(), None);
        let deadline = Instant::now() + Duration::from_secs(60);
        while seen.len() < 2 * BATCHES * PER_BATCH {
            assert!(Instant::now() < deadline, "the follower saw {}", seen.len());
            let page = follower.records_page(&sid("s"), after, 7).await.unwrap();
            if let Some(&(last, _)) = page.last() {
                after = Some(last);
            }
            seen.extend(page);
        }
        seen
    });
    let (cursors_a, cursors_b) = (wa.await.unwrap(), wb.await.unwrap());
    let followed = follow.await.unwrap();

    let log = a.records(&sid("s"), None).await.unwrap();
    assert_eq!(log, b.records(&sid("s"), None).await.unwrap(), "one log");
    assert_eq!(followed, log, "the follower missed nothing");
    assert_eq!(log.len(), 2 * BATCHES * PER_BATCH);
    let cursors: Vec<_> = log.iter().map(|&(c, _)| c).collect();
    assert!(strictly_increasing(&cursors));
    // Each batch whole, in order; each writer's batches in its order; each append answered
    // the cursor of its batch's last record.
    let mut next_batch = [0, 0];
    for three in log.chunks(PER_BATCH) {
        let tags: Vec<_> = three.iter().map(|(_, r)| tag(r)).collect();
        let (w, batch, _) = tags[0];
        assert_eq!(batch, next_batch[w], "writer {w}'s batches in order");
        next_batch[w] += 1;
        assert_eq!(tags, [(w, batch, 0), (w, batch, 1), (w, batch, 2)]);
        let answered = [&cursors_a, &cursors_b][w][batch];
        assert_eq!(three[PER_BATCH - 1].0, answered);
    }
    // Both writers really ran at once: their batches interleave.
    let switches = log
        .chunks(PER_BATCH)
        .map(|three| tag(&three[0].1).0)
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[0] != w[1])
        .count();
    eprintln!("two replicas: {switches} switches between writers in {BATCHES}+{BATCHES} batches");
}

/// What one replica saves, another lists, reads and changes: `session/list` on any replica
/// lists every session, a listing's cursor goes on on another replica, and a session whose
/// replica went away is read whole elsewhere.
#[tokio::test]
async fn a_replica_sees_and_pages_what_another_saved() {
    let url = PgServer::shared().database().await;
    let (a, b) = (replica(&url).await, replica(&url).await);
    for i in 0..5 {
        save(&a, &format!("s{i}"), "/p").await;
    }
    let mut titled = StoredSession::new("t", "/q");
    titled.title = Some("Titled ✓".into());
    titled.additional_directories = vec!["/lib".into()];
    b.save_session(&titled).await.unwrap();
    let last = a
        .append(&sid("s1"), &[chunk("1"), chunk("2")])
        .await
        .unwrap();
    a.put_state(&sid("s1"), "k", &serde_json::json!({"n": 1}))
        .await
        .unwrap();

    assert_eq!(
        list_all(&b, None, 2).await,
        ["s1", "t", "s4", "s3", "s2", "s0"]
    );
    assert_eq!(list_all(&a, None, 10).await, list_all(&b, None, 3).await);
    assert_eq!(list_all(&b, Some("/q"), 10).await, ["t"]);
    assert_eq!(get(&b, "s1").await, get(&a, "s1").await);
    assert_eq!(get(&a, "t").await.title.as_deref(), Some("Titled ✓"));
    assert_eq!(
        b.records(&sid("s1"), None).await.unwrap().last().unwrap().0,
        last
    );
    assert_eq!(b.state(&sid("s1")).await.unwrap()["k"]["n"], 1);

    // A cursor from one replica goes on on the other.
    let first = a.list(ListFilter::all(), None, 3).await.unwrap();
    let rest = b
        .list(ListFilter::all(), first.next_cursor.as_deref(), 10)
        .await
        .unwrap();
    let ids: Vec<_> = first
        .sessions
        .iter()
        .chain(&rest.sessions)
        .map(|s| s.id.0.to_string())
        .collect();
    assert_eq!(ids, ["s1", "t", "s4", "s3", "s2", "s0"]);

    // A deletion on one is gone on the other; the replica that appended went away, another
    // goes on with the session's whole history.
    b.delete(&sid("s0")).await.unwrap();
    assert!(a.session(&sid("s0")).await.unwrap().is_none());
    drop(a);
    let c = replica(&url).await;
    let next = c.append(&sid("s1"), &[chunk("3")]).await.unwrap();
    assert!(next > last);
    assert_eq!(c.records(&sid("s1"), None).await.unwrap().len(), 3);
}

/// A database of schema version 1 (before owners) gains the `owner` column when a replica
/// opens it: its sessions have none, new ones keep theirs, and listings filter on it.
#[tokio::test]
async fn a_version_1_database_gains_owners_when_opened() {
    let url = PgServer::shared().database().await;
    save(&replica(&url).await, "old", "/p").await;
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(
            "ALTER TABLE acp_sessions DROP COLUMN owner; \
             UPDATE acp_counters SET schema_version = 1",
        )
        .await
        .unwrap();
    let store = replica(&url).await;
    assert_eq!(get(&store, "old").await.owner, None);
    let alices = StoredSession::new("new", "/p").owned_by("alice");
    store.save_session(&alices).await.unwrap();
    let listed = store.list(ListFilter::all().owner("alice"), None, 10).await;
    let ids: Vec<_> = listed
        .unwrap()
        .sessions
        .into_iter()
        .map(|s| s.id.0.to_string())
        .collect();
    assert_eq!(ids, ["new"]);
    let version: i32 = client
        .query_one("SELECT schema_version FROM acp_counters", &[])
        .await
        .unwrap()
        .get(0);
    // Brought up to the current schema (3: the `archived` flag too).
    assert_eq!(version, 3);
}

/// The ownership lease: one holder at a time across replicas; renewed by its holder; free
/// again when released or when its holder stops renewing (the database's clock decides).
#[tokio::test]
async fn a_lease_has_one_holder_until_released_or_expired() {
    let url = PgServer::shared().database().await;
    let (a, b) = (replica(&url).await, replica(&url).await);
    let long = Duration::from_secs(30);
    let s = sid("s");
    assert!(
        a.acquire_lease(&s, "replica-a", long).await.unwrap(),
        "free"
    );
    assert!(
        !b.acquire_lease(&s, "replica-b", long).await.unwrap(),
        "held by a"
    );
    assert!(
        a.acquire_lease(&s, "replica-a", long).await.unwrap(),
        "a renews"
    );
    // Releasing a lease one does not hold changes nothing.
    b.release_lease(&s, "replica-b").await.unwrap();
    assert!(!b.acquire_lease(&s, "replica-b", long).await.unwrap());
    a.release_lease(&s, "replica-a").await.unwrap();
    assert!(
        b.acquire_lease(&s, "replica-b", long).await.unwrap(),
        "released"
    );
    assert!(
        !a.acquire_lease(&s, "replica-a", long).await.unwrap(),
        "now b's"
    );

    // A short lease, renewed by its holder, is not taken over; once the holder stops
    // renewing, it is.
    let t = sid("t");
    let short = Duration::from_millis(600);
    let started = Instant::now();
    assert!(a.acquire_lease(&t, "replica-a", short).await.unwrap());
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !b.acquire_lease(&t, "replica-b", short).await.unwrap(),
            "renewed"
        );
        assert!(
            a.acquire_lease(&t, "replica-a", short).await.unwrap(),
            "a renews"
        );
    }
    assert!(
        started.elapsed() > short,
        "a held it past one ttl by renewing"
    );
    let stopped = Instant::now();
    while !b.acquire_lease(&t, "replica-b", short).await.unwrap() {
        assert!(stopped.elapsed() < Duration::from_secs(10), "never expired");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        stopped.elapsed() >= Duration::from_millis(500),
        "taken over only once expired: {:?}",
        stopped.elapsed()
    );
    assert!(
        !a.acquire_lease(&t, "replica-a", short).await.unwrap(),
        "b's now"
    );

    // Deleting a session removes its lease.
    save(&a, "t", "/p").await;
    a.delete(&t).await.unwrap();
    assert!(a.acquire_lease(&t, "replica-a", long).await.unwrap());
}

/// Many replicas racing for one free lease: exactly one gets it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_replicas_get_a_lease_once() {
    let url = PgServer::shared().database().await;
    let stores = [
        replica(&url).await,
        replica(&url).await,
        replica(&url).await,
    ];
    for round in 0..10 {
        let session = sid(&format!("race{round}"));
        let mut racers = tokio::task::JoinSet::new();
        for (i, store) in stores.iter().enumerate() {
            for j in 0..4 {
                let (store, session) = (store.clone(), session.clone());
                racers.spawn(async move {
                    let holder = format!("holder-{i}-{j}");
                    store
                        .acquire_lease(&session, &holder, Duration::from_secs(30))
                        .await
                        .unwrap()
                });
            }
        }
        let granted = racers.join_all().await.into_iter().filter(|&g| g).count();
        assert_eq!(granted, 1, "round {round}");
    }
}

/// Replicas starting together on a new database: the schema is created once, by one of them,
/// and every one opens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_opening_a_new_database_at_once_all_open() {
    for _ in 0..3 {
        let url = PgServer::shared().database().await;
        let opening: Vec<_> = (0..6)
            .map(|_| {
                let url = url.clone();
                tokio::spawn(async move { PostgresStore::connect(&url).await })
            })
            .collect();
        for store in opening {
            let store = store.await.unwrap().unwrap();
            store.list(ListFilter::all(), None, 1).await.unwrap();
        }
    }
}

/// Errors say which database and why, never the password.
#[tokio::test]
async fn connection_errors_name_the_server_and_never_the_password() {
    // Nothing listens on port 1.
    let refused = PostgresStore::connect("postgres://acp:hunter2secret@127.0.0.1:1/sessions")
        .await
        .unwrap_err()
        .to_string();
    for says in ["127.0.0.1:1", "`sessions`", "`acp`", "connect"] {
        assert!(refused.contains(says), "{says}: {refused}");
    }
    assert!(!refused.contains("hunter2secret"), "{refused}");

    let malformed = PostgresStore::connect("postgres://acp:hunter2secret@db:port/x")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        malformed.contains("malformed") && malformed.contains("port"),
        "{malformed}"
    );
    assert!(!malformed.contains("hunter2secret"), "{malformed}");

    let server = PgServer::shared();
    let missing = PostgresStore::connect(&server.url("no_such_database"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        missing.contains("no_such_database") && missing.contains("does not exist"),
        "{missing}"
    );
}

/// A store whose server went away fails its operations clearly, and works again once the
/// server is back (its broken connections are replaced).
#[tokio::test]
async fn a_restarted_server_is_reconnected_to() {
    let server = PgServer::start().unwrap();
    let (client, connection) =
        tokio_postgres::connect(&server.url("postgres"), tokio_postgres::NoTls)
            .await
            .unwrap();
    let connection = tokio::spawn(connection);
    let store = replica(&server.url("postgres")).await;
    save(&store, "a", "/p").await;
    // Every connection of the store is ended by the server, as a restart would.
    client
        .batch_execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE application_name = 'acp' AND pid <> pg_backend_pid()",
        )
        .await
        .unwrap();
    drop(client);
    let _ = connection.await;
    // Once the store has seen its connections close (a moment), it opens new ones: no
    // operation fails.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(get(&store, "a").await.id, sid("a"));
    save(&store, "b", "/p").await;
    drop(server);
    let e = store.session(&sid("a")).await.unwrap_err().to_string();
    assert!(e.contains("PostgreSQL") && e.contains("database"), "{e}");
}

/// What the runtime's writer does with many sessions streaming at once, on PostgreSQL: each
/// commit holds a few records of every session; then appends of one record each (the cost of
/// a transaction). Printed, not asserted (but for a hang guard). The test server runs with
/// `fsync=off`: a real one pays its disk's flush per commit on top.
#[tokio::test]
async fn appending_for_200_sessions_at_once() {
    const SESSIONS: usize = 200;
    const PER_COMMIT: usize = 8;
    const COMMITS: usize = 25;
    let url = PgServer::shared().database().await;
    let store = replica(&url).await;
    for s in 0..SESSIONS {
        save(&store, &format!("s{s}"), "/p").await;
    }
    let started = Instant::now();
    for c in 0..COMMITS {
        let batches = (0..SESSIONS)
            .map(|s| {
                let mut batch = acp_core::store::Batch::new();
                for i in 0..PER_COMMIT {
                    batch.push(&tagged(s, c, i)).unwrap();
                }
                (sid(&format!("s{s}")), batch)
            })
            .collect();
        store.append_batches(batches).await.unwrap();
    }
    let elapsed = started.elapsed();
    let started = Instant::now();
    for i in 0..500 {
        store.append(&sid("s0"), &[tagged(0, i, 0)]).await.unwrap();
    }
    let single = started.elapsed();
    assert_eq!(
        store.records(&sid("s0"), None).await.unwrap().len(),
        COMMITS * PER_COMMIT + 500
    );
    eprintln!(
        "postgres: {COMMITS} commits of {PER_COMMIT} records for each of {SESSIONS} sessions: \
         {elapsed:?}, {:.0} records/s; 500 appends of one record: {single:?}, {:.0} appends/s",
        (SESSIONS * PER_COMMIT * COMMITS) as f64 / elapsed.as_secs_f64(),
        500.0 / single.as_secs_f64(),
    );
    assert!(elapsed + single < Duration::from_secs(120), "a hang guard");
}

/// TLS, as libpq's URLs say it, against a server with TLS on (its certificate signed by an
/// authority made for the test): `sslmode=verify-full` with that authority connects and
/// works; without it (the system's roots) the connection is refused for the certificate;
/// `require` against a server without TLS is refused, saying so.
#[tokio::test]
async fn tls_checks_the_servers_certificate() {
    let (server, port) = PgServer::start_tls().unwrap();
    let ca = server.ca();
    let base = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    let url = format!("{base}?sslmode=verify-full&sslrootcert={}", ca.display());
    let store = replica(&url).await;
    save(&store, "over-tls", "/w").await;
    assert_eq!(get(&store, "over-tls").await.id.0.as_ref(), "over-tls");
    // The same server, its certificate checked against the system's roots: refused.
    let untrusted = PostgresStore::connect(&format!("{base}?sslmode=require&sslrootcert=system"))
        .await
        .unwrap_err()
        .to_string();
    assert!(untrusted.contains("certificate"), "{untrusted}");
    // A server without TLS (the shared one, on its Unix socket): `require` is refused.
    let plain = PgServer::shared().url("postgres");
    let refused = PostgresStore::connect(&format!("{plain}&sslmode=require"))
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("cannot connect"), "{refused}");
}
