//! The structured target's client: a sequence of [`Op`]s (decoded from the fuzz input by
//! `arbitrary`), each turned into one input line when the runtime asks for more input. It
//! reacts to what the agent has written so far, like a real client: prompts name the sessions
//! the agent made up (`session/new` answers carry random ids a byte fuzzer cannot guess),
//! answers go to the agent's outstanding requests with a result of the right shape (the
//! permission options it offered, file contents, terminal ids), and `$/cancel_request` names
//! the ids of earlier prompts. Odd frames (raw bytes, batches, unknown and vendor methods,
//! malformed answers, reused and odd ids) are mixed in.

use std::collections::HashSet;
use std::time::Duration;

use arbitrary::Arbitrary;
use serde_json::{Map, Value, json};

use crate::{Script, Step, YIELDS_PER_LINE};

/// A JSON value, for params and answers.
#[derive(Arbitrary, Debug, Clone)]
pub enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Int(i) => Value::from(*i),
            Json::Float(f) => Value::from(*f),
            Json::Str(s) => Value::from(s.as_str()),
            Json::Arr(a) => Value::Array(a.iter().map(Json::value).collect()),
            Json::Obj(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), v.value())).collect()),
        }
    }
}

/// The id a request of the client carries.
#[derive(Arbitrary, Debug, Clone)]
pub enum Id {
    /// A new integer id.
    Fresh,
    /// A string id made of the next counter value.
    FreshStr,
    /// The k-th id used so far again.
    Reuse(u8),
    /// Any string.
    Str(String),
    /// Any integer.
    Int(i64),
    Null,
    /// `1.5`: not a valid id.
    Float,
    /// `{}`: not a valid id.
    Object,
}

/// A session id.
#[derive(Arbitrary, Debug, Clone)]
pub enum SessionRef {
    /// The k-th session the agent announced (answers to `session/new` and `session/load`).
    Made(u8),
    /// One of a few fixed ids (`s0`…`s3`), for `session/load`.
    Fixed(u8),
    Other(String),
}

/// A small name out of a list, or anything.
#[derive(Arbitrary, Debug, Clone)]
pub enum Name {
    Known(u8),
    Other(String),
}

impl Name {
    fn pick(&self, known: &[&str]) -> String {
        match self {
            Name::Known(k) => known[*k as usize % known.len()].to_owned(),
            Name::Other(s) => s.clone(),
        }
    }
}

#[derive(Arbitrary, Debug, Clone)]
pub enum Cwd {
    Absolute,
    Relative,
    Other(String),
}

/// A command of the fuzz agent's prompt (see [`crate::agent`]).
#[derive(Arbitrary, Debug, Clone)]
pub enum Command {
    Read(Name),
    Write(Name, String),
    Call(Name, Json),
    CallText(Name, String),
    Add(i64, i64),
    Run(String),
    Ask,
    Sleep,
    Stream(u8),
    Think(String),
    Plan(String),
    Count,
    Tools,
    Fail(String),
    Refuse,
    Echo(String),
}

const PATHS: [&str; 4] = ["a.txt", "/tmp/b.txt", "dir/c.md", ""];
const TOOLS: [&str; 5] = ["read", "write", "add", "run", "nope"];

impl Command {
    fn text(&self) -> String {
        match self {
            Command::Read(p) => format!("read {}", p.pick(&PATHS)),
            Command::Write(p, t) => format!("write {} {t}", p.pick(&PATHS)),
            Command::Call(t, args) => format!("call {} {}", t.pick(&TOOLS), args.value()),
            Command::CallText(t, args) => format!("call {} {args}", t.pick(&TOOLS)),
            Command::Add(a, b) => format!("add {a} {b}"),
            Command::Run(c) => format!("run {c}"),
            Command::Ask => "ask".into(),
            Command::Sleep => "sleep".into(),
            Command::Stream(n) => format!("stream {n}"),
            Command::Think(t) => format!("think {t}"),
            Command::Plan(t) => format!("plan {t}"),
            Command::Count => "count".into(),
            Command::Tools => "tools".into(),
            Command::Fail(t) => format!("fail {t}"),
            Command::Refuse => "refuse".into(),
            Command::Echo(t) => t.clone(),
        }
    }
}

