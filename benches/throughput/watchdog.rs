//! A time limit on one agent process at a time: a thread that kills the process it is armed
//! with unless disarmed in time. Arming and disarming are a message on a channel, so that a
//! timed section (the startup workload's few milliseconds) pays no thread start for it.
//! Disarming waits until the thread has read the message, so that once `disarm` returns the
//! process cannot be killed any more: the caller may reap it (after which its id could be
//! another process's).

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

pub(crate) struct Watchdog {
    tx: Option<Sender<Option<(u32, Duration)>>>,
    /// One message for each disarm the thread has read.
    disarmed: Receiver<()>,
    fired: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    pub(crate) fn new() -> Self {
        let (tx, rx) = mpsc::channel::<Option<(u32, Duration)>>();
        let (ack, disarmed) = mpsc::channel();
        let fired = Arc::new(AtomicBool::new(false));
        let thread = {
            let fired = fired.clone();
            thread::spawn(move || {
                let mut armed: Option<(u32, Instant)> = None;
                loop {
                    let message = match armed {
                        None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                        Some((_, at)) => {
                            rx.recv_timeout(at.saturating_duration_since(Instant::now()))
                        }
                    };
                    match message {
                        Ok(Some((pid, limit))) => armed = Some((pid, Instant::now() + limit)),
                        Ok(None) => {
                            armed = None;
                            let _ = ack.send(());
                        }
                        Err(RecvTimeoutError::Timeout) => {
                            if let Some((pid, _)) = armed.take() {
                                fired.store(true, Ordering::Release);
                                // Only the process this bench started, by its id.
                                let _ = Command::new("kill")
                                    .args(["-KILL", &pid.to_string()])
                                    .status();
                            }
                        }
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
            })
        };
        Watchdog {
            tx: Some(tx),
            disarmed,
            fired,
            thread: Some(thread),
        }
    }

    /// Kills `pid` after `limit` unless disarmed (or armed again) before.
    pub(crate) fn arm(&self, pid: u32, limit: Duration) {
        self.fired.store(false, Ordering::Release);
        if let Some(tx) = &self.tx {
            let _ = tx.send(Some((pid, limit)));
        }
    }

    /// Returns once the thread has read the disarm: the process armed last was killed
    /// before (see `fired`) or will not be.
    pub(crate) fn disarm(&self) {
        if let Some(tx) = &self.tx
            && tx.send(None).is_ok()
        {
            let _ = self.disarmed.recv();
        }
    }

    /// Whether the process armed last was killed.
    pub(crate) fn fired(&self) -> bool {
        self.fired.load(Ordering::Acquire)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
