//! Zed's convention for showing a command the agent runs itself, in the tool call it runs in:
//! a v1 client cannot show a terminal it did not create (`terminal/create`), so Zed reads three
//! `_meta` keys of the tool call instead, and renders a terminal of its own from them.
//!
//! A client asks for it with `clientCapabilities._meta.terminal_output: true` (Zed sends it,
//! beside `"terminal-auth": true`). Then, for a local terminal (see
//! [`local`](super::local)) created inside a tool body:
//!
//! 1. a `tool_call` announcing the call anew (same id, title, kind, locations; status at least
//!    `in_progress`), its content holding `{"type": "terminal", "terminalId": id}`, with
//!    `_meta.terminal_info = {"terminal_id": id, "cwd": dir}`: Zed creates a display-only
//!    terminal of that id when it reads a `tool_call` (never a `tool_call_update`) carrying it;
//! 2. for every chunk of output, as it arrives, a `tool_call_update` of the call with no fields
//!    and `_meta.terminal_output = {"terminal_id": id, "data": text}` (UTF-8, a character split
//!    across reads held back until it is whole);
//! 3. when the command exits, a `tool_call_update` with `_meta.terminal_exit =
//!    {"terminal_id": id, "exit_code": code|null, "signal": name|null}`.
//!
//! The keys and shapes are those of Zed's ACP client (`crates/agent_servers/src/acp.rs`:
//! `terminal_info` read on a `ToolCall`, `terminal_output` / `terminal_exit` on a
//! `ToolCallUpdate`) and of the adapters that send them (`zed-industries/codex-acp`
//! `src/thread.rs`, `agentclientprotocol/claude-agent-acp` `src/acp-agent.ts`). A client that
//! did not ask gets the plain-text rendering of the terminal instead (its command line and
//! output in a code block) and none of these keys.
//!
//! These frames are queued from the task that reads the command's output, never waiting: if
//! the client reads slower than the command prints and the connection's queue is full, the
//! output is held (the last [`DEFAULT_OUTPUT_BYTE_LIMIT`] bytes at most, a marker where some
//! were dropped) and sent with the next chunk, and at the latest with the exit. They belong to
//! the turn the terminal was created in (not sent after its end) and are not recorded in the
//! session's history (its tool call's final content is).

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::local::terminal::DEFAULT_OUTPUT_BYTE_LIMIT;
use super::local::{LocalTerminal, TerminalEvent, TerminalObserver};
use super::state::Connection;
use crate::peer::{Frame, Sequence};
use crate::schema::{
    self, ClientCapabilities, Meta, SessionId, SessionUpdate, TerminalExitStatus, ToolCallContent,
    ToolCallId, ToolCallUpdate, ToolCallUpdateFields,
};
use crate::sync::lock;

/// The key of `clientCapabilities._meta` by which a client asks for these updates.
pub const ASKED_BY: &str = "terminal_output";
/// The `_meta` key of the `tool_call` that shows the terminal.
pub const INFO: &str = "terminal_info";
/// The `_meta` key of a `tool_call_update` carrying output.
pub const OUTPUT: &str = "terminal_output";
/// The `_meta` key of the `tool_call_update` telling the command exited.
pub const EXIT: &str = "terminal_exit";

/// Shown where some output was dropped because the client read too slowly.
const DROPPED: &str = "\r\n[… output dropped: the editor read it too slowly …]\r\n";

/// Whether the client asked for Zed's terminal updates (`clientCapabilities._meta.terminal_output`
/// is `true`).
pub(crate) fn asked(client: &ClientCapabilities) -> bool {
    client
        .meta
        .as_ref()
        .and_then(|meta| meta.get(ASKED_BY))
        .and_then(Value::as_bool)
        == Some(true)
}

/// The call announced anew, with the terminal's content in it; `None` if it cannot be.
pub(crate) type Announce = Box<dyn Fn(ToolCallContent) -> Option<schema::ToolCall> + Send + Sync>;

