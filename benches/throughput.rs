//! Throughput and latency of the runtime, measured from outside, next to the official SDKs.
//!
//! Run: `cargo bench --bench throughput`. It builds the `bench` example in release
//! (`examples/bench.rs`), installs the TypeScript agent's packages if needed (`npm ci` in
//! `benches/ts-agent`, the official `@agentclientprotocol/sdk` 2.4.0) and builds the agent on
//! the official Rust crate (`benches/rust-sdk-agent`, `agent-client-protocol` 5.0.0, its own
//! cargo project and target dir), then drives each agent as an editor would, over pipes:
//!
//! - `stream 100000`: message chunks per second until the prompt's answer (best of 3 runs,
//!   a fresh process each), and the agent's peak RSS (`VmHWM`), also for `stream 10000` to
//!   see whether memory grows with the length of a turn;
//! - `permission 2000`: round trips of `session/request_permission`, answered at once (the
//!   gap between consecutive requests as the client sees them);
//! - `sleep` + `session/cancel`, 50 times in one session: time from the cancel to the
//!   `cancelled` answer.
//!
//! Every frame of a turn is checked, not just counted: a stream turn must be exactly N
//! `agent_message_chunk` updates for the session whose texts are
//! `00000000 of the streamed answer.\n`, `00000001 …` in order, then an `end_turn` answer;
//! in the other turns only updates for the session and well-formed permission requests
//! (id, session, tool call, the `allow`/`reject` options) may come before the answer
//! (`end_turn`, or `cancelled` after a cancel). A mismatch fails that workload, with what was
//! expected and what arrived, in the notes under the table. Checking costs the client little
//! (see `Client::read_stream`): a frame is parsed in place into small borrowed structs, and
//! a chunk that is byte for byte an already checked chunk with the next text needs no parse.
//!
//! The agents take turns run by run, so that other load on the machine spreads over all
//! columns; the latency workloads run in 2 rounds whose samples are pooled, and the 1-minute
//! load average before and after is printed with the table. The baseline is a bare serde_json
//! loop writing the same 100,000 frames into a pipe that the same client code reads and
//! checks: the ceiling for the stream rows. Nothing here asserts on speed; the run stops by
//! itself (each agent process is killed after 60 s, the whole measurement after 270 s).
//!
//! Set `ACP_BENCH_NO_TS=1` or `ACP_BENCH_NO_RUST_SDK=1` to leave a column out.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use acp::schema::{ContentBlock, ContentChunk, SessionId, SessionNotification, SessionUpdate};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

const STREAM_N: usize = 100_000;
const STREAM_SMALL_N: usize = 10_000;
const STREAM_RUNS: usize = 3;
const PERMISSION_N: usize = 2_000;
const CANCEL_RUNS: usize = 50;
/// Rounds of the permission and cancel workloads; their samples are pooled.
const LATENCY_ROUNDS: usize = 2;
/// An agent process still running after this long is killed (its workload then fails).
const AGENT_DEADLINE: Duration = Duration::from_secs(60);
/// The measuring part of the run (after the builds) stops the whole bench past this.
const RUN_DEADLINE: Duration = Duration::from_secs(270);
/// The official Rust SDK's agent is skipped if it does not build within this.
const RUST_SDK_BUILD_LIMIT: Duration = Duration::from_secs(600);

type Error = Box<dyn std::error::Error + Send + Sync>;
type Result<T, E = Error> = std::result::Result<T, E>;

