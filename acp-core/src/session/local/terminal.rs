//! A command run on the agent's own machine for `cx.terminal()` ([`LocalTerminal`]).
//!
//! The command runs as a child process in a process group of its own (Unix), with stdin
//! `/dev/null` and stdout and stderr written into one pipe the runtime reads: nothing the
//! command prints reaches the agent's stdout (the protocol's channel) or stderr. Its output is
//! kept as `terminal/output` keeps it: the tail, at most `outputByteLimit` bytes (1 MiB when
//! the author sets none), cut at a character boundary, with a `truncated` flag.
//!
//! Killing the command (`kill`, `release`, dropping the handle, the turn it was started in
//! being cancelled, the connection closing) kills its whole process group: whatever it
//! started in the background goes with it, so no process outlives its terminal.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::{TerminalEvent, TerminalObserver};
use crate::schema::{self, SessionId, TerminalExitStatus, TerminalId};
use crate::session::grant::Grant;
use crate::sync::lock;
use crate::{Error, Result};

/// The output kept when the author sets no `outputByteLimit`: a command that prints forever
/// must not grow the agent's memory.
pub(crate) const DEFAULT_OUTPUT_BYTE_LIMIT: usize = 1 << 20;

/// How long the output a command wrote just before it exited may take to be read, before its
/// exit is reported anyway (a process it left running may hold the pipe open).
const DRAIN: Duration = Duration::from_millis(100);

/// A command running (or run) on the agent's machine: what a display of it needs (command
/// line, cwd, output so far, exit status) and the controls of `cx.terminal()`.
pub(crate) struct LocalTerminal {
    pub id: TerminalId,
    /// The session it was created in.
    pub session: SessionId,
    /// The program, as the author gave it (run through `sh -c` when there are no `args`).
    pub command: String,
    pub args: Vec<String>,
    /// Where it runs.
    pub cwd: PathBuf,
    output: Mutex<OutputBuffer>,
    exit: watch::Sender<Option<TerminalExitStatus>>,
    /// Cancelled to kill the command and its group.
    kill: CancellationToken,
    released: AtomicBool,
    /// Its supervisor is done: the command exited and its group was killed or closed the
    /// output. Until then, dropping the terminal (a runtime shutting down) kills the group.
    settled: AtomicBool,
    /// The process group (the child's pid), on Unix.
    group: Option<u32>,
    observer: Option<TerminalObserver>,
}

impl std::fmt::Debug for LocalTerminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalTerminal")
            .field("id", &self.id)
            .field("session", &self.session)
            .field("command", &self.command_line())
            .field("cwd", &self.cwd)
            .field("group", &self.group)
            .finish_non_exhaustive()
    }
}

impl Drop for LocalTerminal {
    fn drop(&mut self) {
        // Only when its supervisor was dropped unfinished (the runtime shut down).
        if !self.settled.load(Ordering::Acquire) {
            self.kill_group();
        }
    }
}

