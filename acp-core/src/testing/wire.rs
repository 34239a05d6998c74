//! The wire between the test client and the agent: the reader and writer loops over any byte
//! streams (an in-memory pipe, or a child process's stdin/stdout), the transcript and the
//! read cursor over it, the table of requests awaiting the agent's answer, the queues of
//! requests held for the test to answer, deadlines, and the checks that turn malformed output
//! into a test failure.
//!
//! Every line the agent writes must be one JSON-RPC 2.0 object ending in a bare `\n`; a
//! `session/update` must match the schema; a response must carry exactly one of `result` and
//! `error` (its `id` may be `null`: the answer to a line that could not be read). Anything
//! else is recorded as a problem, and every operation of the client fails once a problem was
//! seen.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Notify, mpsc, oneshot};

use super::editor::Editor;
use super::trace::{Direction, Frame, malformed};
use crate::protocol::methods;
use crate::schema::{SessionId, SessionUpdate};
use crate::sync::lock;
use crate::{Error, Result};

/// A frame on its way to the agent: the exact bytes, and the JSON they hold (if any).
pub(super) struct Outgoing {
    bytes: Vec<u8>,
    message: Value,
}

impl Outgoing {
    pub fn json(message: Value) -> Self {
        let mut bytes = message.to_string().into_bytes();
        bytes.push(b'\n');
        Outgoing { bytes, message }
    }

    pub fn raw(bytes: Vec<u8>) -> Self {
        let message = Value::String(String::from_utf8_lossy(&bytes).trim_end().to_owned());
        Outgoing { bytes, message }
    }
}

type CancelTrigger = (SessionId, Box<dyn Fn(&SessionUpdate) -> bool + Send>);

/// Everything both loops and the client share.
pub(super) struct Wire {
    transcript: Mutex<Vec<Frame>>,
    /// Transcript indices of the answers to the client's own requests (taken by the request
    /// that waited for them, so the read cursor skips them). Locked after `transcript`.
    answered: Mutex<HashSet<usize>>,
    /// The read cursor of `next_frame`: the transcript index to look at next.
    cursor: Mutex<usize>,
    /// Methods whose requests the test answers by hand.
    held_methods: HashSet<String>,
    /// Held requests not yet taken by `next_request`, by method, oldest first.
    held: Mutex<HashMap<String, VecDeque<Value>>>,
    /// Woken whenever a frame is recorded or the agent's output ends.
    changed: Notify,
    pending: Mutex<HashMap<i64, oneshot::Sender<(Value, usize)>>>,
    problems: Mutex<Vec<String>>,
    /// The agent's output ended.
    ended: AtomicBool,
    out: Mutex<Option<mpsc::UnboundedSender<Outgoing>>>,
    next_id: AtomicI64,
    pub editor: Editor,
    /// Sessions to cancel when an update matching the predicate arrives.
    cancel_on: Mutex<Vec<CancelTrigger>>,
    /// How long any one wait of the client may take.
    deadline: Mutex<Duration>,
    /// What the agent process wrote to stderr (empty in process).
    pub stderr: Arc<Mutex<String>>,
    /// The agent answered `initialize` with protocol v2: its updates are checked as v2's,
    /// and read back in v1's shape ([`Frame::as_v1`]).
    v2: AtomicBool,
    /// On v2, the `(session, tool call)` pairs seen so far (see [`super::v2::as_v1`]).
    #[cfg_attr(not(feature = "v2"), allow(dead_code))]
    tool_calls: Mutex<HashSet<(String, String)>>,
}

