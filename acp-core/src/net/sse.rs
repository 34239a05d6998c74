//! The SSE streams of Streamable HTTP: each stream's bounded queue ([`Outbox`]), the hold a
//! GET takes on it ([`Reader`], given back when the client goes away, so that what comes
//! meanwhile waits for the next GET), and the stream cursors of ACP's durable transport RFD:
//! every event carries an `id:`, a number increasing within its stream; the last events sent
//! are kept, and a GET with `Last-Event-ID` gets those after it again (the same events, the
//! same ids) before the live ones — or is refused with `409` when they are no longer kept,
//! and the client reopens the session (`session/load`, `session/resume`) instead.

use std::collections::VecDeque;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Frames a stream holds for a client that has not opened it or is behind.
const STREAM_FRAMES: usize = 256;

/// Events each stream keeps after sending them, for a client that resumes it: at most this
/// many…
const KEPT_FRAMES: usize = 128;

/// …and at most this many bytes (the last event is kept whatever its size).
const KEPT_BYTES: usize = 256 * 1024;

/// One stream's queue, and its reader when no GET holds it.
pub(super) struct Outbox {
    pub tx: mpsc::Sender<String>,
    reader: Option<Reader>,
}

impl Default for Outbox {
    fn default() -> Self {
        let (tx, rx) = mpsc::channel(STREAM_FRAMES);
        Outbox {
            tx,
            reader: Some(Reader {
                rx,
                next: 1,
                kept: VecDeque::new(),
                kept_bytes: 0,
            }),
        }
    }
}

impl Outbox {
    /// The stream's reader, unless a GET holds it.
    pub fn take(&mut self) -> Option<Reader> {
        self.reader.take()
    }

    /// Gives the reader back (its GET ended).
    pub fn give_back(&mut self, reader: Reader) {
        self.reader = Some(reader);
    }
}

/// What reads a stream: its queue, the id of its next event, and the events kept.
pub(super) struct Reader {
    rx: mpsc::Receiver<String>,
    next: u64,
    kept: VecDeque<(u64, Arc<str>)>,
    kept_bytes: usize,
}

/// Events to send again, each with its id.
pub(super) type Replay = VecDeque<(u64, Arc<str>)>;

impl Reader {
    /// The events after `last_event_id` to send again; `None` when it names no event this
    /// stream sent, or one before those it still keeps.
    pub fn after(&self, last_event_id: &str) -> Option<Replay> {
        let last: u64 = last_event_id.trim().parse().ok()?;
        if last >= self.next {
            return None;
        }
        let first_kept = self.kept.front().map_or(self.next, |(id, _)| *id);
        if last + 1 < first_kept {
            return None;
        }
        Some(
            self.kept
                .iter()
                .filter(|(id, _)| *id > last)
                .cloned()
                .collect(),
        )
    }

    /// Numbers a frame about to be sent and keeps it; its id.
    fn keep(&mut self, frame: Arc<str>) -> u64 {
        let id = self.next;
        self.next += 1;
        self.kept_bytes += frame.len();
        self.kept.push_back((id, frame));
        while self.kept.len() > KEPT_FRAMES || (self.kept_bytes > KEPT_BYTES && self.kept.len() > 1)
        {
            if let Some((_, old)) = self.kept.pop_front() {
                self.kept_bytes -= old.len();
            }
        }
        id
    }
}

/// A GET's hold on a stream; gives the reader back when dropped.
struct Hold {
    reader: Option<Reader>,
    replay: Replay,
    closed: CancellationToken,
    give_back: Option<Box<dyn FnOnce(Reader) + Send>>,
}

impl Drop for Hold {
    fn drop(&mut self) {
        if let (Some(reader), Some(give_back)) = (self.reader.take(), self.give_back.take()) {
            give_back(reader);
        }
    }
}

/// The SSE response reading `reader`: first `replay`, then the live events, until the
/// client goes away or `closed` (the connection ended). `give_back` gets the reader then.
pub(super) fn respond(
    reader: Reader,
    replay: Replay,
    closed: CancellationToken,
    give_back: impl FnOnce(Reader) + Send + 'static,
) -> Response {
    let hold = Hold {
        reader: Some(reader),
        replay,
        closed,
        give_back: Some(Box::new(give_back)),
    };
    let events = futures_util::stream::unfold(hold, |mut hold| async move {
        let (id, frame) = match hold.replay.pop_front() {
            Some(kept) => kept,
            None => {
                let closed = hold.closed.clone();
                let reader = hold.reader.as_mut()?;
                let frame: Arc<str> = tokio::select! {
                    frame = reader.rx.recv() => frame?.into(),
                    () = closed.cancelled() => return None,
                };
                (reader.keep(frame.clone()), frame)
            }
        };
        let event = Bytes::from(format!("id: {id}\ndata: {frame}\n\n"));
        Some((Ok::<_, std::convert::Infallible>(event), hold))
    });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(events),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resume_gets_the_events_after_its_cursor_while_they_are_kept() {
        let mut outbox = Outbox::default();
        let mut reader = outbox.take().unwrap();
        assert!(outbox.take().is_none(), "one reader at a time");
        assert_eq!(reader.after("0").unwrap().len(), 0, "nothing sent yet");
        assert!(reader.after("1").is_none(), "never sent");
        for i in 0..200 {
            assert_eq!(reader.keep(format!("m{i}").into()), i + 1);
        }
        let replay = reader.after("190").unwrap();
        let ids: Vec<u64> = replay.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, (191..=200).collect::<Vec<_>>());
        assert_eq!(&*replay[0].1, "m190");
        assert_eq!(reader.after("200").unwrap().len(), 0, "up to date");
        // 128 kept: 73..=200; a cursor of 72 still resumes, 71 does not.
        assert_eq!(reader.after("72").unwrap().len(), 128);
        assert!(reader.after("71").is_none(), "no longer kept");
        assert!(reader.after("not a number").is_none());
        outbox.give_back(reader);
        assert!(outbox.take().is_some());
    }

    #[test]
    fn big_events_are_kept_up_to_the_byte_limit() {
        let mut reader = Outbox::default().take().unwrap();
        let big: Arc<str> = "x".repeat(100 * 1024).into();
        for _ in 0..5 {
            reader.keep(big.clone());
        }
        assert_eq!(reader.kept.len(), 2, "256 KiB hold two of 100 KiB");
        assert!(reader.after("3").is_some() && reader.after("2").is_none());
    }
}