/// A content block of a prompt.
#[derive(Arbitrary, Debug, Clone)]
pub enum Block {
    Commands(Vec<Command>),
    Text(String),
    Image {
        data: String,
        mime: Name,
    },
    Audio {
        data: String,
    },
    Link {
        uri: String,
        name: String,
        size: Option<i64>,
    },
    Resource {
        uri: String,
        text: String,
    },
    Blob {
        uri: String,
        blob: String,
    },
    Raw(Json),
}

const MIMES: [&str; 3] = ["image/png", "image/jpeg", "text/plain"];

impl Block {
    fn value(&self) -> Value {
        match self {
            Block::Commands(c) => {
                let text: Vec<String> = c.iter().map(Command::text).collect();
                json!({"type": "text", "text": text.join("\n")})
            }
            Block::Text(t) => json!({"type": "text", "text": t}),
            Block::Image { data, mime } => {
                json!({"type": "image", "data": data, "mimeType": mime.pick(&MIMES)})
            }
            Block::Audio { data } => {
                json!({"type": "audio", "data": data, "mimeType": "audio/wav"})
            }
            Block::Link { uri, name, size } => {
                json!({"type": "resource_link", "uri": uri, "name": name, "size": size})
            }
            Block::Resource { uri, text } => {
                json!({"type": "resource", "resource": {"uri": uri, "text": text, "mimeType": "text/plain"}})
            }
            Block::Blob { uri, blob } => {
                json!({"type": "resource", "resource": {"uri": uri, "blob": blob}})
            }
            Block::Raw(j) => j.value(),
        }
    }
}

/// How to answer one of the agent's requests.
#[derive(Arbitrary, Debug, Clone)]
pub enum Answer {
    /// The result a client would send (for a permission request, the k-th option).
    Ok(u8),
    /// A permission request answered `cancelled` (any other request: `{}`).
    Cancelled,
    /// A JSON-RPC error.
    Error {
        code: i32,
        message: String,
        data: Option<Json>,
    },
    /// `-32002`, resource not found.
    NotFound,
    /// Both `result` and `error`.
    Both,
    /// Neither `result` nor `error`.
    Neither,
    /// An `error` that is not an error object.
    BadError(Json),
    /// A result of any shape.
    Wrong(Json),
    /// The right result, twice.
    Twice(u8),
    /// A result for an id the agent never used.
    Stray(i64),
}

/// A method name for a notification or request nobody routes.
#[derive(Arbitrary, Debug, Clone)]
pub enum Method {
    Vendor(String),
    Dollar(String),
    Known(u8),
    Other(String),
}

const METHODS: [&str; 20] = [
    "initialize",
    "authenticate",
    "logout",
    "_fuzz/echo",
    "_fuzz/note",
    "session/new",
    "session/load",
    "session/prompt",
    "session/cancel",
    "session/set_mode",
    "session/set_config_option",
    "$/cancel_request",
    "session/update",
    "session/request_permission",
    "fs/read_text_file",
    "terminal/create",
    "session/list",
    "session/close",
    "session/resume",
    "session/delete",
];

impl Method {
    fn name(&self) -> String {
        match self {
            Method::Vendor(s) => format!("_vendor/{s}"),
            Method::Dollar(s) => format!("$/{s}"),
            Method::Known(k) => METHODS[*k as usize % METHODS.len()].to_owned(),
            Method::Other(s) => s.clone(),
        }
    }
}

