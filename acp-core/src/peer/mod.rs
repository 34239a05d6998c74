//! The connection to the client as a JSON-RPC peer, knowing nothing of sessions: the bounded
//! output queue and the [writer](writer) task that alone owns the output, our requests to the
//! client and their answers, and the [reader](reader) loop that hands every incoming message to
//! a [`Dispatch`].

mod journal;
pub(crate) mod reader;
pub(crate) mod writer;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::sync::{Mutex, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use crate::jsonrpc::{self, Answer, Failed, Pending};
use crate::schema::{self, RequestId, SessionId};
use crate::transport::{Route, Sink};
use crate::{Error, Result};

pub(crate) use journal::{Journal, Journaled, turn_ended};
pub(crate) use reader::{Dispatch, read_loop};
pub(crate) use writer::write_loop;

/// Frames queued for the writer; a producer faster than the pipe waits here.
pub(crate) const QUEUE_FRAMES: usize = 1024;

/// Requests read from the client and not answered yet (their answer not queued), at most, by
/// default: beyond this the reader stops reading until one is answered, so a client that
/// writes requests without reading the answers cannot grow the agent.
pub(crate) const DEFAULT_MAX_IN_FLIGHT: usize = 1024;

/// One request admitted by [`Peer::admit`]: counts as in flight until dropped, which is when
/// its answer is queued (or given up), or [released](release_admission) earlier.
pub(crate) type Admission = tokio::sync::OwnedSemaphorePermit;

tokio::task_local! {
    /// The admission of the request the current task handles (see [`admitted`]).
    static ADMISSION: std::cell::RefCell<Option<Admission>>;
}

/// Runs `handler` (the task that answers one request) holding the request's `admission`.
pub(crate) fn admitted<F: Future>(
    admission: Admission,
    handler: F,
) -> impl Future<Output = F::Output> {
    ADMISSION.scope(std::cell::RefCell::new(Some(admission)), handler)
}

/// The request the current task handles stops counting as in flight. Done for a handler
/// that waits on the client (the client's answer is behind the reader, which must be free to
/// read it) and for a prompt turn once started (turns are bounded by sessions, one each).
pub(crate) fn release_admission() {
    let _ = ADMISSION.try_with(|admission| admission.borrow_mut().take());
}

/// Frames that must not reach the client after the last of them (a prompt turn's updates, and
/// the answer that ends the turn). Shared by every frame of the sequence.
#[derive(Debug, Default)]
pub(crate) struct Sequence {
    /// Set by the writer when the sequence's last frame is written.
    ended: AtomicBool,
    /// Set by the journal when it has taken the sequence's last frame (committed, maybe not
    /// written yet): its later frames will be dropped, so they are not recorded either.
    closed_in_journal: AtomicBool,
}

impl Sequence {
    /// Whether the sequence's last frame was written (later frames are dropped).
    pub fn has_ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }
}

/// What the writer does with a frame.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FrameKind {
    /// Written, unless it belongs to a sequence that has ended.
    Normal,
    /// The last frame of its sequence: nothing of the sequence is written after it.
    EndsSequence,
    /// Stops the writer after everything queued before it.
    Stop,
}

/// One serialized frame on its way to the client.
#[derive(Debug)]
pub(crate) struct Frame {
    /// The line to write (empty for a frame that only records).
    pub bytes: Vec<u8>,
    pub sequence: Option<Arc<Sequence>>,
    pub kind: FrameKind,
    /// What the session store keeps of this frame, committed before it is written.
    pub record: Option<Journaled>,
    /// Where it belongs (the session it is of, the request it answers), for a transport
    /// that delivers messages by it (see [`Sink`]).
    pub route: Route,
}

impl Frame {
    /// A frame, part of `sequence` if it has one.
    pub fn new(bytes: Vec<u8>, sequence: Option<Arc<Sequence>>) -> Self {
        Frame {
            bytes,
            sequence,
            kind: FrameKind::Normal,
            record: None,
            route: Route::Connection,
        }
    }

