//! Logs to stderr that never block the agent: [`init_logging`].
//!
//! A client that never reads the agent's stderr fills the pipe after ~64 KiB; from then on a
//! plain `write(2)` blocks, and with it the runtime thread that logged. Here each formatted
//! line goes into a bounded queue, and one thread of its own writes the queue to stderr. When
//! the queue is full the line is dropped and counted; once stderr drains, the count is
//! reported in one line, and the next drops are counted afresh.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, OnceLock};

/// Log lines waiting for stderr, at most; beyond this, lines are dropped and counted.
const QUEUE_LINES: usize = 4096;

/// Sends `tracing` logs to stderr, filtered by `RUST_LOG` (default `warn`), without ever
/// blocking the thread that logs.
///
/// Each line is queued and written by a thread of its own: a client that does not read the
/// agent's stderr cannot stall the agent. Lines that do not fit in the queue (4,096 lines)
/// are dropped and counted, and the count is written once stderr drains.
///
/// Does nothing if a global subscriber is already installed, so it is safe to call from
/// `main` of every agent.
pub fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let Some(stderr) = Stderr::start() else {
        return;
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(stderr)
        .with_ansi(false)
        .try_init();
}

/// The queue to the stderr thread; a [`MakeWriter`](tracing_subscriber::fmt::MakeWriter).
#[derive(Clone)]
struct Stderr {
    queue: SyncSender<Vec<u8>>,
    dropped: Arc<AtomicU64>,
}

impl Stderr {
    /// The queue, and the thread that drains it (once per process).
    fn start() -> Option<Stderr> {
        static STARTED: OnceLock<Option<Stderr>> = OnceLock::new();
        STARTED
            .get_or_init(|| {
                let (queue, lines) = std::sync::mpsc::sync_channel(QUEUE_LINES);
                let dropped = Arc::new(AtomicU64::new(0));
                let counter = dropped.clone();
                std::thread::Builder::new()
                    .name("acp-log".into())
                    .spawn(move || drain(&lines, &counter, &mut std::io::stderr()))
                    .ok()?;
                Some(Stderr { queue, dropped })
            })
            .clone()
    }
}

/// Writes every queued line to `out`, then how many were dropped, if any, once it could.
fn drain(lines: &Receiver<Vec<u8>>, dropped: &AtomicU64, out: &mut impl Write) {
    while let Ok(line) = lines.recv() {
        let _ = out.write_all(&line);
        let lost = dropped.swap(0, Ordering::AcqRel);
        if lost > 0 {
            let _ = writeln!(
                out,
                "acp: {lost} log line(s) dropped: stderr was not read fast enough"
            );
        }
    }
}

/// One log line being formatted; queued (or dropped) when the formatter is done with it.
struct Line {
    bytes: Vec<u8>,
    to: Stderr,
}

impl Write for Line {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        if self.bytes.is_empty() {
            return;
        }
        match self.to.queue.try_send(std::mem::take(&mut self.bytes)) {
            Ok(()) | Err(TrySendError::Disconnected(_)) => {}
            Err(TrySendError::Full(_)) => {
                self.to.dropped.fetch_add(1, Ordering::AcqRel);
            }
        }
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Stderr {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line {
            bytes: Vec::with_capacity(256),
            to: self.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stderr(capacity: usize) -> (Stderr, Receiver<Vec<u8>>) {
        let (queue, lines) = std::sync::mpsc::sync_channel(capacity);
        let dropped = Arc::default();
        (Stderr { queue, dropped }, lines)
    }

    fn log(to: &Stderr, text: &str) {
        use tracing_subscriber::fmt::MakeWriter;
        let mut line = to.make_writer();
        line.write_all(text.as_bytes()).unwrap();
    }

    #[test]
    fn a_full_queue_drops_lines_without_blocking_and_the_count_is_reported_once() {
        let (to, lines) = stderr(2);
        // Nobody drains: the third and later lines are dropped, at once.
        for i in 0..5 {
            log(&to, &format!("line {i}\n"));
        }
        assert_eq!(to.dropped.load(Ordering::Acquire), 3);
        drop(to.clone());
        let (queue, dropped) = (to.queue, to.dropped);
        drop(queue);
        let mut out = Vec::new();
        drain(&lines, &dropped, &mut out);
        let out = String::from_utf8(out).unwrap();
        assert_eq!(
            out,
            "line 0\nacp: 3 log line(s) dropped: stderr was not read fast enough\nline 1\n"
        );
    }
}
