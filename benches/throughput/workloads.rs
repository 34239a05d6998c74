//! The workloads, each run on one agent (`stream`, `permission`, `cancel`), and the baseline:
//! serde_json straight into a pipe, read by the same client code.

use std::io::{self, BufReader, BufWriter, Write};
use std::thread;
use std::time::{Duration, Instant};

use acp::schema::{ContentBlock, ContentChunk, SessionId, SessionNotification, SessionUpdate};
use serde::Serialize;

use crate::agents::Impl;
use crate::client::{Client, Mode, Seen, Stop, check_stop};
use crate::frames::chunk_text;
use crate::{Result, STREAM_RUNS};

/// `stream n` in a fresh process: (chunks/s, bytes/s) and the peak RSS (KiB).
pub(crate) fn stream(agent: &Impl, n: usize) -> Result<((f64, f64), u64)> {
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
pub(crate) fn permission(agent: &Impl, n: usize) -> Result<Vec<Duration>> {
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
pub(crate) fn cancel(agent: &Impl, runs: usize) -> Result<Vec<Duration>> {
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

/// A `session/update` frame, as the baselines write it.
#[derive(Serialize)]
pub(crate) struct Notification<'a> {
    jsonrpc: &'static str,
    method: &'static str,
    params: &'a SessionNotification,
}

impl<'a> Notification<'a> {
    pub(crate) fn new(params: &'a SessionNotification) -> Self {
        Notification {
            jsonrpc: "2.0",
            method: "session/update",
            params,
        }
    }
}

/// (chunks/s, bytes/s) of a bare loop serializing the same `n` frames (and the prompt's
/// answer) into a pipe, read and checked by the same `Client::read_stream` as the agents.
pub(crate) fn baseline(n: usize) -> Option<(f64, f64)> {
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
                serde_json::to_writer(&mut out, &Notification::new(&note))?;
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
