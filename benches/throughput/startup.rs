//! The startup workload: the time from spawning an agent's process to reading its answer to
//! `initialize` (what an editor waits before it can open a session), many times over, the
//! variants interleaved sample by sample so that a noisy moment of the machine falls on all
//! of them. Variants: ours without a store; ours with the default store on its first run (a
//! fresh empty `ACP_DATA_DIR` each time); ours with the default store and a database that
//! already holds sessions (made once before the samples: `concurrent::populate`); and the
//! official SDKs' agents as a reference. The process is closed (its stdin) and waited for
//! after each sample, outside the timed part.

use std::io::{BufReader, BufWriter};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::Result;
use crate::agents::{DataDir, Impl};
use crate::client::Client;
use crate::watchdog::Watchdog;

/// Where a variant's agent keeps its data.
pub(crate) enum Data<'a> {
    /// The run's shared temporary directory (an agent without a store ignores it).
    Shared,
    /// A fresh empty directory for each sample.
    Fresh,
    /// This directory, the same for every sample.
    At(&'a Path),
}

pub(crate) struct Variant<'a> {
    pub(crate) name: &'static str,
    pub(crate) agent: &'a Impl,
    pub(crate) data: Data<'a>,
}

/// A variant's samples, and what went wrong.
pub(crate) struct Samples {
    pub(crate) name: &'static str,
    pub(crate) samples: Vec<Duration>,
    pub(crate) problems: Vec<String>,
}

/// A process that has not answered `initialize` by then, or not exited that long after its
/// stdin closed, is killed.
const LIMIT: Duration = Duration::from_secs(10);

/// `runs` samples of each variant, interleaved.
pub(crate) fn startup(variants: &[Variant<'_>], runs: usize, watchdog: &Watchdog) -> Vec<Samples> {
    let mut out: Vec<Samples> = variants
        .iter()
        .map(|v| Samples {
            name: v.name,
            samples: Vec::with_capacity(runs),
            problems: Vec::new(),
        })
        .collect();
    for _ in 0..runs {
        for (variant, samples) in variants.iter().zip(&mut out) {
            let sample = match &variant.data {
                Data::Shared => once(variant.agent, None, watchdog),
                Data::At(dir) => once(variant.agent, Some(dir), watchdog),
                Data::Fresh => DataDir::fresh("startup-fresh")
                    .and_then(|dir| once(variant.agent, Some(dir.path()), watchdog)),
            };
            match sample {
                Ok(elapsed) => samples.samples.push(elapsed),
                Err(e) => {
                    // One line per kind of problem, with how often it happened.
                    eprintln!("throughput: startup: {}: {e}", variant.name);
                    samples.problems.push(e.to_string());
                }
            }
        }
    }
    for samples in &mut out {
        samples.problems.sort();
        samples.problems.dedup();
    }
    out
}

/// Spawns the agent, sends `initialize` and reads its answer: the time from the spawn to the
/// answer. Then closes the agent's stdin and waits for it to exit.
fn once(agent: &Impl, data_dir: Option<&Path>, watchdog: &Watchdog) -> Result<Duration> {
    let mut cmd: Command = agent.command(data_dir);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let started = Instant::now();
    let mut child = cmd.spawn()?;
    watchdog.arm(child.id(), LIMIT);
    let stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut client = Client::new(
        BufReader::with_capacity(64 * 1024, stdout),
        BufWriter::new(stdin),
    );
    let answer = client.initialize();
    let elapsed = started.elapsed();
    watchdog.disarm();
    if watchdog.fired() {
        let _ = child.wait();
        return Err(format!("no answer to initialize within {LIMIT:?}").into());
    }
    drop(client);
    let exited = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if exited.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("still running {LIMIT:?} after its stdin closed").into());
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    answer?;
    if !status.success() {
        return Err(format!("the agent exited with {status} after its stdin closed").into());
    }
    Ok(elapsed)
}