impl Wire {
    /// Starts the loops over `read` (the agent's output) and `write` (its input).
    pub fn start(
        read: impl AsyncRead + Unpin + Send + 'static,
        write: impl AsyncWrite + Unpin + Send + 'static,
        editor: Editor,
        held_methods: HashSet<String>,
        deadline: Duration,
        stderr: Arc<Mutex<String>>,
    ) -> Arc<Wire> {
        let (tx, rx) = mpsc::unbounded_channel();
        let wire = Arc::new(Wire {
            transcript: Mutex::new(Vec::new()),
            answered: Mutex::new(HashSet::new()),
            cursor: Mutex::new(0),
            held_methods,
            held: Mutex::new(HashMap::new()),
            changed: Notify::new(),
            pending: Mutex::new(HashMap::new()),
            problems: Mutex::new(Vec::new()),
            ended: AtomicBool::new(false),
            out: Mutex::new(Some(tx)),
            next_id: AtomicI64::new(1),
            editor,
            cancel_on: Mutex::new(Vec::new()),
            deadline: Mutex::new(deadline),
            stderr,
            v2: AtomicBool::new(false),
            tool_calls: Mutex::new(HashSet::new()),
        });
        tokio::spawn(write_loop(rx, write, Arc::downgrade(&wire)));
        tokio::spawn(read_loop(read, wire.clone()));
        wire
    }

    /// Appends a frame to the transcript; `own_answer` marks the answer to one of the client's
    /// own requests, which the read cursor skips.
    fn record(&self, direction: Direction, message: Value, own_answer: bool) -> usize {
        let v1 = match direction {
            Direction::FromAgent if self.is_v2() => self.as_v1(&message),
            _ => None,
        };
        let index = {
            let mut t = lock(&self.transcript);
            t.push(Frame {
                direction,
                message,
                v1,
            });
            if own_answer {
                lock(&self.answered).insert(t.len() - 1);
            }
            t.len() - 1
        };
        self.changed.notify_waiters();
        index
    }

    /// Whether the agent answered `initialize` with protocol v2.
    pub fn is_v2(&self) -> bool {
        self.v2.load(Ordering::Acquire)
    }

    #[cfg(feature = "v2")]
    fn as_v1(&self, message: &Value) -> Option<Value> {
        super::v2::as_v1(message, &mut lock(&self.tool_calls))
    }

    #[cfg(not(feature = "v2"))]
    fn as_v1(&self, _message: &Value) -> Option<Value> {
        None
    }

    fn problem(&self, problem: String) {
        lock(&self.problems).push(problem);
        self.changed.notify_waiters();
    }

    /// Every frame so far.
    pub fn transcript(&self) -> Vec<Frame> {
        lock(&self.transcript).clone()
    }

    /// The frames from `start` on.
    pub fn frames_since(&self, start: usize) -> Vec<Frame> {
        lock(&self.transcript)[start..].to_vec()
    }

    pub fn len(&self) -> usize {
        lock(&self.transcript).len()
    }

    /// Malformed output seen so far.
    pub fn problems(&self) -> Vec<String> {
        lock(&self.problems).clone()
    }

    /// `Err` describing the malformed output the agent wrote, if any.
    pub fn check(&self) -> Result<()> {
        let problems = lock(&self.problems);
        if problems.is_empty() {
            return Ok(());
        }
        Err(Error::msg(format!(
            "the agent wrote malformed output:\n  {}{}",
            problems.join("\n  "),
            self.stderr_tail()
        )))
    }

    /// The end of the agent's stderr, for failure messages (empty in process).
    pub fn stderr_tail(&self) -> String {
        let err = lock(&self.stderr);
        if err.trim().is_empty() {
            return String::new();
        }
        let tail: Vec<&str> = err.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        format!("\n--- agent stderr (end) ---\n{}", tail.join("\n"))
    }

    /// Queues a frame for the agent; `false` once the client's side is closed.
    pub fn send(&self, frame: Outgoing) -> bool {
        match &*lock(&self.out) {
            Some(out) => out.send(frame).is_ok(),
            None => false,
        }
    }

    /// Closes the agent's input (its stdin sees end of file once everything queued is written).
    pub fn close_input(&self) {
        lock(&self.out).take();
    }

    pub fn cancel_when(
        &self,
        session: SessionId,
        when: Box<dyn Fn(&SessionUpdate) -> bool + Send>,
    ) {
        lock(&self.cancel_on).push((session, when));
    }

    /// Changes the deadline of every later wait.
    pub fn set_deadline(&self, deadline: Duration) {
        *lock(&self.deadline) = deadline;
    }