fn main() {
    // `cargo bench` passes `--bench`; anything else (e.g. a test filter) is ignored.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("throughput: building the agents…");

    let mut agents = Vec::new();
    match build_ours(root, &cargo) {
        Ok(path) => agents.push(Impl::new("ours", Command::new(path))),
        Err(e) => {
            eprintln!("throughput: cannot build examples/bench.rs: {e}");
            std::process::exit(1);
        }
    }
    if skipped("ACP_BENCH_NO_TS") {
        eprintln!("throughput: official TS SDK left out (ACP_BENCH_NO_TS)");
    } else {
        match prepare_ts(root) {
            Ok(cmd) => agents.push(Impl::new("official TS SDK", cmd)),
            Err(e) => eprintln!("throughput: official TS SDK skipped: {e}"),
        }
    }
    if skipped("ACP_BENCH_NO_RUST_SDK") {
        eprintln!("throughput: official Rust SDK left out (ACP_BENCH_NO_RUST_SDK)");
    } else {
        match build_rust_sdk(root, &cargo) {
            Ok(path) => agents.push(Impl::new("official Rust SDK", Command::new(path))),
            Err(e) => eprintln!("throughput: official Rust SDK skipped: {e}"),
        }
    }

    let started = Instant::now();
    thread::spawn(move || {
        thread::sleep(RUN_DEADLINE);
        eprintln!("throughput: gave up after {RUN_DEADLINE:?}");
        std::process::exit(2);
    });

    let load_before = load_average();
    let columns = measure(&agents);
    eprintln!("throughput: baseline");
    let baseline = baseline(STREAM_N);
    let load_after = load_average();
    print_table(&columns, baseline);
    println!("load average (1 min) before/after the measurements: {load_before} / {load_after}");
    eprintln!(
        "throughput: measured in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

fn skipped(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| !v.is_empty() && v != "0")
}

// ---------------------------------------------------------------------------------------------
// Building and locating the agents

/// Runs a cargo build with `--message-format=json` and returns the executable it produced.
fn cargo_build(mut cmd: Command, target: &str, limit: Duration) -> Result<PathBuf> {
    cmd.arg("--message-format=json-render-diagnostics")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let started = Instant::now();
    let mut child = cmd.spawn()?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let reader = thread::spawn(move || {
        let mut out = String::new();
        stdout.read_to_string(&mut out).map(|_| out)
    });
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("the build took longer than {limit:?}").into());
        }
        thread::sleep(Duration::from_millis(100));
    };
    let out = reader.join().map_err(|_| "reader panicked")??;
    if !status.success() {
        return Err(format!("the build failed ({status})").into());
    }
    #[derive(Deserialize)]
    struct Artifact {
        reason: String,
        target: Option<Target>,
        executable: Option<PathBuf>,
    }
    #[derive(Deserialize)]
    struct Target {
        name: String,
    }
    out.lines()
        .filter_map(|line| serde_json::from_str::<Artifact>(line).ok())
        .filter(|a| a.reason == "compiler-artifact")
        .filter(|a| a.target.as_ref().is_some_and(|t| t.name == target))
        .find_map(|a| a.executable)
        .ok_or_else(|| format!("cargo named no executable for `{target}`").into())
}

fn build_ours(root: &Path, cargo: &std::ffi::OsStr) -> Result<PathBuf> {
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args(["build", "--release", "--example", "bench"]);
    cargo_build(cmd, "bench", Duration::from_secs(900))
}

fn build_rust_sdk(root: &Path, cargo: &std::ffi::OsStr) -> Result<PathBuf> {
    let dir = root.join("benches/rust-sdk-agent");
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&dir)
        .args(["build", "--release", "--locked"]);
    cmd.arg("--manifest-path").arg(dir.join("Cargo.toml"));
    cmd.arg("--target-dir").arg(dir.join("target"));
    cargo_build(cmd, "bench-rust-sdk-agent", RUST_SDK_BUILD_LIMIT)
}

fn prepare_ts(root: &Path) -> Result<Command> {
    let dir = root.join("benches/ts-agent");
    let node_ok = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !node_ok {
        return Err("`node` is not installed".into());
    }
    if !dir.join("node_modules/@agentclientprotocol/sdk").is_dir() {
        eprintln!("throughput: npm ci in {}", dir.display());
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .stdout(Stdio::null())
            .status()?;
        if !status.success() {
            return Err(format!("`npm ci` failed ({status})").into());
        }
    }
    let mut cmd = Command::new("node");
    cmd.arg("agent.mjs").current_dir(dir);
    Ok(cmd)
}

