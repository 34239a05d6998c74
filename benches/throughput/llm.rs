//! The `llm` workload: what the model loop (`acp::llm::Model::run`) costs per streamed token.
//!
//! A loopback model server in this process (`ModelServer`: std `TcpListener`, one thread,
//! minimal HTTP/1.1, `Connection: close`) answers every request with the same Chat
//! Completions stream: a role chunk, `n` content deltas whose texts are exactly the chunks of
//! `stream N` (`chunk_text(i)`), a `finish_reason: stop` chunk, a usage chunk and
//! `data: [DONE]`. It writes the head and the first delta, notes the time and flushes them,
//! then writes the rest through a 64 KiB `BufWriter`, so the server is never the bottleneck.
//!
//! Two readers of that stream take turns, run by run:
//! - *raw*: this process reads it as any client of the API must, on the same crates as
//!   `acp::llm` (reqwest, sse-stream; a current-thread tokio runtime, as the bench agent's):
//!   SSE framing, then `serde_json` of each chunk into borrowed structs down to its delta
//!   text, checked against `chunk_text(i)`; one HTTP client for all runs, which has read one
//!   stream before the first timed run;
//! - *loop*: the bench agent (ours, default store) prompted `llm`, which runs
//!   `Model::run` on `OpenAi::from_env()` pointed at the server (`OPENAI_BASE_URL`,
//!   `ACP_MODEL`), warm: each agent runs one such turn in another session before the timed
//!   one, as an agent serving an editor has (its start and its HTTP client's, which reads
//!   the system's root certificates, are not costs per token); the client (`read_text`)
//!   parses every frame and checks that the message chunks join into the `n` deltas'
//!   texts, in order, then the `end_turn` answer, timed from the prompt sent to the answer
//!   read. The loop joins deltas that have arrived into one chunk (at most 64 KiB), so the
//!   rates of both readers are deltas per second, and the number of chunks is reported.
//!   Per run, the time from the server's first byte to the client having read and checked
//!   the first `agent_message_chunk` is recorded too. The loop runs once more per run
//!   without the store (`ACP_BENCH_NO_STORE`), to tell the store's share.
//!
//! `ACP_BENCH_LLM_CHUNKS` (default 50,000) and `ACP_BENCH_LLM_RUNS` (default 10) set the
//! size of the stream and the number of runs of each reader. `ACP_BENCH_LLM_FIRST_GAP_MS`
//! (default 0) makes the server wait that long after the first delta, as a model between two
//! tokens: the first chunk then travels alone instead of ahead of a flood of deltas (the
//! rates then include the gap, in both readers).

use std::borrow::Cow;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde::Deserialize;
use sse_stream::SseStream;

use crate::agents::Impl;
use crate::client::{Client, Stop, check_stop};
use crate::frames::chunk_text;
use crate::frames::{Frame, UpdateParams};
use crate::report::Stats;
use crate::{Result, env_number};

/// A loopback Chat Completions server streaming `n` deltas to every request (waiting `gap`
/// after the first).
pub(crate) struct ModelServer {
    addr: SocketAddr,
    /// Per request served, in order: when its first byte was written, or what went wrong.
    served: mpsc::Receiver<std::result::Result<Instant, String>>,
}

impl ModelServer {
    pub(crate) fn start(n: usize, gap: Duration) -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let (tx, served) = mpsc::channel();
        thread::spawn(move || {
            for conn in listener.incoming() {
                let result = conn
                    .map_err(Into::into)
                    .and_then(|conn| serve(conn, n, gap))
                    .map_err(|e| e.to_string());
                if tx.send(result).is_err() {
                    return;
                }
            }
        });
        Ok(ModelServer { addr, served })
    }

    /// The base URL, as `OPENAI_BASE_URL` takes it.
    pub(crate) fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// When the server wrote the first byte of its last answer (waiting for it to finish).
    fn first_byte(&self) -> Result<Instant> {
        let served = self.served.recv_timeout(Duration::from_secs(10))?;
        Ok(served.map_err(|e| format!("model server: {e}"))?)
    }
}

