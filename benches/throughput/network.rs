//! The network workload: N WebSocket connections to one agent process, each with one session
//! prompted `stream M` at once, next to the same N turns as N sessions over one stdio
//! connection (`concurrent`'s driving), and next to the official Rust SDK's HTTP server
//! (`agent-client-protocol-http`, `benches/rust-sdk-agent --listen`) under the same client.
//!
//! Over WebSocket, the agent is started with `--listen 127.0.0.1:<free port>` (`$ACP_TOKEN`
//! set, `$ACP_MAX_CONNECTIONS` above N; the official crate has neither and ignores them),
//! then the client, one current-thread tokio runtime in this process, opens the N sockets
//! (64 handshakes at a time; `Authorization: Bearer`), does `initialize` and `session/new` on
//! each, and once all are ready writes every prompt and reads every frame, each socket's
//! turn checked by its own `turns::Turns` (every chunk in order, then `end_turn`). Measured,
//! from the first prompt written to the last answer read: the wall time, updates per second,
//! the agent's CPU time and the client's (this process); and the agent's RSS: idle (after one
//! connection was opened and closed, or after `initialize` over stdio), peak (`VmHWM`), and
//! their difference per connection (per session over stdio). Past the time limit the agent is killed and the
//! turns answered by then reported.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::{Semaphore, mpsc, watch};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::agents::{DataDir, Impl, proc_status_kib};
use crate::client::excerpt;
use crate::concurrent::{create_sessions, prompt_all};
use crate::frames::Frame;
use crate::turns::Turns;
use crate::watchdog::Watchdog;
use crate::{Result, env_number};

/// The bearer token the agent is started with and the client sends.
const TOKEN: &str = "acp-network-bench-token";
/// WebSocket handshakes (with `initialize` and `session/new`) in flight at once.
const CONNECTING: usize = 64;
/// Opening the N connections (or sessions) must not take longer than this.
const SETUP_LIMIT: Duration = Duration::from_secs(120);

/// The workload's size, from the environment.
pub(crate) struct Settings {
    /// `ACP_BENCH_CONNECTIONS` (1,000): WebSocket connections, and sessions over stdio.
    pub(crate) connections: usize,
    /// `ACP_BENCH_SESSION_CHUNKS` (1,000), as in `concurrent`: each prompt is `stream <chunks>`.
    pub(crate) chunks: usize,
    /// `ACP_BENCH_CONCURRENT_LIMIT` in seconds (120), as in `concurrent`.
    pub(crate) limit: Duration,
    /// `ACP_BENCH_NETWORK_ROUNDS` (3): every variant once per round; the median round's
    /// figures are shown for each.
    pub(crate) rounds: usize,
}

impl Settings {
    pub(crate) fn from_env() -> Result<Self> {
        Ok(Settings {
            connections: env_number("ACP_BENCH_CONNECTIONS", 1_000)?.max(1),
            chunks: env_number("ACP_BENCH_SESSION_CHUNKS", 1_000)?,
            limit: Duration::from_secs(env_number("ACP_BENCH_CONCURRENT_LIMIT", 120)? as u64),
            rounds: env_number("ACP_BENCH_NETWORK_ROUNDS", 3)?.max(1),
        })
    }
}

/// How the client reaches the agent.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    /// N WebSocket connections to `--listen`, one session each.
    WebSocket,
    /// One stdio connection, N sessions on it.
    Stdio,
}

/// One run of the workload on one agent.
pub(crate) struct Run {
    /// Opening the connections (or creating the sessions), until the last is ready.
    pub(crate) setup: Duration,
    /// From writing the first prompt to reading the last answer (or to the time limit).
    pub(crate) wall: Duration,
    pub(crate) answered: usize,
    /// Chunks read and checked, over all turns.
    pub(crate) updates: u64,
    pub(crate) timed_out: bool,
    /// The agent's RSS before any session (KiB).
    pub(crate) idle_kib: u64,
    /// The agent's peak RSS (`VmHWM`, KiB) at the end.
    pub(crate) peak_kib: u64,
    /// The agent's CPU time (user + system) during `wall`.
    pub(crate) agent_cpu: Duration,
    /// This process's CPU time during `wall` (the client: reading and checking).
    pub(crate) client_cpu: Duration,
    /// Over WebSocket: TCP segments sent on the machine during `wall` (`OutSegs` of
    /// `/proc/net/snmp`: both directions of every loopback connection, and whatever else
    /// runs), a sign of how many writes the frames took.
    pub(crate) segments: Option<u64>,
}

