//! Prompt turns: `session/prompt` (content the agent does not accept refused, a prompt that
//! starts with one of the session's slash commands run by the agent's command method, any
//! other by `prompt`), and cancellation (`session/cancel`, `$/cancel_request`).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::value::RawValue;
use tracing::{Instrument, debug, debug_span};

use super::{Router, history, params};
use crate::agent::{Agent, Prompt};
use crate::protocol::methods;
use crate::schema::{self, ErrorCode, RequestId};
use crate::session::{Request, Session, SessionState};
use crate::sync::lock;
use crate::turn::{self, Turn};

/// Starts a prompt turn. The session is checked and marked busy here, on the reader's task, so
/// a second prompt for a busy session is refused in the order the client sent them.
pub(super) fn prompt<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::PromptRequest = params(methods::SESSION_PROMPT, raw)?;
    let state = r
        .conn
        .sessions
        .get(&req.session_id)
        .ok_or_else(|| schema::Error::session_not_found(req.session_id.clone()))?;
    let recorded = r
        .conn
        .peer
        .journal
        .is_recording()
        .then(|| req.prompt.clone());
    let prompt = Prompt::from_request(req);
    refuse_unaccepted(r, &prompt, "promptCapabilities")?;
    let command = command_of(r, &state, &prompt);
    let turn = Arc::new(Turn::new(&r.conn.peer.turns));
    if !state.start_turn(&turn) {
        return Err(schema::Error::new(
            ErrorCode::InvalidRequest.into(),
            format!(
                "session `{}` is already running a prompt turn; wait for its answer or cancel it",
                state.id
            ),
        ));
    }
    let prompts = r.prompts.clone();
    lock(&prompts).insert(id.clone(), turn.clone());
    let agent = r.agent.clone();
    let span =
        debug_span!("turn", session = %state.id, command = command.as_ref().map(|c| c.0.as_str()));
    Ok(Box::pin(
        async move {
            // Running turns are bounded by sessions (one each), not by the requests in flight.
            crate::peer::release_admission();
            state.messages.end();
            if let Some(blocks) = recorded {
                history::record_prompt(&state, &blocks).await;
            }
            let request = Request::new(prompt.meta().cloned());
            let cx = Session::new(state.clone(), Some(turn.clone())).handling(request.clone());
            let outcome = run_turn(&*agent, &cx, &turn, command, prompt).await;
            // Before the answer: a client that has it may kill the agent and load the session.
            state.save_persisted().await;
            let meta = request.take_answer_meta();
            let ending = turn::Ending::Answer { id: &id, meta };
            let (frame, ended) = turn.end(&state.conn.peer, &state.id, ending, outcome).await;
            // Free the session before the answer leaves: a client may send its next prompt the
            // moment it reads the answer.
            state.end_turn();
            lock(&prompts).remove(&id);
            // The answer skips the writer's queue when nothing is waiting in it.
            let _ = state.conn.peer.send_now(frame).await;
            if let Some(ended) = ended {
                let _ = state.conn.peer.send(ended).await;
            }
        }
        .instrument(span),
    ))
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
        let offered = lock(&state.commands).iter().any(|c| c.name == name);
        let declared = r.agent.commands().iter().any(|c| c.name == name);
        (offered && declared).then(|| (name.to_owned(), rest))
    })
}

pub(super) fn cancel<A: Agent>(r: &Router<A>, raw: Option<&RawValue>) {
    match params::<schema::CancelNotification>(methods::SESSION_CANCEL, raw) {
        Ok(cancel) => match r.conn.sessions.get(&cancel.session_id) {
            Some(session) => {
                debug!(session = %cancel.session_id, "cancel requested");
                session.cancel_turn();
            }
            // A turn its client's previous connection left running, the same user's.
            None if r.conn.detach.as_ref().is_some_and(|detach| {
                detach
                    .sessions
                    .cancel(&cancel.session_id, r.conn.user.as_deref())
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