impl LocalTerminal {
    /// Starts the command `req` describes in `cwd` (already resolved). It is killed, with
    /// its group, when `stop` is cancelled (the turn's cancel, or the connection closing).
    pub fn spawn(
        req: &schema::CreateTerminalRequest,
        cwd: PathBuf,
        grant: &Grant,
        stop: CancellationToken,
        observer: Option<TerminalObserver>,
    ) -> Result<Arc<Self>> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let mut command = if req.args.is_empty() {
            shell(&req.command)
        } else {
            let mut command = Command::new(&req.command);
            command.args(&req.args);
            command
        };
        grant.child_env(&mut command);
        command
            .envs(req.env.iter().map(|v| (&v.name, &v.value)))
            .current_dir(&cwd)
            .stdin(Stdio::null())
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        if !cwd.is_dir() {
            let e = std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory");
            let doing = format!("starting `{}` in `{}`", req.command, cwd.display());
            return Err(Error::io(doing, e));
        }
        let starting = |e| Error::io(format!("starting `{}`", req.command), e);
        let (child, readers) = spawn_captured(command).map_err(starting)?;
        let limit = req
            .output_byte_limit
            .map_or(DEFAULT_OUTPUT_BYTE_LIMIT, |l| {
                usize::try_from(l).unwrap_or(usize::MAX)
            });
        let terminal = Arc::new(LocalTerminal {
            id: TerminalId::new(format!(
                "local-terminal-{}",
                NEXT.fetch_add(1, Ordering::Relaxed)
            )),
            session: req.session_id.clone(),
            command: req.command.clone(),
            args: req.args.clone(),
            cwd,
            output: Mutex::new(OutputBuffer::new(limit)),
            exit: watch::Sender::new(None),
            kill: CancellationToken::new(),
            released: AtomicBool::new(false),
            settled: AtomicBool::new(false),
            group: child.id(),
            observer,
        });
        debug!(terminal = %terminal.id, pid = ?terminal.group, command = %terminal.command_line(), "started a local command");
        terminal.notify(TerminalEvent::Started);
        let pumps = readers
            .into_iter()
            .map(|reader| tokio::spawn(pump(reader, terminal.clone())))
            .collect();
        tokio::spawn(supervise(terminal.clone(), child, pumps, stop));
        Ok(terminal)
    }

    /// Whether the connection displays it itself (v2's agent-owned terminals, kept up to date
    /// by the connection's observer), rather than as text in the tool call.
    pub fn is_displayed(&self) -> bool {
        self.observer.is_some()
    }

    /// The command line, as a shell would show it (a command without arguments is one
    /// already).
    pub fn command_line(&self) -> String {
        if self.args.is_empty() {
            return self.command.clone();
        }
        std::iter::once(&self.command)
            .chain(&self.args)
            .map(|word| quoted(word))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The output so far (the tail within the byte limit) and the exit status, if any.
    pub fn output(&self) -> schema::TerminalOutputResponse {
        let (output, truncated) = {
            let buffer = lock(&self.output);
            (buffer.text(), buffer.truncated)
        };
        schema::TerminalOutputResponse::new(output, truncated).exit_status(self.exit_status())
    }

    /// The exit status, once the command has exited.
    pub fn exit_status(&self) -> Option<TerminalExitStatus> {
        self.exit.borrow().clone()
    }

    /// Waits for the command to exit.
    pub async fn wait(&self) -> TerminalExitStatus {
        let mut exit = self.exit.subscribe();
        loop {
            if let Some(status) = exit.borrow_and_update().clone() {
                return status;
            }
            // The sender lives as long as `self`: this only fails once the runtime is gone.
            if exit.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
    }

    /// Whether the command still runs (not exited, not released).
    pub fn is_running(&self) -> bool {
        self.exit_status().is_none() && !self.released.load(Ordering::Acquire)
    }

    /// Kills the command and its whole process group (if it still runs).
    pub fn kill(&self) {
        self.kill.cancel();
    }

    /// Kills the command if it still runs and tells the observer the terminal was released
    /// (once).
    pub fn release(&self) {
        self.kill();
        if !self.released.swap(true, Ordering::AcqRel) {
            self.notify(TerminalEvent::Released);
        }
    }

    /// The terminal as text, for a client that cannot show a terminal it did not create:
    /// the command line and the output so far in a code block, and how it ended.
    pub fn as_text(&self) -> String {
        let output = self.output();
        let mut body = format!("$ {}\n", self.command_line());
        if output.truncated {
            body.push_str("[…]\n");
        }
        body.push_str(&output.output);
        if !body.ends_with('\n') {
            body.push('\n');
        }
        match output.exit_status {
            Some(TerminalExitStatus {
                exit_code: Some(0), ..
            }) => {}
            Some(TerminalExitStatus {
                exit_code: Some(code),
                ..
            }) => body.push_str(&format!("[exit code {code}]\n")),
            Some(TerminalExitStatus {
                signal: Some(signal),
                ..
            }) => body.push_str(&format!("[killed by {signal}]\n")),
            _ => {}
        }
        // A fence longer than any run of backticks in the output.
        let longest = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
        let fence = "`".repeat(longest.max(2) + 1);
        format!("{fence}\n{body}{fence}")
    }

    fn notify(&self, event: TerminalEvent<'_>) {
        if let Some(observer) = &self.observer {
            observer(self, event);
        }
    }

    fn push(&self, bytes: &[u8]) {
        lock(&self.output).push(bytes);
        self.notify(TerminalEvent::Output(bytes));
    }

    fn exited(&self, status: TerminalExitStatus) {
        debug!(terminal = %self.id, ?status, "a local command exited");
        // Observers first: whoever waits on the exit finds what they show of it queued.
        self.notify(TerminalEvent::Exited(&status));
        self.exit.send_replace(Some(status.clone()));
    }

    /// Resolves once the command has exited (at once if it has).
    pub fn gone(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut exit = self.exit.subscribe();
        async move {
            let _ = exit.wait_for(Option::is_some).await;
        }
    }

    fn kill_group(&self) {
        kill_group(self.group);
    }
}

/// `sh -c line` (Unix) or `cmd /C line` (Windows): a command given without arguments is a
/// command line, as editors run `terminal/create`'s `command`.
fn shell(line: &str) -> Command {
    #[cfg(windows)]
    let (shell, flag) = ("cmd", "/C");
    #[cfg(not(windows))]
    let (shell, flag) = ("sh", "-c");
    let mut command = Command::new(shell);
    command.args([flag, line]);
    command
}

/// Something a command writes its output to, read by [`pump`].
type Reader = Box<dyn AsyncRead + Unpin + Send>;

/// Spawns `command` with stdout and stderr captured: into one pipe on Unix (their order
/// kept, as in a terminal), two otherwise.
fn spawn_captured(mut command: Command) -> std::io::Result<(Child, Vec<Reader>)> {
    #[cfg(unix)]
    {
        let (reader, writer) = std::io::pipe()?;
        command.stdout(writer.try_clone()?).stderr(writer);
        let child = command.spawn()?;
        // Our copies of the write end go with `command`: the reader sees the end of the output
        // once the command and everything it started are gone.
        drop(command);
        let reader =
            tokio::net::unix::pipe::Receiver::from_owned_fd(std::os::fd::OwnedFd::from(reader))?;
        Ok((child, vec![Box::new(reader)]))
    }
    #[cfg(not(unix))]
    {
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command.spawn()?;
        let mut readers: Vec<Reader> = Vec::new();
        if let Some(out) = child.stdout.take() {
            readers.push(Box::new(out));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(Box::new(err));
        }
        Ok((child, readers))
    }
}

/// Reads `reader` into the terminal's output until the end.
async fn pump(mut reader: Reader, terminal: Arc<LocalTerminal>) {
    let mut buf = vec![0; 16 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) => return,
            Ok(n) => terminal.push(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                debug!(terminal = %terminal.id, "reading a local command's output failed: {e}");
                return;
            }
        }
    }
}