const CHUNK_HEAD: &str = "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\
                          \"created\":1764000000,\"model\":\"bench\",\"choices\":[";

/// Reads one request (head and body), checks it, and streams the answer; returns when the
/// first byte was written.
fn serve(conn: TcpStream, n: usize, gap: Duration) -> Result<Instant> {
    conn.set_nodelay(true)?;
    let mut input = BufReader::new(&conn);
    let mut line = String::new();
    input.read_line(&mut line)?;
    let request_line = line.trim_end().to_owned();
    let mut length = 0;
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return Err("the request ended in its head".into());
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse()?;
        }
    }
    let mut body = vec![0; length];
    input.read_exact(&mut body)?;
    let body: serde_json::Value = serde_json::from_slice(&body)?;
    if request_line != "POST /v1/chat/completions HTTP/1.1"
        || body["stream"] != true
        || !body["model"].is_string()
    {
        (&conn).write_all(b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n")?;
        return Err(format!("unexpected request `{request_line}`: {body}").into());
    }
    let mut out = BufWriter::with_capacity(64 * 1024, &conn);
    out.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
          connection: close\r\n\r\n",
    )?;
    write!(
        out,
        "{CHUNK_HEAD}{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"\"}},\
         \"finish_reason\":null}}]}}\n\n"
    )?;
    let mut text = String::with_capacity(64);
    let mut first = None;
    for i in 0..n {
        chunk_text(i, &mut text);
        write!(out, "{CHUNK_HEAD}{{\"index\":0,\"delta\":{{\"content\":")?;
        serde_json::to_writer(&mut out, &text)?;
        out.write_all(b"},\"finish_reason\":null}]}\n\n")?;
        if i == 0 {
            first = Some(Instant::now());
            out.flush()?;
            if !gap.is_zero() {
                thread::sleep(gap);
            }
        }
    }
    write!(
        out,
        "{CHUNK_HEAD}{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\n\
         {CHUNK_HEAD}],\"usage\":{{\"prompt_tokens\":12,\"completion_tokens\":{n},\
         \"total_tokens\":{}}}}}\n\ndata: [DONE]\n\n",
        n + 12
    )?;
    out.flush()?;
    drop(out);
    // The end of the answer (`Connection: close`); the client's side closes when it will.
    conn.shutdown(std::net::Shutdown::Write)?;
    first.ok_or_else(|| "no delta to stream".into())
}

/// A Chat Completions chunk, as far as a client needs it for text.
#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    choices: Vec<Choice<'a>>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    #[serde(borrow, default)]
    #[expect(dead_code, reason = "read as a client must, not used here")]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
}

