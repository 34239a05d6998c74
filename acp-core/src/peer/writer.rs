//! The writer task: the only code that touches the output. It coalesces every queued frame into
//! one buffered write and flushes once its queue drains, and drops the frames of a sequence
//! (a prompt turn) that arrive after the frame that ended it.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tracing::debug;

use super::{Frame, FrameKind, Output, Peer};

/// Writes one frame into the buffered output, or drops it if its sequence has ended.
pub(super) async fn write_frame(out: &mut Output, frame: &Frame) -> std::io::Result<()> {
    if frame.sequence.as_ref().is_some_and(|s| s.has_ended()) {
        debug!("dropped an update sent after its turn was answered");
        return Ok(());
    }
    if !frame.bytes.is_empty() {
        out.write_all(&frame.bytes).await?;
    }
    if frame.kind == FrameKind::EndsSequence
        && let Some(sequence) = &frame.sequence
    {
        sequence.ended.store(true, Ordering::Release);
    }
    Ok(())
}

/// Frames taken from the queue at once: recorded together, then written together.
const BATCH: usize = 256;

/// Writes queued frames until a stop frame (or a write error); then wakes everyone waiting on
/// the client. Each batch of queued frames is first recorded (when sessions are recorded),
/// then written with one flush.
pub(crate) async fn write_loop(
    mut rx: mpsc::Receiver<Frame>,
    peer: Arc<Peer>,
) -> std::io::Result<()> {
    let result = async {
        let mut batch = Vec::with_capacity(BATCH);
        while rx.recv_many(&mut batch, BATCH).await > 0 {
            peer.journal.commit(&mut batch).await;
            let mut out = peer.output.lock().await;
            for frame in batch.drain(..) {
                let outcome = match frame.kind {
                    FrameKind::Stop => {
                        peer.stopped.store(true, Ordering::Release);
                        out.flush().await?;
                        return Ok(());
                    }
                    _ => write_frame(&mut out, &frame).await,
                };
                peer.in_flight.fetch_sub(1, Ordering::AcqRel);
                outcome?;
            }
            // More may have been queued while writing: write it before flushing.
            if !rx.is_empty() {
                continue;
            }
            out.flush().await?;
        }
        Ok(())
    }
    .await;
    if let Err(e) = &result {
        debug!("writing to the client failed: {e}");
    }
    peer.close();
    result
}