/// Waits for the command to exit (killing it and its group when asked to, or when `stop` is
/// cancelled), reports its exit once the output it wrote before has been read, then reads
/// what the rest of its group writes until the terminal is killed or released, and kills
/// that rest.
async fn supervise(
    terminal: Arc<LocalTerminal>,
    mut child: Child,
    pumps: Vec<tokio::task::JoinHandle<()>>,
    stop: CancellationToken,
) {
    let mut group_killed = false;
    let kill = |child: &mut Child| {
        terminal.kill_group();
        let _ = child.start_kill();
        true
    };
    // Exited on its own, the command is reaped only once its group is done with: until
    // then its pid, the group's id, cannot be given to another process, so the group
    // signalled below is still ours.
    let mut reaped = true;
    let status = tokio::select! {
        status = exited(&child) => {
            reaped = false;
            status
        }
        () = terminal.kill.cancelled() => {
            group_killed = kill(&mut child);
            child.wait().await
        }
        () = stop.cancelled() => {
            group_killed = kill(&mut child);
            terminal.kill.cancel();
            child.wait().await
        }
    };
    let aborts: Vec<_> = pumps.iter().map(|p| p.abort_handle()).collect();
    let mut reading = futures_util::future::join_all(pumps);
    // What the command wrote just before it exited is still in the pipe.
    let _ = tokio::time::timeout(DRAIN, &mut reading).await;
    terminal.exited(exit_status(status));
    // What the command left running in its group lives on (and is read) until the terminal
    // is killed, released or dropped, or `stop` is cancelled.
    let mut read_all = false;
    loop {
        tokio::select! {
            _ = &mut reading, if !read_all => read_all = true,
            () = terminal.kill.cancelled() => break,
            () = stop.cancelled() => break,
        }
    }
    if !group_killed {
        terminal.kill_group();
    }
    if !reaped {
        let _ = child.wait().await;
    }
    if !read_all {
        let _ = tokio::time::timeout(DRAIN, &mut reading).await;
    }
    // A process that left the group (`setsid`) may keep the pipe open: stop reading it.
    for abort in aborts {
        abort.abort();
    }
    terminal.settled.store(true, Ordering::Release);
}

/// The protocol's account of how a command ended.
fn exit_status(status: std::io::Result<ExitStatus>) -> TerminalExitStatus {
    let status = match status {
        Ok(status) => status,
        Err(e) => {
            warn!("could not wait for a local command: {e}");
            return TerminalExitStatus::new();
        }
    };
    #[cfg(unix)]
    let signal = std::os::unix::process::ExitStatusExt::signal(&status).map(signal_name);
    #[cfg(not(unix))]
    let signal: Option<String> = None;
    // Exit codes are reported as the client does: Windows' large ones wrap, as in `u32`.
    TerminalExitStatus::new()
        .exit_code(status.code().map(|c| c as u32))
        .signal(signal)
}

/// `SIGKILL`, `SIGTERM`…, or `signal 42`.
#[cfg(unix)]
fn signal_name(signal: i32) -> String {
    let name = match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        other => return format!("signal {other}"),
    };
    name.to_owned()
}