impl Run {
    pub(crate) fn updates_per_s(&self) -> f64 {
        self.updates as f64 / self.wall.as_secs_f64()
    }
}

/// One variant's runs, round by round.
pub(crate) struct Variant {
    /// The agent's name (`Impl::name`).
    pub(crate) name: &'static str,
    pub(crate) transport: Transport,
    pub(crate) runs: Vec<Result<Run, String>>,
}

impl Variant {
    /// The agent and the transport, as a row of the table names them.
    pub(crate) fn label(&self) -> String {
        let transport = match self.transport {
            Transport::WebSocket => "WebSocket",
            Transport::Stdio => "stdio",
        };
        format!("{}, {transport}", self.name)
    }

    /// The run with the median updates/s of those that finished (timed-out runs included,
    /// with what they got done).
    pub(crate) fn median(&self) -> Option<&Run> {
        let mut ok: Vec<&Run> = self.runs.iter().filter_map(|r| r.as_ref().ok()).collect();
        ok.sort_by(|a, b| a.updates_per_s().total_cmp(&b.updates_per_s()));
        ok.get(ok.len() / 2).copied()
    }
}

/// The network workload: ours (with and without the store) over WebSocket and over stdio,
/// and the official Rust SDK's agent over WebSocket (over stdio too with
/// `ACP_BENCH_NETWORK_SDK_STDIO=1`: it streams ~11,000 chunks/s there, so its 1,000,000
/// updates take longer than the time limit), one run of each per round (so that other load
/// on the machine spreads over all of them).
pub(crate) fn run_all(agents: &[Impl], settings: &Settings, watchdog: &Watchdog) -> Vec<Variant> {
    use Transport::{Stdio, WebSocket};
    let mut variants = Vec::new();
    let sdk_stdio = std::env::var("ACP_BENCH_NETWORK_SDK_STDIO").is_ok_and(|v| v == "1");
    for name in ["ours", "ours, no store", "official Rust SDK"] {
        if agents.iter().any(|a| a.name == name) {
            let sdk = name == "official Rust SDK";
            for transport in [WebSocket, Stdio] {
                if sdk && transport == Stdio && !sdk_stdio {
                    continue;
                }
                variants.push(Variant {
                    name,
                    transport,
                    runs: Vec::new(),
                });
            }
        }
    }
    for round in 1..=settings.rounds {
        for variant in &mut variants {
            let Some(agent) = agents.iter().find(|a| a.name == variant.name) else {
                continue;
            };
            eprintln!(
                "throughput: {}: {} x stream {} at once (round {round} of {})",
                variant.label(),
                settings.connections,
                settings.chunks,
                settings.rounds
            );
            let run = run(agent, variant.transport, settings, watchdog);
            if let Err(e) = &run {
                eprintln!("throughput: problem: {}: network: {e}", variant.label());
            }
            variant.runs.push(run.map_err(|e| e.to_string()));
        }
    }
    variants
}

/// Runs the workload once on `agent` over `transport`, with a data directory of its own.
fn run(
    agent: &Impl,
    transport: Transport,
    settings: &Settings,
    watchdog: &Watchdog,
) -> Result<Run> {
    match transport {
        Transport::WebSocket => websocket(agent, settings, watchdog),
        Transport::Stdio => stdio(agent, settings, watchdog),
    }
}

