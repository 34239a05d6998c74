//! Prompt turns, one driver for every protocol version ([`start`]): `session/prompt` (content
//! the agent does not accept refused, a prompt that starts with one of the session's slash
//! commands run by the agent's command method, any other by `prompt`), and cancellation
//! (`session/cancel`, `$/cancel_request`). What differs between versions (a busy session
//! refuses or queues; the prompt is answered when accepted or at the end) is the
//! connection's codec's to say.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::value::RawValue;
use tracing::{Instrument, debug, debug_span, warn};

use tokio_util::sync::CancellationToken;

use super::queue::{self, PromptQueue};
use super::{Router, params};
use crate::agent::{Agent, Prompt};
use crate::peer::Frame;
use crate::protocol::{self, Ending, methods};
use crate::schema::{self, ContentBlock, ErrorCode, MessageId, RequestId};
use crate::session::{Request, Session, SessionState, user_chunk};
use crate::store::Record;
use crate::sync::lock;
use crate::turn::{self, Turn};

/// `session/prompt` of protocol v1: see [`start`].
pub(super) fn prompt<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::PromptRequest = params(methods::SESSION_PROMPT, raw)?;
    start(r, id, req, None, raw.map_or(0, |raw| raw.get().len()))
}

/// How a prompt comes to its turn, as the connection's version says (checked here, on the
/// reader's task, so prompts are taken in the order the client sent them).
enum Entry {
    /// v1: the turn started at once (a prompt for a busy session is refused).
    Started(Arc<Turn>),
    /// v2: waiting behind the running turn, in the session's bounded queue.
    Queued(queue::Queued),
}

/// The one prompt-turn driver. `req` is the prompt (`key`: its idempotency key, `bytes`: its
/// size as sent). On the reader's task: the session is found, content it does not accept is
/// refused, and the prompt enters its turn by the version's policy ([`Entry`]). Then, in the
/// returned task: the prompt is acknowledged where the version does so on acceptance, recorded
/// (and echoed where the version echoes it), the turn reported running, the agent's `prompt`
/// (or the slash command's method) run, and the turn's end told, as the codec writes each.
pub(super) fn start<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    req: schema::PromptRequest,
    key: Option<String>,
    bytes: usize,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let state = r
        .conn
        .sessions()
        .get(&req.session_id)
        .ok_or_else(|| schema::Error::session_not_found(req.session_id.clone()))?;
    super::not_a_live_subagent(&r.conn, state.id(), methods::SESSION_PROMPT)?;
    let queue = PromptQueue::of(&state);
    // A retry of a prompt already taken: its message id again, no second turn.
    if let Some(key) = &key
        && let Some(message) = queue.prompt_with_key(key)
    {
        let conn = r.conn.clone();
        return Ok(Box::pin(async move {
            if let Some(bytes) = conn.codec().accepted(&id, &message.0) {
                let _ = conn
                    .peer()
                    .send(Frame::new(bytes, None).answering(&id))
                    .await;
            }
        }));
    }
    let codec = &r.conn.codec();
    let place = match codec.queues_prompts() {
        // Bounded: beyond it the prompt is refused, and nothing of it is kept.
        true => Some(queue.admit(bytes).ok_or_else(|| too_many_waiting(&state))?),
        false => None,
    };
    let blocks = req.prompt.clone();
    let prompt = Prompt::from_request(req);
    refuse_unaccepted(r, &prompt, codec.version().prompt_capabilities())?;
    let command = command_of(r, &state, &prompt);
    let entry = match place {
        Some(place) => Entry::Queued(place),
        None => {
            let turn = Arc::new(Turn::new(&r.conn.peer().turns));
            if !state.start_turn(&turn) {
                return Err(schema::Error::new(
                    ErrorCode::InvalidRequest.into(),
                    format!(
                        "session `{}` is already running a prompt turn; wait for its answer or cancel it",
                        state.id()
                    ),
                ));
            }
            Entry::Started(turn)
        }
    };
    // The message id is the session's from now: a retry with the same key gets it.
    let message = state.messages().user_message();
    if let Some(key) = key {
        queue.remember_key(key, message.clone());
    }
    let waiting = state.waiting();
    let (agent, prompts) = (r.agent.clone(), r.prompts.clone());
    let span = debug_span!("turn", session = %state.id(), command = command.as_ref().map(|c| c.0.as_str()));
    Ok(Box::pin(
        async move {
            // Running turns are bounded by sessions (one each), not by the requests in flight.
            crate::peer::release_admission();
            let conn = state.conn().clone();
            let (turn, slot) = match entry {
                Entry::Started(turn) => (turn, None),
                Entry::Queued(place) => {
                    let Some(slot) = wait_for_turn(&state, &id, &queue, &waiting).await else {
                        return;
                    };
                    // Out of the queue: its place is free for the next prompt.
                    drop(place);
                    let turn = Arc::new(Turn::new(&conn.peer().turns));
                    if state.is_closed() || !state.start_turn(&turn) {
                        let error = conn.codec().error(&id, &crate::Error::SessionClosed);
                        let _ = conn
                            .peer()
                            .send(Frame::new(error, None).answering(&id))
                            .await;
                        return;
                    }
                    (turn, Some(slot))
                }
            };
            lock(&prompts).insert(id.clone(), turn.clone());
            state.messages().end();
            if let Some(bytes) = conn.codec().accepted(&id, &message.0) {
                let _ = conn
                    .peer()
                    .send(Frame::new(bytes, None).answering(&id))
                    .await;
            }
            record_prompt(&state, &turn, &blocks, &message).await;
            if let Some(bytes) = conn.codec().state(state.id(), protocol::State::Running) {
                let frame = Frame::new(bytes, Some(turn.sequence.clone())).of_session(state.id());
                let _ = conn.peer().send(frame).await;
            }
            let request = Request::new(prompt.meta().cloned());
            let cx = Session::new(state.clone(), Some(turn.clone())).handling(request.clone());
            let outcome = run_turn(&*agent, &cx, &turn, command, prompt).await;
            // Before the answer: a client that has it may kill the agent and load the session.
            state.save_persisted().await;
            let ending = Ending {
                id: &id,
                meta: request.take_answer_meta(),
                background: &|| queue::background_terminal_ids(&state),
            };
            let (frame, ended) = turn
                .end(
                    conn.peer(),
                    conn.codec(),
                    conn.client_capabilities(),
                    state.id(),
                    ending,
                    outcome,
                )
                .await;
            // Free the session before the answer leaves: a client may send its next prompt the
            // moment it reads the answer.
            state.end_turn();
            lock(&prompts).remove(&id);
            // The answer skips the writer's queue when nothing is waiting in it (the turn's
            // end is recorded after it, so a cancel's latency never waits on the store).
            let _ = conn.peer().send_now(frame).await;
            if let Some(ended) = ended {
                let _ = conn.peer().send(ended).await;
            }
            drop(slot);
        }
        .instrument(span),
    ))
}