struct Impl {
    name: &'static str,
    command: Command,
}

impl Impl {
    fn new(name: &'static str, mut command: Command) -> Self {
        // Logging to stderr must cost the same for everyone: nothing.
        command.env_remove("RUST_LOG");
        Impl { name, command }
    }

    fn spawn(&self) -> Result<AgentProcess> {
        let mut cmd = Command::new(self.command.get_program());
        cmd.args(self.command.get_args());
        if let Some(dir) = self.command.get_current_dir() {
            cmd.current_dir(dir);
        }
        for (key, value) in self.command.get_envs() {
            match value {
                Some(v) => cmd.env(key, v),
                None => cmd.env_remove(key),
            };
        }
        AgentProcess::start(cmd)
    }
}

// ---------------------------------------------------------------------------------------------
// The client side of the protocol

/// What follows the index in every chunk of `stream N`.
const CHUNK_TAIL: &str = " of the streamed answer.\n";

/// The text of chunk `i` of `stream N`, the same in all three agents and the baseline: the
/// 0-based index as 8 digits, then [`CHUNK_TAIL`] (`00000042 of the streamed answer.\n`,
/// 33 bytes).
fn chunk_text(i: usize, out: &mut String) {
    out.clear();
    let _ = write!(out, "{i:08}{CHUNK_TAIL}");
}

/// Whether a JSON string says the text of chunk `i`.
fn is_chunk_text(text: &RawValue, i: usize) -> bool {
    let mut expected = String::new();
    chunk_text(i, &mut expected);
    serde_json::from_str::<Cow<'_, str>>(text.get()).is_ok_and(|text| text == expected)
}

/// The bytes around the text of a chunk that passed the full check (see
/// `Client::read_stream`).
#[derive(Default)]
struct Template {
    before: Vec<u8>,
    after: Vec<u8>,
}

impl Template {
    /// Whether `line` is this template around the text of chunk `i` written as JSON the
    /// usual way: a quote, the index as 8 digits, then `json_tail` ([`CHUNK_TAIL`] as JSON,
    /// closing quote included).
    fn fits(&self, line: &[u8], i: usize, json_tail: &[u8]) -> bool {
        let digits = line
            .strip_prefix(self.before.as_slice())
            .and_then(|l| l.strip_suffix(self.after.as_slice()))
            .and_then(|t| t.strip_prefix(b"\""))
            .and_then(|t| t.strip_suffix(json_tail));
        digits.is_some_and(|d| {
            d.len() == 8
                && d.iter().all(u8::is_ascii_digit)
                && d.iter().fold(0, |n, d| n * 10 + usize::from(d - b'0')) == i
        })
    }
}

/// One incoming line, parsed in place: `P` is the shape expected of `params` (borrowed raw
/// JSON where it does not matter, a typed borrowed struct on the hot path).
#[derive(Deserialize)]
struct Frame<'a, P> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(default = "none")]
    params: Option<P>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

// `#[serde(default)]` on a generic field would ask for `P: Default`.
fn none<P>() -> Option<P> {
    None
}

/// The params of a `session/update`, down to a text chunk's text.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateParams<'a> {
    #[serde(borrow)]
    session_id: Cow<'a, str>,
    #[serde(borrow)]
    update: Update<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Update<'a> {
    #[serde(borrow)]
    session_update: Cow<'a, str>,
    #[serde(borrow, default)]
    content: Option<TextContent<'a>>,
}

#[derive(Deserialize)]
struct TextContent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    text: Option<&'a RawValue>,
}

/// Just enough of a `session/update` to see whose it is.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionParams<'a> {
    #[serde(borrow)]
    session_id: Cow<'a, str>,
}