/// N sessions over one stdio connection, driven as `concurrent` drives them.
fn stdio(agent: &Impl, settings: &Settings, watchdog: &Watchdog) -> Result<Run> {
    let dir = DataDir::fresh("network-stdio")?;
    let mut process = agent.start(settings.limit + SETUP_LIMIT * 2, Some(dir.path()))?;
    process.client.initialize()?;
    let pid = process.pid();
    let idle_kib = proc_status_kib(pid, "VmRSS:").ok_or("no VmRSS for the agent")?;
    let started = Instant::now();
    let sessions = create_sessions(&mut process, settings.connections)?;
    let setup = started.elapsed();
    let cpu = Cpu::now(pid)?;
    let driven = prompt_all(
        &mut process,
        sessions,
        settings.chunks,
        settings.limit,
        watchdog,
    )?;
    let (agent_cpu, client_cpu) = cpu.since(pid);
    let peak_kib = process.peak_rss_kib();
    process.finish();
    Ok(Run {
        setup,
        wall: driven.wall,
        answered: driven.turns.answered,
        updates: driven.turns.updates,
        timed_out: driven.timed_out,
        idle_kib,
        peak_kib,
        agent_cpu,
        client_cpu,
        segments: None,
    })
}

/// The agent listening on the network, killed when dropped.
struct Listening {
    child: Child,
    addr: String,
}

