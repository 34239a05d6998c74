//! An agent binary run as a child process, for [`TestClientBuilder::spawn`]: its stdin and
//! stdout as async streams, its stderr collected, its exit awaited, and the process killed
//! when the client is dropped.
//!
//! This uses `std::process` and one watcher thread per child rather than `tokio::process`,
//! so that the `testing` feature does not switch on tokio's process driver in every agent
//! built with it: that driver checks for exited children each time the runtime parks.
//!
//! [`TestClientBuilder::spawn`]: super::TestClientBuilder::spawn

use std::io::Read;
use std::process::{Child as StdChild, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::oneshot;

use crate::sync::lock;
use crate::{Error, Result};

/// How often the watcher thread looks for the child's exit (or a kill request).
const POLL: Duration = Duration::from_millis(2);

/// A running agent process.
pub(super) struct Child {
    /// Set on drop: the watcher kills the child.
    kill: Arc<AtomicBool>,
    exited: Option<oneshot::Receiver<std::io::Result<ExitStatus>>>,
    /// The temporary data directory given to the agent (its session store), removed on drop.
    data_dir: Option<std::path::PathBuf>,
}

/// A fresh temporary directory for one agent's data (`ACP_DATA_DIR`), so that a test never
/// writes the user's real session store.
fn temporary_data_dir() -> std::io::Result<std::path::PathBuf> {
    use std::sync::atomic::AtomicU64;
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "acp-testing-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The agent's ends of the pipes, as seen by the client.
pub(super) struct Pipes {
    /// The agent's stdout.
    pub read: Box<dyn AsyncRead + Unpin + Send>,
    /// The agent's stdin.
    pub write: Box<dyn AsyncWrite + Unpin + Send>,
    /// Everything the agent wrote to stderr so far.
    pub stderr: Arc<Mutex<String>>,
}

impl Child {
    /// Starts `command` with piped stdio and, unless the command sets one, `ACP_DATA_DIR`
    /// pointing at a fresh temporary directory. Must run inside a tokio runtime.
    pub fn spawn(mut command: std::process::Command) -> Result<(Child, Pipes)> {
        let data_dir = if command.get_envs().any(|(key, _)| key == "ACP_DATA_DIR") {
            None
        } else {
            let dir = temporary_data_dir()
                .map_err(|e| Error::io("creating the agent's data directory", e))?;
            command.env("ACP_DATA_DIR", &dir);
            Some(dir)
        };
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().map_err(|e| {
            let program = command.get_program().to_string_lossy().into_owned();
            Error::io(format!("starting the agent `{program}`"), e)
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(Error::msg("the agent's stdio could not be piped"));
        };
        let log = Arc::new(Mutex::new(String::new()));
        collect(stderr, log.clone());
        let (read, write) = match streams(stdin, stdout) {
            Ok(streams) => streams,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::io("piping the agent's stdio", e));
            }
        };
        let kill = Arc::new(AtomicBool::new(false));
        let (tx, exited) = oneshot::channel();
        let flag = kill.clone();
        std::thread::Builder::new()
            .name("acp-test-agent-watcher".into())
            .spawn(move || {
                let _ = tx.send(watch(child, &flag));
            })
            .map_err(|e| Error::io("starting the agent's watcher thread", e))?;
        let child = Child {
            kill,
            exited: Some(exited),
            data_dir,
        };
        let pipes = Pipes {
            read,
            write,
            stderr: log,
        };
        Ok((child, pipes))
    }

    /// Waits for the process to exit.
    pub async fn wait(&mut self) -> Result<ExitStatus> {
        let Some(exited) = self.exited.as_mut() else {
            return Err(Error::msg("the agent's exit was already awaited"));
        };
        let status = exited
            .await
            .map_err(|_| Error::msg("the agent's watcher thread stopped"))?;
        self.exited = None;
        status.map_err(|e| Error::io("waiting for the agent to exit", e))
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.kill.store(true, Ordering::Release);
        if let Some(dir) = &self.data_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Waits for `child` to exit, killing it first once `kill` is set.
fn watch(mut child: StdChild, kill: &AtomicBool) -> std::io::Result<ExitStatus> {
    loop {
        if kill.load(Ordering::Acquire) {
            let _ = child.kill();
            return child.wait();
        }
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        std::thread::sleep(POLL);
    }
}

/// Appends everything read from `stderr` to `log`, on a thread of its own.
fn collect(mut stderr: std::process::ChildStderr, log: Arc<Mutex<String>>) {
    let _ = std::thread::Builder::new()
        .name("acp-test-agent-stderr".into())
        .spawn(move || {
            let mut buf = vec![0; 8192];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                lock(&log).push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
}

type Streams = (
    Box<dyn AsyncRead + Unpin + Send>,
    Box<dyn AsyncWrite + Unpin + Send>,
);

/// The child's stdout and stdin, driven by the runtime's event loop (the client's ends of
/// the pipes are its own, so making them non-blocking touches nothing the agent shares).
#[cfg(unix)]
fn streams(
    stdin: std::process::ChildStdin,
    stdout: std::process::ChildStdout,
) -> std::io::Result<Streams> {
    use tokio::net::unix::pipe;
    let read = pipe::Receiver::from_owned_fd(stdout.into())?;
    let write = pipe::Sender::from_owned_fd(stdin.into())?;
    Ok((Box::new(read), Box::new(write)))
}

/// The child's stdout and stdin, each pumped by a thread of its own into an in-memory pipe.
#[cfg(not(unix))]
fn streams(
    mut stdin: std::process::ChildStdin,
    mut stdout: std::process::ChildStdout,
) -> std::io::Result<Streams> {
    use std::io::Write;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let handle = tokio::runtime::Handle::current();
    let (out_client, mut out_pump) = tokio::io::duplex(1 << 16);
    let (in_client, mut in_pump) = tokio::io::duplex(1 << 16);
    let rt = handle.clone();
    std::thread::spawn(move || {
        let mut buf = vec![0; 1 << 16];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || rt.block_on(out_pump.write_all(&buf[..n])).is_err() {
                break;
            }
        }
    });
    std::thread::spawn(move || {
        let mut buf = vec![0; 1 << 16];
        while let Ok(n) = handle.block_on(in_pump.read(&mut buf)) {
            if n == 0
                || stdin
                    .write_all(&buf[..n])
                    .and_then(|()| stdin.flush())
                    .is_err()
            {
                break;
            }
        }
    });
    let (read, _) = tokio::io::split(out_client);
    let (_, write) = tokio::io::split(in_client);
    Ok((Box::new(read), Box::new(write)))
}
