//! The journal: frames that carry a session record are committed to the session store by the
//! writer before they are written, so a client never receives anything the store does not
//! have — a `kill -9` between the two loses nothing the client saw.
//!
//! The writer hands over a whole batch of queued frames at once (one transaction per session
//! in the batch): recording costs one store round trip per batch, not per frame.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{Frame, FrameKind, Sequence};
use crate::protocol::v1;
use crate::schema::{SessionId, SessionUpdate, StopReason};
use crate::store::{Batch, Record, SessionStore};

/// The record a frame carries: the `session/update` it is, of `session`, whose update's JSON
/// text is `frame.bytes[update]` (recorded as it is: no second serialization, no copy until
/// the batch is committed).
#[derive(Debug)]
pub(crate) struct Journaled {
    pub session: SessionId,
    pub update: Range<usize>,
}

/// The record of a prompt turn of `session` ending with `stop_reason`.
pub(crate) fn turn_ended(stop_reason: &StopReason) -> Option<Record> {
    let stop_reason = serde_json::to_value(stop_reason).ok()?.as_str()?.to_owned();
    Some(Record::TurnEnded { stop_reason })
}

/// The connection's session store, as the writer sees it; none: nothing is recorded.
#[derive(Clone, Default)]
pub(crate) struct Journal {
    store: Option<Arc<dyn SessionStore>>,
    /// A failure was logged already (logged once, not per batch).
    failed: Arc<AtomicBool>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("recording", &self.store.is_some())
            .finish()
    }
}

impl Journal {
    /// A journal recording into `store`.
    pub fn new(store: Option<Arc<dyn SessionStore>>) -> Self {
        Journal {
            store,
            failed: Arc::default(),
        }
    }

    /// The store, if sessions are recorded.
    pub fn store(&self) -> Option<&Arc<dyn SessionStore>> {
        self.store.as_ref()
    }

    /// Whether sessions are recorded (frames should carry their records).
    pub fn is_recording(&self) -> bool {
        self.store.is_some()
    }

    /// The `session/update` frame's bytes for `update` of `session`, and its record when
    /// sessions are recorded (the update's text inside the frame).
    pub fn session_update(
        &self,
        session: &SessionId,
        update: &SessionUpdate,
    ) -> crate::Result<(Vec<u8>, Option<Journaled>)> {
        let (bytes, update) = v1::session_update_located(session, update)?;
        let record = self.is_recording().then(|| Journaled {
            session: session.clone(),
            update,
        });
        Ok((bytes, record))
    }

    /// Commits the records of `batch` (those of frames that will be written), grouped into one
    /// append per run of frames of the same session. `ending` holds the sequences whose last
    /// frame was committed earlier (maybe not written yet); those ending in `batch` are added.
    /// A frame of an ended or ending sequence will be dropped by the writer, so it is not
    /// recorded either. A store failure is logged (once) and does not hold the frames back:
    /// the client still gets its updates; the history misses them.
    pub async fn commit(&self, batch: &mut [Frame], ending: &mut Vec<Arc<Sequence>>) {
        let Some(store) = &self.store else {
            return;
        };
        // Taken out first (the frames are written without them), grouped into runs of one
        // session each.
        let mut runs: Vec<(SessionId, Batch)> = Vec::new();
        for frame in batch.iter_mut() {
            if let Some(sequence) = frame.sequence.as_ref() {
                let ended = sequence.has_ended() || ending.iter().any(|e| Arc::ptr_eq(e, sequence));
                if frame.kind == FrameKind::EndsSequence {
                    ending.push(sequence.clone());
                }
                if ended {
                    frame.record = None;
                    continue;
                }
            }
            let Some(Journaled { session, update }) = frame.record.take() else {
                continue;
            };
            // The frame's bytes are serde_json's output: UTF-8, the update compact JSON.
            let Some(text) = frame
                .bytes
                .get(update)
                .and_then(|b| std::str::from_utf8(b).ok())
            else {
                continue;
            };
            match runs.last_mut() {
                Some((last, run)) if *last == session => run.push_update_json(text),
                _ => {
                    let mut run = Batch::new();
                    run.push_update_json(text);
                    runs.push((session, run));
                }
            }
        }
        for (session, run) in runs {
            if let Err(e) = store.append_batch(&session, run).await
                && !self.failed.swap(true, Ordering::AcqRel)
            {
                tracing::error!(
                    %session,
                    "recording the session failed; its history will be incomplete: {e}"
                );
            }
        }
    }
}
