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
//! load average before and after is printed with the table. Two baselines are measured in the
//! same run: the *bare loop agent* (`bare`), a one-thread blocking serde_json loop run as a
//! process (this executable with `--bare-agent`) and driven over the same pipes by the same
//! client, the ceiling for every row; and the *in-process loop*, serde_json writing the same
//! 100,000 frames into a pipe that the client reads, the ceiling for the stream rows. Nothing
//! here asserts on speed; the run stops by itself (each agent process is killed after 60 s,
//! the whole measurement after 270 s, plus the time limits of the two workloads below).
//!
//! Two more workloads measure what recording sessions costs, on ours with the default store
//! and ours without one (`ACP_BENCH_NO_STORE=1`) in the same run, with the ratios:
//!
//! - `concurrent`: one agent process, 1,000 sessions (`ACP_BENCH_SESSIONS`) each prompted
//!   `stream 1000` (`ACP_BENCH_SESSION_CHUNKS`) at once over the one connection, every frame
//!   checked per session; wall time to the last answer, updates/s, turns answered, peak RSS;
//!   past 120 s (`ACP_BENCH_CONCURRENT_LIMIT`, seconds) the agent is killed and the turns
//!   answered by then reported. With the store, the agent is then started again on the same
//!   data directory and 100 of the sessions (`ACP_BENCH_LOAD_SAMPLE`: a number, `all`, or 0
//!   for none) are loaded back, each replay checked (see `concurrent`);
//! - `startup`: spawn → `initialize` answered, 100 times (`ACP_BENCH_STARTUP_RUNS`) for each
//!   of: ours without a store, ours on a fresh empty data directory, ours on a database that
//!   already holds 1,000 sessions (`ACP_BENCH_STARTUP_SESSIONS`), and the official SDKs'
//!   agents; interleaved; p50 and p99 (see `startup`).
//!
//! `network`: N WebSocket connections (`ACP_BENCH_CONNECTIONS`, 1,000) to one agent process
//! started with `--listen` (`$ACP_TOKEN`, `$ACP_MAX_CONNECTIONS`), one session each, every
//! session prompted `stream 1000` (`ACP_BENCH_SESSION_CHUNKS`) at once, every frame checked;
//! next to the same N turns as N sessions over one stdio connection (as `concurrent`), for
//! ours with and without the store, and the official Rust SDK's agent on the official HTTP
//! crate's server (`agent-client-protocol-http` 5.0.0, `--listen` of
//! `benches/rust-sdk-agent`; over stdio too with `ACP_BENCH_NETWORK_SDK_STDIO=1`); 3 rounds (`ACP_BENCH_NETWORK_ROUNDS`), the median shown:
//! updates/s, wall time, the agent's peak and idle RSS and RSS per connection, CPU time (see
//! `network`).
//!
//! One more, `llm`, measures the model loop (`acp::llm::Model::run`) against reading the same
//! Chat Completions stream raw, from a loopback model server in this process, and the time
//! from the server's first byte to the editor's first chunk (see `llm`).
//!
//! `ACP_BENCH_ONLY=concurrent,startup` (any of `stream`, `permission`, `cancel`,
//! `concurrent`, `startup`, `network`, `llm`, comma-separated) runs only those workloads; all run by default.
//! Set `ACP_BENCH_NO_TS=1` or `ACP_BENCH_NO_RUST_SDK=1` to leave a column out, and
//! `ACP_BENCH_BEFORE=<path>` adds another build of the bench agent (an older commit's) as
//! the columns "before" and "before, v2", measured in the same rounds as ours;
//! `ACP_BENCH_OURS=<path>` to measure another build of the bench agent as "ours" (an older
//! commit's, for a before/after comparison in the same conditions).
//!
//! The code is laid out by concern: this file holds the constants, `main` and the measuring
//! schedule; `agents` builds and starts the agents; `frames` holds the shapes of the frames
//! on the wire; `client` is the editor's end of a connection; `workloads` runs one workload
//! on one agent (and the in-process loop); `bare` is the bare loop agent; `concurrent` and
//! `turns` are the concurrent-sessions workload and its check of interleaved turns;
//! `startup` is the startup workload; `network` the network workload and its WebSocket
//! client; `llm` is the model-loop workload and its loopback model
//! server; `watchdog` kills a process past a time limit; `report`
//! `report_store` and `report_network` turn the samples into the printed tables.