/// One thing the client does.
#[derive(Arbitrary, Debug, Clone)]
pub enum Op {
    Initialize {
        fs: u8,
        terminal: bool,
        version: Option<u16>,
        id: Id,
    },
    Authenticate {
        method: Name,
        id: Id,
    },
    NewSession {
        cwd: Cwd,
        mcp: bool,
        id: Id,
    },
    LoadSession {
        session: SessionRef,
        cwd: Cwd,
        id: Id,
    },
    Prompt {
        session: SessionRef,
        blocks: Vec<Block>,
        id: Id,
    },
    Cancel {
        session: SessionRef,
    },
    /// `$/cancel_request` for the k-th prompt sent (or, with none sent, for id k).
    CancelRequest {
        prompt: u8,
    },
    CancelRequestId {
        id: Id,
    },
    CloseSession {
        session: SessionRef,
        id: Id,
    },
    /// `session/list`, with a cursor the agent handed out (the k-th) or any string.
    ListSessions {
        cursor: Option<Name>,
        cwd: Option<Cwd>,
        id: Id,
    },
    ResumeSession {
        session: SessionRef,
        cwd: Cwd,
        id: Id,
    },
    DeleteSession {
        session: SessionRef,
        id: Id,
    },
    SetMode {
        session: SessionRef,
        mode: Name,
        id: Id,
    },
    SetConfigOption {
        session: SessionRef,
        config: String,
        value: Json,
        id: Id,
    },
    /// Answers the k-th outstanding request of the agent.
    Answer {
        pick: u8,
        how: Answer,
    },
    /// A request (with an id) or a notification of any method, with any params.
    Other {
        method: Method,
        id: Option<Id>,
        params: Option<Json>,
    },
    /// A JSON value sent as a line (arrays are batches).
    Value(Json),
    /// A batch of requests.
    Batch(Vec<Method>),
    /// Raw bytes, up to the next newline.
    Raw(Vec<u8>),
    /// Let the agent's tasks run this many more times.
    Yield(u8),
    /// Wait this many milliseconds (virtual time).
    Sleep(u16),
}

/// The client state the ops are resolved against.
#[derive(Debug, Default)]
pub struct FrameScript {
    ops: std::vec::IntoIter<Op>,
    /// Lines queued for delivery (an op may make two).
    queued: Vec<Vec<u8>>,
    yield_next: bool,
    next_id: i64,
    used_ids: Vec<Value>,
    prompt_ids: Vec<Value>,
    sessions: Vec<String>,
    /// `nextCursor`s of `session/list` answers.
    cursors: Vec<String>,
    /// The agent's requests: id, method, params.
    agent_requests: Vec<(i64, String, Value)>,
    answered: HashSet<i64>,
    /// How much of the output was read.
    read_upto: usize,
}

impl FrameScript {
    pub fn new(ops: Vec<Op>) -> Self {
        FrameScript {
            ops: ops.into_iter(),
            next_id: 1,
            ..FrameScript::default()
        }
    }

    /// Reads the output lines not read yet: session ids and the agent's requests.
    fn observe(&mut self, output: &[u8]) {
        let Some(new) = output.get(self.read_upto..) else {
            return;
        };
        let Some(end) = new.iter().rposition(|b| *b == b'\n') else {
            return;
        };
        for line in new[..end].split(|b| *b == b'\n') {
            let Ok(Value::Object(frame)) = serde_json::from_slice::<Value>(line) else {
                continue;
            };
            if let Some(id) = frame
                .get("result")
                .and_then(|r| r.get("sessionId"))
                .and_then(Value::as_str)
            {
                self.sessions.push(id.to_owned());
            }
            if let Some(cursor) = frame
                .get("result")
                .and_then(|r| r.get("nextCursor"))
                .and_then(Value::as_str)
            {
                self.cursors.push(cursor.to_owned());
            }
            if let Some(listed) = frame
                .get("result")
                .and_then(|r| r.get("sessions"))
                .and_then(Value::as_array)
            {
                for id in listed
                    .iter()
                    .filter_map(|s| s.get("sessionId"))
                    .filter_map(Value::as_str)
                {
                    if !self.sessions.iter().any(|s| s == id) {
                        self.sessions.push(id.to_owned());
                    }
                }
            }
            if let (Some(id), Some(method)) = (
                frame.get("id").and_then(Value::as_i64),
                frame.get("method").and_then(Value::as_str),
            ) {
                let params = frame.get("params").cloned().unwrap_or(Value::Null);
                self.agent_requests.push((id, method.to_owned(), params));
            }
        }
        self.read_upto += end + 1;
    }

    fn id(&mut self, id: &Id) -> Value {
        let value = match id {
            Id::Fresh => {
                self.next_id += 1;
                Value::from(self.next_id)
            }
            Id::FreshStr => {
                self.next_id += 1;
                Value::from(format!("r{}", self.next_id))
            }
            Id::Reuse(k) if !self.used_ids.is_empty() => {
                self.used_ids[*k as usize % self.used_ids.len()].clone()
            }
            Id::Reuse(k) => Value::from(*k),
            Id::Str(s) => Value::from(s.as_str()),
            Id::Int(i) => Value::from(*i),
            Id::Null => Value::Null,
            Id::Float => json!(1.5),
            Id::Object => json!({}),
        };
        self.used_ids.push(value.clone());
        value
    }

