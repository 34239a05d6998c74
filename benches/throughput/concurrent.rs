//! The concurrent-sessions workload: one agent process, N sessions created over its one
//! connection, then every session prompted `stream M` at once (the N prompts written in one
//! go by a writer thread while the client reads), the client reading and checking every frame
//! (`turns::Turns`) until all N answers arrive or the time limit passes. Measured: the wall
//! time from the first prompt written to the last answer read, updates per second, the turns
//! answered, and the agent's peak RSS.
//!
//! With the store, a check that it kept what the client saw: the agent is closed (its stdin,
//! then the time it takes to exit, which includes writing what the store still holds), started
//! again on the same `ACP_DATA_DIR`, and a sample of the sessions is loaded with
//! `session/load`, each replay checked (the prompt, then every chunk in order) and counted.

use std::io::{BufWriter, Write};
use std::process::ChildStdin;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::agents::{AgentProcess, DataDir, Impl};
use crate::client::excerpt;
use crate::frames::Frame;
use crate::turns::{Replayed, Turns, check_replay};
use crate::watchdog::Watchdog;
use crate::{Result, env_number};

/// The workload's size, from the environment.
pub(crate) struct Settings {
    /// `ACP_BENCH_SESSIONS` (1,000).
    pub(crate) sessions: usize,
    /// `ACP_BENCH_SESSION_CHUNKS` (1,000): each prompt is `stream <chunks>`.
    pub(crate) chunks: usize,
    /// `ACP_BENCH_CONCURRENT_LIMIT` in seconds (120): the agent is killed past it and the
    /// turns answered by then reported.
    pub(crate) limit: Duration,
    /// `ACP_BENCH_LOAD_SAMPLE` (100; `all`, or 0 for no store check): sessions loaded back.
    pub(crate) load_sample: usize,
    /// `ACP_BENCH_CONCURRENT_ROUNDS` (3): pairs of runs (without, then with the store); the
    /// table shows the round with the median ratio (one pair varies by ±20 % on a 2-core VM).
    pub(crate) rounds: usize,
}

impl Settings {
    pub(crate) fn from_env() -> Result<Self> {
        let sessions = env_number("ACP_BENCH_SESSIONS", 1_000)?.max(1);
        let load_sample = match std::env::var("ACP_BENCH_LOAD_SAMPLE").as_deref() {
            Ok("all") => sessions,
            _ => env_number("ACP_BENCH_LOAD_SAMPLE", 100)?.min(sessions),
        };
        Ok(Settings {
            sessions,
            chunks: env_number("ACP_BENCH_SESSION_CHUNKS", 1_000)?,
            limit: Duration::from_secs(env_number("ACP_BENCH_CONCURRENT_LIMIT", 120)? as u64),
            load_sample,
            rounds: env_number("ACP_BENCH_CONCURRENT_ROUNDS", 3)?.max(1),
        })
    }
}

/// One run of the workload on one agent.
pub(crate) struct Run {
    /// Creating the N sessions (pipelined), until the last answer.
    pub(crate) create: Duration,
    /// From writing the first prompt to reading the last answer (or to the time limit).
    pub(crate) wall: Duration,
    pub(crate) answered: usize,
    /// Chunks read and checked, over all sessions.
    pub(crate) updates: u64,
    pub(crate) timed_out: bool,
    pub(crate) rss_kib: u64,
    /// With the store check: from closing the agent's stdin to its exit.
    pub(crate) exit: Option<Duration>,
    /// With the store check: what the replays held, or why there are none.
    pub(crate) store: Option<Result<StoreCheck, String>>,
}

/// What `session/load` of a sample of the sessions replayed.
pub(crate) struct StoreCheck {
    pub(crate) loaded: usize,
    /// Sessions whose prompt was replayed once.
    pub(crate) prompts: usize,
    pub(crate) chunks: usize,
    /// `loaded` × chunks per turn.
    pub(crate) expected: usize,
    pub(crate) elapsed: Duration,
}

