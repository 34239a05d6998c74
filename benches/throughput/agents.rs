//! The agents under measurement: building or preparing each of them (ours, the official TS
//! SDK's, the official Rust SDK's), and starting one as a process driven over pipes, with a
//! thread that samples its peak RSS and kills it past the deadline.

use std::io::{BufReader, BufWriter, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::client::Client;
use crate::{AGENT_DEADLINE, RUST_SDK_BUILD_LIMIT, Result};

/// Runs a cargo build with `--message-format=json` and returns the executable it produced.
fn cargo_build(mut cmd: Command, target: &str, limit: Duration) -> Result<PathBuf> {
    cmd.arg("--message-format=json-render-diagnostics")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let started = Instant::now();
    let mut child = cmd.spawn()?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let reader = thread::spawn(move || {
        let mut out = String::new();
        stdout.read_to_string(&mut out).map(|_| out)
    });
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("the build took longer than {limit:?}").into());
        }
        thread::sleep(Duration::from_millis(100));
    };
    let out = reader.join().map_err(|_| "reader panicked")??;
    if !status.success() {
        return Err(format!("the build failed ({status})").into());
    }
    #[derive(Deserialize)]
    struct Artifact {
        reason: String,
        target: Option<Target>,
        executable: Option<PathBuf>,
    }
    #[derive(Deserialize)]
    struct Target {
        name: String,
    }
    out.lines()
        .filter_map(|line| serde_json::from_str::<Artifact>(line).ok())
        .filter(|a| a.reason == "compiler-artifact")
        .filter(|a| a.target.as_ref().is_some_and(|t| t.name == target))
        .find_map(|a| a.executable)
        .ok_or_else(|| format!("cargo named no executable for `{target}`").into())
}

/// Builds `examples/bench.rs` in release as the `acp-bench-agent` package (benches/agent: the
/// features an author's agent gets, not the root's dev-dependencies'); `ACP_BENCH_OURS=<path>`
/// measures that binary instead (e.g. the bench agent built from an older commit, for a
/// before/after table).
pub(crate) fn build_ours(root: &Path, cargo: &std::ffi::OsStr) -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("ACP_BENCH_OURS") {
        return Ok(PathBuf::from(path));
    }
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args(["build", "--release", "-p", "acp-bench-agent"]);
    cargo_build(cmd, "acp-bench-agent", Duration::from_secs(900))
}

pub(crate) fn build_rust_sdk(root: &Path, cargo: &std::ffi::OsStr) -> Result<PathBuf> {
    let dir = root.join("benches/rust-sdk-agent");
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&dir)
        .args(["build", "--release", "--locked"]);
    cmd.arg("--manifest-path").arg(dir.join("Cargo.toml"));
    cmd.arg("--target-dir").arg(dir.join("target"));
    cargo_build(cmd, "bench-rust-sdk-agent", RUST_SDK_BUILD_LIMIT)
}

pub(crate) fn prepare_ts(root: &Path) -> Result<Command> {
    let dir = root.join("benches/ts-agent");
    let node_ok = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !node_ok {
        return Err("`node` is not installed".into());
    }
    if !dir.join("node_modules/@agentclientprotocol/sdk").is_dir() {
        eprintln!("throughput: npm ci in {}", dir.display());
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .stdout(Stdio::null())
            .status()?;
        if !status.success() {
            return Err(format!("`npm ci` failed ({status})").into());
        }
    }
    let mut cmd = Command::new("node");
    cmd.arg("agent.mjs").current_dir(dir);
    Ok(cmd)
}

pub(crate) struct Impl {
    pub(crate) name: &'static str,
    command: Command,
    /// Its client speaks protocol v2 (the same agent binary, negotiated at `initialize`).
    v2: bool,
}

impl Impl {
    pub(crate) fn new(name: &'static str, mut command: Command) -> Self {
        // Logging to stderr must cost the same for everyone: nothing.
        command.env_remove("RUST_LOG");
        // Our agent records its sessions in the default store: a temporary one here.
        command.env(
            "ACP_DATA_DIR",
            std::env::temp_dir().join(format!("acp-bench-{}", std::process::id())),
        );
        Impl {
            name,
            command,
            v2: false,
        }
    }

    /// The same agent, driven over protocol v2.
    pub(crate) fn over_v2(mut self) -> Self {
        self.v2 = true;
        self
    }

    /// A fresh process after the handshake (`initialize`, one `session/new`), killed if it
    /// runs past `AGENT_DEADLINE`.
    pub(crate) fn spawn(&self) -> Result<AgentProcess> {
        let mut agent = AgentProcess::start(self.command(None), AGENT_DEADLINE)?;
        agent.client.v2 = self.v2;
        agent.client.handshake()?;
        Ok(agent)
    }