/// The `-32600` for a prompt the session's queue has no room for.
fn too_many_waiting(state: &SessionState) -> schema::Error {
    schema::Error::new(
        ErrorCode::InvalidRequest.into(),
        format!(
            "session `{}` has too many prompts waiting (at most {} prompts, {} MiB in all); \
             send this one once a waiting prompt has started, or cancel",
            state.id(),
            queue::MAX_QUEUED_PROMPTS,
            queue::MAX_QUEUED_BYTES >> 20,
        ),
    )
}

/// Waits, in the order prompts came, for the session's turn (the lock of its queue); `None`
/// when the wait ended first: a cancel of the session (the prompt is answered `-32800`), or
/// the end of the connection's turns.
async fn wait_for_turn(
    state: &SessionState,
    id: &RequestId,
    queue: &PromptQueue,
    waiting: &CancellationToken,
) -> Option<tokio::sync::OwnedMutexGuard<()>> {
    let conn = &state.conn();
    tokio::select! {
        // A cancel that came first wins over the slot it freed.
        biased;
        () = waiting.cancelled() => {
            let error = conn.codec().error(id, &crate::Error::Cancelled);
            let _ = conn.peer().send(Frame::new(error, None).answering(id)).await;
            None
        }
        () = conn.peer().turns.cancelled() => None,
        slot = queue.turn.clone().lock_owned() => Some(slot),
    }
}

