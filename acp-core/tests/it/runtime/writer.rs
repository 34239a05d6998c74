//! The writer: frames coalesced and flushed when its queue drains; a producer faster than a
//! stalled client waits instead of buffering.

use super::*;

/// A writer that counts writes and flushes, and can be stalled like a client that stops
/// reading.
struct Gate<W> {
    inner: W,
    shared: Arc<GateState>,
}

#[derive(Default)]
struct GateState {
    stalled: std::sync::atomic::AtomicBool,
    waker: Mutex<Option<std::task::Waker>>,
    writes: std::sync::atomic::AtomicUsize,
    flushes: std::sync::atomic::AtomicUsize,
}

impl GateState {
    fn stall(&self, stalled: bool) {
        self.stalled
            .store(stalled, std::sync::atomic::Ordering::SeqCst);
        if let Some(w) = self.waker.lock().unwrap().take() {
            w.wake();
        }
    }

    fn count(n: &std::sync::atomic::AtomicUsize) -> usize {
        n.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl<W: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Gate<W> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if self
            .shared
            .stalled
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            *self.shared.waker.lock().unwrap() = Some(cx.waker().clone());
            return std::task::Poll::Pending;
        }
        self.shared
            .writes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        self.shared
            .flushes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Streams `n` chunks, counting those the runtime accepted.
struct Flood {
    sent: Arc<std::sync::atomic::AtomicUsize>,
}

impl Agent for Flood {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> Result<StopReason> {
        let n: usize = prompt.text().parse().unwrap_or(0);
        for i in 0..n {
            cx.message(format!("{i:08} of the flood")).await?;
            self.sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        Ok(StopReason::EndTurn)
    }
}

/// Serves `agent` with its output through a [`Gate`]; returns the client and the gate.
async fn gated(agent: impl Agent) -> (TestClient, Arc<GateState>) {
    let (client_io, agent_io) = tokio::io::duplex(1 << 16);
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    let (client_read, client_write) = tokio::io::split(client_io);
    let shared = Arc::new(GateState::default());
    let writer = Gate {
        inner: agent_write,
        shared: shared.clone(),
    };
    tokio::spawn(acp_core::serve(agent, agent_read, writer));
    let c = TestClient::builder()
        .attach(client_read, client_write)
        .await
        .unwrap();
    (c, shared)
}

#[tokio::test(start_paused = true)]
async fn the_writer_coalesces_frames_and_flushes_when_its_queue_drains() {
    let sent = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (c, gate) = gated(Flood { sent: sent.clone() }).await;
    let s = c.new_session().await.unwrap();
    let (writes, flushes) = (
        GateState::count(&gate.writes),
        GateState::count(&gate.flushes),
    );
    let turn = s.prompt("5000").await.unwrap();
    assert_eq!(turn.updates().len(), 5000);
    let writes = GateState::count(&gate.writes) - writes;
    let flushes = GateState::count(&gate.flushes) - flushes;
    // 5,001 frames of ~130 bytes: written in 64 KiB batches, flushed when the queue drains.
    assert!(
        flushes * 10 <= 5000,
        "{flushes} flushes for 5,001 frames: the writer flushes too often"
    );
    assert!(
        writes * 10 <= 5000,
        "{writes} writes for 5,001 frames: the writer does not coalesce"
    );
}

#[tokio::test(start_paused = true)]
async fn a_producer_faster_than_a_stalled_client_waits_instead_of_buffering() {
    let sent = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (c, gate) = gated(Flood { sent: sent.clone() }).await;
    let s = c.new_session().await.unwrap();
    gate.stall(true);
    let (turn, accepted) = tokio::join!(s.prompt("20000"), async {
        // On the paused clock this sleep ends only when every task is stuck.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let accepted = sent.load(std::sync::atomic::Ordering::SeqCst);
        gate.stall(false);
        accepted
    });
    // The queue (1,024 frames) and the writer's 64 KiB buffer hold a bounded number of
    // chunks; the rest of the turn waits for the client.
    assert!(
        accepted <= 4096,
        "{accepted} chunks accepted while the client read nothing"
    );
    let turn = turn.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    // Nothing was lost or reordered on the way.
    let texts: Vec<String> = turn
        .updates()
        .iter()
        .map(|u| match u {
            SessionUpdate::AgentMessageChunk(c) => match &c.content {
                acp_core::schema::ContentBlock::Text(t) => t.text.clone(),
                _ => String::new(),
            },
            _ => String::new(),
        })
        .collect();
    assert_eq!(texts.len(), 20_000);
    for (i, t) in texts.iter().enumerate() {
        assert_eq!(*t, format!("{i:08} of the flood"));
    }
}
