//! Two replicas of an agent on one PostgreSQL database (a real server the test starts: see
//! acp-core/tests/it/pg_support), each the `bench` example as a process of its own, with
//! `ACP_DATABASE_URL` and no code for it: a session is run by one replica at a time (its
//! ownership lease), and when that replica is killed with SIGKILL mid-turn the client loads
//! the session on the other, with everything it saw before.

use std::process::Stdio;
use std::time::{Duration, Instant};

use acp::schema::SessionUpdate;
use acp::testing::TestClient;

#[path = "../../acp-core/tests/it/pg_support/mod.rs"]
mod pg_support;
use crate::support;

/// The lease's period in this test: short, so that the takeover is quick.
const LEASE_MS: u64 = 1500;

/// A replica: the example as a process of its own on the database at `url`.
fn replica(url: &str) -> tokio::process::Child {
    tokio::process::Command::new(support::example_binary("bench"))
        .env("ACP_DATABASE_URL", url)
        .env("ACP_SESSION_LEASE_MS", LEASE_MS.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("starting the bench example")
}

async fn connect(child: &mut tokio::process::Child, cwd: &std::path::Path) -> TestClient {
    TestClient::builder()
        .cwd(cwd)
        .attach(child.stdout.take().unwrap(), child.stdin.take().unwrap())
        .await
        .unwrap()
}

fn texts(updates: &[SessionUpdate]) -> Vec<String> {
    updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::UserMessageChunk(c) | SessionUpdate::AgentMessageChunk(c) => {
                match &c.content {
                    acp::schema::ContentBlock::Text(t) => Some(t.text.clone()),
                    _ => None,
                }
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_session_runs_on_one_replica_and_moves_to_another_when_its_replica_is_killed() {
    let url = pg_support::PgServer::shared().database().await;
    let cwd = tempfile::tempdir().unwrap();

    // Replica A: a turn that runs until it is cancelled, its first chunk sent.
    let mut a_process = replica(&url);
    let a = connect(&mut a_process, cwd.path()).await;
    let session = a.new_session().await.unwrap();
    let id = session.id().clone();
    session.start_prompt("sleep");
    session
        .wait_for_update("the turn's first chunk", |u| {
            matches!(u, SessionUpdate::AgentMessageChunk(_))
        })
        .await
        .unwrap();

    // Replica B lists it, but cannot take it while A runs it: it waits a lease period for
    // A's lease to expire, which A keeps renewing.
    let mut b_process = replica(&url);
    let b = connect(&mut b_process, cwd.path()).await;
    let listed = b.list_sessions(None, None).await.unwrap();
    assert_eq!(
        listed["sessions"][0]["sessionId"],
        id.0.as_ref(),
        "{listed}"
    );
    let asked = Instant::now();
    let refused = match b.load_session(&id).await {
        Err(e) => e.to_string(),
        Ok(_) => panic!("replica B took the session while replica A was running it"),
    };
    assert!(
        refused.contains("open on another replica"),
        "refused saying why: {refused}"
    );
    assert!(
        asked.elapsed() >= Duration::from_millis(LEASE_MS),
        "B waited for A's lease: {:?}",
        asked.elapsed()
    );

    // A dies mid-turn; B takes the session over once A's lease expired, with everything A
    // recorded: the prompt and the chunk the client saw.
    a_process.start_kill().unwrap();
    a_process.wait().await.unwrap();
    let killed = Instant::now();
    let loaded = b.load_session(&id).await.unwrap();
    assert!(
        killed.elapsed() < Duration::from_millis(3 * LEASE_MS),
        "taken over within about one lease period: {:?}",
        killed.elapsed()
    );
    assert_eq!(texts(&loaded.replayed), ["sleep", "sleeping"]);
    let turn = loaded.session.prompt("stream 3").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(acp::StopReason::EndTurn));
    assert_eq!(turn.text().lines().count(), 3, "{:?}", turn.text());
    drop(a);
    b.close().await.unwrap();
    b_process.wait().await.unwrap();
}

#[tokio::test]
async fn a_session_closed_on_one_replica_is_taken_by_another_at_once() {
    let url = pg_support::PgServer::shared().database().await;
    let cwd = tempfile::tempdir().unwrap();
    let mut a_process = replica(&url);
    let a = connect(&mut a_process, cwd.path()).await;
    let session = a.new_session().await.unwrap();
    let id = session.id().clone();
    session.prompt("stream 2").await.unwrap();
    session.close().await.unwrap();

    let mut b_process = replica(&url);
    let b = connect(&mut b_process, cwd.path()).await;
    let asked = Instant::now();
    let loaded = b.load_session(&id).await.unwrap();
    assert!(
        asked.elapsed() < Duration::from_millis(LEASE_MS / 2),
        "no wait for a lease given up: {:?}",
        asked.elapsed()
    );
    assert_eq!(
        texts(&loaded.replayed).len(),
        3,
        "the prompt and two chunks"
    );
    // A, which closed it, cannot run it while B holds it.
    let refused = a.load_session(&id).await;
    assert!(refused.is_err(), "A took the session back from B");
    a.close().await.unwrap();
    b.close().await.unwrap();
    a_process.wait().await.unwrap();
    b_process.wait().await.unwrap();
}
