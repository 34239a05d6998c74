//! The harness shared by the fuzz targets: the agent under test ([`agent::FuzzAgent`]), a
//! reader that hands the runtime its input one line at a time and lets the runtime's tasks run
//! between lines ([`ScriptReader`]), a writer that records everything the agent writes
//! ([`Sink`]), [`execute`] (one `acp::serve` run on a fresh current-thread runtime with a
//! paused clock, bounded by [`TIME_LIMIT`] of virtual time beside what the client sleeps) and
//! [`check`] (the properties every run must have; a violation panics, which libFuzzer reports
//! as a crash).

pub mod agent;
pub mod check;
pub mod frames;

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub use check::check;

/// How long (virtual time: the clock is paused and jumps when every task waits) one run may
/// take, beside the time its client spends sleeping (up to [`SLEEP_ALLOWANCE`]), before it
/// counts as a hang.
pub const TIME_LIMIT: Duration = Duration::from_secs(3600);

/// The most of its client's sleeping that one run is not charged for: a client that sleeps
/// (a fuzzed `sleep` step is at most 65.5 s, so even 4,096 bytes of nothing but sleeps stay
/// well under a week) is not taken for an agent that hangs, and a client that sleeps for ever
/// still ends its run, as a hang, after `TIME_LIMIT + SLEEP_ALLOWANCE` of virtual time.
pub const SLEEP_ALLOWANCE: Duration = Duration::from_secs(7 * 24 * 3600);

/// Times the reader yields to the runtime's other tasks after each line it delivers, so that
/// turns started by one line make progress (send their updates and requests to the client)
/// before the next line is read, as they would with a real client.
pub const YIELDS_PER_LINE: u32 = 2;

/// Bytes shared between the harness and the runtime's writer or reader.
#[derive(Clone, Default, Debug)]
pub struct Shared(Arc<Mutex<Vec<u8>>>);

impl Shared {
    /// The bytes so far.
    pub fn lock(&self) -> MutexGuard<'_, Vec<u8>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A copy of the bytes so far.
    pub fn bytes(&self) -> Vec<u8> {
        self.lock().clone()
    }
}

/// The agent's stdout: records every byte written. Never fails, never blocks.
#[derive(Debug)]
pub struct Sink(pub Shared);

impl AsyncWrite for Sink {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.0.lock().extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// One step of a client script.
#[derive(Debug)]
pub enum Step {
    /// Bytes to deliver (normally one line, with its `\n`).
    Bytes(Vec<u8>),
    /// Let the runtime's other tasks run this many times before reading on.
    Yield(u32),
    /// Wait this long (virtual time) before reading on.
    Sleep(Duration),
}

/// A client: produces the agent's input step by step, possibly looking at what the agent has
/// written so far (to answer its requests, or to use the session ids it made up).
pub trait Script: Send + Unpin {
    /// The next step, given the agent's output so far; `None` is the end of the input.
    fn next(&mut self, output: &[u8]) -> Option<Step>;
}

/// The raw bytes of a fuzz input, delivered one line at a time with [`YIELDS_PER_LINE`]
/// yields after each line. The bytes the runtime reads are exactly the input's.
#[derive(Debug)]
pub struct ByteScript<'a> {
    rest: &'a [u8],
    yield_next: bool,
}

impl<'a> ByteScript<'a> {
    pub fn new(input: &'a [u8]) -> Self {
        ByteScript {
            rest: input,
            yield_next: false,
        }
    }
}

impl Script for ByteScript<'_> {
    fn next(&mut self, _output: &[u8]) -> Option<Step> {
        if std::mem::take(&mut self.yield_next) {
            return Some(Step::Yield(YIELDS_PER_LINE));
        }
        if self.rest.is_empty() {
            return None;
        }
        let end = self
            .rest
            .iter()
            .position(|b| *b == b'\n')
            .map_or(self.rest.len(), |i| i + 1);
        let (line, rest) = self.rest.split_at(end);
        self.rest = rest;
        self.yield_next = true;
        Some(Step::Bytes(line.to_vec()))
    }
}

/// The agent's stdin: plays a [`Script`], recording every byte it delivers.
pub struct ScriptReader<S> {
    script: S,
    output: Shared,
    delivered: Shared,
    pending: Vec<u8>,
    at: usize,
    yields: u32,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    /// Virtual time the script has slept or is sleeping, so far.
    slept: Arc<Mutex<Duration>>,
}

impl<S: Script> ScriptReader<S> {
    pub fn new(script: S, output: Shared, delivered: Shared) -> Self {
        ScriptReader {
            script,
            output,
            delivered,
            pending: Vec::new(),
            at: 0,
            yields: 0,
            sleep: None,
            slept: Arc::default(),
        }
    }