/// The params of `session/request_permission`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PermissionParams<'a> {
    #[serde(borrow)]
    session_id: Cow<'a, str>,
    #[serde(borrow)]
    tool_call: ToolCallRef<'a>,
    #[serde(borrow)]
    options: Vec<PermissionChoice<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolCallRef<'a> {
    #[serde(borrow)]
    tool_call_id: Cow<'a, str>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PermissionChoice<'a> {
    #[serde(borrow)]
    option_id: Cow<'a, str>,
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    kind: Cow<'a, str>,
}

/// The options every agent offers, as (optionId, name, kind); the client picks `allow`.
const PERMISSION_OPTIONS: [(&str, &str, &str); 2] = [
    ("allow", "Allow", "allow_once"),
    ("reject", "Reject", "reject_once"),
];

/// The client's answer to every permission request.
const ALLOW: &str = r#""result":{"outcome":{"outcome":"selected","optionId":"allow"}}"#;
/// The client's answer to any other request from the agent (during the handshake).
const NOT_SUPPORTED: &str =
    r#""error":{"code":-32601,"message":"not supported by the bench client"}"#;

/// The answer to the agent's request `id`; `outcome` is its `"result":…` or `"error":…`.
fn reply(id: &RawValue, outcome: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{},{outcome}}}"#, id.get())
}

/// What may arrive while the client waits for an answer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The handshake: anything; requests other than permission questions are refused.
    Setup,
    /// A turn: only `session/update` notifications for the session and well-formed
    /// permission requests.
    Turn,
    /// As `Turn`, but stop at the first `session/update`.
    TurnUntilUpdate,
}

/// What the pump stopped on.
enum Stop {
    /// The answer to our request: `Ok(result)` or `Err(error)`, as raw JSON.
    Answer(std::result::Result<String, String>),
    /// A `session/update` arrived and the caller asked to stop on one.
    Update,
}

/// What `Client::read_stream` read: bytes of all lines, and how many lines it parsed (the
/// others matched the template of a parsed chunk).
struct StreamRead {
    bytes: usize,
    parsed: usize,
}

/// Counters the pump keeps while waiting.
#[derive(Default)]
struct Seen {
    /// Bytes of all lines read, newlines included.
    bytes: usize,
    /// When each `session/request_permission` arrived.
    permissions: Vec<Instant>,
}

/// The editor's end of one connection: frames in from `input`, replies out to `output`.
/// The agents and the baseline are read by this same code.
struct Client<R, W> {
    input: R,
    /// `None` once closed.
    output: Option<W>,
    line: Vec<u8>,
    next_id: u64,
    session: String,
}

impl<R: BufRead, W: Write> Client<R, W> {
    fn new(input: R, output: W) -> Self {
        Client {
            input,
            output: Some(output),
            line: Vec::with_capacity(4096),
            next_id: 0,
            session: String::new(),
        }
    }

