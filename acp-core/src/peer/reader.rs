//! The reader loop: reads the input line by line, answers what is not a message with the
//! error the spec names, hands the client's answers to the requests awaiting them, and every
//! request and notification to a [`Dispatch`]. It never waits on a handler.

use serde_json::value::RawValue;
use tokio::io::AsyncRead;
use tracing::debug;

use super::Peer;
use crate::jsonrpc::{self, Incoming};
use crate::schema::{self, ErrorCode, RequestId};
use crate::transport::{Line, LineReader, lines::MAX_LINE};

/// What handles the client's requests and notifications.
pub(crate) trait Dispatch {
    /// Routes a request: answers it at once, or starts the task that will. Must not wait on
    /// the client.
    fn request(
        &self,
        id: RequestId,
        method: &str,
        params: Option<&RawValue>,
    ) -> impl Future<Output = ()>;

    /// Handles a notification (never answered).
    fn notification(&self, method: &str, params: Option<&RawValue>);
}

/// Reads until the end of the input, or until the client can no longer hear us.
pub(crate) async fn read_loop<R: AsyncRead + Unpin>(
    reader: R,
    peer: &Peer,
    dispatch: &impl Dispatch,
) -> std::io::Result<()> {
    let mut lines = LineReader::new(reader);
    loop {
        let line = tokio::select! {
            line = lines.next() => line?,
            // The writer failed: the client cannot hear us any more.
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
                    format!("message longer than {MAX_LINE} bytes"),
                );
                peer.reply_error(&RequestId::Null, error).await;
            }
            Some(Line::Message(bytes)) => handle(bytes, peer, dispatch).await,
        }
    }
}

async fn handle(line: &[u8], peer: &Peer, dispatch: &impl Dispatch) {
    match jsonrpc::parse(line) {
        Err(rejected) => {
            debug!(error = %rejected.error.message, "rejected an incoming line");
            peer.reply_error(&rejected.id, rejected.error).await;
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
            dispatch.request(id, &method, params).await;
        }
    }
}
