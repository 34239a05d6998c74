//! The client side of the protocol: the editor's end of one connection, which does the
//! handshake, sends prompts and cancels, and reads and checks every frame that comes back.

use std::io::{BufRead, Write};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::frames::{
    ALLOW, CHUNK_TAIL, Frame, NOT_SUPPORTED, PERMISSION_OPTIONS, PermissionParams, SessionParams,
    Template, UpdateParams, chunk_text, is_chunk_text, reply,
};
use crate::{Error, Result};

/// What may arrive while the client waits for an answer.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The handshake: anything; requests other than permission questions are refused.
    Setup,
    /// A turn: only `session/update` notifications for the session and well-formed
    /// permission requests.
    Turn,
    /// As `Turn`, but stop at the first `session/update`.
    TurnUntilUpdate,
}

/// What the pump stopped on.
pub(crate) enum Stop {
    /// The answer to our request: `Ok(result)` or `Err(error)`, as raw JSON.
    Answer(std::result::Result<String, String>),
    /// A `session/update` arrived and the caller asked to stop on one.
    Update,
}

/// What `Client::read_stream` read: bytes of all lines, and how many lines it parsed (the
/// others matched the template of a parsed chunk).
pub(crate) struct StreamRead {
    pub(crate) bytes: usize,
    pub(crate) parsed: usize,
}

/// Counters the pump keeps while waiting.
#[derive(Default)]
pub(crate) struct Seen {
    /// Bytes of all lines read, newlines included.
    bytes: usize,
    /// When each `session/request_permission` arrived.
    pub(crate) permissions: Vec<Instant>,
}

/// The editor's end of one connection: frames in from `input`, replies out to `output`.
/// The agents and the baseline are read by this same code.
pub(crate) struct Client<R, W> {
    input: R,
    /// `None` once closed.
    pub(crate) output: Option<W>,
    line: Vec<u8>,
    next_id: u64,
    pub(crate) session: String,
    /// Speak protocol v2: the prompt's answer is its acceptance, the turn ends with an `idle`
    /// state update (read as the answer), the echo and `running` are skipped.
    pub(crate) v2: bool,
}

impl<R: BufRead, W: Write> Client<R, W> {
    pub(crate) fn new(input: R, output: W) -> Self {
        Client {
            input,
            output: Some(output),
            line: Vec::with_capacity(4096),
            next_id: 0,
            session: String::new(),
            v2: false,
        }
    }

    pub(crate) fn handshake(&mut self) -> Result<()> {
        self.initialize()?;
        self.new_session()
    }

    /// Opens a session (`session/new`), which the following prompts go to.
    pub(crate) fn new_session(&mut self) -> Result<()> {
        let new = serde_json::json!({"cwd": std::env::temp_dir(), "mcpServers": []});
        let id = self.send_request("session/new", &new)?;
        let result = self.answer(id)?;
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct NewSession {
            session_id: String,
        }
        self.session = serde_json::from_str::<NewSession>(&result)?.session_id;
        Ok(())
    }

    /// Sends `initialize` and waits for its successful answer (raw JSON).
    pub(crate) fn initialize(&mut self) -> Result<String> {
        if self.v2 {
            let init = serde_json::json!({
                "protocolVersion": 2,
                "capabilities": {},
                "info": {"name": "acp-throughput-bench", "version": "0"},
            });
            let id = self.send_request("initialize", &init)?;
            return self.answer(id);
        }
        let init = serde_json::json!({
            "protocolVersion": 1,
            "clientCapabilities": {},
            "clientInfo": {"name": "acp-throughput-bench", "version": "0"},
        });
        let id = self.send_request("initialize", &init)?;
        self.answer(id)
    }

    /// The next non-blank line, without its newline.
    pub(crate) fn read_frame(&mut self) -> Result<&[u8]> {
        self.next_line(&mut Seen::default())?;
        Ok(self.line.strip_suffix(b"\n").unwrap_or(&self.line))
    }