/// Kills the process group `pid` leads (commands and stdio MCP servers are started as group
/// leaders). Does nothing without a pid, or off Unix.
#[cfg(unix)]
pub(crate) fn kill_group(pid: Option<u32>) {
    use rustix::process::{Pid, Signal, kill_process_group};
    if let Some(pid) = pid
        .and_then(|p| i32::try_from(p).ok())
        .and_then(Pid::from_raw)
    {
        let _ = kill_process_group(pid, Signal::KILL);
    }
}

/// Resolves once `child` has exited, with its status, *without reaping it*: while it is a
/// zombie its pid, which is its process group's id, is not reused, so killing the group
/// afterwards ([`kill_group`]) cannot reach another process. Reap it with `child.wait()`
/// once done with its group. On Linux the exit is awaited on a pidfd; elsewhere (or where a
/// pidfd cannot be had) polled.
#[cfg(unix)]
pub(crate) async fn exited(child: &Child) -> std::io::Result<ExitStatus> {
    use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};
    use std::os::unix::process::ExitStatusExt;
    let Some(pid) = child
        .id()
        .and_then(|p| i32::try_from(p).ok())
        .and_then(Pid::from_raw)
    else {
        return Err(std::io::Error::other("the process has no pid"));
    };
    // Deprecated as unsound for a `T` that may close its descriptor while registered; an
    // `OwnedFd` moved in is closed only after `AsyncFd` deregistered it (and the safe
    // replacement, `register`, is `unsafe`, which this crate forbids).
    #[cfg(target_os = "linux")]
    #[allow(deprecated)]
    if let Ok(fd) = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::NONBLOCK)
        && let Ok(fd) = tokio::io::unix::AsyncFd::with_interest(fd, tokio::io::Interest::READABLE)
    {
        // A pidfd is readable once its process has exited.
        let _ = fd.readable().await;
    }
    loop {
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG;
        match waitid(WaitId::Pid(pid), options) {
            Ok(Some(status)) => {
                // The raw wait status `ExitStatus` is made of: the code in the second byte,
                // or the signal in the low bits.
                let raw = match (status.exit_status(), status.terminating_signal()) {
                    (Some(code), _) => (code & 0xff) << 8,
                    (None, Some(signal)) => signal & 0x7f,
                    (None, None) => 0,
                };
                return Ok(ExitStatus::from_raw(raw));
            }
            Ok(None) => tokio::time::sleep(Duration::from_millis(20)).await,
            Err(e) => return Err(e.into()),
        }
    }
}

/// See the Unix version; here the child is reaped at once (there are no process groups).
#[cfg(not(unix))]
pub(crate) async fn exited(child: &mut Child) -> std::io::Result<ExitStatus> {
    child.wait().await
}

/// See the Unix version; there is no process group to kill here.
#[cfg(not(unix))]
pub(crate) fn kill_group(_pid: Option<u32>) {}

/// `word`, single-quoted if a shell would split or expand it.
fn quoted(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The output kept of a command: the tail, at most `limit` bytes, starting at a character
/// boundary, as `terminal/output` keeps it.
#[derive(Debug)]
pub(crate) struct OutputBuffer {
    bytes: VecDeque<u8>,
    limit: usize,
    /// Some output was dropped from the front.
    pub truncated: bool,
}

impl OutputBuffer {
    pub fn new(limit: usize) -> Self {
        OutputBuffer {
            bytes: VecDeque::new(),
            limit,
            truncated: false,
        }
    }

    /// Appends `chunk`, dropping from the front what exceeds the limit, then any UTF-8
    /// continuation bytes left at the front (so the kept output may be a little shorter).
    pub fn push(&mut self, chunk: &[u8]) {
        if self.bytes.len() + chunk.len() <= self.limit {
            self.bytes.extend(chunk);
            return;
        }
        self.truncated = true;
        let kept = &chunk[chunk.len().saturating_sub(self.limit)..];
        let room = self.limit - kept.len();
        self.bytes.drain(..self.bytes.len().saturating_sub(room));
        self.bytes.extend(kept);
        while self
            .bytes
            .front()
            .is_some_and(|b| b & 0b1100_0000 == 0b1000_0000)
        {
            self.bytes.pop_front();
        }
    }

    /// The output as text (an invalid or unfinished UTF-8 sequence shown as `�`).
    pub fn text(&self) -> String {
        let (a, b) = self.bytes.as_slices();
        if b.is_empty() {
            String::from_utf8_lossy(a).into_owned()
        } else {
            String::from_utf8_lossy(&[a, b].concat()).into_owned()
        }
    }
}
