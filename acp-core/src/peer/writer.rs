//! The writer task: the only code that touches the output. It coalesces every queued frame into
//! one buffered write and flushes once its queue drains, and drops the frames of a sequence
//! (a prompt turn) that arrive after the frame that ended it.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::mpsc;
use tracing::debug;

use super::{Frame, FrameKind, Peer};

/// Writes queued frames to `writer` until a stop frame (or a write error); then wakes
/// everyone waiting on the client.
pub(crate) async fn write_loop<W: AsyncWrite + Unpin>(
    mut rx: mpsc::Receiver<Frame>,
    writer: W,
    peer: Arc<Peer>,
) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(64 * 1024, writer);
    let result = async {
        while let Some(mut frame) = rx.recv().await {
            // Write everything already queued, then flush once.
            loop {
                match frame.kind {
                    FrameKind::Stop => {
                        out.flush().await?;
                        return Ok(());
                    }
                    _ if frame.sequence.as_ref().is_some_and(|s| s.has_ended()) => {
                        debug!("dropped an update sent after its turn was answered");
                    }
                    kind => {
                        out.write_all(&frame.bytes).await?;
                        if kind == FrameKind::EndsSequence
                            && let Some(sequence) = &frame.sequence
                        {
                            sequence.ended.store(true, Ordering::Release);
                        }
                    }
                }
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