    /// The same frame, recorded in the session store (if there is one) before it is written;
    /// a recorded frame not routed yet is of the record's session.
    pub fn recorded(mut self, record: Option<Journaled>) -> Self {
        if let Some(record) = &record
            && self.route == Route::Connection
        {
            self.route = Route::Session(record.session.clone());
        }
        self.record = record;
        self
    }

    /// The same frame, routed by `route`.
    pub fn routed(mut self, route: Route) -> Self {
        self.route = route;
        self
    }

    /// The same frame, the answer to request `id`.
    pub fn answering(mut self, id: &RequestId) -> Self {
        self.route = Route::Answer(id.clone());
        self
    }

    /// The same frame, of session `id`.
    pub fn of_session(mut self, id: &SessionId) -> Self {
        self.route = Route::Session(id.clone());
        self
    }

    /// The last frame of `sequence`.
    pub fn ending(bytes: Vec<u8>, sequence: Arc<Sequence>) -> Self {
        Frame {
            bytes,
            sequence: Some(sequence),
            kind: FrameKind::EndsSequence,
            record: None,
            route: Route::Connection,
        }
    }

    fn stop() -> Self {
        Frame {
            bytes: Vec::new(),
            sequence: None,
            kind: FrameKind::Stop,
            record: None,
            route: Route::Connection,
        }
    }
}

/// The output: written by the writer task, or directly by [`Peer::send_now`].
pub(crate) type Output = Sink;

/// The client, as seen by everything that talks to it.
pub(crate) struct Peer {
    out: mpsc::Sender<Frame>,
    /// Frames queued and not yet written (or dropped) by the writer.
    in_flight: AtomicUsize,
    /// The output; whoever holds the lock writes.
    output: Mutex<Output>,
    /// The writer has stopped: nothing more is written.
    stopped: AtomicBool,
    pending: Pending,
    /// Permits for requests in flight.
    admissions: Arc<Semaphore>,
    /// The client's requests whose answer is the connection's whatever session they name
    /// (see [`answer_on_connection`](Self::answer_on_connection)), until answered.
    connection_answers: std::sync::Mutex<std::collections::HashSet<RequestId>>,
    /// Where the frames that carry a record are recorded before they are written.
    pub journal: Journal,
    /// Cancelled when no answer from the client can come any more: the connection is closing,
    /// or writing to the client failed.
    pub closed: CancellationToken,
    /// The parent of every turn's token: cancelling it cancels every running turn. A child of
    /// [`closed`](Self::closed), unless the connection keeps its turns running after the
    /// client went away (see [`Peer::new`]).
    pub turns: CancellationToken,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer")
            .field("in_flight", &self.in_flight)
            .finish_non_exhaustive()
    }
}

impl Peer {
    /// A peer writing to `output`, and the receiving end of its output queue, for
    /// [`write_loop`]. With `detachable`, closing the peer does not cancel the running turns
    /// (its [`turns`](Self::turns) token is cancelled on its own).
    pub fn new(
        output: Sink,
        max_in_flight: usize,
        journal: Journal,
        detachable: bool,
    ) -> (Arc<Peer>, mpsc::Receiver<Frame>) {
        let closed = CancellationToken::new();
        let turns = if detachable {
            CancellationToken::new()
        } else {
            closed.child_token()
        };
        let (out, rx) = mpsc::channel(QUEUE_FRAMES);
        let peer = Peer {
            out,
            in_flight: AtomicUsize::new(0),
            output: Mutex::new(output),
            stopped: AtomicBool::new(false),
            pending: Pending::default(),
            admissions: Arc::new(Semaphore::new(max_in_flight.max(1))),
            connection_answers: std::sync::Mutex::default(),
            journal,
            closed,
            turns,
        };
        (Arc::new(peer), rx)
    }