/// Shows one local terminal in the tool call it runs in.
pub(crate) struct Display {
    conn: Arc<Connection>,
    session: SessionId,
    call: ToolCallId,
    /// The frames of the turn the terminal was created in.
    sequence: Option<Arc<Sequence>>,
    announce: Announce,
    stream: Mutex<Stream>,
}

/// What is not sent yet, in the order it goes out: the announcement, the output, the exit.
#[derive(Default)]
struct Stream {
    announcement: Option<Vec<u8>>,
    output: Vec<u8>,
    /// Output was dropped from the front of `output`.
    dropped: bool,
}

impl Display {
    /// Shows the terminal about to start in `call` of `session`.
    pub fn new(
        conn: Arc<Connection>,
        session: SessionId,
        call: ToolCallId,
        sequence: Option<Arc<Sequence>>,
        announce: Announce,
    ) -> Self {
        Display {
            conn,
            session,
            call,
            sequence,
            announce,
            stream: Mutex::default(),
        }
    }

    /// The observer to start the terminal with.
    pub fn observer(self) -> TerminalObserver {
        let display = Arc::new(self);
        Arc::new(move |t: &LocalTerminal, event: TerminalEvent<'_>| display.on(t, event))
    }

    fn on(&self, t: &LocalTerminal, event: TerminalEvent<'_>) {
        let id = t.id.0.to_string();
        let mut stream = lock(&self.stream);
        match event {
            TerminalEvent::Started => {
                let content = ToolCallContent::Terminal(schema::Terminal::new(t.id.clone()));
                let Some(mut call) = (self.announce)(content) else {
                    return;
                };
                let info = json!({ "terminal_id": id, "cwd": t.cwd });
                call.meta = Some(Meta::from_iter([(INFO.to_owned(), info)]));
                stream.announcement = self.frame(SessionUpdate::ToolCall(call));
                self.flush(&mut stream, &id, None);
            }
            TerminalEvent::Output(bytes) => {
                stream.output.extend_from_slice(bytes);
                if stream.output.len() > DEFAULT_OUTPUT_BYTE_LIMIT {
                    let excess = stream.output.len() - DEFAULT_OUTPUT_BYTE_LIMIT;
                    stream.output.drain(..excess);
                    stream.dropped = true;
                }
                self.flush(&mut stream, &id, None);
            }
            TerminalEvent::Exited(status) => self.flush(&mut stream, &id, Some(status)),
            TerminalEvent::Released => {}
        }
    }

    /// Queues what is pending, in order, while the queue has room; with `exit` (the last
    /// event), whatever does not fit is sent from a task of its own.
    fn flush(&self, stream: &mut Stream, id: &str, exit: Option<&TerminalExitStatus>) {
        let peer = self.conn.peer();
        let queue = |bytes: Vec<u8>| -> Result<(), Vec<u8>> {
            peer.try_queue(self.wrap(bytes))
                .map_err(|frame| frame.bytes)
        };
        let mut late: Vec<Vec<u8>> = Vec::new();
        if let Some(bytes) = stream.announcement.take()
            && let Err(bytes) = queue(bytes)
        {
            if exit.is_none() {
                stream.announcement = Some(bytes);
                return;
            }
            late.push(bytes);
        }
        let whole = if exit.is_some() {
            stream.output.len()
        } else {
            complete_prefix(&stream.output)
        };
        if whole > 0 {
            let mut data = String::new();
            if stream.dropped {
                data.push_str(DROPPED);
            }
            data.push_str(&String::from_utf8_lossy(&stream.output[..whole]));
            let meta = json!({ "terminal_id": id, "data": data });
            if let Some(bytes) = self.meta_update(OUTPUT, meta) {
                let queued = if late.is_empty() {
                    queue(bytes)
                } else {
                    Err(bytes)
                };
                match queued {
                    Ok(()) => {
                        stream.output.drain(..whole);
                        stream.dropped = false;
                    }
                    // Kept for the next event.
                    Err(_) if exit.is_none() => return,
                    Err(bytes) => {
                        stream.output.clear();
                        late.push(bytes);
                    }
                }
            }
        }
        let Some(status) = exit else { return };
        let meta = json!({
            "terminal_id": id,
            "exit_code": status.exit_code,
            "signal": status.signal,
        });
        if let Some(bytes) = self.meta_update(EXIT, meta) {
            if late.is_empty() {
                if let Err(bytes) = queue(bytes) {
                    late.push(bytes);
                }
            } else {
                late.push(bytes);
            }
        }
        if late.is_empty() {
            return;
        }
        // The queue is full: the rest goes out in order from a task (it is all there is).
        let frames: Vec<Frame> = late.into_iter().map(|bytes| self.wrap(bytes)).collect();
        let peer = peer.clone();
        tokio::spawn(async move {
            for frame in frames {
                if peer.send(frame).await.is_err() {
                    return;
                }
            }
        });
    }

    /// A `tool_call_update` of the call with no fields and `_meta.{key} = value`.
    fn meta_update(&self, key: &str, value: Value) -> Option<Vec<u8>> {
        let update = ToolCallUpdate::new(self.call.clone(), ToolCallUpdateFields::new())
            .meta(Meta::from_iter([(key.to_owned(), value)]));
        self.frame(SessionUpdate::ToolCallUpdate(update))
    }

    /// The `session/update` frame of `update`, in the connection's version.
    fn frame(&self, update: SessionUpdate) -> Option<Vec<u8>> {
        match self.conn.update_frame(&self.session, &update) {
            Ok((bytes, _unrecorded)) => Some(bytes),
            Err(e) => {
                tracing::debug!("a terminal update could not be encoded: {e}");
                None
            }
        }
    }

    fn wrap(&self, bytes: Vec<u8>) -> Frame {
        Frame::new(bytes, self.sequence.clone()).of_session(&self.session)
    }
}

/// How many of `bytes` end at a character boundary: all but an incomplete UTF-8 sequence at
/// the end (held back until the rest of it arrives). Bytes that are not UTF-8 at all count
/// (they are shown as U+FFFD).
fn complete_prefix(bytes: &[u8]) -> usize {
    // The last character starts at most 3 bytes before the end.
    for back in 1..=bytes.len().min(4) {
        let at = bytes.len() - back;
        let byte = bytes[at];
        if byte & 0b1100_0000 == 0b1000_0000 {
            continue; // a continuation byte: its lead is further back
        }
        let needs = match byte {
            0x00..=0x7f => 1,
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf7 => 4,
            _ => 1,
        };
        return if back < needs { at } else { bytes.len() };
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_incomplete_character_at_the_end_is_held_back() {
        let text = "añ€😀".as_bytes();
        assert_eq!(complete_prefix(text), text.len());
        assert_eq!(complete_prefix(&text[..2]), 1); // "a" + half of "ñ"
        assert_eq!(complete_prefix(&text[..5]), 3); // "añ" + 2/3 of "€"
        assert_eq!(complete_prefix(&text[..8]), 6); // "añ€" + 2/4 of "😀"
        assert_eq!(complete_prefix(&text[..9]), 6);
        assert_eq!(complete_prefix(b""), 0);
        // Not UTF-8 at all: nothing to wait for.
        assert_eq!(complete_prefix(&[0x80, 0x80, 0x80, 0x80, 0x80]), 5);
        assert_eq!(complete_prefix(&[b'a', 0xff]), 2);
    }

    #[test]
    fn only_a_true_terminal_output_key_asks() {
        let with = |meta: Value| {
            ClientCapabilities::new().meta(serde_json::from_value::<Meta>(meta).unwrap())
        };
        assert!(asked(&with(json!({"terminal_output": true}))));
        assert!(!asked(&with(json!({"terminal_output": false}))));
        assert!(!asked(&with(json!({"terminal_output": "true"}))));
        assert!(!asked(&with(json!({"terminal-auth": true}))));
        assert!(!asked(&ClientCapabilities::new()));
    }
}