/// Runs the workload on `agent` in a data directory of its own; `check_store` adds the store
/// check after a run that finished in time.
pub(crate) fn concurrent(
    agent: &Impl,
    settings: &Settings,
    check_store: bool,
    watchdog: &Watchdog,
) -> Result<Run> {
    let dir = DataDir::fresh("concurrent")?;
    let backstop = settings.limit + Duration::from_secs(600);
    let mut process = agent.start(backstop, Some(dir.path()))?;
    process.client.initialize()?;
    let created = Instant::now();
    let sessions = create_sessions(&mut process, settings.sessions)?;
    let create = created.elapsed();
    let driven = prompt_all(
        &mut process,
        sessions.clone(),
        settings.chunks,
        settings.limit,
        watchdog,
    )?;
    let mut run = Run {
        create,
        wall: driven.wall,
        answered: driven.turns.answered,
        updates: driven.turns.updates,
        timed_out: driven.timed_out,
        rss_kib: 0,
        exit: None,
        store: None,
    };
    if driven.turns.parsed > 2 * sessions.len() as u64 {
        eprintln!(
            "throughput: {}: {} frames of the concurrent turns parsed in full",
            agent.name, driven.turns.parsed
        );
    }
    if !check_store || settings.load_sample == 0 {
        run.rss_kib = process.finish();
        return Ok(run);
    }
    if run.timed_out {
        run.rss_kib = process.finish();
        run.store = Some(Err(
            "not checked: the turns did not finish in time".to_owned()
        ));
        return Ok(run);
    }
    let closed = Instant::now();
    let (rss, clean) = process.finish_within(Duration::from_secs(120));
    run.exit = Some(closed.elapsed());
    run.rss_kib = rss;
    run.store = Some(if clean {
        eprintln!(
            "throughput: {}: loading {} sessions back",
            agent.name, settings.load_sample
        );
        load_back(agent, &dir, &sessions, settings).map_err(|e| e.to_string())
    } else {
        Err("not checked: the agent did not exit cleanly within 120 s of its stdin closing".into())
    });
    Ok(run)
}

/// Fills `dir` with `sessions` sessions of a `stream chunks` turn each (the startup
/// workload's existing database).
pub(crate) fn populate(
    agent: &Impl,
    dir: &DataDir,
    sessions: usize,
    chunks: usize,
    watchdog: &Watchdog,
) -> Result<()> {
    let limit = Duration::from_secs(300);
    let mut process = agent.start(limit * 2, Some(dir.path()))?;
    process.client.initialize()?;
    let ids = create_sessions(&mut process, sessions)?;
    let driven = prompt_all(&mut process, ids, chunks, limit, watchdog)?;
    if driven.timed_out {
        return Err(format!("the turns did not finish within {limit:?}").into());
    }
    if !process.finish_within(Duration::from_secs(120)).1 {
        return Err("the agent did not exit cleanly".into());
    }
    Ok(())
}

/// Writes `lines` to the agent from a thread of its own (so that the client reads the
/// answers meanwhile and neither side's pipe fills up), giving the writer back at the end.
fn write_in_background(
    mut output: BufWriter<ChildStdin>,
    lines: Vec<u8>,
) -> JoinHandle<std::io::Result<BufWriter<ChildStdin>>> {
    thread::spawn(move || {
        output.write_all(&lines)?;
        output.flush()?;
        Ok(output)
    })
}

/// `method` requests with consecutive ids from the client's next one, one per params.
fn requests(
    process: &mut AgentProcess,
    method: &str,
    params: impl Iterator<Item = serde_json::Value>,
) -> Result<(u64, Vec<u8>)> {
    let first = process.client.next_id();
    let mut lines = Vec::new();
    let mut id = first;
    for params in params {
        let request = serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": method, "params": params,
        });
        serde_json::to_writer(&mut lines, &request)?;
        lines.push(b'\n');
        id += 1;
    }
    process.client.skip_ids(id - first);
    Ok((first, lines))
}