    /// Queues a frame without waiting; `false` if the queue is full or closed.
    pub fn try_send(&self, frame: Frame) -> bool {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        let sent = self.out.try_send(frame).is_ok();
        if !sent {
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
        }
        sent
    }

    /// Queues a frame without waiting; gives it back if the queue is full or closed.
    pub fn try_queue(&self, frame: Frame) -> std::result::Result<(), Frame> {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        match self.out.try_send(frame) {
            Ok(()) => Ok(()),
            Err(e) => {
                self.in_flight.fetch_sub(1, Ordering::AcqRel);
                Err(e.into_inner())
            }
        }
    }

    /// Queues a frame, waiting while the queue is full.
    pub async fn send(&self, frame: Frame) -> Result<()> {
        // Counted from now; uncounted again unless the frame was queued (a failed send, or
        // this future dropped while the queue was full, e.g. a turn dropped after its grace).
        struct Counted<'a>(&'a AtomicUsize, bool);
        impl Drop for Counted<'_> {
            fn drop(&mut self) {
                if !self.1 {
                    self.0.fetch_sub(1, Ordering::AcqRel);
                }
            }
        }
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        let mut counted = Counted(&self.in_flight, false);
        self.out
            .send(frame)
            .await
            .map_err(|_| Error::ConnectionClosed)?;
        counted.1 = true;
        Ok(())
    }

    /// Writes a frame at once when nothing is queued and the writer is idle (one task hop
    /// less on the way out: used for the answer that ends a turn); otherwise queues it. Frames
    /// stay in order: nothing queued earlier can be overtaken, since the direct path needs
    /// an empty queue and the output's lock. Never call it from the reader: it may wait on
    /// the client.
    pub async fn send_now(&self, frame: Frame) -> Result<()> {
        if frame.record.is_none()
            && self.in_flight.load(Ordering::Acquire) == 0
            && let Ok(mut output) = self.output.try_lock()
            && self.in_flight.load(Ordering::Acquire) == 0
            && !self.stopped.load(Ordering::Acquire)
        {
            let mut frame = frame;
            self.final_route(&mut frame.route);
            let written = async {
                writer::write_frame(&mut output, frame).await?;
                output.flush().await
            }
            .await;
            return written.map_err(|e| {
                tracing::debug!("writing to the client failed: {e}");
                self.close();
                Error::io("writing to the client", e)
            });
        }
        self.send(frame).await
    }

    /// The answer to request `id` belongs to the connection, not to the session the request
    /// names (`session/load`'s, as the transport RFD routes it): its frame is routed
    /// [`Route::ConnectionAnswer`].
    pub fn answer_on_connection(&self, id: &RequestId) {
        crate::sync::lock(&self.connection_answers).insert(id.clone());
    }

    /// `route`, or the connection's answer route for an answer registered with
    /// [`answer_on_connection`](Self::answer_on_connection) (forgotten then).
    fn final_route(&self, route: &mut Route) {
        if let Route::Answer(id) = route {
            let mut answers = crate::sync::lock(&self.connection_answers);
            if !answers.is_empty() && answers.remove(id) {
                *route = Route::ConnectionAnswer(std::mem::replace(id, RequestId::Null));
            }
        }
    }

    /// Admits one more request, waiting while the most allowed are unanswered; `None` once
    /// the connection is closed.
    pub async fn admit(&self) -> Option<Admission> {
        tokio::select! {
            permit = self.admissions.clone().acquire_owned() => permit.ok(),
            () = self.closed.cancelled() => None,
        }
    }

    /// Queues an answer without ever waiting (for the reader, which must stay free to read
    /// the next cancel): at once when the queue has room, otherwise from a task of its own
    /// that keeps the request's admission until the answer is queued.
    pub fn reply(self: &Arc<Self>, frame: Frame, admission: Admission) {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        match self.out.try_send(frame) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(frame)) => {
                self.in_flight.fetch_sub(1, Ordering::AcqRel);
                let peer = self.clone();
                tokio::spawn(async move {
                    let _ = peer.send(frame).await;
                    drop(admission);
                });
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                self.in_flight.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    /// [`reply`](Self::reply) with an error answer to request `id`.
    pub fn reply_error(
        self: &Arc<Self>,
        id: &RequestId,
        error: schema::Error,
        admission: Admission,
    ) {
        self.reply(
            Frame::new(jsonrpc::encode_error(id, &error), None).answering(id),
            admission,
        );
    }

    /// Stops the writer once everything queued so far is written.
    pub async fn stop(&self) {
        let _ = self.out.send(Frame::stop()).await;
    }

    /// Hands the client's answer to whoever waits for it; `false` if nobody does.
    pub fn resolve(&self, id: &RequestId, answer: Answer) -> bool {
        self.pending.resolve(id, answer)
    }

    /// Nothing more can be heard from the client: wake everyone waiting on it.
    pub fn close(&self) {
        self.closed.cancel();
        self.pending.clear();
    }

    /// Tells the client that the agent no longer waits for its request `id`
    /// (`$/cancel_request`). Best effort: dropped if the output queue is full.
    fn cancel_request(&self, id: i64) {
        let params = schema::CancelRequestNotification::new(RequestId::Number(id));
        if let Ok(bytes) =
            jsonrpc::encode_notification(crate::protocol::methods::CANCEL_REQUEST, &params)
        {
            let _ = self.try_send(Frame::new(bytes, None));
        }
    }

    /// Sends a request of `method` to the client (made for `session`, if any), written by
    /// `encode` from the request id it is given, and waits for its answer, or for `cancel`; a
    /// request
    /// cancelled while the client works on it is cancelled at the client too
    /// (`$/cancel_request`), but for `session/request_permission`, which the client answers
    /// `cancelled` itself when it cancels a turn.
    ///
    /// A cancel read before the answer wins, even when both are ready: once the reader has
    /// seen the cancel, no call made under that token succeeds.
    pub async fn request<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        encode: impl FnOnce(i64) -> Result<Vec<u8>>,
        cancel: Option<&CancellationToken>,
        session: Option<&SessionId>,
    ) -> Result<T> {
        if self.closed.is_cancelled() {
            return Err(Error::ConnectionClosed);
        }
        let (id, rx) = self.pending.register();
        // Whatever happens next, the entry must not outlive this call.
        struct Forget<'a>(&'a Pending, i64);
        impl Drop for Forget<'_> {
            fn drop(&mut self) {
                self.0.forget(self.1);
            }
        }
        let _forget = Forget(&self.pending, id);
        let bytes = encode(id)?;
        let route = session.map_or(Route::Connection, |id| Route::Session(id.clone()));
        self.send(Frame::new(bytes, None).routed(route)).await?;
        // Waiting on the client from now: the reader must stay free to read its answer.
        release_admission();
        let cancelled = async {
            match cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let answer = tokio::select! {
            biased;
            () = cancelled => {
                // Cascade: the client may stop working on it (and answers it `-32800`,
                // which nobody waits for any more). Not for a permission request: a client
                // that cancels a turn must answer its permission requests `cancelled` itself.
                if method != crate::protocol::methods::REQUEST_PERMISSION {
                    self.cancel_request(id);
                }
                return Err(Error::Cancelled);
            }
            answer = rx => answer.map_err(|_| Error::ConnectionClosed)?,
            () = self.closed.cancelled() => return Err(Error::ConnectionClosed),
        };
        let raw = answer.map_err(|failed| match failed {
            Failed::Error(e) => Error::Refused {
                method: method.to_owned(),
                code: e.code.into(),
                message: e.message,
                data: e.data.map(Box::new),
            },
            Failed::Malformed(why) => {
                Error::Protocol(format!("its answer to `{method}` is malformed: {why}"))
            }
        })?;
        serde_json::from_str(raw.get()).map_err(|e| {
            Error::Protocol(format!(
                "its answer to `{method}` does not match the method's result type: {e}"
            ))
        })
    }
}
