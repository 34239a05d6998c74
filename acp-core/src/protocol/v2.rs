//! Protocol v2 (Preview) frames, written from the runtime's account of a session (the v1
//! update types, see [`account`](super::account)), and v2 requests read into that account:
//! typed conversions between the schema crate's v1 types and its `v2` types.
//!
//! - [`updates`]: the account's updates as v2's (updates are upserts: a v1 `tool_call` is the
//!   `tool_call_update` that creates it; `plan` is `plan_update`, one plan per session, id
//!   [`PLAN_ID`]; commands and their inputs are tagged; config options use `configId` /
//!   `groupId`; `current_mode_update` has no counterpart, modes being the config option of
//!   category `mode`; a diff is `changes`), the echo of a prompt ([`user_message`]), and the
//!   permission request the runtime sends ([`permission_request`]);
//! - [`params`]: a v2 client's params as the v1 requests the runtime's handlers read;
//! - [`answers`]: the handlers' v1 answers as v2's ([`Answer`]);
//! - here: the turn ([`prompt_answer`] acknowledges a prompt with its user message's id,
//!   [`state_update`] carries running / requires_action / idle with the stop reason) and the
//!   agent-owned terminals.
//!
//! Message and thought chunks with their id are the same in both versions: the stream of a
//! turn is written as v1 writes it ([`same_as_v1`]).

mod answers;
pub(crate) mod params;
mod updates;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{State, methods};
use crate::jsonrpc;
use crate::schema::v2 as t;
use crate::schema::{RequestId, SessionId, SessionUpdate, StopReason};
use crate::{Error, Result};

pub(crate) use answers::Answer;
/// One update as v2's, for a caller that writes the frame itself (the tests, a codec).
#[allow(unused_imports)]
pub(crate) use updates::update;
pub(crate) use updates::{permission_request, replayed_update, session_update, user_message};

/// The id of a session's plan on v2 (the runtime keeps one plan per session, as v1 does).
pub(crate) const PLAN_ID: &str = "plan";

/// Whether `update` is written the same in v1 and v2 (message and thought chunks with their
/// id: the runtime stamps every agent chunk).
pub(crate) fn same_as_v1(update: &SessionUpdate) -> bool {
    match update {
        SessionUpdate::AgentMessageChunk(c)
        | SessionUpdate::AgentThoughtChunk(c)
        | SessionUpdate::UserMessageChunk(c) => c.message_id.is_some(),
        _ => false,
    }
}

/// The `session/update` frame of `session` carrying the v2 `update`.
pub(crate) fn notification(session: &SessionId, update: t::SessionUpdate) -> Result<Vec<u8>> {
    let params = t::UpdateSessionNotification::new(session.0.clone(), update);
    Ok(jsonrpc::encode_notification(
        methods::SESSION_UPDATE,
        &params,
    )?)
}

/// A v2 `state_update` frame of `session`.
pub(crate) fn state_update(session: &SessionId, state: State) -> Result<Vec<u8>> {
    let state = match state {
        State::Running => t::StateUpdate::Running(t::RunningStateUpdate::new()),
        State::RequiresAction => {
            t::StateUpdate::RequiresAction(t::RequiresActionStateUpdate::new())
        }
    };
    notification(session, t::SessionUpdate::StateUpdate(state))
}

/// The `idle` `state_update` frame that ends a turn of `session` (v2), from how the turn
/// ended, and the stop reason (none: the turn failed, which v2 reports as the `error` stop
/// reason).
pub(crate) fn idle(
    session: &SessionId,
    outcome: Result<StopReason>,
    cancelled: bool,
    background: &[String],
    usage: Option<crate::schema::Usage>,
) -> (Vec<u8>, Option<StopReason>) {
    let (stop, reason) = match outcome {
        _ if cancelled => (Some(StopReason::Cancelled), t::StopReason::Cancelled),
        Err(Error::Cancelled) => (Some(StopReason::Cancelled), t::StopReason::Cancelled),
        Ok(reason) => (Some(reason), stop_reason(reason)),
        Err(e) => {
            tracing::warn!("the prompt turn failed: {e}");
            let error = same_shape::<_, t::Error>(&e.to_rpc()).ok();
            (None, t::ErrorStopReason::new().error(error).into())
        }
    };
    let mut idle = t::IdleStateUpdate::new()
        .stop_reason(reason)
        .background(background_terminals(background));
    // v2's `Usage` has v1's fields; a failed turn reports none.
    if stop.is_some() {
        idle = idle.usage(usage.and_then(|u| same_shape::<_, t::Usage>(&u).ok()));
    }
    let update = t::SessionUpdate::StateUpdate(t::StateUpdate::Idle(idle));
    // Nothing here can fail to encode (typed values of the schema crate).
    let bytes = notification(session, update).unwrap_or_default();
    (bytes, stop)
}