    /// The id the next request of this client gets; the caller that writes requests of its
    /// own (e.g. from another thread) moves it on with `skip_ids`.
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id
    }

    pub(crate) fn skip_ids(&mut self, n: u64) {
        self.next_id += n;
    }

    fn write_raw(&mut self, line: &[u8]) -> Result<()> {
        let output = self.output.as_mut().ok_or("stdin already closed")?;
        output.write_all(line)?;
        output.write_all(b"\n")?;
        output.flush()?;
        Ok(())
    }

    fn write_line(&mut self, value: &impl Serialize) -> Result<()> {
        self.write_raw(&serde_json::to_vec(value)?)
    }

    pub(crate) fn send_request(&mut self, method: &str, params: &impl Serialize) -> Result<u64> {
        let id = self.next_id;
        self.next_id += 1;
        self.write_line(&serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": method, "params": params,
        }))?;
        Ok(id)
    }

    pub(crate) fn prompt(&mut self, text: &str) -> Result<u64> {
        let params = serde_json::json!({
            "sessionId": self.session,
            "prompt": [{"type": "text", "text": text}],
        });
        self.send_request("session/prompt", &params)
    }

    pub(crate) fn cancel(&mut self) -> Result<()> {
        let session = self.session.clone();
        self.write_line(&serde_json::json!({
            "jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session},
        }))
    }

    /// Reads the next non-blank line into `self.line`, counting its bytes.
    fn next_line(&mut self, seen: &mut Seen) -> Result<()> {
        loop {
            self.line.clear();
            if self.input.read_until(b'\n', &mut self.line)? == 0 {
                return Err("the agent closed its output".into());
            }
            seen.bytes += self.line.len();
            if !self.line.trim_ascii().is_empty() {
                return Ok(());
            }
        }
    }

    /// Waits for the successful answer to `id` during the handshake.
    fn answer(&mut self, id: u64) -> Result<String> {
        match self.pump(id, Mode::Setup, &mut Seen::default())? {
            Stop::Answer(Ok(result)) => Ok(result),
            Stop::Answer(Err(error)) => Err(format!("request {id} failed: {error}").into()),
            Stop::Update => unreachable!("not asked to stop on updates"),
        }
    }

    /// Reads the turn of `stream n` (prompt `id`) to its end, checking every frame: exactly
    /// `n` `agent_message_chunk` updates for the session with the texts of chunks 0, 1, 2, …
    /// in order, then an `end_turn` answer.
    ///
    /// This is the hot loop of the stream rows, kept cheap in two ways. A frame is parsed
    /// once, in place, into borrowed structs (`Frame<UpdateParams>`). And once a chunk has
    /// passed that check, its bytes around the text become a template: a later line that is
    /// the same bytes around the next expected text (as a JSON string) is that same frame
    /// with the right text, so it passes without parsing; any other line is parsed in full
    /// (and, if it passes, becomes the template). The template is learnt from each agent's
    /// own frames, so no agent's way of writing JSON costs the client more than another's
    /// unless its frames vary beyond the text.
    pub(crate) fn read_stream(&mut self, id: u64, n: usize) -> Result<StreamRead> {
        let id_text = id.to_string();
        let json_tail = serde_json::to_string(CHUNK_TAIL)?;
        let json_tail = &json_tail.as_bytes()[1..];
        let mut seen = Seen::default();
        let mut parsed = 0;
        let mut index = 0;
        // From the last chunk that passed the full check.
        let mut template: Option<Template> = None;
        loop {
            self.next_line(&mut seen)?;
            let body = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
            if let Some(template) = &template
                && index < n
                && template.fits(body, index, json_tail)
            {
                index += 1;
                continue;
            }
            parsed += 1;
            let frame = match serde_json::from_slice::<Frame<'_, UpdateParams<'_>>>(&self.line) {
                Ok(frame) => frame,
                // v2's echo of the prompt: a whole message (its content is a list).
                Err(_) if self.v2 && is_user_message(&self.line) => continue,
                Err(e) => {
                    let frame = serde_json::from_slice::<Frame<'_, &RawValue>>(&self.line);
                    let got = match frame.map(|f| (f.method, f.id.is_some())) {
                        Ok((Some(method), true)) => format!("a `{method}` request"),
                        Ok((Some(method), false)) => format!("a malformed `{method}` ({e})"),
                        Ok((None, _)) => format!("a malformed answer ({e})"),
                        Err(e) => format!("an unreadable frame ({e})"),
                    };
                    return Err(self.stream_mismatch(index, n, &got));
                }
            };
            match (frame.method.as_deref(), frame.id, frame.params) {
                (Some("session/update"), None, Some(params)) => {
                    let update = &params.update;
                    let content = update.content.as_ref();
                    if self.v2 && params.session_id == self.session {
                        match (&*update.session_update, update.state.as_deref()) {
                            ("user_message", _) | ("state_update", Some("running")) => continue,
                            ("state_update", Some("idle")) => {
                                if index != n {
                                    return Err(self.stream_mismatch(index, n, "the idle update"));
                                }
                                let stop = update.stop_reason.as_deref().unwrap_or("none");
                                if stop != "end_turn" {
                                    return Err(format!("the turn ended {stop}").into());
                                }
                                return Ok(StreamRead {
                                    bytes: seen.bytes,
                                    parsed,
                                });
                            }
                            _ => {}
                        }
                    }
                    let got = if params.session_id != self.session {
                        format!("an update for session {:?}", params.session_id)
                    } else if update.session_update != "agent_message_chunk" {
                        format!("an update of kind `{}`", update.session_update)
                    } else if content.is_none_or(|c| c.kind != "text") {
                        "an agent_message_chunk without text content".to_owned()
                    } else if index >= n {
                        "one chunk more than asked for".to_owned()
                    } else {
                        match content.and_then(|c| c.text) {
                            Some(text) if is_chunk_text(text, index) => {
                                // `text` points into the line it was parsed from.
                                let at = text.get().as_ptr() as usize - body.as_ptr() as usize;
                                let end = at + text.get().len();
                                let template = template.get_or_insert_default();
                                template.before.clear();
                                template.before.extend_from_slice(&body[..at]);
                                template.after.clear();
                                template.after.extend_from_slice(&body[end..]);
                                index += 1;
                                continue;
                            }
                            Some(text) => format!("text {}", text.get()),
                            None => "an agent_message_chunk without text".to_owned(),
                        }
                    };
                    return Err(self.stream_mismatch(index, n, &got));
                }
                // v2: the prompt's acceptance; the turn goes on.
                (None, Some(raw_id), _)
                    if raw_id.get() == id_text && self.v2 && frame.error.is_none() =>
                {
                    continue;
                }
                (None, Some(raw_id), _) if raw_id.get() == id_text => {
                    if index != n {
                        return Err(self.stream_mismatch(index, n, "the prompt's answer"));
                    }
                    let answer = match (frame.result, frame.error) {
                        (Some(result), _) => Ok(result.get().to_owned()),
                        (None, Some(error)) => Err(error.get().to_owned()),
                        (None, None) => Ok("null".to_owned()),
                    };
                    check_stop(Stop::Answer(answer), "end_turn")?;
                    return Ok(StreamRead {
                        bytes: seen.bytes,
                        parsed,
                    });
                }
                _ => return Err(self.stream_mismatch(index, n, "another frame")),
            }
        }
    }

    /// Describes a frame of a stream turn that is not what was expected next.
    fn stream_mismatch(&self, index: usize, n: usize, got: &str) -> Error {
        let expected = if index < n {
            let mut text = String::new();
            chunk_text(index, &mut text);
            format!(
                "chunk {index} with text {text:?} for session {:?}",
                self.session
            )
        } else {
            "the prompt's answer".to_owned()
        };
        let line = excerpt(&self.line);
        format!("after {index} good chunks, expected {expected}; got {got}: {line}").into()
    }

    /// Reads frames until the answer to `id` (or the first update, in `TurnUntilUpdate`),
    /// answering every permission request at once with "allow". In a turn, anything but
    /// updates for the session and well-formed permission requests is an error.
    pub(crate) fn pump(&mut self, id: u64, mode: Mode, seen: &mut Seen) -> Result<Stop> {
        let id_text = id.to_string();
        loop {
            self.next_line(seen)?;
            let strict = mode != Mode::Setup;
            let msg = match serde_json::from_slice::<Frame<'_, &RawValue>>(&self.line) {
                Ok(msg) => msg,
                Err(e) => return Err(self.unexpected(&format!("unreadable frame ({e})"))),
            };
            match (msg.method.as_deref(), msg.id) {
                (Some("session/update"), None) => {
                    if strict {
                        let params = msg.params.map_or("null", RawValue::get);
                        match serde_json::from_str::<SessionParams<'_>>(params) {
                            Ok(p) if p.session_id == self.session => {}
                            Ok(p) => {
                                let what = format!("an update for session {:?}", p.session_id);
                                return Err(self.unexpected(&what));
                            }
                            Err(e) => {
                                return Err(self.unexpected(&format!("a malformed update ({e})")));
                            }
                        }
                    }
                    if self.v2 && mode != Mode::Setup {
                        // The echo of the prompt is a whole message (its content a list, which
                        // `UpdateParams` does not read): the turn has not shown anything yet.
                        if is_user_message(&self.line) {
                            continue;
                        }
                        let params = msg.params.map_or("null", RawValue::get);
                        if let Ok(p) = serde_json::from_str::<UpdateParams<'_>>(params) {
                            let update = &p.update;
                            match (&*update.session_update, update.state.as_deref()) {
                                ("state_update", Some("idle")) => {
                                    let stop = update.stop_reason.as_deref().unwrap_or("none");
                                    return Ok(Stop::Answer(Ok(format!(
                                        "{{\"stopReason\":\"{stop}\"}}"
                                    ))));
                                }
                                ("user_message" | "state_update", _) => continue,
                                _ => {}
                            }
                        }
                    }
                    if mode == Mode::TurnUntilUpdate {
                        return Ok(Stop::Update);
                    }
                }
                (Some("session/request_permission"), Some(raw_id)) => {
                    seen.permissions.push(Instant::now());
                    if strict {
                        let params = msg.params.map_or("null", RawValue::get);
                        if let Err(problem) = self.check_permission(raw_id, params) {
                            let what = format!("a malformed permission request ({problem})");
                            return Err(self.unexpected(&what));
                        }
                    }
                    let reply = reply(raw_id, ALLOW);
                    self.write_raw(reply.as_bytes())?;
                }
                (Some(method), Some(raw_id)) => {
                    if strict {
                        return Err(self.unexpected(&format!("a `{method}` request")));
                    }
                    let reply = reply(raw_id, NOT_SUPPORTED);
                    self.write_raw(reply.as_bytes())?;
                }
                (Some(method), None) => {
                    if strict {
                        let what = if method == "session/request_permission" {
                            "a permission request without an id".to_owned()
                        } else {
                            format!("a `{method}` notification")
                        };
                        return Err(self.unexpected(&what));
                    }
                }
                // v2: the prompt's acceptance, not its end (the setup's answers are answers).
                (None, Some(raw_id))
                    if raw_id.get() == id_text
                        && self.v2
                        && mode != Mode::Setup
                        && msg.error.is_none() => {}
                (None, Some(raw_id)) if raw_id.get() == id_text => {
                    return Ok(Stop::Answer(match (msg.result, msg.error) {
                        (Some(result), _) => Ok(result.get().to_owned()),
                        (None, Some(error)) => Err(error.get().to_owned()),
                        (None, None) => Ok("null".to_owned()),
                    }));
                }
                (None, _) => {
                    if strict {
                        return Err(self.unexpected("an answer to no request of ours"));
                    }
                }
            }
        }
    }

    /// A permission request must have an id, be about our session and a tool call, and
    /// offer the bench's options.
    fn check_permission(&self, raw_id: &RawValue, params: &str) -> Result<(), String> {
        let id_ok = match raw_id.get().as_bytes().first() {
            Some(b'"') => true,
            Some(c) => c.is_ascii_digit() || *c == b'-',
            None => false,
        };
        if !id_ok {
            return Err(format!("id {}", raw_id.get()));
        }
        let p: PermissionParams<'_> = serde_json::from_str(params).map_err(|e| e.to_string())?;
        if p.session_id != self.session {
            return Err(format!(
                "session {:?}, expected {:?}",
                p.session_id, self.session
            ));
        }
        let call = p
            .tool_call
            .as_ref()
            .or(p.subject.as_ref().map(|s| &s.tool_call));
        if call.is_none_or(|c| c.tool_call_id.is_empty()) {
            return Err("empty toolCallId".to_owned());
        }
        let options: Vec<_> = p
            .options
            .iter()
            .map(|o| (&*o.option_id, &*o.name, &*o.kind))
            .collect();
        if options != PERMISSION_OPTIONS {
            return Err(format!(
                "options {options:?}, expected {PERMISSION_OPTIONS:?}"
            ));
        }
        Ok(())
    }

    /// Describes a frame that has no place where it arrived.
    fn unexpected(&self, what: &str) -> Error {
        format!("unexpected: {what}: {}", excerpt(&self.line)).into()
    }
}

