//! The journal: frames that carry a session record are committed to the session store by the
//! writer before they are written, so a client never receives anything the store does not
//! have — a `kill -9` between the two loses nothing the client saw.
//!
//! The writer hands over a whole batch of queued frames at once, and the journal commits
//! their records with one [`SessionStore::append_batches`] call (one transaction in the
//! SQLite store), whatever the number of sessions in the batch: recording costs one store
//! round trip per writer batch, not per frame or per session.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use super::{Frame, FrameKind};
use crate::protocol::{Version, v1};
use crate::schema::{SessionId, SessionUpdate, StopReason};
use crate::store::{Batch, Record, SessionStore};

/// What the store keeps of a frame, of `session`.
#[derive(Debug)]
pub(crate) struct Journaled {
    pub session: SessionId,
    pub kept: Kept,
}

/// The records of a [`Journaled`] frame.
#[derive(Debug)]
pub(crate) enum Kept {
    /// The frame is a `session/update` whose update's JSON text is `frame.bytes[range]`
    /// (recorded as it is: no second serialization, no copy until the batch is committed).
    Update(Range<usize>),
    /// Records the client is not sent (the user's prompt, the end of a turn), already encoded.
    Records(Batch),
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
    /// The protocol version the connection negotiated: how updates are written (the records
    /// are the same whatever it is).
    version: Arc<OnceLock<Version>>,
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
            version: Arc::default(),
        }
    }

    /// The protocol version the connection speaks (v1 until `initialize` says otherwise).
    pub fn version(&self) -> Version {
        self.version.get().copied().unwrap_or_default()
    }

    /// The protocol version `initialize` negotiated, if it ran.
    #[cfg(feature = "v2")]
    pub fn negotiated(&self) -> Option<Version> {
        self.version.get().copied()
    }

    /// Sets the protocol version, once (`initialize`); `false` if it was set already.
    pub fn set_version(&self, version: Version) -> bool {
        self.version.set(version).is_ok()
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
        #[cfg(feature = "v2")]
        if self.version() == Version::V2 && !crate::protocol::v2::same_as_v1(update) {
            // The frame is v2's; the record is the account's (v1) JSON, whatever the wire.
            let text = serde_json::to_string(update)?;
            let bytes = crate::protocol::v2::session_update(session, update)?.unwrap_or_default();
            let record = self.is_recording().then(|| {
                let mut batch = Batch::new();
                batch.push_update_json(&text);
                Journaled {
                    session: session.clone(),
                    kept: Kept::Records(batch),
                }
            });
            return Ok((bytes, record));
        }
        let (bytes, update) = v1::session_update_located(session, update)?;
        let record = self.is_recording().then(|| Journaled {
            session: session.clone(),
            kept: Kept::Update(update),
        });
        Ok((bytes, record))
    }

    /// The frame that records `records` of `session` without sending anything; `None` when
    /// sessions are not recorded (or there is nothing to record).
    pub fn records_only(&self, session: &SessionId, records: &[Record]) -> Option<Frame> {
        if !self.is_recording() || records.is_empty() {
            return None;
        }
        let mut batch = Batch::new();
        for record in records {
            if let Err(e) = batch.push(record) {
                tracing::debug!(%session, "a record could not be encoded: {e}");
            }
        }
        let record = Journaled {
            session: session.clone(),
            kept: Kept::Records(batch),
        };
        Some(Frame::new(Vec::new(), None).recorded(Some(record)))
    }

    /// Commits the records of `batch` (those of frames that will be written) with one
    /// [`SessionStore::append_batches`], each session's records in the order of its frames.
    /// A frame of a sequence whose last frame was taken (in this batch or an earlier one) will
    /// be dropped by the writer, so it is not recorded either. A store failure is logged
    /// (once) and does not hold the frames back: the client still gets its updates; the
    /// history misses them. Returns the number of sessions in the commit.
    pub async fn commit(&self, batch: &mut [Frame]) -> usize {
        let Some(store) = &self.store else {
            return 0;
        };
        // Taken out first (the frames are written without them), one batch per session: its
        // index in `runs` by session id.
        let mut runs: Vec<(SessionId, Batch)> = Vec::new();
        let mut index: HashMap<SessionId, usize> = HashMap::new();
        for frame in batch.iter_mut() {
            if let Some(sequence) = frame.sequence.as_deref() {
                let ended =
                    sequence.has_ended() || sequence.closed_in_journal.load(Ordering::Relaxed);
                if frame.kind == FrameKind::EndsSequence {
                    sequence.closed_in_journal.store(true, Ordering::Relaxed);
                }
                if ended {
                    frame.record = None;
                    continue;
                }
            }
            let Some(Journaled { session, kept }) = frame.record.take() else {
                continue;
            };
            let i = *index.entry(session).or_insert_with_key(|session| {
                runs.push((session.clone(), Batch::new()));
                runs.len() - 1
            });
            let run = &mut runs[i].1;
            match kept {
                // The frame's bytes are serde_json's output: UTF-8, the update compact JSON.
                Kept::Update(range) => {
                    if let Some(text) = frame
                        .bytes
                        .get(range)
                        .and_then(|b| std::str::from_utf8(b).ok())
                    {
                        run.push_update_json(text);
                    }
                }
                Kept::Records(records) => run.append(&records),
            }
        }
        let sessions = runs.len();
        if sessions == 0 {
            return 0;
        }
        match store.append_batches(runs).await {
            Ok(cursors) if cursors.iter().all(Option::is_some) => {}
            // A session deleted while its frames were queued: nothing to keep.
            Ok(_) => tracing::debug!("dropped the records of a session the store no longer has"),
            Err(e) => {
                if !self.failed.swap(true, Ordering::AcqRel) {
                    tracing::error!(
                        "recording sessions failed; their history will be incomplete: {e}"
                    );
                }
            }
        }
        sessions
    }
}