mod agents;
mod bare;
mod client;
mod concurrent;
mod frames;
mod llm;
mod network;
mod report;
mod report_network;
mod report_store;
mod startup;
mod turns;
mod watchdog;
mod workloads;

use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use agents::{DataDir, Impl, build_ours, build_rust_sdk, prepare_ts};
use report::{load_average, print_recording, print_table};
use watchdog::Watchdog;
use workloads::{baseline, cancel, permission, stream};

const STREAM_N: usize = 100_000;
const STREAM_SMALL_N: usize = 10_000;
const STREAM_RUNS: usize = 3;
const PERMISSION_N: usize = 2_000;
const CANCEL_RUNS: usize = 50;
/// Rounds of the permission and cancel workloads; their samples are pooled.
const LATENCY_ROUNDS: usize = 10;
/// An agent process still running after this long is killed (its workload then fails).
const AGENT_DEADLINE: Duration = Duration::from_secs(60);
/// The measuring part of the run (after the builds) stops the whole bench past this, plus
/// the time the concurrent and startup workloads may take.
const RUN_DEADLINE: Duration = Duration::from_secs(270);
/// The official Rust SDK's agent is skipped if it does not build within this.
const RUST_SDK_BUILD_LIMIT: Duration = Duration::from_secs(600);

type Error = Box<dyn std::error::Error + Send + Sync>;
type Result<T, E = Error> = std::result::Result<T, E>;

/// The workloads, as `ACP_BENCH_ONLY` names them.
const WORKLOADS: [&str; 7] = [
    "stream",
    "permission",
    "cancel",
    "concurrent",
    "startup",
    "network",
    "llm",
];

/// The workloads to run: `ACP_BENCH_ONLY` (comma-separated names), or all of them.
struct Only(Vec<&'static str>);

impl Only {
    fn from_env() -> Result<Self> {
        let Ok(list) = std::env::var("ACP_BENCH_ONLY") else {
            return Ok(Only(WORKLOADS.to_vec()));
        };
        let mut only = Vec::new();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match WORKLOADS.iter().find(|w| **w == name) {
                Some(w) => only.push(*w),
                None => {
                    return Err(format!(
                        "ACP_BENCH_ONLY: no workload `{name}`; the workloads are {}",
                        WORKLOADS.join(", ")
                    )
                    .into());
                }
            }
        }
        if only.is_empty() {
            return Err(format!("ACP_BENCH_ONLY names none of {}", WORKLOADS.join(", ")).into());
        }
        Ok(Only(only))
    }

    fn has(&self, workload: &str) -> bool {
        self.0.contains(&workload)
    }

    /// Whether any of the workloads of the first table runs.
    fn table(&self) -> bool {
        ["stream", "permission", "cancel"]
            .iter()
            .any(|w| self.has(w))
    }
}

/// A whole number from the environment variable `var`, or `default` if it is unset.
fn env_number(var: &str, default: usize) -> Result<usize> {
    match std::env::var(var) {
        Err(_) => Ok(default),
        Ok(v) => v
            .trim()
            .replace(['_', ','], "")
            .parse()
            .map_err(|_| format!("{var}={v:?}: expected a whole number").into()),
    }
}

