//! Checking many `stream N` turns interleaved on one connection (the concurrent-sessions
//! workload), and the replay of such a turn by `session/load` (the store check).
//!
//! The check is the one `Client::read_stream` makes of a single turn, per session: each
//! session's chunks are `agent_message_chunk` updates whose texts are chunks 0, 1, 2, … in
//! order, exactly N of them, then the prompt's answer with `end_turn`. Frames of different
//! sessions may interleave in any way. The same shortcut keeps it cheap: a line that is byte
//! for byte a checked chunk of the same session with the next text passes without a parse.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::value::RawValue;

use crate::client::{Stop, check_stop, excerpt};
use crate::frames::{CHUNK_TAIL, Frame, Template, UpdateParams, chunk_text, is_chunk_text};
use crate::{Error, Result};

/// One session's turn as checked so far.
struct Turn {
    session: String,
    /// Chunks checked so far: the index of the next one.
    index: usize,
    answered: bool,
    /// From this session's last chunk that passed the full check.
    template: Option<Template>,
}

/// The state of `sessions.len()` turns of `stream n`, the prompt of session `i` having the
/// request id `first_id + i`.
pub(crate) struct Turns {
    n: usize,
    first_id: u64,
    turns: Vec<Turn>,
    by_session: HashMap<String, usize>,
    json_tail: Vec<u8>,
    /// Chunks checked, over all sessions.
    pub(crate) updates: u64,
    /// Turns answered (after all their chunks, with `end_turn`).
    pub(crate) answered: usize,
    /// Lines that needed a full parse.
    pub(crate) parsed: u64,
}

impl Turns {
    pub(crate) fn new(sessions: Vec<String>, n: usize, first_id: u64) -> Self {
        let by_session = sessions
            .iter()
            .enumerate()
            .map(|(i, s)| (s.clone(), i))
            .collect();
        let json_tail = serde_json::to_string(CHUNK_TAIL).expect("a string serializes");
        Turns {
            n,
            first_id,
            turns: sessions
                .into_iter()
                .map(|session| Turn {
                    session,
                    index: 0,
                    answered: false,
                    template: None,
                })
                .collect(),
            by_session,
            json_tail: json_tail.as_bytes()[1..].to_vec(),
            updates: 0,
            answered: 0,
            parsed: 0,
        }
    }

    pub(crate) fn all_answered(&self) -> bool {
        self.answered == self.turns.len()
    }

    /// Checks one line (without its newline).
    pub(crate) fn check(&mut self, line: &[u8]) -> Result<()> {
        // The shortcut: the session named in the line, and its template around the next text.
        if let Some(&at) = session_in(line).and_then(|s| self.by_session.get(s)) {
            let turn = &mut self.turns[at];
            if let Some(template) = &turn.template
                && turn.index < self.n
                && template.fits(line, turn.index, &self.json_tail)
            {
                turn.index += 1;
                self.updates += 1;
                return Ok(());
            }
        }
        self.parsed += 1;
        let frame = match serde_json::from_slice::<Frame<'_, UpdateParams<'_>>>(line) {
            Ok(frame) => frame,
            Err(e) => return Err(mismatch(&format!("an unreadable frame ({e})"), line)),
        };
        match (frame.method.as_deref(), frame.id, frame.params) {
            (Some("session/update"), None, Some(params)) => {
                let Some(&at) = self.by_session.get(&*params.session_id) else {
                    let what = format!("an update for session {:?}", params.session_id);
                    return Err(mismatch(&what, line));
                };
                let turn = &mut self.turns[at];
                let update = &params.update;
                let content = update.content.as_ref();
                let text = content.filter(|c| c.kind == "text").and_then(|c| c.text);
                let problem = if update.session_update != "agent_message_chunk" {
                    format!("an update of kind `{}`", update.session_update)
                } else if turn.answered || turn.index >= self.n {
                    "one chunk more than asked for".to_owned()
                } else {
                    match text {
                        Some(text) if is_chunk_text(text, turn.index) => {
                            // `text` points into `line`.
                            let at = text.get().as_ptr() as usize - line.as_ptr() as usize;
                            let end = at + text.get().len();
                            let template = turn.template.get_or_insert_default();
                            template.before.clear();
                            template.before.extend_from_slice(&line[..at]);
                            template.after.clear();
                            template.after.extend_from_slice(&line[end..]);
                            turn.index += 1;
                            self.updates += 1;
                            return Ok(());
                        }
                        Some(text) => format!("text {}", text.get()),
                        None => "an agent_message_chunk without text content".to_owned(),
                    }
                };
                Err(self.turn_mismatch(at, &problem, line))
            }
            (None, Some(raw_id), _) => {
                let turn = raw_id
                    .get()
                    .parse::<u64>()
                    .ok()
                    .and_then(|id| id.checked_sub(self.first_id))
                    .and_then(|i| usize::try_from(i).ok())
                    .filter(|&i| i < self.turns.len());
                let Some(at) = turn else {
                    return Err(mismatch("an answer to no prompt of ours", line));
                };
                if self.turns[at].answered {
                    return Err(mismatch("a second answer to a prompt", line));
                }
                if self.turns[at].index != self.n {
                    return Err(self.turn_mismatch(at, "the prompt's answer", line));
                }
                let answer = match (frame.result, frame.error) {
                    (Some(result), _) => Ok(result.get().to_owned()),
                    (None, Some(error)) => Err(error.get().to_owned()),
                    (None, None) => Ok("null".to_owned()),
                };
                check_stop(Stop::Answer(answer), "end_turn")
                    .map_err(|e| mismatch(&format!("an answer: {e}"), line))?;
                self.turns[at].answered = true;
                self.answered += 1;
                Ok(())
            }
            (Some(method), id, _) => {
                let what = if id.is_some() {
                    format!("a `{method}` request")
                } else {
                    format!("a `{method}` notification")
                };
                Err(mismatch(&what, line))
            }
            (None, None, _) => Err(mismatch("a frame with neither method nor id", line)),
        }
    }

