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
//! The agents take turns run by run, so that other load on the machine spreads over all
//! columns; the latency workloads run in 2 rounds whose samples are pooled, and the 1-minute
//! load average before and after is printed with the table. The baseline is a bare serde_json
//! loop writing the same 100,000 frames into a pipe that the same client code reads: the
//! ceiling for the stream rows. Nothing here asserts on speed; the run stops by itself (each
//! agent process is killed after 60 s, the whole measurement after 270 s).
//!
//! Set `ACP_BENCH_NO_TS=1` or `ACP_BENCH_NO_RUST_SDK=1` to leave a column out.

use std::borrow::Cow;
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

/// One incoming line, classified without copying.
#[derive(Deserialize)]
struct Msg<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// What the pump stopped on.
enum Stop {
    /// The answer to our request: `Ok(result)` or `Err(error)`, as raw JSON.
    Answer(std::result::Result<String, String>),
    /// A `session/update` arrived and the caller asked to stop on one.
    Update,
}

/// Counters the pump keeps while waiting.
#[derive(Default)]
struct Seen {
    updates: usize,
    /// Bytes of all lines read, newlines included.
    bytes: usize,
    /// When each `session/request_permission` arrived.
    permissions: Vec<Instant>,
}

/// A spawned agent, with a thread that samples its peak RSS and kills it past the deadline.
struct AgentProcess {
    child: Child,
    stdin: Option<BufWriter<ChildStdin>>,
    stdout: BufReader<ChildStdout>,
    line: Vec<u8>,
    next_id: u64,
    peak_kib: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    sampler: Option<JoinHandle<()>>,
    session: String,
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
        let mut agent = AgentProcess {
            child,
            stdin: Some(BufWriter::new(stdin)),
            stdout: BufReader::with_capacity(64 * 1024, stdout),
            line: Vec::with_capacity(4096),
            next_id: 0,
            peak_kib,
            stop,
            sampler: Some(sampler),
            session: String::new(),
        };
        agent.handshake()?;
        Ok(agent)
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

    fn write_line(&mut self, value: &impl Serialize) -> Result<()> {
        let stdin = self.stdin.as_mut().ok_or("stdin already closed")?;
        serde_json::to_writer(&mut *stdin, value)?;
        stdin.write_all(b"\n")?;
        stdin.flush()?;
        Ok(())
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

    /// Waits for the successful answer to `id`, answering the agent's requests meanwhile.
    fn answer(&mut self, id: u64) -> Result<String> {
        match self.pump(id, false, &mut Seen::default())? {
            Stop::Answer(Ok(result)) => Ok(result),
            Stop::Answer(Err(error)) => Err(format!("request {id} failed: {error}").into()),
            Stop::Update => unreachable!("not asked to stop on updates"),
        }
    }

    /// Reads frames until the answer to `id` (or the first update, if `stop_on_update`),
    /// counting updates and answering every permission request at once with "allow".
    fn pump(&mut self, id: u64, stop_on_update: bool, seen: &mut Seen) -> Result<Stop> {
        loop {
            self.line.clear();
            if self.stdout.read_until(b'\n', &mut self.line)? == 0 {
                return Err("the agent closed its output".into());
            }
            seen.bytes += self.line.len();
            if !stop_on_update && is_update(&self.line) {
                seen.updates += 1;
                continue;
            }
            let msg: Msg<'_> = match serde_json::from_slice(&self.line) {
                Ok(msg) => msg,
                Err(e) if self.line.trim_ascii().is_empty() => {
                    let _ = e;
                    continue;
                }
                Err(e) => return Err(format!("unreadable frame from the agent: {e}").into()),
            };
            match (msg.method.as_deref(), msg.id) {
                (Some("session/update"), None) => {
                    seen.updates += 1;
                    if stop_on_update {
                        return Ok(Stop::Update);
                    }
                }
                (Some(_), None) => {}
                (Some(method), Some(raw_id)) => {
                    let reply = if method == "session/request_permission" {
                        seen.permissions.push(Instant::now());
                        format!(
                            r#"{{"jsonrpc":"2.0","id":{},"result":{{"outcome":{{"outcome":"selected","optionId":"allow"}}}}}}"#,
                            raw_id.get()
                        )
                    } else {
                        format!(
                            r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32601,"message":"not supported by the bench client"}}}}"#,
                            raw_id.get()
                        )
                    };
                    let stdin = self.stdin.as_mut().ok_or("stdin already closed")?;
                    stdin.write_all(reply.as_bytes())?;
                    stdin.write_all(b"\n")?;
                    stdin.flush()?;
                }
                (None, Some(raw_id)) if raw_id.get() == id.to_string() => {
                    return Ok(Stop::Answer(match (msg.result, msg.error) {
                        (Some(result), _) => Ok(result.get().to_owned()),
                        (None, Some(error)) => Err(error.get().to_owned()),
                        (None, None) => Ok("null".to_owned()),
                    }));
                }
                (None, _) => {}
            }
        }
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
        drop(self.stdin.take());
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