    /// A fresh id for a request of the client.
    pub fn next_id(&self) -> i64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Runs `fut` under the client's deadline; `what` names what was awaited.
    pub async fn within<T>(&self, what: &str, fut: impl Future<Output = Result<T>>) -> Result<T> {
        let deadline = *lock(&self.deadline);
        match tokio::time::timeout(deadline, fut).await {
            Ok(result) => result,
            Err(_) => Err(Error::msg(format!(
                "the test client waited {deadline:?} for {what}: the agent hung or never \
                 answered{}",
                self.stderr_tail()
            ))),
        }
    }

    /// Waits (under the deadline) until `poll` finds something, re-polling whenever a frame
    /// is recorded; fails on malformed output, or when the agent's output ended first.
    async fn poll_until<T>(&self, what: &str, mut poll: impl FnMut() -> Option<T>) -> Result<T> {
        let search = async {
            loop {
                let notified = self.changed.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                self.check()?;
                if let Some(found) = poll() {
                    return Ok(found);
                }
                if self.ended.load(Ordering::Acquire) {
                    return Err(Error::msg(format!(
                        "the agent's output ended before {what}{}",
                        self.stderr_tail()
                    )));
                }
                notified.await;
            }
        };
        self.within(what, search).await
    }

    /// The agent's next frame after the read cursor (skipping the answers to the client's own
    /// requests), waiting for it under the deadline; advances the cursor past it.
    pub async fn next_frame(&self) -> Result<Frame> {
        self.poll_until("the agent's next frame", || {
            let t = lock(&self.transcript);
            let answered = lock(&self.answered);
            let mut cursor = lock(&self.cursor);
            while *cursor < t.len() {
                let i = *cursor;
                *cursor += 1;
                if t[i].direction == Direction::FromAgent && !answered.contains(&i) {
                    return Some(t[i].clone());
                }
            }
            None
        })
        .await
    }

    /// The agent's frames after the read cursor received so far (skipping the answers to the
    /// client's own requests); moves the cursor to the end.
    pub fn take_unread(&self) -> Vec<Frame> {
        let t = lock(&self.transcript);
        let answered = lock(&self.answered);
        let mut cursor = lock(&self.cursor);
        let unread = (*cursor..t.len())
            .filter(|i| t[*i].direction == Direction::FromAgent && !answered.contains(i))
            .map(|i| t[i].clone())
            .collect();
        *cursor = t.len();
        unread
    }

    /// Whether the test answers requests of `method` itself.
    pub fn holds(&self, method: &str) -> bool {
        self.held_methods.contains(method)
    }

    /// Waits (under the deadline) for the oldest held request of `method` not yet taken.
    pub async fn next_held(&self, method: &str) -> Result<Value> {
        let what = format!("a `{method}` request from the agent");
        self.poll_until(&what, || {
            lock(&self.held)
                .get_mut(method)
                .and_then(VecDeque::pop_front)
        })
        .await
    }

