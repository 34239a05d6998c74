//! The writer task: the only code that touches the output (a [`Sink`](crate::transport::Sink):
//! a byte stream, or a network connection's messages). It hands every queued frame to the
//! sink with its route, flushes once its queue drains (one write to stdout, one batch to the
//! network, for all the frames queued meanwhile), and drops the frames of a sequence (a prompt
//! turn) that arrive after the frame that ended it.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::sync::mpsc;
use tracing::debug;

use super::{Frame, FrameKind, Output, Peer};

/// Writes one frame into the buffered output, or drops it if its sequence has ended.
pub(super) async fn write_frame(out: &mut Output, frame: Frame) -> std::io::Result<()> {
    if frame.sequence.as_ref().is_some_and(|s| s.has_ended()) {
        debug!("dropped an update sent after its turn was answered");
        return Ok(());
    }
    let Frame {
        bytes,
        sequence,
        kind,
        route,
        ..
    } = frame;
    out.write(bytes, route).await?;
    if kind == FrameKind::EndsSequence
        && let Some(sequence) = &sequence
    {
        sequence.ended.store(true, Ordering::Release);
    }
    Ok(())
}

/// Frames taken from the queue at once: recorded together, then written together.
const BATCH: usize = 256;

/// Frames taken off the queue at once when sessions are recorded: as many as it holds.
const RECORDED_BATCH: usize = super::QUEUE_FRAMES;

/// Writes queued frames until a stop frame (or a write error); then wakes everyone waiting on
/// the client. Each batch of queued frames is first recorded (when sessions are recorded),
/// then written with one flush.
pub(crate) async fn write_loop(rx: mpsc::Receiver<Frame>, peer: Arc<Peer>) -> std::io::Result<()> {
    let result = if peer.journal.is_recording() {
        write_recorded(rx, &peer).await
    } else {
        write_unrecorded(rx, &peer).await
    };
    if let Err(e) = &result {
        debug!("writing to the client failed: {e}");
    }
    peer.close();
    result
}

/// The writer with no session store: each batch is written as soon as it is taken.
async fn write_unrecorded(mut rx: mpsc::Receiver<Frame>, peer: &Peer) -> std::io::Result<()> {
    let mut batch = Vec::with_capacity(BATCH);
    while rx.recv_many(&mut batch, BATCH).await > 0 {
        if write_batch(peer, &mut batch).await? == Written::Stopped {
            return Ok(());
        }
        // More may have been queued while writing: write it before flushing.
        if rx.is_empty() {
            peer.output.lock().await.flush().await?;
        }
    }
    Ok(())
}

/// The writer recording sessions, as a two-stage pipeline in one task: the *committer* takes
/// the queued frames and commits their records as one batch; the *writer* writes committed
/// batches to the client. While a batch is being committed, the committer keeps taking frames
/// off the queue (up to a cap, see `Pending`), so the agent does not
/// wait on the store: the slower the store, the larger the next batch, and one commit serves
/// more frames. A frame is never written before its record is committed.
async fn write_recorded(rx: mpsc::Receiver<Frame>, peer: &Peer) -> std::io::Result<()> {
    let (committed, to_write) = mpsc::channel(1);
    tokio::try_join!(
        commit_loop(rx, peer, committed),
        write_committed(to_write, peer)
    )?;
    Ok(())
}

/// How much the committer takes off the queue while a batch is committed, at most: beyond,
/// the agent waits. It grows with the sessions in the last commit: the store's cost is mostly
/// per session in a commit, so with many sessions streaming at once, larger batches (more
/// records of each session per commit) keep the store ahead of the agent; with one session
/// streaming, a small cap keeps memory low.
#[derive(Debug, Clone, Copy)]
struct Pending {
    frames: usize,
    bytes: usize,
}

impl Pending {
    /// The cap after a commit of `sessions` sessions: 2,048 frames and 512 KiB, plus 64 frames
    /// and 16 KiB per session beyond 64, up to 64 Ki frames and 16 MiB.
    fn after(sessions: usize) -> Pending {
        let extra = sessions.saturating_sub(64);
        Pending {
            frames: (2 * super::QUEUE_FRAMES + 64 * extra).min(64 << 10),
            bytes: ((512 << 10) + (16 << 10) * extra).min(16 << 20),
        }
    }
}

/// The committer: commits the records of queued frames, a batch at a time, and hands each
/// committed batch to the writer. Ends after a stop frame or when the queue closes.
async fn commit_loop(
    mut rx: mpsc::Receiver<Frame>,
    peer: &Peer,
    committed: mpsc::Sender<Vec<Frame>>,
) -> std::io::Result<()> {
    let mut incoming = Vec::new();
    let mut bytes = 0;
    let mut cap = Pending::after(0);
    loop {
        if incoming.is_empty() && rx.recv_many(&mut incoming, RECORDED_BATCH).await == 0 {
            return Ok(());
        }
        let mut batch = std::mem::take(&mut incoming);
        let stop = batch.iter().position(|f| f.kind == FrameKind::Stop);
        if let Some(stop) = stop {
            // Nothing after a stop frame is written.
            batch.truncate(stop + 1);
        }
        let sessions = {
            let commit = peer.journal.commit(&mut batch);
            tokio::pin!(commit);
            loop {
                let room = cap.frames.saturating_sub(incoming.len());
                tokio::select! {
                    biased;
                    sessions = &mut commit => break sessions,
                    n = rx.recv_many(&mut incoming, room.min(RECORDED_BATCH)),
                        if stop.is_none() && room > 0 && bytes < cap.bytes =>
                    {
                        if n == 0 {
                            // The queue closed: finish this commit, then the rest.
                            break (&mut commit).await;
                        }
                        bytes += incoming[incoming.len() - n..]
                            .iter()
                            .map(|f| f.bytes.len())
                            .sum::<usize>();
                    }
                }
            }
        };
        cap = Pending::after(sessions);
        bytes = incoming.iter().map(|f| f.bytes.len()).sum();
        if committed.send(batch).await.is_err() || stop.is_some() {
            return Ok(());
        }
    }
}

/// The writer: writes committed batches, flushing when no other is waiting. Ends after a
/// stop frame (Ok), when the committer is done (Ok), or on a write error.
async fn write_committed(
    mut to_write: mpsc::Receiver<Vec<Frame>>,
    peer: &Peer,
) -> std::io::Result<()> {
    while let Some(mut batch) = to_write.recv().await {
        if write_batch(peer, &mut batch).await? == Written::Stopped {
            return Ok(());
        }
        if to_write.is_empty() {
            peer.output.lock().await.flush().await?;
        }
    }
    Ok(())
}

/// How a batch was written.
#[derive(Debug, PartialEq, Eq)]
enum Written {
    /// Every frame (or dropped, for an ended sequence).
    All,
    /// Up to a stop frame: the writer stops (the output is flushed).
    Stopped,
}

/// Writes (drains) `batch` into the buffered output.
async fn write_batch(peer: &Peer, batch: &mut Vec<Frame>) -> std::io::Result<Written> {
    let mut out = peer.output.lock().await;
    for mut frame in batch.drain(..) {
        peer.final_route(&mut frame.route);
        let outcome = match frame.kind {
            FrameKind::Stop => {
                peer.stopped.store(true, Ordering::Release);
                out.flush().await?;
                return Ok(Written::Stopped);
            }
            _ => write_frame(&mut out, frame).await,
        };
        peer.in_flight.fetch_sub(1, Ordering::AcqRel);
        outcome?;
    }
    Ok(Written::All)
}