/// The client's fast path: a `session/update` notification as all three agents write it is
/// counted without parsing it, so that the client takes as little CPU from the agent as it can
/// on a small machine (`session/update` is never a request, so no answer is missed).
fn is_update(line: &[u8]) -> bool {
    line.starts_with(br#"{"jsonrpc":"2.0","method":"session/update","params":{"#)
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
    let id = process.prompt(&format!("stream {n}"))?;
    let mut seen = Seen::default();
    let answer = process.pump(id, false, &mut seen)?;
    let elapsed = started.elapsed();
    check_stop(answer, "end_turn")?;
    if seen.updates != n {
        return Err(format!("expected {n} updates, got {}", seen.updates).into());
    }
    let rss = process.finish();
    let secs = elapsed.as_secs_f64();
    Ok(((n as f64 / secs, seen.bytes as f64 / secs), rss))
}

/// `permission n`: the time between consecutive permission requests, each answered at once.
fn permission(agent: &Impl, n: usize) -> Result<Vec<Duration>> {
    let mut process = agent.spawn()?;
    let id = process.prompt(&format!("permission {n}"))?;
    let mut seen = Seen::default();
    seen.permissions.reserve(n);
    let answer = process.pump(id, false, &mut seen)?;
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
        let id = process.prompt("sleep")?;
        // The turn is running once its first update arrives.
        match process.pump(id, true, &mut Seen::default())? {
            Stop::Update => {}
            Stop::Answer(answer) => {
                return Err(format!("answered before sleeping: {answer:?}").into());
            }
        }
        let started = Instant::now();
        process.cancel()?;
        let answer = process.pump(id, false, &mut Seen::default())?;
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
            let got = serde_json::from_str::<PromptAnswer>(&result)?.stop_reason;
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

/// (chunks/s, bytes/s) of a bare loop serializing the same `n` frames into a pipe.
fn baseline(n: usize) -> Option<(f64, f64)> {
    let run = || -> Result<(f64, f64)> {
        let (reader, writer) = io::pipe()?;
        let started = Instant::now();
        let producer = thread::spawn(move || -> io::Result<()> {
            let mut out = BufWriter::with_capacity(64 * 1024, writer);
            let session = SessionId::new("sess_18ea43309356f34a_0");
            for i in 0..n {
                let text = format!("chunk {i:08} of the streamed answer.\n");
                let note = SessionNotification::new(
                    session.clone(),
                    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(text))),
                );
                let frame = Notification {
                    jsonrpc: "2.0",
                    method: "session/update",
                    params: &note,
                };
                serde_json::to_writer(&mut out, &frame)?;
                out.write_all(b"\n")?;
            }
            out.flush()
        });
        let mut input = BufReader::with_capacity(64 * 1024, reader);
        let mut line = Vec::with_capacity(4096);
        let (mut updates, mut bytes) = (0, 0);
        loop {
            line.clear();
            if input.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            bytes += line.len();
            if is_update(&line) {
                updates += 1;
                continue;
            }
            let msg: Msg<'_> = serde_json::from_slice(&line)?;
            if msg.method.as_deref() == Some("session/update") && msg.id.is_none() {
                updates += 1;
            }
        }
        let elapsed = started.elapsed();
        producer.join().map_err(|_| "producer panicked")??;
        if updates != n {
            return Err(format!("expected {n} updates, got {updates}").into());
        }
        let secs = elapsed.as_secs_f64();
        Ok((n as f64 / secs, bytes as f64 / secs))
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
