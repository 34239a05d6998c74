//! v2's agent-owned terminals: the local terminals of a v2 connection's sessions shown to the
//! client as `terminal_update` (command and cwd when it starts, its exit status when it ends)
//! and `terminal_output_chunk` (bytes as they arrive), queued as they happen, so that they
//! reach the client before whatever the turn sends after them (the tool call's completion).
//!
//! The client may read slower than a command prints, and the output queue is bounded: a
//! chunk that does not fit is not waited for (the command's reader must not stall). The
//! terminal falls behind instead: its later events only refresh a snapshot of its output
//! (the retained tail), which goes out as a `terminal_update` whose `output` replaces every
//! byte shown so far, at its next event once the queue has room, and at the latest when the
//! command exits. Memory stays bounded by the queue plus one snapshot per terminal; the
//! client ends up showing what the agent keeps.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::peer::{Frame, Peer};
use crate::protocol::v2;
use crate::schema::{SessionId, TerminalExitStatus};
use crate::session::Connection;
use crate::session::local::{LocalTerminal, TerminalEvent};
use crate::sync::lock;

/// A terminal that fell behind: what to send instead of its lost chunks.
struct Behind {
    session: SessionId,
    output: Vec<u8>,
    exit: Option<TerminalExitStatus>,
}

impl Behind {
    fn frame(&self, id: &str) -> Option<Vec<u8>> {
        v2::terminal_update(
            &self.session,
            id,
            None,
            Some(&self.output),
            self.exit.as_ref(),
        )
        .ok()
    }
}

/// Shows the local terminals of `conn`'s sessions to its (v2) client.
pub(super) fn display(conn: &Arc<Connection>) {
    let peer = conn.peer().clone();
    let behind: Mutex<HashMap<String, Behind>> = Mutex::default();
    conn.observe_local_terminals(Arc::new(
        move |t: &LocalTerminal, event: TerminalEvent<'_>| {
            let id = t.id.0.to_string();
            let mut behind = lock(&behind);
            if let Some(late) = behind.get_mut(&id) {
                // Behind: fold the event into the snapshot, and send it if there is room now.
                late.output = t.output().output.into_bytes();
                if let TerminalEvent::Exited(status) = &event {
                    late.exit = Some((*status).clone());
                }
                let Some(frame) = late.frame(&id) else { return };
                let last = matches!(event, TerminalEvent::Exited(_) | TerminalEvent::Released);
                if peer
                    .try_queue(Frame::new(frame, None).of_session(&t.session))
                    .is_ok()
                {
                    behind.remove(&id);
                } else if last {
                    // Its final state goes out whatever the wait (a snapshot: nothing is lost).
                    if let Some(late) = behind.remove(&id) {
                        send_later(&peer, &late.session, late.frame(&id));
                    }
                }
                return;
            }
            let frame = match &event {
                TerminalEvent::Started => {
                    let command = t.command_line();
                    v2::terminal_update(&t.session, &id, Some((&command, &t.cwd)), None, None)
                }
                TerminalEvent::Output(data) => v2::terminal_output_chunk(&t.session, &id, data),
                TerminalEvent::Exited(status) => {
                    v2::terminal_update(&t.session, &id, None, None, Some(status))
                }
                TerminalEvent::Released => return,
            };
            let Ok(frame) = frame else { return };
            if peer
                .try_queue(Frame::new(frame, None).of_session(&t.session))
                .is_err()
            {
                let late = Behind {
                    session: t.session.clone(),
                    output: t.output().output.into_bytes(),
                    exit: match &event {
                        TerminalEvent::Exited(status) => Some((*status).clone()),
                        _ => t.exit_status(),
                    },
                };
                if matches!(event, TerminalEvent::Exited(_)) {
                    send_later(&peer, &late.session, late.frame(&id));
                } else {
                    behind.insert(id, late);
                }
            }
        },
    ));
}

/// Sends `frame` from a task of its own (the queue was full).
fn send_later(peer: &Arc<Peer>, session: &SessionId, frame: Option<Vec<u8>>) {
    let Some(frame) = frame else { return };
    let (peer, frame) = (peer.clone(), Frame::new(frame, None).of_session(session));
    tokio::spawn(async move {
        let _ = peer.send(frame).await;
    });
}