/// Records the user's prompt as `user_message_chunk`s of its message `message`, before the
/// turn runs (so before any of its updates), and echoes it to the client where the version does
/// (v2's `user_message`, a frame of the turn that carries the records). Otherwise the records
/// go in a frame that only records, committed with the writer's next batch like every update;
/// when the output queue is full (a client not reading), straight into the store instead: a v1
/// turn never waits behind the client to start.
pub(super) async fn record_prompt(
    state: &SessionState,
    turn: &Turn,
    blocks: &[ContentBlock],
    message: &MessageId,
) {
    let conn = &state.conn();
    let journal = &conn.peer().journal;
    let echo = conn.codec().user_message(state.id(), message, blocks);
    let records: Vec<Record> = match journal.is_recording() {
        true => blocks
            .iter()
            .filter_map(|block| Record::update(&user_chunk(block.clone(), message)).ok())
            .collect(),
        false => Vec::new(),
    };
    let recorded = journal.records_only(state.id(), &records);
    if let Some(bytes) = echo {
        let mut frame =
            recorded.unwrap_or_else(|| Frame::new(Vec::new(), None).of_session(state.id()));
        frame.bytes = bytes;
        frame.sequence = Some(turn.sequence.clone());
        let _ = conn.peer().send(frame).await;
        return;
    }
    let (Some(frame), Some(store)) = (recorded, journal.store()) else {
        return;
    };
    if conn.peer().try_queue(frame).is_err()
        && let Err(e) = store.append(state.id(), &records).await
    {
        warn!(session = %state.id(), "could not record the prompt: {e}");
    }
}

/// `-32602` for content of `prompt` the agent does not accept, naming the capability it would
/// advertise under `capabilities` (`promptCapabilities` in v1, `session.prompt` in v2).
pub(super) fn refuse_unaccepted<A: Agent>(
    r: &Router<A>,
    prompt: &Prompt,
    capabilities: &str,
) -> Result<(), schema::Error> {
    let accepted = r.agent.capabilities().prompt_capabilities;
    match prompt.unaccepted(&accepted) {
        Some((index, what, capability)) => Err(schema::Error::new(
            ErrorCode::InvalidParams.into(),
            format!(
                "`prompt[{index}]` is {what}, which this agent does not accept (it does not advertise `{capabilities}.{capability}`)"
            ),
        )),
        None => Ok(()),
    }
}

/// Runs the turn of `prompt`: the slash command's method when it is one, else `prompt`.
pub(super) async fn run_turn<A: Agent>(
    agent: &A,
    cx: &Session,
    turn: &Turn,
    command: Option<(String, Prompt)>,
    prompt: Prompt,
) -> crate::Result<schema::StopReason> {
    match command {
        Some((name, input)) => turn::run(agent.run_command(cx, &name, input), &turn.cancel).await,
        None => turn::run(agent.prompt(cx, prompt), &turn.cancel).await,
    }
}

/// The slash command `prompt` runs, with its input: one the session offers and the agent has a
/// method for.
pub(super) fn command_of<A: Agent>(
    r: &Router<A>,
    state: &SessionState,
    prompt: &Prompt,
) -> Option<(String, Prompt)> {
    prompt.command().and_then(|(name, rest)| {
        let offered = state.offers_command(name);
        let declared = r.agent.commands().iter().any(|c| c.name == name);
        (offered && declared).then(|| (name.to_owned(), rest))
    })
}

pub(super) fn cancel<A: Agent>(r: &Router<A>, raw: Option<&RawValue>) {
    match params::<schema::CancelNotification>(methods::SESSION_CANCEL, raw) {
        Ok(cancel) => match r.conn.sessions().get(&cancel.session_id) {
            Some(session) => {
                debug!(session = %cancel.session_id, "cancel requested");
                session.cancel_turn();
            }
            // A turn its client's previous connection left running, the same user's.
            None if r.conn.detach().is_some_and(|detach| {
                detach.sessions.cancel(&cancel.session_id, r.conn.user())
            }) =>
            {
                debug!(session = %cancel.session_id, "cancelled a turn its client left running");
            }
            None => debug!(session = %cancel.session_id, "cancel for an unknown session"),
        },
        Err(e) => debug!(error = %e.message, "ignored a malformed session/cancel"),
    }
}

/// Protocol-level cancellation of one request: for a prompt, cancels its turn.
pub(super) fn cancel_request<A: Agent>(r: &Router<A>, raw: Option<&RawValue>) {
    if let Ok(cancel) = params::<schema::CancelRequestNotification>(methods::CANCEL_REQUEST, raw)
        && let Some(turn) = lock(&r.prompts).get(&cancel.request_id)
    {
        debug!(request = %cancel.request_id, "prompt cancelled by request id");
        turn.cancel.cancel();
    }
}