    fn session(&mut self, session: &SessionRef) -> String {
        match session {
            SessionRef::Made(k) if !self.sessions.is_empty() => {
                self.sessions[*k as usize % self.sessions.len()].clone()
            }
            SessionRef::Made(k) | SessionRef::Fixed(k) => format!("s{}", k % 4),
            SessionRef::Other(s) => s.clone(),
        }
    }

    fn request(&mut self, id: &Id, method: &str, params: Value) -> Value {
        let id = self.id(id);
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }

    fn notification(method: &str, params: Value) -> Value {
        json!({"jsonrpc": "2.0", "method": method, "params": params})
    }

    /// The result a well-behaved client gives to the agent's request.
    fn result(method: &str, params: &Value, choice: u8, cancelled: bool) -> Value {
        match method {
            "session/request_permission" => {
                let options = params.get("options").and_then(Value::as_array);
                match options {
                    Some(options) if !options.is_empty() && !cancelled => {
                        let option = &options[choice as usize % options.len()];
                        json!({"outcome": {"outcome": "selected", "optionId": option.get("optionId")}})
                    }
                    _ => json!({"outcome": {"outcome": "cancelled"}}),
                }
            }
            "fs/read_text_file" => json!({"content": format!("line {choice}\n")}),
            "terminal/create" => json!({"terminalId": format!("term-{choice}")}),
            "terminal/output" => json!({"output": "out", "truncated": choice.is_multiple_of(2)}),
            "terminal/wait_for_exit" => json!({"exitCode": choice, "signal": null}),
            _ => json!({}),
        }
    }

    fn answer(&mut self, pick: u8, how: &Answer) -> Vec<Value> {
        let outstanding: Vec<_> = self
            .agent_requests
            .iter()
            .filter(|(id, _, _)| !self.answered.contains(id))
            .cloned()
            .collect();
        let (id, method, params) = match outstanding.get(pick as usize % outstanding.len().max(1)) {
            Some(request) => request.clone(),
            None => (i64::from(pick), String::new(), Value::Null),
        };
        self.answered.insert(id);
        let reply = |body: Map<String, Value>| {
            let mut frame = Map::new();
            frame.insert("jsonrpc".into(), "2.0".into());
            frame.insert("id".into(), id.into());
            frame.extend(body);
            Value::Object(frame)
        };
        let one = |key: &str, value: Value| {
            let mut m = Map::new();
            m.insert(key.to_owned(), value);
            m
        };
        match how {
            Answer::Ok(choice) => vec![reply(one(
                "result",
                Self::result(&method, &params, *choice, false),
            ))],
            Answer::Cancelled => vec![reply(one(
                "result",
                Self::result(&method, &params, 0, true),
            ))],
            Answer::Error {
                code,
                message,
                data,
            } => {
                let mut error = json!({"code": code, "message": message});
                if let Some(data) = data {
                    error["data"] = data.value();
                }
                vec![reply(one("error", error))]
            }
            Answer::NotFound => vec![reply(one(
                "error",
                json!({"code": -32002, "message": "not found"}),
            ))],
            Answer::Both => {
                let mut body = one("result", Self::result(&method, &params, 0, false));
                body.insert("error".into(), json!({"code": -32603, "message": "both"}));
                vec![reply(body)]
            }
            Answer::Neither => vec![reply(Map::new())],
            Answer::BadError(j) => vec![reply(one("error", j.value()))],
            Answer::Wrong(j) => vec![reply(one("result", j.value()))],
            Answer::Twice(choice) => {
                let frame = reply(one(
                    "result",
                    Self::result(&method, &params, *choice, false),
                ));
                vec![frame.clone(), frame]
            }
            Answer::Stray(stray) => vec![json!({"jsonrpc": "2.0", "id": stray, "result": {}})],
        }
    }

    fn cwd(cwd: &Cwd) -> Value {
        match cwd {
            Cwd::Absolute => "/work/project".into(),
            Cwd::Relative => "project".into(),
            Cwd::Other(s) => s.as_str().into(),
        }
    }

