//! The reader loop: reads the input a message at a time (a [`Source`]: lines of a byte
//! stream, or a network connection's messages), answers what is not a message with the
//! error the spec names, hands the client's answers to the requests awaiting them, and every
//! request and notification to a [`Dispatch`]. It never waits on a handler.

use serde_json::value::RawValue;
use tracing::debug;

use std::sync::Arc;

use super::{Admission, Peer};
use crate::jsonrpc::{self, Incoming};
use crate::schema::{self, ErrorCode, RequestId};
use crate::transport::{Line, Source};

/// What handles the client's requests and notifications. Neither method may wait: the reader
/// must stay free to read the next message (a cancel, an answer someone waits for).
pub(crate) trait Dispatch {
    /// Routes a request: answers it at once (with [`Peer::reply`]), or starts the task that
    /// will. The request counts as in flight until `admission` is dropped: keep it with
    /// the answer.
    fn request(&self, id: RequestId, method: &str, params: Option<&RawValue>, admission: Admission);

    /// Handles a notification (never answered).
    fn notification(&self, method: &str, params: Option<&RawValue>);
}

/// Reads until the end of the input, or until the client can no longer hear us.
///
/// Every line is read with an admission in hand ([`Peer::admit`]): while the most requests
/// allowed are unanswered, nothing more is read.
/// Nothing else is ever awaited here.
pub(crate) async fn read_loop(
    mut lines: impl Source,
    peer: &Arc<Peer>,
    dispatch: &impl Dispatch,
) -> std::io::Result<()> {
    loop {
        // The writer failed: the client cannot hear us any more.
        let Some(admission) = peer.admit().await else {
            return Ok(());
        };
        let line = tokio::select! {
            line = lines.next() => line?,
            () = peer.closed.cancelled() => return Ok(()),
        };
        match line {
            None => {
                debug!("the client closed the connection");
                return Ok(());
            }
            Some(Line::TooLong) => {
                let error = schema::Error::new(
                    ErrorCode::ParseError.into(),
                    format!(
                        "parse error: the message is longer than the {} bytes this agent \
                         accepts; it was skipped",
                        lines.max()
                    ),
                );
                peer.reply_error(&RequestId::Null, error, admission);
            }
            Some(Line::Message(bytes)) => handle(bytes, peer, dispatch, admission),
        }
    }
}

fn handle(line: &[u8], peer: &Arc<Peer>, dispatch: &impl Dispatch, admission: Admission) {
    match jsonrpc::parse(line) {
        Err(rejected) => {
            debug!(error = %rejected.error.message, "rejected an incoming line");
            peer.reply_error(&rejected.id, rejected.error, admission);
        }
        Ok(Incoming::Response { id, result }) => {
            if let Err(jsonrpc::Failed::Malformed(why)) = &result {
                tracing::warn!(%id, "the client sent a malformed response: {why}");
            }
            if !peer.resolve(&id, result.map(RawValue::to_owned)) {
                debug!(%id, "ignored a response nobody waits for");
            }
        }
        Ok(Incoming::Notification { method, params }) => dispatch.notification(&method, params),
        Ok(Incoming::Request { id, method, params }) => {
            dispatch.request(id, &method, params, admission);
        }
    }
}