/// v1's stop reason of a turn that ended (not by an error) as v2's.
fn stop_reason(reason: StopReason) -> t::StopReason {
    match reason {
        StopReason::EndTurn => t::StopReason::EndTurn,
        StopReason::MaxTokens => t::StopReason::MaxTokens,
        StopReason::MaxTurnRequests => t::StopReason::MaxTurnRequests,
        StopReason::Refusal => t::StopReason::Refusal,
        StopReason::Cancelled => t::StopReason::Cancelled,
        // A reason of a newer v1 the schema crate knows and v2 does not yet: the turn ended.
        _ => t::StopReason::EndTurn,
    }
}

/// A value of a v1 type as the type of the other version with the same wire shape (`Usage`,
/// `Error`, content blocks, …), through its JSON; an error if the shapes ever part.
pub(crate) fn same_shape<V1: Serialize, V2: DeserializeOwned>(
    value: &V1,
) -> serde_json::Result<V2> {
    serde_json::to_value(value).and_then(serde_json::from_value)
}

/// The `idle` `state_update` of a session no turn runs in (a snapshot, no stop reason), with
/// the terminals still running in it.
pub(crate) fn idle_snapshot(session: &SessionId, background: &[String]) -> Option<Vec<u8>> {
    let idle = t::IdleStateUpdate::new().background(background_terminals(background));
    notification(
        session,
        t::SessionUpdate::StateUpdate(t::StateUpdate::Idle(idle)),
    )
    .ok()
}

/// A state's `background` list: the terminals `ids`; none when there are none.
fn background_terminals(ids: &[String]) -> Option<Vec<t::BackgroundWork>> {
    (!ids.is_empty()).then(|| {
        ids.iter()
            .map(|id| t::BackgroundWork::Terminal(t::BackgroundTerminal::new(id.as_str())))
            .collect()
    })
}

/// A `terminal_update` of the agent-owned terminal `id` of `session`: what is given of its
/// command, cwd, output (a snapshot replacing every byte shown so far) and exit status.
pub(crate) fn terminal_update(
    session: &SessionId,
    id: &str,
    started: Option<(&str, &std::path::Path)>,
    output: Option<&[u8]>,
    exit: Option<&crate::schema::TerminalExitStatus>,
) -> Result<Vec<u8>> {
    use base64::Engine as _;
    let mut update = t::TerminalUpdate::new(id);
    if let Some((command, cwd)) = started {
        update = update
            .command(command.to_owned())
            .cwd(cwd.to_path_buf())
            // Any of them can be stopped on its own (`terminal/cancel`).
            .capabilities(
                t::TerminalCapabilities::new().cancel(t::TerminalCancelCapabilities::new()),
            );
    }
    if let Some(output) = output {
        let data = base64::engine::general_purpose::STANDARD.encode(output);
        update = update.output(t::TerminalOutput::new(data));
    }
    if let Some(exit) = exit {
        let mut status = t::TerminalExitStatus::new();
        status.exit_code = exit.exit_code.map(i64::from);
        status.signal = exit.signal.clone();
        update = update.exit_status(status);
    }
    notification(session, t::SessionUpdate::TerminalUpdate(update))
}

/// A `terminal_output_chunk`: `data` appended to the output of the agent-owned terminal `id`.
pub(crate) fn terminal_output_chunk(session: &SessionId, id: &str, data: &[u8]) -> Result<Vec<u8>> {
    use base64::Engine as _;
    let data = base64::engine::general_purpose::STANDARD.encode(data);
    notification(
        session,
        t::SessionUpdate::TerminalOutputChunk(t::TerminalOutputChunk::new(id, data)),
    )
}

/// A `replay_complete` update of `session`: the replay `session/resume` asked for is over.
pub(crate) fn replay_complete(session: &SessionId) -> Result<Vec<u8>> {
    notification(
        session,
        t::SessionUpdate::ReplayComplete(t::ReplayComplete::new()),
    )
}

/// The answer to the v2 `session/prompt` request `id`: accepted, its user message `message_id`.
pub(crate) fn prompt_answer(id: &RequestId, message_id: &str) -> Vec<u8> {
    jsonrpc::encode_result(id, &t::PromptResponse::new(message_id))
}

#[cfg(test)]
mod tests;