/// The raw reader, once: request to `[DONE]`, every delta checked. `client` is made once for
/// all runs, and has already read a stream (warm, as the loop's agent).
async fn raw(client: &reqwest::Client, base_url: &str, n: usize) -> Result<(Duration, u64)> {
    let started = Instant::now();
    let cpu_before = thread_cpu();
    let body = serde_json::json!({
        "model": "bench",
        "messages": [{"role": "user", "content": "llm"}],
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    let response = client
        .post(format!("{base_url}/chat/completions"))
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(serde_json::to_vec(&body)?)
        .send()
        .await?
        .error_for_status()?;
    let mut events = SseStream::from_bytes_stream(response.bytes_stream());
    let mut expected = String::with_capacity(64);
    let mut index = 0;
    let mut done = false;
    while let Some(event) = events.next().await {
        let Some(data) = event?.data else { continue };
        if data == "[DONE]" {
            done = true;
            break;
        }
        let chunk: Chunk<'_> = serde_json::from_str(&data)?;
        for choice in chunk.choices {
            let Some(text) = choice.delta.and_then(|d| d.content) else {
                continue;
            };
            if text.is_empty() {
                continue;
            }
            chunk_text(index, &mut expected);
            if index >= n || text != expected {
                return Err(format!("delta {index}: expected {expected:?}, got {text:?}").into());
            }
            index += 1;
        }
    }
    let elapsed = started.elapsed();
    let cpu = thread_cpu().saturating_sub(cpu_before);
    if !done || index != n {
        return Err(format!("{index} of {n} deltas, then the stream ended (done: {done})").into());
    }
    Ok((elapsed, cpu))
}

/// What one run of the loop measured.
struct Looped {
    /// Deltas/s: the `n` deltas' text read and checked at the editor, per second.
    rate: f64,
    /// The server's first byte → the editor's first chunk.
    first: Duration,
    /// Message chunks the text came in (fewer than the deltas when the loop joined those
    /// that arrived while it was sending).
    chunks: usize,
    /// The agent's CPU time (all its threads) from the prompt to its answer, per delta, ns.
    cpu_per_delta: f64,
}

/// CPU time a process has run, all threads, in ns (the kernel's `schedstat`; 0 when it is
/// not readable, e.g. not on Linux).
fn process_cpu(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// CPU time the calling thread has run, in ns (0 when not readable).
fn thread_cpu() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|stat| stat.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The loop, once: an agent prompted `llm`, warm: it has already run one such turn (in
/// another session, so that the timed request carries no history), as an agent serving an
/// editor has, so that neither its start nor its HTTP client's (the system's root
/// certificates, read once per client) is counted per token.
fn in_loop(agent: &Impl, server: &ModelServer, expected: &str, n: usize) -> Result<Looped> {
    let mut process = agent.spawn()?;
    let id = process.client.prompt("llm")?;
    read_text(&mut process.client, id, expected).map_err(|e| format!("warming up: {e}"))?;
    server.first_byte()?;
    process.client.new_session()?;
    let cpu_before = process_cpu(process.pid());
    let started = Instant::now();
    let id = process.client.prompt("llm")?;
    let read = read_text(&mut process.client, id, expected);
    let elapsed = started.elapsed();
    let cpu = process_cpu(process.pid()).saturating_sub(cpu_before);
    process.finish();
    let first_byte = server.first_byte()?;
    let (chunks, first_chunk) = read?;
    Ok(Looped {
        rate: n as f64 / elapsed.as_secs_f64(),
        first: first_chunk.saturating_duration_since(first_byte),
        chunks,
        cpu_per_delta: cpu as f64 / n as f64,
    })
}

/// Reads the loop's turn (prompt `id`, protocol v1) to its `end_turn` answer: its
/// `agent_message_chunk`s, each parsed in place, must join into `expected` in order, and
/// nothing else may arrive. Returns how many chunks, and when the first had been checked.
fn read_text<R: BufRead, W: Write>(
    client: &mut Client<R, W>,
    id: u64,
    expected: &str,
) -> Result<(usize, Instant)> {
    let id_text = id.to_string();
    let session = client.session.clone();
    let mut at = 0;
    let mut chunks = 0;
    let mut first = None;
    loop {
        let line = client.read_frame()?;
        let frame: Frame<'_, UpdateParams<'_>> = serde_json::from_slice(line)
            .map_err(|e| format!("after {at} bytes of text: unreadable frame ({e})"))?;
        if let Some(raw_id) = frame.id {
            if raw_id.get() != id_text || frame.method.is_some() {
                return Err(
                    format!("after {at} bytes of text: a request or another answer").into(),
                );
            }
            let Some(result) = frame.result else {
                return Err(format!("the turn failed: {:?}", frame.error.map(|e| e.get())).into());
            };
            check_stop(Stop::Answer(Ok(result.get().to_owned())), "end_turn")?;
            if at != expected.len() {
                return Err(
                    format!("{at} of {} bytes of text, then the answer", expected.len()).into(),
                );
            }
            return Ok((chunks, first.ok_or("no chunk")?));
        }
        let text = match (frame.method.as_deref(), frame.params) {
            (Some("session/update"), Some(params))
                if params.session_id == session
                    && params.update.session_update == "agent_message_chunk" =>
            {
                params.update.content.and_then(|c| c.text)
            }
            _ => None,
        };
        let Some(text) = text else {
            return Err(
                format!("after {at} bytes of text, not a text chunk of the session").into(),
            );
        };
        let text: Cow<'_, str> = serde_json::from_str(text.get())?;
        if !expected[at..].starts_with(&*text) {
            return Err(format!("after {at} bytes of text, an unexpected chunk").into());
        }
        at += text.len();
        chunks += 1;
        first.get_or_insert_with(Instant::now);
    }
}

/// What the workload measured.
#[derive(Default)]
pub(crate) struct Samples {
    n: usize,
    /// Chunks/s at the editor's side, per run.
    looped: Vec<f64>,
    /// The same without the session store (`ACP_BENCH_NO_STORE`).
    looped_no_store: Vec<f64>,
    /// Deltas/s of the raw reader, per run.
    raw: Vec<f64>,
    first_chunk: Vec<Duration>,
    /// Message chunks the loop's deltas came in, per run (default store).
    chunks: Vec<usize>,
    /// CPU ns per delta: the agent process (default store; no store), the raw reader's
    /// thread.
    looped_cpu: Vec<f64>,
    looped_no_store_cpu: Vec<f64>,
    raw_cpu: Vec<f64>,
    problems: Vec<String>,
}

/// Runs the workload on `ours` (the bench agent, default store), and the loop also on ours
/// without the store.
pub(crate) fn run(ours: &Impl) -> Result<Samples> {
    let n = env_number("ACP_BENCH_LLM_CHUNKS", 50_000)?.max(1);
    let runs = env_number("ACP_BENCH_LLM_RUNS", 10)?.max(1);
    let gap = Duration::from_millis(env_number("ACP_BENCH_LLM_FIRST_GAP_MS", 0)? as u64);
    let server = ModelServer::start(n, gap)?;
    let mut cmd = ours.command(None);
    cmd.env("OPENAI_BASE_URL", server.base_url())
        .env("ACP_MODEL", "bench")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ACP_PROVIDER");
    let agent = Impl::new("ours, llm", cmd);
    let mut cmd = agent.command(None);
    cmd.env("ACP_BENCH_NO_STORE", "1");
    let unrecorded = Impl::new("ours, no store, llm", cmd);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut samples = Samples {
        n,
        ..Samples::default()
    };
    let mut expected = String::new();
    let mut text = String::new();
    for i in 0..n {
        chunk_text(i, &mut text);
        expected.push_str(&text);
    }
    let client = reqwest::Client::new();
    eprintln!("throughput: llm {n}: raw SSE (warming up)");
    runtime.block_on(raw(&client, &server.base_url(), n))?;
    server.first_byte()?;
    for run in 1..=runs {
        eprintln!("throughput: llm {n}: raw SSE (run {run})");
        let raw = runtime.block_on(raw(&client, &server.base_url(), n));
        match raw.and_then(|measured| server.first_byte().map(|_| measured)) {
            Ok((elapsed, cpu)) => {
                samples.raw.push(n as f64 / elapsed.as_secs_f64());
                samples.raw_cpu.push(cpu as f64 / n as f64);
            }
            Err(e) => samples.problem(format!("raw SSE (run {run}): {e}")),
        }
        eprintln!("throughput: llm {n}: ours, Model::run (run {run})");
        match in_loop(&agent, &server, &expected, n) {
            Ok(looped) => {
                samples.looped.push(looped.rate);
                samples.first_chunk.push(looped.first);
                samples.chunks.push(looped.chunks);
                samples.looped_cpu.push(looped.cpu_per_delta);
            }
            Err(e) => samples.problem(format!("loop (run {run}): {e}")),
        }
        eprintln!("throughput: llm {n}: ours, no store, Model::run (run {run})");
        match in_loop(&unrecorded, &server, &expected, n) {
            Ok(looped) => {
                samples.looped_no_store.push(looped.rate);
                samples.looped_no_store_cpu.push(looped.cpu_per_delta);
            }
            Err(e) => samples.problem(format!("loop, no store (run {run}): {e}")),
        }
    }
    Ok(samples)
}

impl Samples {
    fn problem(&mut self, problem: String) {
        eprintln!("throughput: problem: llm: {problem}");
        self.problems.push(problem);
    }
}

/// The `llm` table: the loop against the raw stream, and first byte → first chunk.
pub(crate) fn print(samples: &Samples) {
    let best = |rates: &[f64]| {
        rates
            .iter()
            .copied()
            .fold(None, |b: Option<f64>, r| Some(b.map_or(r, |b| b.max(r))))
    };
    let median = |rates: &[f64]| {
        let mut rates = rates.to_vec();
        rates.sort_by(f64::total_cmp);
        rates.get(rates.len() / 2).copied()
    };
    let runs = samples.looped.len().max(samples.raw.len());
    println!();
    let title = format!("model in the loop ({} deltas, {runs} runs each)", samples.n);
    println!("{title:<47}|       best |     median");
    let row = |label: &str, rates: &[f64]| {
        if let (Some(b), Some(m)) = (best(rates), median(rates)) {
            println!("{label:<47}| {b:>10.0} | {m:>10.0}");
        }
    };
    row("llm loop: deltas/s at the editor (ours)", &samples.looped);
    row("llm loop, no store: deltas/s", &samples.looped_no_store);
    row("raw SSE: deltas/s (reqwest + sse-stream)", &samples.raw);
    if let (Some(l), Some(r), Some(lm), Some(rm)) = (
        best(&samples.looped),
        best(&samples.raw),
        median(&samples.looped),
        median(&samples.raw),
    ) {
        println!(
            "{:<47}| {:>10.2} | {:>10.2}",
            "loop / raw (goal >= 0.90)",
            l / r,
            lm / rm
        );
    }
    let least = |values: &[f64]| values.iter().copied().reduce(f64::min);
    let middle = |values: &[f64]| median(values);
    let cpu_row = |label: &str, values: &[f64]| {
        if let (Some(b), Some(m)) = (least(values), middle(values)) {
            println!("{label:<47}| {b:>10.0} | {m:>10.0}");
        }
    };
    cpu_row("CPU ns per delta: the agent (ours)", &samples.looped_cpu);
    cpu_row(
        "CPU ns per delta: the agent, no store",
        &samples.looped_no_store_cpu,
    );
    cpu_row("CPU ns per delta: the raw reader", &samples.raw_cpu);
    if let (Some(l), Some(r), Some(lm), Some(rm)) = (
        least(&samples.looped_no_store_cpu),
        least(&samples.raw_cpu),
        middle(&samples.looped_no_store_cpu),
        middle(&samples.raw_cpu),
    ) {
        println!(
            "{:<47}| {:>10.2} | {:>10.2}",
            "raw CPU / loop CPU, no store (goal >= 0.90)",
            r / l,
            rm / lm
        );
    }
    if let Some(stats) = Stats::of(&samples.first_chunk) {
        println!(
            "{:<47}| p50 {:>6} | p99 {:>6}",
            "first byte -> first chunk: µs",
            stats.p50.as_micros(),
            stats.p99.as_micros()
        );
    }
    if let (Some(min), Some(max)) = (samples.chunks.iter().min(), samples.chunks.iter().max()) {
        println!(
            "{:<47}| min {min:>6} | max {max:>6}",
            "message chunks the deltas came in"
        );
    }
    if !samples.problems.is_empty() {
        println!("llm problems: {}", samples.problems.join("; "));
    }
}