/// Creates `n` sessions with `session/new` requests written in one go; their ids in order.
pub(crate) fn create_sessions(process: &mut AgentProcess, n: usize) -> Result<Vec<String>> {
    let new = serde_json::json!({"cwd": std::env::temp_dir(), "mcpServers": []});
    let (first, lines) = requests(process, "session/new", (0..n).map(|_| new.clone()))?;
    let output = process.client.output.take().ok_or("stdin already closed")?;
    let writer = write_in_background(output, lines);
    let mut sessions = vec![None; n];
    let mut got = 0;
    let read = (|| -> Result<()> {
        while got < n {
            let line = process.client.read_frame()?;
            let frame = serde_json::from_slice::<Frame<'_, &RawValue>>(line)
                .map_err(|e| format!("unreadable frame ({e}): {}", excerpt(line)))?;
            match (frame.method.as_deref(), frame.id) {
                // Whatever a new session is told (its commands, say) is not measured here.
                (Some("session/update"), None) => {}
                (None, Some(id)) => {
                    let at = id
                        .get()
                        .parse::<u64>()
                        .ok()
                        .and_then(|id| id.checked_sub(first))
                        .and_then(|i| usize::try_from(i).ok())
                        .filter(|&i| i < n && sessions[i].is_none())
                        .ok_or_else(|| format!("unexpected answer: {}", excerpt(line)))?;
                    #[derive(Deserialize)]
                    #[serde(rename_all = "camelCase")]
                    struct NewSession {
                        session_id: String,
                    }
                    let result = frame.result.map_or("null", RawValue::get);
                    let session = serde_json::from_str::<NewSession>(result)
                        .map_err(|_| format!("session/new failed: {}", excerpt(line)))?;
                    sessions[at] = Some(session.session_id);
                    got += 1;
                }
                _ => return Err(format!("unexpected frame: {}", excerpt(line)).into()),
            }
        }
        Ok(())
    })();
    let output = writer.join().map_err(|_| "writer panicked")??;
    read?;
    process.client.output = Some(output);
    let sessions: Vec<String> = sessions.into_iter().flatten().collect();
    let mut unique = sessions.clone();
    unique.sort();
    unique.dedup();
    if unique.len() != n {
        return Err(format!("{} distinct session ids for {n} sessions", unique.len()).into());
    }
    Ok(sessions)
}

/// What `prompt_all` saw.
pub(crate) struct Driven {
    pub(crate) turns: Turns,
    pub(crate) wall: Duration,
    pub(crate) timed_out: bool,
}

/// Prompts every session `stream chunks` at once and reads until every turn is answered, or
/// until `limit` has passed (the agent is then killed and the turns answered by then counted).
pub(crate) fn prompt_all(
    process: &mut AgentProcess,
    sessions: Vec<String>,
    chunks: usize,
    limit: Duration,
    watchdog: &Watchdog,
) -> Result<Driven> {
    let prompt = format!("stream {chunks}");
    let params = sessions.iter().map(|session| {
        serde_json::json!({
            "sessionId": session,
            "prompt": [{"type": "text", "text": prompt}],
        })
    });
    let (first, lines) = requests(process, "session/prompt", params)?;
    let mut turns = Turns::new(sessions, chunks, first);
    let output = process.client.output.take().ok_or("stdin already closed")?;
    watchdog.arm(process.pid(), limit);
    let started = Instant::now();
    let writer = write_in_background(output, lines);
    let read = loop {
        if turns.all_answered() {
            break Ok(());
        }
        match process.client.read_frame() {
            Ok(line) => {
                if let Err(e) = turns.check(line) {
                    break Err(e);
                }
            }
            Err(e) => break Err(e),
        }
    };
    let wall = started.elapsed();
    watchdog.disarm();
    // After a kill, the reader stops on the closed pipe (or a line cut short): not a mismatch.
    let timed_out = watchdog.fired() && !turns.all_answered();
    if let Ok(Ok(output)) = writer.join() {
        process.client.output = Some(output);
    }
    match read {
        Err(e) if !timed_out => Err(e),
        _ => Ok(Driven {
            turns,
            wall,
            timed_out,
        }),
    }
}

/// Starts the agent again on `dir` and loads a sample of `sessions` (evenly spread), checking
/// each replay.
fn load_back(
    agent: &Impl,
    dir: &DataDir,
    sessions: &[String],
    settings: &Settings,
) -> Result<StoreCheck> {
    let started = Instant::now();
    let mut process = agent.start(Duration::from_secs(600), Some(dir.path()))?;
    process.client.initialize()?;
    let prompt = format!("stream {}", settings.chunks);
    let k = settings.load_sample;
    let mut check = StoreCheck {
        loaded: 0,
        prompts: 0,
        chunks: 0,
        expected: k * settings.chunks,
        elapsed: Duration::ZERO,
    };
    for j in 0..k {
        let session = &sessions[j * sessions.len() / k];
        let params = serde_json::json!({
            "sessionId": session, "cwd": std::env::temp_dir(), "mcpServers": [],
        });
        let id = process.client.send_request("session/load", &params)?;
        let mut replayed = Replayed::default();
        loop {
            let line = process.client.read_frame()?;
            let answered = check_replay(line, id, session, &prompt, &mut replayed)
                .map_err(|e| format!("session/load of {session:?}: {e}"))?;
            if answered {
                break;
            }
        }
        check.loaded += 1;
        check.prompts += usize::from(replayed.prompts == 1);
        check.chunks += replayed.chunks;
    }
    process.finish();
    check.elapsed = started.elapsed();
    Ok(check)
}