/// Whether `line` is a v2 `user_message` update (the echo of the prompt).
fn is_user_message(line: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Line<'a> {
        #[serde(borrow)]
        params: Params<'a>,
    }
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        update: Kind<'a>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Kind<'a> {
        #[serde(borrow)]
        session_update: std::borrow::Cow<'a, str>,
    }
    serde_json::from_slice::<Line<'_>>(line)
        .is_ok_and(|l| l.params.update.session_update == "user_message")
}

/// A line as text for an error message, cut after 300 characters.
pub(crate) fn excerpt(line: &[u8]) -> String {
    let line = String::from_utf8_lossy(line.trim_ascii_end());
    match line.char_indices().nth(300) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.into_owned(),
    }
}

pub(crate) fn check_stop(answer: Stop, expected: &str) -> Result<()> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct PromptAnswer {
        stop_reason: String,
    }
    match answer {
        Stop::Answer(Ok(result)) => {
            let got = serde_json::from_str::<PromptAnswer>(&result)
                .map_err(|e| format!("unreadable prompt answer ({e}): {result}"))?
                .stop_reason;
            if got == expected {
                Ok(())
            } else {
                Err(format!("stop reason {got:?}, expected {expected:?}").into())
            }
        }
        Stop::Answer(Err(error)) => Err(format!("the prompt failed: {error}").into()),
        Stop::Update => Err("stopped on an update".into()),
    }
}