    /// Sends a request and waits (under the deadline) for its answer and the answer's index in
    /// the transcript. The answer is the `result`, or the `error` as [`Error::Rpc`].
    pub async fn request(&self, method: &str, params: Value) -> Result<(Result<Value>, usize)> {
        self.check()?;
        let id = self.next_id();
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, tx);
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if !self.send(Outgoing::json(frame)) {
            lock(&self.pending).remove(&id);
            return Err(Error::ConnectionClosed);
        }
        let what = format!("the answer to `{method}`");
        let (mut message, index) = self
            .within(&what, async {
                rx.await.map_err(|_| {
                    Error::msg(format!(
                        "the agent's output ended before {what}{}",
                        self.stderr_tail()
                    ))
                })
            })
            .await?;
        self.check()?;
        Ok((answer_of(&mut message)?, index))
    }

    /// Waits (under the deadline) for the agent's answer to the client's request `id` (one
    /// sent without waiting), and takes it as [`request`](Self::request) does: the read cursor
    /// skips it from now on. Returns the answer, the transcript index of the request (the
    /// first frame with that id sent to the agent) and that of the answer.
    pub async fn answer_to(&self, id: &Value) -> Result<(Result<Value>, usize, usize)> {
        let what = format!("the answer to the request with id {id}");
        let (start, mut message, index) = self
            .poll_until(&what, || {
                let t = lock(&self.transcript);
                let start = t.iter().position(|f| {
                    f.direction == Direction::ToAgent
                        && f.method().is_some()
                        && f.message.get("id") == Some(id)
                })?;
                let index = (start..t.len()).find(|i| {
                    t[*i].direction == Direction::FromAgent && t[*i].is_response_to(id)
                })?;
                lock(&self.answered).insert(index);
                Some((start, t[index].message.clone(), index))
            })
            .await?;
        Ok((answer_of(&mut message)?, start, index))
    }

    /// Waits (under the deadline) for the `idle` that ends a v2 turn of `session` after
    /// transcript index `after`; returns it and its index.
    #[cfg(feature = "v2")]
    pub async fn turn_idle_after(&self, session: &str, after: usize) -> Result<(Value, usize)> {
        let what = format!("the `idle` state_update ending the turn of session {session}");
        let mut from = after + 1;
        self.poll_until(&what, || {
            let t = lock(&self.transcript);
            let found = (from..t.len()).find(|i| {
                t[*i].direction == Direction::FromAgent
                    && super::v2::is_turn_idle(&t[*i].message, session)
            });
            from = t.len();
            found.map(|i| (t[i].message.clone(), i))
        })
        .await
    }

    /// Waits (under the deadline) until a recorded frame satisfies `pred`; returns it.
    pub async fn wait_for(&self, what: &str, pred: impl Fn(&Frame) -> bool) -> Result<Frame> {
        let mut from = 0;
        self.poll_until(what, || {
            let t = lock(&self.transcript);
            let found = t[from..].iter().find(|f| pred(f)).cloned();
            from = t.len();
            found
        })
        .await
    }

    /// Waits (under the deadline) until the agent's output ends.
    pub async fn wait_ended(&self) -> Result<()> {
        self.within("the end of the agent's output", async {
            loop {
                let notified = self.changed.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.ended.load(Ordering::Acquire) {
                    return Ok(());
                }
                notified.await;
            }
        })
        .await
    }
}

/// A response's `result`, or its `error` as [`Error::Rpc`].
fn answer_of(message: &mut Value) -> Result<Result<Value>> {
    Ok(match message.get_mut("error") {
        Some(error) => {
            let error: crate::schema::Error = serde_json::from_value(error.take())
                .map_err(|e| Error::msg(format!("malformed error answer: {e}")))?;
            Err(Error::Rpc {
                code: error.code.into(),
                message: error.message,
                data: error.data,
            })
        }
        None => Ok(message
            .get_mut("result")
            .map(Value::take)
            .unwrap_or(Value::Null)),
    })
}

async fn write_loop(
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    mut w: impl AsyncWrite + Unpin,
    wire: std::sync::Weak<Wire>,
) {
    while let Some(frame) = rx.recv().await {
        let Some(shared) = wire.upgrade() else { break };
        shared.record(Direction::ToAgent, frame.message, false);
        drop(shared);
        if w.write_all(&frame.bytes).await.is_err() || w.flush().await.is_err() {
            return;
        }
    }
    let _ = w.shutdown().await;
}

async fn read_loop(r: impl AsyncRead + Unpin, wire: Arc<Wire>) {
    let mut reader = BufReader::new(r);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf).await {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                wire.problem(format!(
                    "reading the agent's output failed ({:?}): {e}",
                    e.kind()
                ));
                break;
            }
        }
        let terminated = buf.ends_with(b"\n");
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        if !terminated {
            wire.problem(format!(
                "the agent's output ended in the middle of a line: {:?}",
                String::from_utf8_lossy(line)
            ));
        } else if line.ends_with(b"\r") {
            wire.problem(format!(
                "a line ends in \\r\\n instead of a bare \\n: {:?}",
                String::from_utf8_lossy(line)
            ));
        }
        received(&wire, line).await;
    }
    wire.ended.store(true, Ordering::Release);
    // Nobody will answer now: fail everyone still waiting.
    lock(&wire.pending).clear();
    wire.changed.notify_waiters();
}