    fn handshake(&mut self) -> Result<()> {
        let init = serde_json::json!({
            "protocolVersion": 1,
            "clientCapabilities": {},
            "clientInfo": {"name": "acp-throughput-bench", "version": "0"},
        });
        let id = self.send_request("initialize", &init)?;
        self.answer(id)?;
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

    fn send_request(&mut self, method: &str, params: &impl Serialize) -> Result<u64> {
        let id = self.next_id;
        self.next_id += 1;
        self.write_line(&serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": method, "params": params,
        }))?;
        Ok(id)
    }

    fn prompt(&mut self, text: &str) -> Result<u64> {
        let params = serde_json::json!({
            "sessionId": self.session,
            "prompt": [{"type": "text", "text": text}],
        });
        self.send_request("session/prompt", &params)
    }

    fn cancel(&mut self) -> Result<()> {
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
    fn read_stream(&mut self, id: u64, n: usize) -> Result<StreamRead> {
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
        let line = String::from_utf8_lossy(self.line.trim_ascii_end());
        let line = match line.char_indices().nth(300) {
            Some((at, _)) => format!("{}…", &line[..at]),
            None => line.into_owned(),
        };
        format!("after {index} good chunks, expected {expected}; got {got}: {line}").into()
    }

    /// Reads frames until the answer to `id` (or the first update, in `TurnUntilUpdate`),
    /// answering every permission request at once with "allow". In a turn, anything but
    /// updates for the session and well-formed permission requests is an error.
    fn pump(&mut self, id: u64, mode: Mode, seen: &mut Seen) -> Result<Stop> {
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
        if p.tool_call.tool_call_id.is_empty() {
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
        let line = String::from_utf8_lossy(self.line.trim_ascii_end());
        let line = match line.char_indices().nth(300) {
            Some((at, _)) => format!("{}…", &line[..at]),
            None => line.into_owned(),
        };
        format!("unexpected: {what}: {line}").into()
    }
}

/// A spawned agent, with a thread that samples its peak RSS and kills it past the deadline.
struct AgentProcess {
    child: Child,
    client: Client<BufReader<ChildStdout>, BufWriter<ChildStdin>>,
    peak_kib: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    sampler: Option<JoinHandle<()>>,
}

impl AgentProcess {
    fn start(mut cmd: Command) -> Result<Self> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let pid = child.id();
        let peak_kib = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = {
            let (peak_kib, stop) = (peak_kib.clone(), stop.clone());
            thread::spawn(move || {
                let started = Instant::now();
                while !stop.load(Ordering::Acquire) {
                    if let Some(kib) = vm_hwm_kib(pid) {
                        peak_kib.fetch_max(kib, Ordering::AcqRel);
                    }
                    if started.elapsed() > AGENT_DEADLINE {
                        eprintln!(
                            "throughput: agent {pid} ran past {AGENT_DEADLINE:?}; killing it"
                        );
                        // Only the process this bench started, by its id.
                        let _ = Command::new("kill")
                            .args(["-KILL", &pid.to_string()])
                            .status();
                        return;
                    }
                    thread::sleep(Duration::from_millis(10));
                }
            })
        };
        let client = Client::new(
            BufReader::with_capacity(64 * 1024, stdout),
            BufWriter::new(stdin),
        );
        let mut agent = AgentProcess {
            child,
            client,
            peak_kib,
            stop,
            sampler: Some(sampler),
        };
        agent.client.handshake()?;
        Ok(agent)
    }

    /// The peak RSS so far, sampled once more now.
    fn peak_rss_kib(&self) -> u64 {
        if let Some(kib) = vm_hwm_kib(self.child.id()) {
            self.peak_kib.fetch_max(kib, Ordering::AcqRel);
        }
        self.peak_kib.load(Ordering::Acquire)
    }

    /// Closes stdin and waits for the agent to exit; returns the peak RSS in KiB.
    fn finish(mut self) -> u64 {
        let peak = self.peak_rss_kib();
        drop(self.client.output.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) if Instant::now() > deadline => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break;
                }
                Ok(None) => thread::sleep(Duration::from_millis(5)),
            }
        }
        self.stop.store(true, Ordering::Release);
        if let Some(sampler) = self.sampler.take() {
            let _ = sampler.join();
        }
        peak
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if self.sampler.is_some() {
            // Not finished normally (an error): make sure the process goes away.
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

// ---------------------------------------------------------------------------------------------
// Workloads

#[derive(Default)]
struct Column {
    name: &'static str,
    /// chunks/s and bytes/s of each `stream 100000` run.
    stream_rates: Vec<(f64, f64)>,
    rss_large_kib: Option<u64>,
    rss_small_kib: Option<u64>,
    /// Gaps between consecutive permission requests, over all rounds.
    permission: Vec<Duration>,
    /// Cancel-to-answer latencies, over all rounds.
    cancel: Vec<Duration>,
    problems: Vec<String>,
}

impl Column {
    fn problem(&mut self, problem: String) {
        eprintln!("throughput: problem: {problem}");
        self.problems.push(problem);
    }
}

struct Stats {
    mean: Duration,
    p50: Duration,
    p99: Duration,
}

impl Stats {
    fn of(samples: &[Duration]) -> Option<Stats> {
        let mut samples = samples.to_vec();
        if samples.is_empty() {
            return None;
        }
        samples.sort();
        let total: Duration = samples.iter().sum();
        let at = |q: f64| {
            samples[((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1]
        };
        Some(Stats {
            mean: total / samples.len() as u32,
            p50: at(0.50),
            p99: at(0.99),
        })
    }
}

/// Runs every workload on every agent, interleaved round by round so that a burst of other
/// load on the machine spreads over all columns instead of landing on one.
fn measure(agents: &[Impl]) -> Vec<Column> {
    let mut columns: Vec<Column> = agents.iter().map(|_| Column::default()).collect();
    for run in 0..STREAM_RUNS {
        for (agent, column) in agents.iter().zip(&mut columns) {
            eprintln!(
                "throughput: {}: stream {STREAM_N} (run {})",
                agent.name,
                run + 1
            );
            match stream(agent, STREAM_N) {
                Ok((rate, rss)) => {
                    column.stream_rates.push(rate);
                    column.rss_large_kib = column.rss_large_kib.max(Some(rss));
                }
                Err(e) => column.problem(format!("stream {STREAM_N} (run {}): {e}", run + 1)),
            }
        }
    }
    for (agent, column) in agents.iter().zip(&mut columns) {
        eprintln!("throughput: {}: stream {STREAM_SMALL_N}", agent.name);
        match stream(agent, STREAM_SMALL_N) {
            Ok((_, rss)) => column.rss_small_kib = Some(rss),
            Err(e) => column.problem(format!("stream {STREAM_SMALL_N}: {e}")),
        }
    }
    for round in 0..LATENCY_ROUNDS {
        for (agent, column) in agents.iter().zip(&mut columns) {
            eprintln!(
                "throughput: {}: permission {PERMISSION_N} (round {})",
                agent.name,
                round + 1
            );
            match permission(agent, PERMISSION_N) {
                Ok(gaps) => column.permission.extend(gaps),
                Err(e) => column.problem(format!("permission {PERMISSION_N}: {e}")),
            }
            eprintln!(
                "throughput: {}: cancel x{CANCEL_RUNS} (round {})",
                agent.name,
                round + 1
            );
            match cancel(agent, CANCEL_RUNS) {
                Ok(samples) => column.cancel.extend(samples),
                Err(e) => column.problem(format!("cancel: {e}")),
            }
        }
    }
    for (agent, column) in agents.iter().zip(&mut columns) {
        column.name = agent.name;
    }
    columns
}

/// `stream n` in a fresh process: (chunks/s, bytes/s) and the peak RSS (KiB).
fn stream(agent: &Impl, n: usize) -> Result<((f64, f64), u64)> {
    let mut process = agent.spawn()?;
    let started = Instant::now();
    let id = process.client.prompt(&format!("stream {n}"))?;
    let read = process.client.read_stream(id, n)?;
    let elapsed = started.elapsed();
    let rss = process.finish();
    if read.parsed > 2 {
        // Only the first chunk and the answer need a full parse when the chunks differ in
        // their text alone; more parsing slows the client down.
        eprintln!(
            "throughput: {}: {} of {} frames parsed in full",
            agent.name,
            read.parsed,
            n + 1
        );
    }
    let secs = elapsed.as_secs_f64();
    Ok(((n as f64 / secs, read.bytes as f64 / secs), rss))
}

/// `permission n`: the time between consecutive permission requests, each answered at once.
fn permission(agent: &Impl, n: usize) -> Result<Vec<Duration>> {
    let mut process = agent.spawn()?;
    let id = process.client.prompt(&format!("permission {n}"))?;
    let mut seen = Seen::default();
    seen.permissions.reserve(n);
    let answer = process.client.pump(id, Mode::Turn, &mut seen)?;
    check_stop(answer, "end_turn")?;
    if seen.permissions.len() != n {
        return Err(format!("expected {n} requests, got {}", seen.permissions.len()).into());
    }
    process.finish();
    Ok(seen.permissions.windows(2).map(|w| w[1] - w[0]).collect())
}

/// `sleep` then `session/cancel`, `runs` times in one session: cancel-to-answer latency.
fn cancel(agent: &Impl, runs: usize) -> Result<Vec<Duration>> {
    let mut process = agent.spawn()?;
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let client = &mut process.client;
        let id = client.prompt("sleep")?;
        // The turn is running once its first update arrives.
        match client.pump(id, Mode::TurnUntilUpdate, &mut Seen::default())? {
            Stop::Update => {}
            Stop::Answer(answer) => {
                return Err(format!("answered before sleeping: {answer:?}").into());
            }
        }
        let started = Instant::now();
        client.cancel()?;
        let answer = client.pump(id, Mode::Turn, &mut Seen::default())?;
        samples.push(started.elapsed());
        check_stop(answer, "cancelled")?;
    }
    process.finish();
    Ok(samples)
}

fn check_stop(answer: Stop, expected: &str) -> Result<()> {
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

// ---------------------------------------------------------------------------------------------
// Baseline: serde_json straight into a pipe, read by the same client code

#[derive(Serialize)]
struct Notification<'a> {
    jsonrpc: &'static str,
    method: &'static str,
    params: &'a SessionNotification,
}

/// (chunks/s, bytes/s) of a bare loop serializing the same `n` frames (and the prompt's
/// answer) into a pipe, read and checked by the same `Client::read_stream` as the agents.
fn baseline(n: usize) -> Option<(f64, f64)> {
    const SESSION: &str = "sess_18ea43309356f34a_0";
    let run = || -> Result<(f64, f64)> {
        let (reader, writer) = io::pipe()?;
        let started = Instant::now();
        let producer = thread::spawn(move || -> io::Result<()> {
            let mut out = BufWriter::with_capacity(64 * 1024, writer);
            let session = SessionId::new(SESSION);
            let mut text = String::with_capacity(64);
            for i in 0..n {
                chunk_text(i, &mut text);
                let note = SessionNotification::new(
                    session.clone(),
                    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(
                        text.clone(),
                    ))),
                );
                let frame = Notification {
                    jsonrpc: "2.0",
                    method: "session/update",
                    params: &note,
                };
                serde_json::to_writer(&mut out, &frame)?;
                out.write_all(b"\n")?;
            }
            out.write_all(
                b"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"stopReason\":\"end_turn\"}}\n",
            )?;
            out.flush()
        });
        let mut client = Client::new(BufReader::with_capacity(64 * 1024, reader), io::sink());
        client.session = SESSION.to_owned();
        let read = client.read_stream(0, n);
        let elapsed = started.elapsed();
        drop(client);
        let produced = producer.join();
        let read = read?;
        produced.map_err(|_| "producer panicked")??;
        let secs = elapsed.as_secs_f64();
        Ok((n as f64 / secs, read.bytes as f64 / secs))
    };
    let mut best: Option<(f64, f64)> = None;
    for _ in 0..STREAM_RUNS {
        match run() {
            Ok(rate) => best = Some(best.filter(|b| b.0 >= rate.0).unwrap_or(rate)),
            Err(e) => eprintln!("throughput: baseline: {e}"),
        }
    }
    best
}