    /// The lines of one op.
    fn lines(&mut self, op: Op) -> Result<Vec<Vec<u8>>, Step> {
        let values = match op {
            Op::Initialize {
                fs,
                terminal,
                version,
                id,
            } => {
                let params = json!({
                    "protocolVersion": version.unwrap_or(1),
                    "clientCapabilities": {
                        "fs": {"readTextFile": fs & 1 != 0, "writeTextFile": fs & 2 != 0},
                        "terminal": terminal,
                    },
                    "clientInfo": {"name": "fuzz-client", "version": "0.0.0"},
                });
                vec![self.request(&id, "initialize", params)]
            }
            Op::Authenticate { method, id } => {
                let params = json!({"methodId": method.pick(&["token", "password"])});
                vec![self.request(&id, "authenticate", params)]
            }
            Op::NewSession { cwd, mcp, id } => {
                let servers = if mcp {
                    json!([{"name": "fs", "command": "/bin/mcp", "args": [], "env": []}])
                } else {
                    json!([])
                };
                let params = json!({"cwd": Self::cwd(&cwd), "mcpServers": servers});
                vec![self.request(&id, "session/new", params)]
            }
            Op::LoadSession { session, cwd, id } => {
                let session = self.session(&session);
                if !self.sessions.contains(&session) {
                    self.sessions.push(session.clone());
                }
                let params =
                    json!({"sessionId": session, "cwd": Self::cwd(&cwd), "mcpServers": []});
                vec![self.request(&id, "session/load", params)]
            }
            Op::Prompt {
                session,
                blocks,
                id,
            } => {
                let session = self.session(&session);
                let blocks: Vec<Value> = blocks.iter().map(Block::value).collect();
                let frame = self.request(
                    &id,
                    "session/prompt",
                    json!({"sessionId": session, "prompt": blocks}),
                );
                self.prompt_ids.push(frame["id"].clone());
                vec![frame]
            }
            Op::Cancel { session } => {
                let session = self.session(&session);
                vec![Self::notification(
                    "session/cancel",
                    json!({"sessionId": session}),
                )]
            }
            Op::CancelRequest { prompt } => {
                let id = match self.prompt_ids.len() {
                    0 => Value::from(prompt),
                    n => self.prompt_ids[prompt as usize % n].clone(),
                };
                vec![Self::notification(
                    "$/cancel_request",
                    json!({"requestId": id}),
                )]
            }
            Op::CancelRequestId { id } => {
                let id = self.id(&id);
                vec![Self::notification(
                    "$/cancel_request",
                    json!({"requestId": id}),
                )]
            }
            Op::CloseSession { session, id } => {
                let session = self.session(&session);
                vec![self.request(&id, "session/close", json!({"sessionId": session}))]
            }
            Op::ListSessions { cursor, cwd, id } => {
                let mut params = json!({});
                if let Some(cursor) = cursor {
                    params["cursor"] = match (&cursor, self.cursors.is_empty()) {
                        (Name::Known(k), false) => self.cursors[*k as usize % self.cursors.len()]
                            .clone()
                            .into(),
                        (Name::Known(k), true) => format!("c{k}").into(),
                        (Name::Other(s), _) => s.as_str().into(),
                    };
                }
                if let Some(cwd) = cwd {
                    params["cwd"] = Self::cwd(&cwd);
                }
                vec![self.request(&id, "session/list", params)]
            }
            Op::ResumeSession { session, cwd, id } => {
                let session = self.session(&session);
                let params =
                    json!({"sessionId": session, "cwd": Self::cwd(&cwd), "mcpServers": []});
                vec![self.request(&id, "session/resume", params)]
            }
            Op::DeleteSession { session, id } => {
                let session = self.session(&session);
                vec![self.request(&id, "session/delete", json!({"sessionId": session}))]
            }
            Op::SetMode { session, mode, id } => {
                let session = self.session(&session);
                let params = json!({"sessionId": session, "modeId": mode.pick(&["ask", "code"])});
                vec![self.request(&id, "session/set_mode", params)]
            }
            Op::SetConfigOption {
                session,
                config,
                value,
                id,
            } => {
                let session = self.session(&session);
                let params =
                    json!({"sessionId": session, "configId": config, "value": value.value()});
                vec![self.request(&id, "session/set_config_option", params)]
            }
            Op::Answer { pick, how } => self.answer(pick, &how),
            Op::Other { method, id, params } => {
                let mut frame = json!({"jsonrpc": "2.0", "method": method.name()});
                if let Some(id) = id {
                    frame["id"] = self.id(&id);
                }
                if let Some(params) = params {
                    frame["params"] = params.value();
                }
                vec![frame]
            }
            Op::Value(j) => vec![j.value()],
            Op::Batch(methods) => {
                let batch: Vec<Value> = methods
                    .iter()
                    .map(|m| {
                        let id = self.id(&Id::Fresh);
                        json!({"jsonrpc": "2.0", "id": id, "method": m.name(), "params": {}})
                    })
                    .collect();
                vec![Value::Array(batch)]
            }
            Op::Raw(mut bytes) => {
                if let Some(end) = bytes.iter().position(|b| *b == b'\n') {
                    bytes.truncate(end);
                }
                bytes.push(b'\n');
                return Ok(vec![bytes]);
            }
            Op::Yield(n) => return Err(Step::Yield(u32::from(n))),
            Op::Sleep(ms) => return Err(Step::Sleep(Duration::from_millis(u64::from(ms)))),
        };
        Ok(values
            .into_iter()
            .map(|v| {
                let mut bytes = serde_json::to_vec(&v).expect("a JSON value serializes");
                bytes.push(b'\n');
                bytes
            })
            .collect())
    }
}