impl Listening {
    /// Starts `agent` with `--listen` on a free loopback port and waits until it accepts.
    fn start(agent: &Impl, connections: usize, dir: &DataDir) -> Result<Self> {
        // A port the system just handed out and took back: free unless another process
        // takes it in the next few milliseconds (then the agent fails to listen and says so).
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let addr = format!("127.0.0.1:{port}");
        let mut cmd: Command = agent.command(Some(dir.path()));
        cmd.arg("--listen")
            .arg(&addr)
            .env("ACP_TOKEN", TOKEN)
            // The sessions' cwd (the temporary directory) is granted to the one user.
            .env("ACP_ROOTS", std::env::temp_dir())
            .env("ACP_MAX_CONNECTIONS", (connections + 16).to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        let mut listening = Listening {
            child: cmd.spawn()?,
            addr,
        };
        let started = Instant::now();
        while TcpStream::connect(&listening.addr).is_err() {
            if let Some(status) = listening.child.try_wait()? {
                return Err(format!("the agent exited before listening ({status})").into());
            }
            if started.elapsed() > Duration::from_secs(30) {
                return Err(format!("nothing listens on {} after 30 s", listening.addr).into());
            }
            thread::sleep(Duration::from_millis(10));
        }
        Ok(listening)
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        // Only the process this bench started, by its handle.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// N WebSocket connections, one session each.
fn websocket(agent: &Impl, settings: &Settings, watchdog: &Watchdog) -> Result<Run> {
    let dir = DataDir::fresh("network-ws")?;
    let listening = Listening::start(agent, settings.connections, &dir)?;
    let pid = listening.child.id();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let url = format!("ws://{}/acp", listening.addr);
    // Idle as over stdio, after `initialize`: one connection opened (`initialize`,
    // `session/new`) and closed first, so that what the first connection sets up once (the
    // store, say) is not counted per connection.
    runtime.block_on(async {
        let (socket, _) = open(&url).await?;
        drop(socket);
        tokio::time::sleep(Duration::from_millis(100)).await;
        Result::<()>::Ok(())
    })?;
    let idle_kib = proc_status_kib(pid, "VmRSS:").ok_or("no VmRSS for the agent")?;
    let driven = runtime.block_on(drive(url, settings, pid, watchdog))?;
    let peak_kib = proc_status_kib(pid, "VmHWM:").unwrap_or(0);
    drop(listening);
    Ok(Run {
        idle_kib,
        peak_kib,
        ..driven
    })
}

/// What one connection's task saw of its turn.
struct Outcome {
    updates: u64,
    answered: bool,
    /// When its answer was read (or the connection failed).
    ended: Instant,
    problem: Option<String>,
}

/// Opens the connections, then prompts all at once and reads every turn to its end.
async fn drive(url: String, settings: &Settings, pid: u32, watchdog: &Watchdog) -> Result<Run> {
    let n = settings.connections;
    let prompt = format!("stream {}", settings.chunks);
    let connecting = Arc::new(Semaphore::new(CONNECTING));
    let (ready_tx, mut ready_rx) = mpsc::channel::<std::result::Result<(), String>>(n);
    let (go_tx, go_rx) = watch::channel(false);
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(n);
    for _ in 0..n {
        let (url, prompt) = (url.clone(), prompt.clone());
        let (connecting, ready, mut go) = (connecting.clone(), ready_tx.clone(), go_rx.clone());
        let chunks = settings.chunks;
        tasks.push(tokio::spawn(async move {
            let permit = connecting.acquire_owned().await;
            let opened = open(&url).await;
            drop(permit);
            let (mut socket, session) = match opened {
                Ok(opened) => opened,
                Err(e) => {
                    let _ = ready.send(Err(e.to_string())).await;
                    return None;
                }
            };
            let _ = ready.send(Ok(())).await;
            if go.wait_for(|go| *go).await.is_err() {
                return None;
            }
            Some(turn(&mut socket, session, &prompt, chunks).await)
        }));
    }
    drop(ready_tx);
    let mut problems = Vec::new();
    let setup_done = tokio::time::timeout(SETUP_LIMIT, async {
        for _ in 0..n {
            match ready_rx.recv().await {
                Some(Ok(())) => {}
                Some(Err(e)) => problems.push(e),
                None => break,
            }
        }
    })
    .await;
    if setup_done.is_err() {
        return Err(format!("the {n} connections were not open within {SETUP_LIMIT:?}").into());
    }
    if let Some(first) = problems.first() {
        return Err(format!(
            "{} of {n} connections failed to open; the first: {first}",
            problems.len()
        )
        .into());
    }
    let setup = started.elapsed();
    let cpu = Cpu::now(pid)?;
    let segments = tcp_out_segments();
    watchdog.arm(pid, settings.limit);
    let started = Instant::now();
    go_tx.send_replace(true);
    let mut run = Run {
        setup,
        wall: Duration::ZERO,
        answered: 0,
        updates: 0,
        timed_out: false,
        idle_kib: 0,
        peak_kib: 0,
        agent_cpu: Duration::ZERO,
        client_cpu: Duration::ZERO,
        segments: None,
    };
    let mut last = started;
    for task in tasks {
        let Some(outcome) = task
            .await
            .map_err(|e| format!("a connection's task: {e}"))?
        else {
            continue;
        };
        run.updates += outcome.updates;
        run.answered += usize::from(outcome.answered);
        last = last.max(outcome.ended);
        problems.extend(outcome.problem);
    }
    run.wall = last - started;
    watchdog.disarm();
    (run.agent_cpu, run.client_cpu) = cpu.since(pid);
    run.segments = segments
        .zip(tcp_out_segments())
        .map(|(before, after)| after.saturating_sub(before));
    run.timed_out = watchdog.fired() && run.answered < n;
    match problems.first() {
        Some(first) if !run.timed_out => {
            Err(format!("{} of {n} turns failed; the first: {first}", problems.len()).into())
        }
        _ => Ok(run),
    }
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Connects (with the bearer token), then `initialize` (id 0) and `session/new` (id 1):
/// the socket and the session's id.
async fn open(url: &str) -> Result<(Socket, String)> {
    let mut request = url.into_client_request()?;
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {TOKEN}").parse()?);
    let (mut socket, _) = tokio_tungstenite::connect_async_with_config(request, None, true)
        .await
        .map_err(|e| format!("connecting to {url}: {e}"))?;
    let init = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": 1,
            "clientCapabilities": {},
            "clientInfo": {"name": "acp-throughput-bench", "version": "0"},
        },
    });
    send(&mut socket, &init).await?;
    answer(&mut socket, "0").await?;
    let new = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "session/new",
        "params": {"cwd": std::env::temp_dir(), "mcpServers": []},
    });
    send(&mut socket, &new).await?;
    let result = answer(&mut socket, "1").await?;
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct NewSession {
        session_id: String,
    }
    let session = serde_json::from_str::<NewSession>(&result)
        .map_err(|_| format!("session/new failed: {result}"))?;
    Ok((socket, session.session_id))
}

