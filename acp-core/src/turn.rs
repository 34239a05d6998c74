//! One prompt turn: its cancellation token, the grace a cancelled turn gets to wind down, the
//! tool calls it left open (failed by the end-of-turn sweep), and the sequence its updates and
//! its answer form on the wire (nothing of the turn after its answer).

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use crate::peer::{Frame, Peer, Sequence, turn_ended};
use crate::protocol::{Codec, Ending, account};
use crate::schema::{ClientCapabilities, SessionId, StopReason, ToolCallId, Usage};
use crate::sync::lock;
use crate::{Error, Result};

/// How long a cancelled turn may keep running to wind down before it is dropped.
pub(crate) const CANCEL_GRACE: Duration = Duration::from_millis(50);

/// One prompt turn.
#[derive(Debug)]
pub(crate) struct Turn {
    pub cancel: CancellationToken,
    /// Set by the turn's task just before its answer is queued: updates are refused from then.
    closing: AtomicBool,
    /// The turn's frames on the wire: dropped by the writer once the answer is written.
    pub sequence: Arc<Sequence>,
    /// Tool calls started and not yet finished, failed by the runtime when the turn ends.
    pub open_tool_calls: Mutex<Vec<ToolCallId>>,
    /// What a cancelled turn waits for (at most [`CANCEL_GRACE`]) before it ends: commands it
    /// started, killed with it, whose exit the client is shown.
    settling: Mutex<Settling>,
    /// The tokens the turn reported ([`Session::token_usage`](crate::Session::token_usage)),
    /// added up.
    usage: Mutex<Option<Usage>>,
}

/// The futures of [`Turn::settle_before_end`].
#[derive(Default)]
struct Settling(Vec<BoxFuture<'static, ()>>);

impl std::fmt::Debug for Settling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Settling({})", self.0.len())
    }
}

impl Turn {
    /// A turn cancelled with `parent` (the connection's token) or on its own.
    pub fn new(parent: &CancellationToken) -> Self {
        Turn {
            cancel: parent.child_token(),
            closing: AtomicBool::new(false),
            sequence: Arc::default(),
            open_tool_calls: Mutex::new(Vec::new()),
            settling: Mutex::default(),
            usage: Mutex::default(),
        }
    }

    /// Has a cancelled turn wait for `settled` (at most [`CANCEL_GRACE`]) before it ends.
    pub fn settle_before_end(&self, settled: BoxFuture<'static, ()>) {
        lock(&self.settling).0.push(settled);
    }

    /// Whether the turn is about to be (or was) answered: no update may be sent any more.
    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    fn open(&self) -> std::sync::MutexGuard<'_, Vec<ToolCallId>> {
        lock(&self.open_tool_calls)
    }

    /// Records a tool call as started.
    pub fn opened(&self, call: &ToolCallId) {
        self.open().push(call.clone());
    }

    /// Records a tool call as finished.
    pub fn finished(&self, call: &ToolCallId) {
        self.open().retain(|id| id != call);
    }

    /// Takes the tool calls still open (a subagent's, at its end).
    pub fn take_open(&self) -> Vec<ToolCallId> {
        std::mem::take(&mut *self.open())
    }

    /// Takes the tokens the turn used so far (a subagent's, at its end).
    pub fn take_usage(&self) -> Option<Usage> {
        lock(&self.usage).take()
    }

    /// Refuses further updates of a turn that ends without an answer (a subagent's).
    pub fn close(&self) {
        self.closing.store(true, Ordering::Release);
    }

    /// Adds `more` to the tokens the turn used.
    pub fn add_usage(&self, more: Usage) {
        let mut usage = lock(&self.usage);
        *usage = Some(match usage.take() {
            None => more,
            Some(sum) => {
                let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
                    (None, None) => None,
                    (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
                };
                Usage::new(
                    sum.total_tokens.saturating_add(more.total_tokens),
                    sum.input_tokens.saturating_add(more.input_tokens),
                    sum.output_tokens.saturating_add(more.output_tokens),
                )
                .thought_tokens(add(sum.thought_tokens, more.thought_tokens))
                .cached_read_tokens(add(sum.cached_read_tokens, more.cached_read_tokens))
                .cached_write_tokens(add(sum.cached_write_tokens, more.cached_write_tokens))
            }
        });
    }

    /// Ends the turn: fails every tool call still open (before the answer), refuses further
    /// updates, and returns the frame that tells the client the turn ended (written by the
    /// connection's `codec` from `ending`), and the frame that records the stop reason (when
    /// sessions are recorded), to be queued after it.
    pub async fn end(
        &self,
        peer: &Peer,
        codec: &Codec,
        client: &ClientCapabilities,
        session: &SessionId,
        ending: Ending<'_>,
        outcome: Result<StopReason>,
    ) -> (Frame, Option<Frame>) {
        let cancelled = self.cancel.is_cancelled();
        let settling = std::mem::take(&mut lock(&self.settling).0);
        if cancelled && !settling.is_empty() {
            let all = futures_util::future::join_all(settling);
            let _ = tokio::time::timeout(CANCEL_GRACE, all).await;
        }
        let open = std::mem::take(&mut *self.open());
        let message = if cancelled {
            "cancelled"
        } else {
            "the turn ended before this tool call finished"
        };
        for call in open {
            let update = account::tool_call_failed(&call, message);
            if let Ok(encoded) = codec.update(session, &update, client) {
                let record = encoded
                    .account
                    .and_then(|account| peer.journal.update(session, account));
                let frame = Frame::new(encoded.bytes, Some(self.sequence.clone()))
                    .of_session(session)
                    .recorded(record);
                let _ = peer.send(frame).await;
            }
        }
        self.closing.store(true, Ordering::Release);
        debug!(cancelled, ok = outcome.is_ok(), "turn finished");
        let usage = lock(&self.usage).take();
        let (bytes, stop, route) = codec.turn_end(session, ending, outcome, cancelled, usage);
        // The stop reason is history's, not something the client is shown again on load:
        // recorded after the answer rather than ahead of it, so that the answer (and a
        // cancel's latency) never waits on the store.
        let ended = stop
            .as_ref()
            .and_then(turn_ended)
            .and_then(|ended| peer.journal.records_only(session, &[ended]));
        (
            Frame::ending(bytes, self.sequence.clone()).routed(route),
            ended,
        )
    }
}

/// Runs the author's turn future, raced against cancellation with a short grace period, with
/// panics turned into errors.
pub(crate) async fn run(
    turn: impl Future<Output = Result<StopReason>>,
    cancel: &CancellationToken,
) -> Result<StopReason> {
    let mut fut = std::pin::pin!(AssertUnwindSafe(turn).catch_unwind());
    let outcome = tokio::select! {
        // The turn first: one that has already wound down on its cancel needs no timer.
        biased;
        out = &mut fut => out,
        () = cancel.cancelled() => match tokio::time::timeout(CANCEL_GRACE, &mut fut).await {
            Ok(out) => out,
            Err(_) => {
                debug!("the turn ignored cancellation; dropped it");
                return Err(Error::Cancelled);
            }
        },
    };
    outcome.unwrap_or_else(|panic| Err(Error::panicked("the agent", panic.as_ref())))
}