fn main() {
    // Run as the bare-loop agent (by this bench itself).
    if std::env::args().any(|a| a == "--bare-agent") {
        if let Err(e) = bare::run() {
            eprintln!("bare agent: {e}");
            std::process::exit(1);
        }
        return;
    }
    let settings = Only::from_env().and_then(|only| {
        let concurrent = concurrent::Settings::from_env()?;
        let startup_runs = env_number("ACP_BENCH_STARTUP_RUNS", 100)?.max(1);
        let startup_sessions = env_number("ACP_BENCH_STARTUP_SESSIONS", 1_000)?;
        let network = network::Settings::from_env()?;
        Ok((only, concurrent, startup_runs, startup_sessions, network))
    });
    let (only, concurrent_settings, startup_runs, startup_sessions, network_settings) =
        match settings {
            Ok(settings) => settings,
            Err(e) => {
                eprintln!("throughput: {e}");
                std::process::exit(1);
            }
        };
    // The official SDKs and the bare loop take part in the first table and in startup only;
    // the official Rust SDK in the network workload too.
    let others = only.table() || only.has("startup");
    let rust_sdk = others || only.has("network");
    // `cargo bench` passes `--bench`; anything else (e.g. a test filter) is ignored.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("throughput: building the agents…");

    let mut agents = Vec::new();
    match build_ours(root, &cargo) {
        Ok(path) => {
            agents.push(Impl::new("ours", Command::new(&path)));
            let mut unrecorded = Command::new(&path);
            unrecorded.env("ACP_BENCH_NO_STORE", "1");
            agents.push(Impl::new("ours, no store", unrecorded));
            #[cfg(feature = "v2")]
            agents.push(Impl::new("ours, v2", Command::new(&path)).over_v2());
        }
        Err(e) => {
            eprintln!("throughput: cannot build examples/bench.rs: {e}");
            std::process::exit(1);
        }
    }
    // Another build of the bench agent measured in the same rounds (an older commit, built
    // beside this one): before/after tables without a run in between.
    if let Some(before) = std::env::var_os("ACP_BENCH_BEFORE") {
        agents.push(Impl::new("before", Command::new(&before)));
        #[cfg(feature = "v2")]
        agents.push(Impl::new("before, v2", Command::new(&before)).over_v2());
    }
    if others {
        if skipped("ACP_BENCH_NO_TS") {
            eprintln!("throughput: official TS SDK left out (ACP_BENCH_NO_TS)");
        } else {
            match prepare_ts(root) {
                Ok(cmd) => agents.push(Impl::new("official TS SDK", cmd)),
                Err(e) => eprintln!("throughput: official TS SDK skipped: {e}"),
            }
        }
    }
    if rust_sdk {
        if skipped("ACP_BENCH_NO_RUST_SDK") {
            eprintln!("throughput: official Rust SDK left out (ACP_BENCH_NO_RUST_SDK)");
        } else {
            match build_rust_sdk(root, &cargo) {
                Ok(path) => agents.push(Impl::new("official Rust SDK", Command::new(path))),
                Err(e) => eprintln!("throughput: official Rust SDK skipped: {e}"),
            }
        }
    }

    if only.table() {
        match std::env::current_exe() {
            Ok(exe) => {
                let mut cmd = Command::new(exe);
                cmd.arg("--bare-agent");
                agents.push(Impl::new("bare loop", cmd));
            }
            Err(e) => eprintln!("throughput: bare loop agent skipped: {e}"),
        }
    }

    let started = Instant::now();
    let mut deadline = Duration::ZERO;
    if only.table() {
        deadline += RUN_DEADLINE;
    }
    if only.has("concurrent") {
        // Per variant: creating the sessions, the limit, the exit, loading back.
        deadline += 2
            * concurrent_settings.rounds as u32
            * (concurrent_settings.limit + Duration::from_secs(600));
    }
    if only.has("startup") {
        deadline += Duration::from_secs(900);
    }
    if only.has("llm") {
        deadline += Duration::from_secs(300);
    }
    if only.has("network") {
        // Per run: opening the connections, the limit, and the rest.
        deadline += 6
            * network_settings.rounds as u32
            * (network_settings.limit + Duration::from_secs(300));
    }
    thread::spawn(move || {
        thread::sleep(deadline);
        eprintln!("throughput: gave up after {deadline:?}");
        std::process::exit(2);
    });

    let load_before = load_average();
    if only.table() {
        let columns = measure(&agents, &only);
        let baseline = if only.has("stream") {
            eprintln!("throughput: baseline");
            baseline(STREAM_N)
        } else {
            None
        };
        let load_after = load_average();
        print_table(&columns, baseline);
        print_recording(&columns);
        report::print_v2(&columns);
        report::print_before(&columns);
        println!(
            "load average (1 min) before/after the measurements: {load_before} / {load_after}"
        );
    }
    let watchdog = Watchdog::new();
    if only.has("concurrent") {
        let load_before = load_average();
        let runs = run_concurrent(&agents, &concurrent_settings, &watchdog);
        let load_after = load_average();
        report_store::print_concurrent(&runs, &concurrent_settings);
        println!("load average (1 min) before/after: {load_before} / {load_after}");
    }
    if only.has("startup") {
        let load_before = load_average();
        let samples = run_startup(&agents, startup_runs, startup_sessions, &watchdog);
        let load_after = load_average();
        report_store::print_startup(&samples, startup_runs, startup_sessions);
        println!("load average (1 min) before/after: {load_before} / {load_after}");
    }
    if only.has("network") {
        let load_before = load_average();
        let variants = network::run_all(&agents, &network_settings, &watchdog);
        let load_after = load_average();
        report_network::print_network(&variants, &network_settings);
        println!("load average (1 min) before/after: {load_before} / {load_after}");
    }
    if only.has("llm")
        && let Some(ours) = agents.iter().find(|a| a.name == "ours")
    {
        let load_before = load_average();
        match llm::run(ours) {
            Ok(samples) => {
                let load_after = load_average();
                llm::print(&samples);
                println!("load average (1 min) before/after: {load_before} / {load_after}");
            }
            Err(e) => eprintln!("throughput: problem: llm: {e}"),
        }
    }
    eprintln!(
        "throughput: measured in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

fn skipped(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| !v.is_empty() && v != "0")
}

/// The concurrent-sessions workload on ours without and with the store (in that order), in
/// `settings.rounds` rounds; the round with the median updates/s ratio is returned (the store
/// check runs in the last round only), after printing every round's ratio.
fn run_concurrent(
    agents: &[Impl],
    settings: &concurrent::Settings,
    watchdog: &Watchdog,
) -> Vec<(&'static str, Result<concurrent::Run, String>)> {
    let mut rounds = Vec::new();
    for round in 1..=settings.rounds {
        let last = round == settings.rounds;
        let mut runs = Vec::new();
        for name in ["ours, no store", "ours"] {
            let Some(agent) = agents.iter().find(|a| a.name == name) else {
                continue;
            };
            eprintln!(
                "throughput: {name}: {} sessions x stream {} at once (round {round} of {})",
                settings.sessions, settings.chunks, settings.rounds
            );
            let run = concurrent::concurrent(agent, settings, last && name == "ours", watchdog);
            if let Err(e) = &run {
                eprintln!("throughput: problem: {name}: concurrent: {e}");
            }
            runs.push((name, run.map_err(|e| e.to_string())));
        }
        rounds.push((report_store::concurrent_ratio(&runs), runs));
    }
    let ratios: Vec<String> = rounds
        .iter()
        .map(|(r, _)| r.map_or("-".to_owned(), |r| format!("{r:.2}")))
        .collect();
    // Failed rounds (no ratio) sort first: the median is of the rounds that ran.
    rounds.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
    let median = rounds.len() / 2;
    let (ratio, mut runs) = rounds.swap_remove(median);
    println!();
    println!(
        "concurrent sessions: with/without-store updates/s ratio per round: {}; median {}",
        ratios.join(", "),
        ratio.map_or("-".to_owned(), |r| format!("{r:.2}"))
    );
    // The store check ran in the last round: keep its result with the median round's figures.
    if let Some(check) = rounds
        .iter_mut()
        .flat_map(|(_, runs)| runs.iter_mut())
        .find_map(|(n, r)| (*n == "ours").then_some(r).and_then(|r| r.as_mut().ok()))
        .and_then(|r| r.store.take().map(|s| (s, r.exit)))
        && let Some(Ok(run)) = runs.iter_mut().find(|(n, _)| *n == "ours").map(|(_, r)| r)
        && run.store.is_none()
    {
        run.store = Some(check.0);
        run.exit = check.1;
    }
    runs
}

/// The startup workload: ours without a store, on a fresh data directory, on a database
/// holding `sessions` sessions, and the official SDKs' agents.
fn run_startup(
    agents: &[Impl],
    runs: usize,
    sessions: usize,
    watchdog: &Watchdog,
) -> Vec<startup::Samples> {
    use startup::{Data, Variant};
    let find = |name: &str| agents.iter().find(|a| a.name == name);
    let mut variants = Vec::new();
    if let Some(agent) = find("ours, no store") {
        variants.push(Variant {
            name: "ours, no store",
            agent,
            data: Data::Shared,
        });
    }
    let existing = match DataDir::fresh("startup-existing") {
        Ok(dir) => Some(dir),
        Err(e) => {
            eprintln!("throughput: startup: no data directory: {e}");
            None
        }
    };
    if let Some(agent) = find("ours") {
        variants.push(Variant {
            name: "ours, store: first run",
            agent,
            data: Data::Fresh,
        });
        if let Some(dir) = &existing {
            eprintln!(
                "throughput: startup: recording {sessions} sessions for the existing database"
            );
            match concurrent::populate(agent, dir, sessions, 10, watchdog) {
                Ok(()) => variants.push(Variant {
                    name: "ours, store: existing database",
                    agent,
                    data: Data::At(dir.path()),
                }),
                Err(e) => eprintln!("throughput: startup: cannot fill the database: {e}"),
            }
        }
    }
    for name in ["official Rust SDK", "official TS SDK"] {
        if let Some(agent) = find(name) {
            variants.push(Variant {
                name: agent.name,
                agent,
                data: Data::Shared,
            });
        }
    }
    eprintln!("throughput: startup x{runs}");
    startup::startup(&variants, runs, watchdog)
}

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

/// Runs every workload on every agent, interleaved round by round so that a burst of other
/// load on the machine spreads over all columns instead of landing on one.
fn measure(agents: &[Impl], only: &Only) -> Vec<Column> {
    let mut columns: Vec<Column> = agents.iter().map(|_| Column::default()).collect();
    for (agent, column) in agents.iter().zip(&mut columns) {
        column.name = agent.name;
    }
    if only.has("stream") {
        stream_runs(agents, &mut columns);
    }
    for round in 0..LATENCY_ROUNDS {
        for (agent, column) in agents.iter().zip(&mut columns) {
            if only.has("permission") {
                eprintln!(
                    "throughput: {}: permission {PERMISSION_N} (round {})",
                    agent.name,
                    round + 1
                );
                match permission(agent, PERMISSION_N) {
                    Ok(gaps) => column.permission.extend(gaps),
                    Err(e) => column.problem(format!("permission {PERMISSION_N}: {e}")),
                }
            }
            if only.has("cancel") {
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
    }
    columns
}

/// The stream workloads: `stream 100000` 3 times per agent, then `stream 10000` once.
fn stream_runs(agents: &[Impl], columns: &mut [Column]) {
    for run in 0..STREAM_RUNS {
        for (agent, column) in agents.iter().zip(columns.iter_mut()) {
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
    for (agent, column) in agents.iter().zip(columns.iter_mut()) {
        eprintln!("throughput: {}: stream {STREAM_SMALL_N}", agent.name);
        match stream(agent, STREAM_SMALL_N) {
            Ok((_, rss)) => column.rss_small_kib = Some(rss),
            Err(e) => column.problem(format!("stream {STREAM_SMALL_N}: {e}")),
        }
    }
}
