//! Protocol v1 frames for what the runtime sends: a `session/update` of a session, a tool call
//! reported failed, the answer that ends a prompt turn.

use serde::Serialize;
use serde_json::value::RawValue;

use super::methods;
use crate::jsonrpc;
use crate::schema::{PromptResponse, RequestId, SessionId, SessionUpdate, StopReason};
use crate::{Error, Result};

/// A `session/update` notification (`params` is a [`SessionNotification`]).
pub(crate) fn update(params: &impl Serialize) -> Result<Vec<u8>> {
    Ok(jsonrpc::encode_notification(
        methods::SESSION_UPDATE,
        params,
    )?)
}

/// A `session/update` carrying `update` for `session`.
#[cfg(test)]
pub(crate) fn session_update(session: &SessionId, update: SessionUpdate) -> Result<Vec<u8>> {
    self::update(&crate::schema::SessionNotification::new(
        session.clone(),
        update,
    ))
}

/// A `session/update` carrying `update` for `session`, and where the update's JSON text is in
/// the frame (for the session store, which keeps that text: see `peer::journal`). The same
/// bytes as [`session_update`] makes.
pub(crate) fn session_update_located(
    session: &SessionId,
    update: &SessionUpdate,
) -> Result<(Vec<u8>, std::ops::Range<usize>)> {
    let mut bytes = Vec::with_capacity(192);
    bytes.extend_from_slice(br#"{"jsonrpc":"2.0","method":""#);
    bytes.extend_from_slice(methods::SESSION_UPDATE.as_bytes());
    bytes.extend_from_slice(br#"","params":{"sessionId":"#);
    serde_json::to_writer(&mut bytes, session)?;
    bytes.extend_from_slice(br#","update":"#);
    let start = bytes.len();
    serde_json::to_writer(&mut bytes, update)?;
    let end = bytes.len();
    bytes.extend_from_slice(b"}}\n");
    Ok((bytes, start..end))
}

/// A `session/update` carrying `update` (already JSON) for `session`: the same frame as
/// [`session_update`] makes, around text serialized once.
pub(crate) fn raw_update(session: &SessionId, update: &RawValue) -> Result<Vec<u8>> {
    /// A [`SessionNotification`] with no `_meta`, its update already serialized.
    #[derive(Serialize)]
    struct Params<'a> {
        #[serde(rename = "sessionId")]
        session_id: &'a SessionId,
        update: &'a RawValue,
    }
    self::update(&Params {
        session_id: session,
        update,
    })
}

/// The answer to the `session/prompt` request `id`, from how the turn ended.
///
/// A cancelled turn answers `cancelled` whatever the author's code returned (an error
/// caused by the cancel included); so does a turn whose code returned [`Error::Cancelled`]
/// (e.g. a permission request the client answered `cancelled`). Any other error is answered
/// as a JSON-RPC error.
/// Returns the frame, and the stop reason it answers with (none for an error).
pub(crate) fn prompt_answer(
    id: &RequestId,
    outcome: Result<StopReason>,
    cancelled: bool,
    meta: Option<crate::schema::Meta>,
    usage: Option<crate::schema::Usage>,
) -> (Vec<u8>, Option<StopReason>) {
    let stop = match outcome {
        _ if cancelled => StopReason::Cancelled,
        Err(Error::Cancelled) => StopReason::Cancelled,
        Ok(reason) => reason,
        Err(e) => {
            tracing::warn!("the prompt turn failed: {e}");
            return (jsonrpc::encode_error(id, &e.to_rpc()), None);
        }
    };
    (
        jsonrpc::encode_result(id, &PromptResponse::new(stop).meta(meta).usage(usage)),
        Some(stop),
    )
}

/// The answer to any other request `id`: its result, or its error.
pub(crate) fn answer<T: Serialize>(id: &RequestId, result: Result<T>) -> Vec<u8> {
    match result {
        Ok(value) => jsonrpc::encode_result(id, &value),
        Err(e) => jsonrpc::encode_error(id, &e.to_rpc()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::ContentChunk;

    #[test]
    fn a_located_update_is_the_same_frame_and_its_range_is_the_update() {
        let session = SessionId::new("sess \"quoted\"");
        let update = SessionUpdate::AgentMessageChunk(ContentChunk::new("a\nb \"c\"".into()));
        let (bytes, range) = session_update_located(&session, &update).unwrap();
        assert_eq!(bytes, session_update(&session, update.clone()).unwrap());
        let text = std::str::from_utf8(&bytes[range]).unwrap();
        assert_eq!(text, serde_json::to_string(&update).unwrap());
    }
}
