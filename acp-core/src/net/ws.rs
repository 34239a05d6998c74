//! WebSocket on `/acp`: one ACP connection per socket. Each text message in is one message to
//! the connection's runtime, each message out one text message (its route is not needed: a
//! socket has one stream); binary messages are ignored (the RFD). The socket's end is the client's end of file, as stdin's is over stdio.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use tokio::time::{Instant, sleep_until};
use tracing::debug;

use super::bridge::{self, Bridge};
use super::refused::Refusal;
use super::socket::Busy;
use super::{CONNECTION_ID, Place, Shared, admit, new_id};

/// What each socket's read and write buffers start at (tungstenite's default is 128 KiB each:
/// a quarter of a megabyte per idle connection).
const SOCKET_BUFFER: usize = 16 * 1024;

/// Accepts the upgrade (the guard already checked the request) if a connection is free: a
/// connection of `user`'s. `busy` keeps its TCP connection from being closed as idle while
/// the socket is open.
pub(super) fn upgrade(
    shared: Shared,
    upgrade: WebSocketUpgrade,
    user: Option<String>,
    busy: Option<Busy>,
) -> Response {
    let place = match admit(&shared, user.as_deref()) {
        Ok(permit) => permit,
        Err(refused) => return refused,
    };
    let id = match new_id() {
        Ok(id) => id,
        Err(failed) => return failed,
    };
    let max = shared.config.max_body;
    let header = HeaderValue::from_str(&id).ok();
    let mut response = upgrade
        .max_message_size(max)
        .max_frame_size(max)
        // The socket's buffers grow for a large message; an idle connection keeps these.
        .read_buffer_size(SOCKET_BUFFER)
        .write_buffer_size(SOCKET_BUFFER)
        .on_failed_upgrade(|e| debug!("a WebSocket upgrade failed: {e}"))
        .on_upgrade(move |socket| async move {
            run(shared, socket, place, user).await;
            drop(busy);
        })
        .into_response();
    if let Some(header) = header {
        response.headers_mut().insert(CONNECTION_ID, header);
    }
    response
}

/// Carries messages between the socket and the connection's runtime until either ends or
/// nothing moves for the idle timeout. Each direction waits only for itself: a client that
/// does not read stalls its own output, one that floods its own input.
async fn run(shared: Shared, socket: WebSocket, place: Place, user: Option<String>) {
    let Bridge { input, mut output } = bridge::start(&shared.serve, place, user);
    let idle = shared.config.idle_timeout;
    let start = Instant::now();
    // Milliseconds from `start` of the last message either way.
    let last = AtomicU64::new(0);
    let touch = || last.store(elapsed_ms(start), Ordering::Relaxed);
    let (mut to_client, mut from_client) = socket.split();
    let inbound = async {
        while let Some(message) = from_client.next().await {
            let message = match message {
                Ok(message) => message,
                Err(e) => {
                    if too_large(e) {
                        shared.refusals.count(Refusal::BodySize);
                    }
                    break;
                }
            };
            touch();
            match message {
                Message::Text(text) if !bridge::send(&input, text.as_bytes()).await => break,
                Message::Close(_) => break,
                // Binary messages are ignored (the RFD); pings are answered by the socket.
                _ => {}
            }
        }
    };
    let outbound = async {
        while let Some(message) = output.next().await {
            touch();
            // Flushed (one write to the socket) once no other message is waiting.
            let text = Message::Text(message.text.into());
            let sent = if output.has_next() {
                to_client.feed(text).await
            } else {
                to_client.send(text).await
            };
            if sent.is_err() {
                return;
            }
        }
        let _ = to_client.send(Message::Close(None)).await;
    };
    let idle_out = async {
        loop {
            let since = Duration::from_millis(last.load(Ordering::Relaxed));
            let deadline = start + since + idle;
            if Instant::now() >= deadline {
                debug!("closing a WebSocket idle for {idle:?}");
                return;
            }
            sleep_until(deadline).await;
        }
    };
    tokio::select! {
        () = inbound => {}
        () = outbound => {}
        () = idle_out => {}
    }
    // Dropping the input is the client's end of file: the runtime shuts the connection down
    // as it does when stdin closes (see `serve`), letting its running turns finish.
    drop(input);
    output.discard_rest();
}

/// Whether a socket's read failed on a message over the size limit.
fn too_large(e: axum::Error) -> bool {
    use tokio_tungstenite::tungstenite::error::{CapacityError, Error};
    let e = e.into_inner();
    matches!(
        e.downcast_ref::<Error>(),
        Some(Error::Capacity(CapacityError::MessageTooLong { .. }))
    )
}

fn elapsed_ms(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}
