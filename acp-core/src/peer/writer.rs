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
    out.write_all(&frame.bytes).await?;
    if frame.kind == FrameKind::EndsSequence
        && let Some(sequence) = &frame.sequence
    {
        sequence.ended.store(true, Ordering::Release);
    }
    Ok(())
}

/// Writes queued frames until a stop frame (or a write error); then wakes everyone waiting on
/// the client.
pub(crate) async fn write_loop(
    mut rx: mpsc::Receiver<Frame>,
    peer: Arc<Peer>,
) -> std::io::Result<()> {
    let result = async {
        while let Some(mut frame) = rx.recv().await {
            // Write everything already queued, then flush once.
            let mut out = peer.output.lock().await;
            loop {
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
                match rx.try_recv() {
                    Ok(next) => frame = next,
                    Err(_) => break,
                }
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