    /// A fresh process before any request, killed if it runs past `deadline`; its sessions
    /// recorded under `data_dir` instead of the run's shared temporary directory if given.
    pub(crate) fn start(
        &self,
        deadline: Duration,
        data_dir: Option<&Path>,
    ) -> Result<AgentProcess> {
        AgentProcess::start(self.command(data_dir), deadline)
    }

    /// A copy of the agent's command (a `Command` cannot be cloned), with `ACP_DATA_DIR` set
    /// to `data_dir` if given.
    pub(crate) fn command(&self, data_dir: Option<&Path>) -> Command {
        let mut cmd = Command::new(self.command.get_program());
        cmd.args(self.command.get_args());
        if let Some(dir) = self.command.get_current_dir() {
            cmd.current_dir(dir);
        }
        for (key, value) in self.command.get_envs() {
            match value {
                Some(v) => cmd.env(key, v),
                None => cmd.env_remove(key),
            };
        }
        if let Some(dir) = data_dir {
            cmd.env("ACP_DATA_DIR", dir);
        }
        cmd
    }
}

/// A spawned agent, with a thread that samples its peak RSS and kills it past the deadline.
pub(crate) struct AgentProcess {
    child: Child,
    pub(crate) client: Client<BufReader<ChildStdout>, BufWriter<ChildStdin>>,
    peak_kib: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    sampler: Option<JoinHandle<()>>,
}

impl AgentProcess {
    fn start(mut cmd: Command, deadline: Duration) -> Result<Self> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let pid = child.id();
        let peak_kib = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = {
            let (peak_kib, stop) = (peak_kib.clone(), stop.clone());
            thread::spawn(move || {
                let started = Instant::now();
                while !stop.load(Ordering::Acquire) {
                    if let Some(kib) = vm_hwm_kib(pid) {
                        peak_kib.fetch_max(kib, Ordering::AcqRel);
                    }
                    if started.elapsed() > deadline {
                        eprintln!("throughput: agent {pid} ran past {deadline:?}; killing it");
                        // Only the process this bench started, by its id.
                        let _ = Command::new("kill")
                            .args(["-KILL", &pid.to_string()])
                            .status();
                        return;
                    }
                    thread::sleep(Duration::from_millis(10));
                }
            })
        };
        let client = Client::new(
            BufReader::with_capacity(64 * 1024, stdout),
            BufWriter::new(stdin),
        );
        Ok(AgentProcess {
            child,
            client,
            peak_kib,
            stop,
            sampler: Some(sampler),
        })
    }

    /// The agent's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The peak RSS so far, sampled once more now.
    pub(crate) fn peak_rss_kib(&self) -> u64 {
        if let Some(kib) = vm_hwm_kib(self.child.id()) {
            self.peak_kib.fetch_max(kib, Ordering::AcqRel);
        }
        self.peak_kib.load(Ordering::Acquire)
    }

    /// Closes stdin and waits for the agent to exit; returns the peak RSS in KiB.
    pub(crate) fn finish(self) -> u64 {
        self.finish_within(Duration::from_secs(5)).0
    }

    /// Closes stdin and waits up to `grace` for the agent to exit (killing it after that);
    /// returns the peak RSS in KiB and whether it exited by itself with success.
    pub(crate) fn finish_within(mut self, grace: Duration) -> (u64, bool) {
        let peak = self.peak_rss_kib();
        drop(self.client.output.take());
        let deadline = Instant::now() + grace;
        let clean = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status.success(),
                Err(_) => break false,
                Ok(None) if Instant::now() > deadline => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break false;
                }
                Ok(None) => thread::sleep(Duration::from_millis(5)),
            }
        };
        self.stop.store(true, Ordering::Release);
        if let Some(sampler) = self.sampler.take() {
            let _ = sampler.join();
        }
        (peak, clean)
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if self.sampler.is_some() {
            // Not finished normally (an error): make sure the process goes away.
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn vm_hwm_kib(pid: u32) -> Option<u64> {
    proc_status_kib(pid, "VmHWM:")
}

/// A size in KiB from `/proc/<pid>/status`: the line starting with `key` (`VmHWM:`, the peak
/// RSS; `VmRSS:`, the RSS now).
pub(crate) fn proc_status_kib(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A directory of its own for an agent's data (`ACP_DATA_DIR`), empty when made and removed
/// when dropped.
pub(crate) struct DataDir(PathBuf);

impl DataDir {
    /// `<temp>/acp-bench-<pid>-<name>`, emptied first if an earlier run left it behind.
    pub(crate) fn fresh(name: &str) -> Result<Self> {
        let path = std::env::temp_dir().join(format!("acp-bench-{}-{name}", std::process::id()));
        if path.exists() {
            std::fs::remove_dir_all(&path)?;
        }
        std::fs::create_dir_all(&path)?;
        Ok(DataDir(path))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
