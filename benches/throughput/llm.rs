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
//!   text, checked against `chunk_text(i)`; the HTTP client is made inside the timed part, as
//!   the agent makes its own at its first `llm` prompt;
//! - *loop*: the bench agent (ours, default store) prompted `llm`, which runs
//!   `Model::run` on `OpenAi::from_env()` pointed at the server (`OPENAI_BASE_URL`,
//!   `ACP_MODEL`); the client checks the `n` chunks and the `end_turn` answer with
//!   `Client::read_stream`, as in the `stream` workload, timed from the prompt sent to the
//!   answer read. Per run, the time from the server's first byte to the client having read
//!   and checked the first `agent_message_chunk` is recorded too. The loop runs once more
//!   per run without the store (`ACP_BENCH_NO_STORE`), to tell the store's share.
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
use crate::frames::chunk_text;
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

/// The raw reader, once: request to `[DONE]`, every delta checked.
async fn raw(base_url: &str, n: usize) -> Result<Duration> {
    let started = Instant::now();
    let client = reqwest::Client::new();
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
    if !done || index != n {
        return Err(format!("{index} of {n} deltas, then the stream ended (done: {done})").into());
    }
    Ok(elapsed)
}

/// The loop, once: a fresh agent prompted `llm`; chunks/s and first byte → first chunk.
fn in_loop(agent: &Impl, server: &ModelServer, n: usize) -> Result<(f64, Duration)> {
    let mut process = agent.spawn()?;
    let started = Instant::now();
    let id = process.client.prompt("llm")?;
    let read = process.client.read_stream(id, n);
    let elapsed = started.elapsed();
    process.finish();
    let first_byte = server.first_byte()?;
    let read = read?;
    let first_chunk = read.first_chunk.ok_or("no first chunk")?;
    Ok((
        n as f64 / elapsed.as_secs_f64(),
        first_chunk.saturating_duration_since(first_byte),
    ))
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
    for run in 1..=runs {
        eprintln!("throughput: llm {n}: raw SSE (run {run})");
        let raw = runtime.block_on(raw(&server.base_url(), n));
        match raw.and_then(|elapsed| server.first_byte().map(|_| elapsed)) {
            Ok(elapsed) => samples.raw.push(n as f64 / elapsed.as_secs_f64()),
            Err(e) => samples.problem(format!("raw SSE (run {run}): {e}")),
        }
        eprintln!("throughput: llm {n}: ours, Model::run (run {run})");
        match in_loop(&agent, &server, n) {
            Ok((rate, first)) => {
                samples.looped.push(rate);
                samples.first_chunk.push(first);
            }
            Err(e) => samples.problem(format!("loop (run {run}): {e}")),
        }
        eprintln!("throughput: llm {n}: ours, no store, Model::run (run {run})");
        match in_loop(&unrecorded, &server, n) {
            Ok((rate, _)) => samples.looped_no_store.push(rate),
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
    row("llm loop: chunks/s at the editor (ours)", &samples.looped);
    row("llm loop, no store: chunks/s", &samples.looped_no_store);
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
    if let Some(stats) = Stats::of(&samples.first_chunk) {
        println!(
            "{:<47}| p50 {:>6} | p99 {:>6}",
            "first byte -> first chunk: µs",
            stats.p50.as_micros(),
            stats.p99.as_micros()
        );
    }
    if !samples.problems.is_empty() {
        println!("llm problems: {}", samples.problems.join("; "));
    }
}