/// Records and handles one line of the agent's output.
async fn received(wire: &Arc<Wire>, line: &[u8]) {
    let message = match serde_json::from_slice::<Value>(line) {
        Ok(message) => message,
        Err(e) => {
            let text = String::from_utf8_lossy(line).into_owned();
            wire.problem(format!("not JSON ({e}): {text:?}"));
            wire.record(Direction::FromAgent, Value::String(text), false);
            return;
        }
    };
    if let Some(problem) = malformed(&message) {
        wire.problem(format!("{problem}: {message}"));
    }
    let method = message.get("method").and_then(Value::as_str);
    if message["result"]["protocolVersion"] == 2 && message["result"].get("info").is_some() {
        wire.v2.store(true, Ordering::Release);
    }
    match (method, message.get("id")) {
        #[cfg(feature = "v2")]
        (Some(methods::SESSION_UPDATE), None) if wire.v2.load(Ordering::Acquire) => {
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            let update =
                serde_json::from_value::<crate::schema::v2::UpdateSessionNotification>(params);
            if let Err(e) = &update {
                wire.problem(format!(
                    "a v2 session/update that does not match the schema ({e}): {message}"
                ));
            }
            let index = wire.record(Direction::FromAgent, message, false);
            let v1 = lock(&wire.transcript)[index].session_update();
            if let Some(n) = v1 {
                fire_cancels(wire, &n.session_id, &n.update);
            }
        }
        (Some(methods::SESSION_UPDATE), None) => {
            let update = serde_json::from_value::<crate::schema::SessionNotification>(
                message.get("params").cloned().unwrap_or(Value::Null),
            );
            if let Err(e) = &update {
                wire.problem(format!(
                    "a session/update that does not match the schema ({e}): {message}"
                ));
            }
            wire.record(Direction::FromAgent, message, false);
            if let Ok(n) = update {
                fire_cancels(wire, &n.session_id, &n.update);
            }
        }
        (Some(method), Some(_)) if wire.holds(method) => {
            let method = method.to_owned();
            wire.record(Direction::FromAgent, message.clone(), false);
            lock(&wire.held)
                .entry(method)
                .or_default()
                .push_back(message);
            wire.changed.notify_waiters();
        }
        (Some(method), Some(id)) => {
            let index = wire.record(Direction::FromAgent, message.clone(), false);
            let method = method.to_owned();
            let id = id.clone();
            // The fake editor reads requests in v1's shape, whichever version was negotiated.
            let params = lock(&wire.transcript)[index]
                .as_v1()
                .get("params")
                .cloned()
                .unwrap_or(Value::Null);
            let wire = wire.clone();
            tokio::spawn(async move {
                if let Some(answer) = wire.editor.answer(&method, params).await {
                    let frame = match answer {
                        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
                    };
                    wire.send(Outgoing::json(frame));
                }
            });
        }
        (None, Some(Value::Number(id))) => {
            let waiter = id.as_i64().and_then(|id| lock(&wire.pending).remove(&id));
            let index = wire.record(Direction::FromAgent, message.clone(), waiter.is_some());
            if let Some(tx) = waiter {
                let _ = tx.send((message, index));
            }
        }
        _ => {
            wire.record(Direction::FromAgent, message, false);
        }
    }
}

fn fire_cancels(wire: &Wire, session: &SessionId, update: &SessionUpdate) {
    let fire = {
        let mut triggers = lock(&wire.cancel_on);
        let before = triggers.len();
        triggers.retain(|(id, pred)| !(id == session && pred(update)));
        triggers.len() != before
    };
    if fire {
        wire.send(Outgoing::json(json!({
            "jsonrpc": "2.0",
            "method": methods::SESSION_CANCEL,
            "params": {"sessionId": session},
        })));
    }
}