impl Script for FrameScript {
    fn next(&mut self, output: &[u8]) -> Option<Step> {
        if std::mem::take(&mut self.yield_next) {
            return Some(Step::Yield(YIELDS_PER_LINE));
        }
        loop {
            if !self.queued.is_empty() {
                self.yield_next = true;
                return Some(Step::Bytes(self.queued.remove(0)));
            }
            self.observe(output);
            let op = self.ops.next()?;
            match self.lines(op) {
                Ok(lines) => self.queued = lines,
                Err(step) => return Some(step),
            }
        }
    }
}

/// How a run starts, before the fuzzed ops: a working session is hard to assemble op by op.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Start {
    /// `initialize` (fs and terminal), `session/load` of `s1`, `session/new`.
    Session,
    /// `initialize` (fs and terminal) only.
    Initialized,
    /// Nothing: the ops start the connection.
    Nothing,
}

impl Start {
    fn ops(self) -> Vec<Op> {
        let init = Op::Initialize {
            fs: 3,
            terminal: true,
            version: None,
            id: Id::Fresh,
        };
        let load = Op::LoadSession {
            session: SessionRef::Fixed(1),
            cwd: Cwd::Absolute,
            id: Id::Fresh,
        };
        let new = Op::NewSession {
            cwd: Cwd::Absolute,
            mcp: false,
            id: Id::Fresh,
        };
        match self {
            Start::Session => vec![init, load, new],
            Start::Initialized => vec![init],
            Start::Nothing => vec![],
        }
    }
}

/// The structured target's input: the connection's limits (the runtime's defaults when
/// absent), how the run starts, and the client's actions.
#[derive(Arbitrary, Debug, Clone)]
pub struct Input {
    pub start: Start,
    /// Serve with an in-memory session store (history methods answered from it).
    pub store: bool,
    /// `max_line_bytes`, in units of 16 bytes (so that long lines are cheap to reach).
    pub max_line: Option<u8>,
    /// `max_in_flight`.
    pub max_in_flight: Option<u8>,
    pub ops: Vec<Op>,
}

/// Runs the structured target's body on `input`: serve it, then check.
pub fn fuzz_input(input: Input) {
    let limits =
        (input.store || input.max_line.is_some() || input.max_in_flight.is_some()).then(|| {
            crate::Limits {
                max_line_bytes: input.max_line.map_or(64 << 20, |n| usize::from(n) * 16),
                max_in_flight: input.max_in_flight.map_or(1024, usize::from),
                store: input.store,
            }
        });
    let mut ops = input.start.ops();
    ops.extend(input.ops);
    let execution = crate::execute_with(FrameScript::new(ops), limits);
    crate::check(&execution);
}
