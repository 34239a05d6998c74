//! How the runtime records sessions, checked with a store it cannot race: every commit of the
//! writer is held behind a gate the test opens, and the client must have received nothing that
//! the store does not hold yet. Under a paused clock a one-second sleep returns only once every
//! task is idle, so "nothing arrived while the gate was closed" is certain, not timed.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use acp_core::schema::{SessionId, SessionUpdate, StopReason};
use acp_core::store::{
    Batch, Cursor, ListFilter, MemoryStore, Page, Record, SessionStore, StoredSession,
};
use acp_core::testing::{Direction, TestClient};
use acp_core::{Agent, Prompt, Result, Server, Session};
use futures_util::future::BoxFuture;
use tokio::sync::{Semaphore, mpsc};

/// A [`MemoryStore`] whose multi-session commits (what the runtime's writer calls) each wait
/// for a permit; each commit announces itself with the number of records it holds.
#[derive(Clone)]
struct GatedStore {
    inner: MemoryStore,
    gate: Arc<Semaphore>,
    pending: mpsc::UnboundedSender<usize>,
}

impl SessionStore for GatedStore {
    fn save_session<'a>(&'a self, session: &'a StoredSession) -> BoxFuture<'a, Result<()>> {
        self.inner.save_session(session)
    }
    fn append<'a>(
        &'a self,
        id: &'a SessionId,
        records: &'a [Record],
    ) -> BoxFuture<'a, Result<Cursor>> {
        self.inner.append(id, records)
    }
    fn append_batches<'a>(
        &'a self,
        batches: Vec<(SessionId, Batch)>,
    ) -> BoxFuture<'a, Result<Vec<Option<Cursor>>>> {
        Box::pin(async move {
            let records = batches.iter().map(|(_, b)| b.len()).sum();
            let _ = self.pending.send(records);
            self.gate.acquire().await.expect("gate open").forget();
            self.inner.append_batches(batches).await
        })
    }
    fn session<'a>(&'a self, id: &'a SessionId) -> BoxFuture<'a, Result<Option<StoredSession>>> {
        self.inner.session(id)
    }
    fn records<'a>(
        &'a self,
        id: &'a SessionId,
        after: Option<Cursor>,
    ) -> BoxFuture<'a, Result<Vec<(Cursor, Record)>>> {
        self.inner.records(id, after)
    }
    fn list<'a>(
        &'a self,
        filter: ListFilter<'a>,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Page>> {
        self.inner.list(filter, cursor, limit)
    }
    fn delete<'a>(&'a self, id: &'a SessionId) -> BoxFuture<'a, Result<()>> {
        self.inner.delete(id)
    }
    fn put_state<'a>(
        &'a self,
        id: &'a SessionId,
        key: &'a str,
        value: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<()>> {
        self.inner.put_state(id, key, value)
    }
    fn state<'a>(
        &'a self,
        id: &'a SessionId,
    ) -> BoxFuture<'a, Result<HashMap<String, serde_json::Value>>> {
        self.inner.state(id)
    }
}

/// Streams `stream N` chunks, yielding now and then so the writer takes several batches.
struct Streamer;

impl Agent for Streamer {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> Result<StopReason> {
        let n: usize = prompt
            .text()
            .trim_start_matches("stream ")
            .parse()
            .unwrap_or(0);
        for i in 0..n {
            cx.message(format!("chunk {i}")).await?;
            if i % 97 == 0 {
                tokio::task::yield_now().await;
            }
        }
        Ok(StopReason::EndTurn)
    }
}

/// The agent message chunks the client has received, by session, in order.
fn received(client: &TestClient) -> HashMap<String, Vec<String>> {
    let mut chunks: HashMap<String, Vec<String>> = HashMap::new();
    for frame in client.transcript() {
        if frame.direction != Direction::FromAgent {
            continue;
        }
        if let Some(n) = frame.session_update()
            && let SessionUpdate::AgentMessageChunk(chunk) = n.update
            && let acp_core::schema::ContentBlock::Text(text) = chunk.content
        {
            chunks
                .entry(n.session_id.0.to_string())
                .or_default()
                .push(text.text);
        }
    }
    chunks
}

/// The agent message chunks the store holds for `id`, in order.
async fn stored(store: &MemoryStore, id: &SessionId) -> Vec<String> {
    let mut out = Vec::new();
    for (_, record) in store.records(id, None).await.unwrap() {
        if let Some(Ok(SessionUpdate::AgentMessageChunk(chunk))) = record.to_update()
            && let acp_core::schema::ContentBlock::Text(text) = chunk.content
        {
            out.push(text.text);
        }
    }
    out
}

/// Every commit is held until the test has checked that the client received nothing beyond
/// what the store already holds (for each of three sessions streaming at once); then it is
/// let through. The client ends up with every chunk, each stored before it arrived.
#[tokio::test(start_paused = true)]
async fn the_client_receives_nothing_of_a_batch_before_the_batch_is_committed() {
    let (pending_tx, mut pending) = mpsc::unbounded_channel();
    let store = GatedStore {
        inner: MemoryStore::new(),
        gate: Arc::new(Semaphore::new(0)),
        pending: pending_tx,
    };
    let server = Server::new(Streamer).shared_store(Arc::new(store.clone()));
    let client = TestClient::builder().serve(server).await.unwrap();
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(client.new_session().await.unwrap());
    }
    let ids: Vec<_> = sessions
        .iter()
        .map(|s| s.start_prompt("stream 2000"))
        .collect();

    let mut commits = 0;
    let mut answers = 0;
    while answers < ids.len() {
        // Everything runnable runs before this sleep returns: a frame written ahead of its
        // commit would be in the client's transcript now.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let got = received(&client);
        for session in &sessions {
            let held = stored(&store.inner, session.id()).await;
            let seen = got.get(&*session.id().0).cloned().unwrap_or_default();
            assert!(
                seen.len() <= held.len() && held[..seen.len()] == seen[..],
                "after {commits} commits the client received {} chunks of {}, the store holds {}",
                seen.len(),
                session.id(),
                held.len()
            );
        }
        answers = ids
            .iter()
            .filter(|id| client.transcript().iter().any(|f| f.is_response_to(id)))
            .count();
        // Let one held commit through, if one waits.
        if pending.try_recv().is_ok() {
            commits += 1;
            store.gate.add_permits(1);
        }
    }
    let got = received(&client);
    for session in &sessions {
        let seen = &got[&*session.id().0];
        assert_eq!(seen.len(), 2000);
        assert_eq!(stored(&store.inner, session.id()).await, *seen);
    }
    assert!(
        commits >= 2,
        "the stream was committed in {commits} batches"
    );
    store.gate.add_permits(1 << 20);
    client.close().await.unwrap();
}