async fn send(socket: &mut Socket, message: &serde_json::Value) -> Result<()> {
    socket.send(Message::text(message.to_string())).await?;
    Ok(())
}

/// The next text message's bytes; an error if the socket ends first.
async fn next_text(socket: &mut Socket) -> Result<tokio_tungstenite::tungstenite::Utf8Bytes> {
    loop {
        match socket.next().await {
            Some(Ok(Message::Text(text))) => return Ok(text),
            Some(Ok(Message::Close(close))) => {
                return Err(format!("the agent closed the socket ({close:?})").into());
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(e.into()),
            None => return Err("the socket ended".into()),
        }
    }
}

/// Reads until the answer to request `id`, skipping the agent's notifications (what a new
/// session is told is not measured); its result as raw JSON.
async fn answer(socket: &mut Socket, id: &str) -> Result<String> {
    loop {
        let text = next_text(socket).await?;
        let frame = serde_json::from_str::<Frame<'_, &RawValue>>(&text)
            .map_err(|e| format!("unreadable frame ({e}): {}", excerpt(text.as_bytes())))?;
        match (frame.method.as_deref(), frame.id) {
            (Some(_), None) => {}
            (None, Some(got)) if got.get() == id => {
                return match (frame.result, frame.error) {
                    (Some(result), _) => Ok(result.get().to_owned()),
                    (_, Some(error)) => Err(format!("request {id} failed: {error}").into()),
                    _ => Ok("null".to_owned()),
                };
            }
            _ => return Err(format!("unexpected frame: {}", excerpt(text.as_bytes())).into()),
        }
    }
}

/// Prompts `session` (id 2) and reads its turn to the answer, checking every frame.
async fn turn(socket: &mut Socket, session: String, prompt: &str, chunks: usize) -> Outcome {
    let mut turns = Turns::new(vec![session.clone()], chunks, 2);
    let request = serde_json::json!({
        "jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": prompt}]},
    });
    let read: Result<()> = async {
        send(socket, &request).await?;
        while !turns.all_answered() {
            let text = next_text(socket).await?;
            turns.check(text.as_bytes())?;
        }
        Ok(())
    }
    .await;
    Outcome {
        updates: turns.updates,
        answered: turns.all_answered(),
        ended: Instant::now(),
        problem: read.err().map(|e| e.to_string()),
    }
}

/// CPU time (user + system) of the agent and of this process, at one moment.
struct Cpu {
    agent: Duration,
    client: Duration,
}

impl Cpu {
    fn now(pid: u32) -> Result<Self> {
        Ok(Cpu {
            agent: cpu_time(&pid.to_string()).ok_or("no CPU time for the agent")?,
            client: cpu_time("self").ok_or("no CPU time for this process")?,
        })
    }

    /// The agent's and this process's CPU time since `self` (zero where unreadable).
    fn since(&self, pid: u32) -> (Duration, Duration) {
        let agent = cpu_time(&pid.to_string()).unwrap_or(self.agent);
        let client = cpu_time("self").unwrap_or(self.client);
        (agent - self.agent, client - self.client)
    }
}

/// User + system time of `/proc/<pid>/stat`, in clock ticks of 10 ms (Linux's `USER_HZ`).
fn cpu_time(pid: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// `OutSegs` of the `Tcp:` lines of `/proc/net/snmp` (the TCP segments this network
/// namespace has sent).
fn tcp_out_segments() -> Option<u64> {
    let snmp = std::fs::read_to_string("/proc/net/snmp").ok()?;
    let mut lines = snmp.lines().filter(|l| l.starts_with("Tcp:"));
    let (names, values) = (lines.next()?, lines.next()?);
    let at = names.split_whitespace().position(|n| n == "OutSegs")?;
    values.split_whitespace().nth(at)?.parse().ok()
}