    /// Describes a frame of session `at`'s turn that is not what was expected next.
    fn turn_mismatch(&self, at: usize, got: &str, line: &[u8]) -> Error {
        let turn = &self.turns[at];
        let expected = if turn.index < self.n {
            let mut text = String::new();
            chunk_text(turn.index, &mut text);
            format!("chunk {} with text {text:?}", turn.index)
        } else {
            "the prompt's answer".to_owned()
        };
        let line = excerpt(line);
        format!(
            "session {:?}, after {} good chunks: expected {expected}; got {got}: {line}",
            turn.session, turn.index
        )
        .into()
    }
}

fn mismatch(what: &str, line: &[u8]) -> Error {
    format!("unexpected: {what}: {}", excerpt(line)).into()
}

/// The session id a `session/update` line names, found without parsing: the text after the
/// first `"sessionId":"` up to the next quote. Only a guess of which template to try: a line
/// passes the shortcut only if it is byte for byte that session's checked frame.
fn session_in(line: &[u8]) -> Option<&str> {
    const KEY: &[u8] = b"\"sessionId\":\"";
    let start = line.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let len = line[start..].iter().position(|&b| b == b'"')?;
    std::str::from_utf8(&line[start..start + len]).ok()
}

/// What `session/load` replayed of one recorded session.
#[derive(Default)]
pub(crate) struct Replayed {
    /// `user_message_chunk` updates saying the prompt.
    pub(crate) prompts: usize,
    /// `agent_message_chunk` updates, each with the text of the next chunk (checked).
    pub(crate) chunks: usize,
    /// Updates of other kinds for the session.
    pub(crate) others: usize,
}

/// Checks one line read while `session/load` (request `id`) of `session` is answered:
/// replayed updates for the session (the prompt, then chunks 0, 1, 2, … in order), then the
/// answer. Returns whether the line was the answer.
pub(crate) fn check_replay(
    line: &[u8],
    id: u64,
    session: &str,
    prompt: &str,
    replayed: &mut Replayed,
) -> Result<bool> {
    let frame = serde_json::from_slice::<Frame<'_, UpdateParams<'_>>>(line)
        .map_err(|e| mismatch(&format!("an unreadable frame ({e})"), line))?;
    match (frame.method.as_deref(), frame.id, frame.params) {
        (Some("session/update"), None, Some(params)) => {
            if params.session_id != session {
                let what = format!("an update for session {:?}", params.session_id);
                return Err(mismatch(&what, line));
            }
            let update = &params.update;
            let text = update
                .content
                .as_ref()
                .filter(|c| c.kind == "text")
                .and_then(|c| c.text);
            match &*update.session_update {
                "user_message_chunk" => {
                    if text.and_then(json_str).as_deref() != Some(prompt) {
                        return Err(mismatch("a user_message_chunk not saying the prompt", line));
                    }
                    replayed.prompts += 1;
                }
                "agent_message_chunk" => match text {
                    Some(text) if is_chunk_text(text, replayed.chunks) => replayed.chunks += 1,
                    _ => {
                        let what = format!("not chunk {} after {0} good ones", replayed.chunks);
                        return Err(mismatch(&what, line));
                    }
                },
                _ => replayed.others += 1,
            }
            Ok(false)
        }
        (None, Some(raw_id), _) if raw_id.get() == id.to_string() => match frame.error {
            Some(error) => Err(format!("session/load failed: {}", error.get()).into()),
            None => Ok(true),
        },
        _ => Err(mismatch("a frame that is no replay", line)),
    }
}

fn json_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    serde_json::from_str(raw.get()).ok()
}