    /// The virtual time the script has slept, counting a sleep as soon as it starts: a
    /// handle that stays valid while the runtime owns the reader.
    pub fn slept(&self) -> impl Fn() -> Duration + use<S> {
        let slept = Arc::clone(&self.slept);
        move || *slept.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<S: Script> AsyncRead for ScriptReader<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if let Some(sleep) = &mut this.sleep {
                std::task::ready!(sleep.as_mut().poll(cx));
                this.sleep = None;
            }
            if this.yields > 0 {
                this.yields -= 1;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            if this.at < this.pending.len() {
                let n = buf.remaining().min(this.pending.len() - this.at);
                let chunk = &this.pending[this.at..this.at + n];
                buf.put_slice(chunk);
                this.delivered.lock().extend_from_slice(chunk);
                this.at += n;
                return Poll::Ready(Ok(()));
            }
            let step = this.script.next(&this.output.lock());
            match step {
                None => return Poll::Ready(Ok(())),
                Some(Step::Bytes(bytes)) => {
                    this.pending = bytes;
                    this.at = 0;
                }
                Some(Step::Yield(n)) => this.yields = n,
                Some(Step::Sleep(d)) => {
                    *this.slept.lock().unwrap_or_else(|e| e.into_inner()) += d;
                    this.sleep = Some(Box::pin(tokio::time::sleep(d)));
                }
            }
        }
    }
}

/// What one run did.
#[derive(Debug)]
pub struct Execution {
    /// The bytes the agent read.
    pub input: Vec<u8>,
    /// The bytes the agent wrote.
    pub output: Vec<u8>,
    /// What `serve` returned; `None` if it did not return within [`TIME_LIMIT`] (beside the
    /// client's sleeps).
    pub served: Option<Result<(), String>>,
    /// Whether the agent was still alive when `serve` returned.
    pub agent_alive_after_serve: bool,
    /// Virtual time the run took.
    pub elapsed: Duration,
    /// The longest line the runtime accepts (longer ones are answered with a null id).
    pub max_line_bytes: usize,
}

/// Serves [`agent::FuzzAgent`] on the input `script` produces, on a fresh current-thread
/// runtime whose clock is paused (timers fire as soon as every task waits, so a run takes
/// no wall-clock time waiting), for at most [`TIME_LIMIT`] of virtual time beside what the
/// script sleeps.
pub fn execute(script: impl Script) -> Execution {
    execute_with(script, None)
}

/// How [`execute_with`] serves: `acp::Server` with these limits, and with a fresh
/// `acp::store::MemoryStore` (which answers `session/list`, `/resume`, `/delete` and replays
/// `session/load` from the recorded history) when `store` is set.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_line_bytes: usize,
    pub max_in_flight: usize,
    pub store: bool,
}

/// [`execute`], served by `acp::Server` configured by `limits` instead of `acp::serve`
/// (default limits, no store) when `limits` is given.
pub fn execute_with(script: impl Script, limits: Option<Limits>) -> Execution {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let output = Shared::default();
    let delivered = Shared::default();
    let agent = agent::FuzzAgent::default();
    let alive = agent.liveness();
    let reader = ScriptReader::new(script, output.clone(), delivered.clone());
    let slept = reader.slept();
    let (served, elapsed) = runtime.block_on(async {
        let start = tokio::time::Instant::now();
        let writer = Sink(output.clone());
        let serving = async move {
            match limits {
                None => acp::serve(agent, reader, writer).await,
                Some(limits) => {
                    let server = acp::Server::new(agent)
                        .max_line_bytes(limits.max_line_bytes)
                        .max_in_flight(limits.max_in_flight);
                    let server = if limits.store {
                        server.store(acp::store::MemoryStore::new())
                    } else {
                        server.no_store()
                    };
                    server.serve(reader, writer).await
                }
            }
        };
        // The deadline moves on by what the client sleeps (up to the allowance).
        let deadline = || start + TIME_LIMIT + slept().min(SLEEP_ALLOWANCE);
        let mut serving = std::pin::pin!(serving);
        let served = loop {
            match tokio::time::timeout_at(deadline(), serving.as_mut()).await {
                Ok(served) => break Some(served.map_err(|e| e.to_string())),
                Err(_) if deadline() <= tokio::time::Instant::now() => break None,
                Err(_) => {}
            }
        };
        (served, start.elapsed())
    });
    let agent_alive_after_serve = alive.upgrade().is_some();
    drop(runtime);
    let execution = Execution {
        input: delivered.bytes(),
        output: output.bytes(),
        served,
        agent_alive_after_serve,
        elapsed,
        max_line_bytes: limits.map_or(usize::MAX, |l| l.max_line_bytes),
    };
    if std::env::var_os("ACP_FUZZ_VERBOSE").is_some() {
        eprintln!("{}", execution.transcript());
    }
    execution
}

impl Execution {
    /// The input and output, for humans.
    pub fn transcript(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "--- served: {:?}; agent alive after serve: {}; virtual time: {:?}\n",
            self.served, self.agent_alive_after_serve, self.elapsed
        ));
        out.push_str("--- input (client → agent):\n");
        for line in self.input.split_inclusive(|b| *b == b'\n') {
            out.push_str(&format!("> {}\n", shorten(line)));
        }
        out.push_str("--- output (agent → client):\n");
        for line in self.output.split_inclusive(|b| *b == b'\n') {
            out.push_str(&format!("< {}\n", shorten(line)));
        }
        out
    }
}

fn shorten(line: &[u8]) -> String {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let text = String::from_utf8_lossy(line);
    if text.chars().count() > 400 {
        let head: String = text.chars().take(400).collect();
        format!("{head}… ({} bytes)", line.len())
    } else {
        text.into_owned()
    }
}

/// Runs the raw-bytes target's body on `input`: serve it as the agent's stdin, then check.
pub fn fuzz_bytes(input: &[u8]) {
    let execution = execute(ByteScript::new(input));
    check(&execution);
}
