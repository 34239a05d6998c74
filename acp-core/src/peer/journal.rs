//! The journal: frames that carry a session record are committed to the session store by the
//! writer before they are written, so a client never receives anything the store does not
//! have — a `kill -9` between the two loses nothing the client saw.
//!
//! The writer hands over a whole batch of queued frames at once (one transaction per session
//! in the batch): recording costs one store round trip per batch, not per frame.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{Frame, FrameKind, Sequence};
use crate::protocol::v1;
use crate::schema::{SessionId, SessionNotification, SessionUpdate, StopReason};
use crate::store::{Record, SessionStore};

/// One record of a session, riding on the frame that shows it to the client.
#[derive(Debug)]
pub(crate) struct Journaled {
    pub session: SessionId,
    pub record: Record,
}

impl Journaled {
    /// `update`, sent to the client as a `session/update` of `session`.
    pub fn update(session: &SessionId, update: &SessionUpdate) -> Option<Journaled> {
        Some(Journaled {
            session: session.clone(),
            record: Record::update(update).ok()?,
        })
    }

    /// A prompt turn of `session` ended with `stop_reason`.
    pub fn turn_ended(session: &SessionId, stop_reason: &StopReason) -> Option<Journaled> {
        let stop_reason = serde_json::to_value(stop_reason).ok()?.as_str()?.to_owned();
        Some(Journaled {
            session: session.clone(),
            record: Record::TurnEnded { stop_reason },
        })
    }
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

    /// The record of `update` to `session`, when sessions are recorded.
    pub fn update(&self, session: &SessionId, update: &SessionUpdate) -> Option<Journaled> {
        self.is_recording()
            .then(|| Journaled::update(session, update))
            .flatten()
    }

    /// The `session/update` frame's bytes for `update` of `session`, and its record when
    /// sessions are recorded: the update is serialized once, into the record, and the frame
    /// is built around that text.
    pub fn session_update(
        &self,
        session: &SessionId,
        update: SessionUpdate,
    ) -> crate::Result<(Vec<u8>, Option<Journaled>)> {
        if !self.is_recording() {
            let notification = SessionNotification::new(session.clone(), update);
            return Ok((v1::update(&notification)?, None));
        }
        let update = serde_json::value::to_raw_value(&update)?;
        let bytes = v1::raw_update(session, &update)?;
        let record = Journaled {
            session: session.clone(),
            record: Record::Update { update },
        };
        Ok((bytes, Some(record)))
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
        let mut runs: Vec<(SessionId, Vec<Record>)> = Vec::new();
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
            let Some(journaled) = frame.record.take() else {
                continue;
            };
            let Journaled { session, record } = *journaled;
            match runs.last_mut() {
                Some((last, run)) if *last == session => run.push(record),
                _ => runs.push((session, vec![record])),
            }
        }
        for (session, run) in runs {
            if let Err(e) = store.append(&session, &run).await
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
