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
//! the whole measurement after 270 s).
//!
//! Set `ACP_BENCH_NO_TS=1` or `ACP_BENCH_NO_RUST_SDK=1` to leave a column out, and
//! `ACP_BENCH_OURS=<path>` to measure another build of the bench agent as "ours" (an older
//! commit's, for a before/after comparison in the same conditions).
//!
//! The code is laid out by concern: this file holds the constants, `main` and the measuring
//! schedule; `agents` builds and starts the agents; `frames` holds the shapes of the frames
//! on the wire; `client` is the editor's end of a connection; `workloads` runs one workload
//! on one agent (and the in-process loop); `bare` is the bare loop agent; `report` turns the
//! samples into the printed table.

mod agents;
mod bare;
mod client;
mod frames;
mod report;
mod workloads;

use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use agents::{Impl, build_ours, build_rust_sdk, prepare_ts};
use report::{load_average, print_recording, print_table};
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
/// The measuring part of the run (after the builds) stops the whole bench past this.
const RUN_DEADLINE: Duration = Duration::from_secs(270);
/// The official Rust SDK's agent is skipped if it does not build within this.
const RUST_SDK_BUILD_LIMIT: Duration = Duration::from_secs(600);

type Error = Box<dyn std::error::Error + Send + Sync>;
type Result<T, E = Error> = std::result::Result<T, E>;

fn main() {
    // Run as the bare-loop agent (by this bench itself).
    if std::env::args().any(|a| a == "--bare-agent") {
        if let Err(e) = bare::run() {
            eprintln!("bare agent: {e}");
            std::process::exit(1);
        }
        return;
    }
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
        }
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

    match std::env::current_exe() {
        Ok(exe) => {
            let mut cmd = Command::new(exe);
            cmd.arg("--bare-agent");
            agents.push(Impl::new("bare loop", cmd));
        }
        Err(e) => eprintln!("throughput: bare loop agent skipped: {e}"),
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
    print_recording(&columns);
    println!("load average (1 min) before/after the measurements: {load_before} / {load_after}");
    eprintln!(
        "throughput: measured in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

fn skipped(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| !v.is_empty() && v != "0")
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