// ---------------------------------------------------------------------------------------------
// Report

fn print_table(columns: &[Column], baseline: Option<(f64, f64)>) {
    let find = |name: &str| columns.iter().find(|c| c.name == name);
    let ours = find("ours");
    let ts = find("official TS SDK");
    let rust = find("official Rust SDK");

    type Metric = fn(&Column) -> Option<f64>;
    type Format = fn(f64) -> String;
    let rows: [(&str, Metric, Format); 10] = [
        (
            "stream 100k: chunks/s (best of 3)",
            |c| best_run(c).map(|r| r.0),
            |v| format!("{v:.0}"),
        ),
        (
            "stream 100k: MB/s of frames",
            |c| best_run(c).map(|r| r.1 / 1e6),
            |v| format!("{v:.1}"),
        ),
        (
            "stream 100k: peak RSS MiB",
            |c| c.rss_large_kib.map(mib),
            |v| format!("{v:.1}"),
        ),
        (
            "stream 10k: peak RSS MiB",
            |c| c.rss_small_kib.map(mib),
            |v| format!("{v:.1}"),
        ),
        (
            "permission 2x2000: mean µs",
            |c| Stats::of(&c.permission).map(|s| us(s.mean)),
            fmt_us,
        ),
        (
            "permission 2x2000: p50 µs",
            |c| Stats::of(&c.permission).map(|s| us(s.p50)),
            fmt_us,
        ),
        (
            "permission 2x2000: p99 µs",
            |c| Stats::of(&c.permission).map(|s| us(s.p99)),
            fmt_us,
        ),
        (
            "cancel 2x50: p50 µs",
            |c| Stats::of(&c.cancel).map(|s| us(s.p50)),
            fmt_us,
        ),
        (
            "cancel 2x50: p99 µs",
            |c| Stats::of(&c.cancel).map(|s| us(s.p99)),
            fmt_us,
        ),
        (
            "cancel 2x50: mean µs",
            |c| Stats::of(&c.cancel).map(|s| us(s.mean)),
            fmt_us,
        ),
    ];

    let headers = [
        "workload",
        "ours",
        "official TS SDK",
        "official Rust SDK",
        "baseline",
        "ours/TS",
        "ours/Rust SDK",
    ];
    let mut table: Vec<Vec<String>> = vec![headers.iter().map(|h| (*h).to_owned()).collect()];
    for (i, (label, metric, fmt)) in rows.iter().enumerate() {
        let value = |c: Option<&Column>| c.and_then(metric);
        let cell = |v: Option<f64>| v.map_or_else(|| "n/a".to_owned(), fmt);
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
            _ => "n/a".to_owned(),
        };
        let base = match i {
            0 => baseline.map(|r| r.0),
            1 => baseline.map(|r| r.1 / 1e6),
            _ => None,
        };
        table.push(vec![
            (*label).to_owned(),
            cell(value(ours)),
            cell(value(ts)),
            cell(value(rust)),
            base.map_or_else(|| "-".to_owned(), fmt),
            ratio(value(ours), value(ts)),
            ratio(value(ours), value(rust)),
        ]);
    }
    let widths: Vec<usize> = (0..headers.len())
        .map(|col| {
            table
                .iter()
                .map(|row| row[col].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    println!();
    println!(
        "ACP agent runtime, measured over pipes on this machine ({} cores)",
        thread::available_parallelism().map_or(0, |n| n.get())
    );
    for (r, row) in table.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, w))| {
                if c == 0 {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        println!("| {} |", cells.join(" | "));
        if r == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            println!("|-{}-|", rule.join("-|-"));
        }
    }
    println!(
        "ratios are ours / official: above 1 is better for chunks/s and MB/s, below 1 is better for µs and MiB"
    );
    for column in columns {
        for problem in &column.problems {
            println!("note: {}: {problem}", column.name);
        }
    }
}

/// The fastest `stream 100000` run: (chunks/s, bytes/s).
fn best_run(c: &Column) -> Option<(f64, f64)> {
    c.stream_rates
        .iter()
        .copied()
        .reduce(|a, b| if b.0 > a.0 { b } else { a })
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn fmt_us(v: f64) -> String {
    format!("{v:.0}")
}
