//! Shared helpers for the interop and protocol tests.
//!
//! * locating the example binaries (`echo`, …) next to the test executable,
//! * installing the Node / Python client SDKs on first use (safe when several
//!   test threads or test processes start at once),
//! * running a child process with a hang guard,
//! * [`interop_scenarios!`]: one #[test] per scenario of an interop script,
//! * [`RawAgent`]: the echo agent driven over raw stdio pipes.
//!
//! Every test crate includes this module and uses a different subset of it.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::fs;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};

/// Guards against hangs only; no test asserts on these durations.
pub const HANG_GUARD: Duration = Duration::from_secs(10);

/// Root of the package (where Cargo.toml and tests/ live).
pub fn package_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Cargo's target directory (parent of `CARGO_TARGET_TMPDIR`, which cargo sets for integration tests).
pub fn target_dir() -> PathBuf {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().map(Path::to_path_buf).unwrap_or(tmp)
}

/// Path of the `echo` example; see [`example_binary`].
pub fn echo_binary() -> PathBuf {
    example_binary("echo")
}

/// Path of the example `name`, freshly built.
///
/// The first call in a test process runs `cargo build --examples` (a no-op when `cargo test`
/// just built them), so a single test target run on its own (`cargo test --test
/// interop_tools`) never drives a binary older than the sources.
pub fn example_binary(name: &str) -> PathBuf {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    if let Err(e) = BUILT.get_or_init(build_examples) {
        panic!("{e}");
    }
    let bin = examples_dir().join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "the {name} example agent was not found at {} after `cargo build --examples`",
        bin.display()
    );
    bin
}

/// `<target>/<profile>/examples`, next to the test executable's `deps` directory.
fn examples_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe
        .parent()
        .expect("test executable has a parent directory");
    let profile_dir = deps.parent().expect("deps directory has a parent");
    profile_dir.join("examples")
}

fn build_examples() -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let profile_dir = examples_dir()
        .parent()
        .map(Path::to_path_buf)
        .ok_or("no profile directory")?;
    let target = profile_dir.parent().ok_or("no target directory")?;
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "--examples", "--manifest-path"])
        .arg(package_root().join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target);
    if profile_dir.file_name() == Some(OsStr::new("release")) {
        cmd.arg("--release");
    }
    let done = run_with_timeout(&mut cmd, Duration::from_secs(20 * 60))
        .map_err(|e| format!("running cargo build --examples: {e}"))?;
    if done.success() {
        Ok(())
    } else {
        Err(format!(
            "`cargo build --examples` failed:\n{}",
            done.describe()
        ))
    }
}

// ---------------------------------------------------------------------------
// Running commands

pub struct Finished {
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
}

impl Finished {
    pub fn success(&self) -> bool {
        !self.timed_out && self.status.is_some_and(|s| s.success())
    }

    pub fn describe(&self) -> String {
        let status = if self.timed_out {
            "killed after the hang guard expired".to_string()
        } else {
            match self.status {
                Some(s) => s.to_string(),
                None => "unknown".to_string(),
            }
        };
        format!(
            "status: {status}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.stdout.trim_end(),
            self.stderr.trim_end()
        )
    }
}

fn drain<R: Read + Send + 'static>(mut r: R) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Run `cmd` to completion, killing it if it outlives `timeout` (a hang guard).
pub fn run_with_timeout(cmd: &mut Command, timeout: Duration) -> std::io::Result<Finished> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn()?;
    let out = drain(child.stdout.take().expect("piped stdout"));
    let err = drain(child.stderr.take().expect("piped stderr"));
    let deadline = Instant::now() + timeout;
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() >= deadline {
            timed_out = true;
            let _ = child.kill();
            break child.wait().ok();
        }
        thread::sleep(Duration::from_millis(20));
    };
    Ok(Finished {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        timed_out,
    })
}

/// `Some(version output)` when `program --version` runs.
pub fn program_version(program: impl AsRef<OsStr>) -> Option<String> {
    let out = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let mut text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if text.is_empty() {
        text = String::from_utf8_lossy(&out.stderr).trim().to_string();
    }
    Some(text)
}

/// Leading integers of a version string such as `v20.11.1` or `Python 3.11.7`.
pub fn parse_version(text: &str) -> Vec<u32> {
    let start = text
        .find(|c: char| c.is_ascii_digit())
        .unwrap_or(text.len());
    text[start..]
        .split(|c: char| !c.is_ascii_digit())
        .take(3)
        .filter_map(|p| p.parse().ok())
        .collect()
}

// ---------------------------------------------------------------------------
// Cross-process install lock

/// A lock shared by every test process of this target directory: an atomic
/// `mkdir`. A lock older than `STALE` is assumed to belong to a killed process.
pub struct DirLock {
    path: PathBuf,
}

impl DirLock {
    const STALE: Duration = Duration::from_secs(20 * 60);
    const GIVE_UP: Duration = Duration::from_secs(30 * 60);

    pub fn acquire(name: &str) -> Result<DirLock, String> {
        let dir = target_dir().join("interop-locks");
        fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let path = dir.join(format!("{name}.lock"));
        let started = Instant::now();
        loop {
            match fs::create_dir(&path) {
                Ok(()) => {
                    let _ = fs::write(path.join("owner"), format!("pid {}\n", std::process::id()));
                    return Ok(DirLock { path });
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                    let age = fs::metadata(&path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| SystemTime::now().duration_since(t).ok());
                    if age.is_some_and(|a| a > Self::STALE) {
                        let _ = fs::remove_dir_all(&path);
                        continue;
                    }
                    if started.elapsed() > Self::GIVE_UP {
                        return Err(format!(
                            "gave up waiting for install lock {} (remove it if no install is running)",
                            path.display()
                        ));
                    }
                    thread::sleep(Duration::from_millis(250));
                }
                Err(e) => return Err(format!("creating lock {}: {e}", path.display())),
            }
        }
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// Write `contents` to `path` atomically (temp file + rename).
fn write_marker(path: &Path, contents: &[u8]) -> Result<(), String> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    fs::write(&tmp, contents).map_err(|e| format!("writing {}: {e}", tmp.display()))?;
    fs::rename(&tmp, path).map_err(|e| format!("renaming to {}: {e}", path.display()))
}

fn marker_matches(marker: &Path, expected: &[u8]) -> bool {
    fs::read(marker).is_ok_and(|m| m == expected)
}

// ---------------------------------------------------------------------------
// Node side

pub fn ts_dir() -> PathBuf {
    package_root().join("tests").join("interop").join("ts")
}

/// Marker written into node_modules after a successful `npm ci`: a copy of the
/// package-lock.json it was installed from (.ci/run writes the same marker).
pub const NODE_MARKER: &str = ".acp-interop-installed";

fn check_node() -> Result<(), String> {
    let hint = "The TypeScript interop tests need Node.js 20 or newer with npm on PATH \
                (Debian: `apt-get install nodejs npm`, or a Node 20 build from nodejs.org).";
    let node = program_version("node").ok_or_else(|| format!("`node` was not found. {hint}"))?;
    let major = parse_version(&node).first().copied().unwrap_or(0);
    if major < 20 {
        return Err(format!("found node {node}, which is too old. {hint}"));
    }
    program_version("npm").ok_or_else(|| format!("`npm` was not found. {hint}"))?;
    Ok(())
}

fn install_node_deps() -> Result<PathBuf, String> {
    check_node()?;
    let dir = ts_dir();
    let lock = fs::read(dir.join("package-lock.json"))
        .map_err(|e| format!("reading {}/package-lock.json: {e}", dir.display()))?;
    let marker = dir.join("node_modules").join(NODE_MARKER);
    if marker_matches(&marker, &lock) {
        return Ok(dir);
    }
    let _guard = DirLock::acquire("npm")?;
    if marker_matches(&marker, &lock) {
        return Ok(dir); // another process finished the install while we waited
    }
    let mut cmd = Command::new("npm");
    cmd.args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(&dir);
    let done = run_with_timeout(&mut cmd, Duration::from_secs(15 * 60))
        .map_err(|e| format!("running npm ci: {e}"))?;
    if !done.success() {
        return Err(format!(
            "`npm ci` in {} failed (it needs the npm registry):\n{}",
            dir.display(),
            done.describe()
        ));
    }
    write_marker(&marker, &lock)?;
    Ok(dir)
}

/// Make sure tests/interop/ts/node_modules matches package-lock.json; returns the ts dir.
pub fn ensure_node_deps() -> PathBuf {
    static ONCE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match ONCE.get_or_init(install_node_deps) {
        Ok(p) => p.clone(),
        Err(e) => panic!("cannot prepare the TypeScript interop harness:\n{e}"),
    }
}

// ---------------------------------------------------------------------------
// Python side

pub fn py_dir() -> PathBuf {
    package_root().join("tests").join("interop").join("py")
}

pub fn venv_dir() -> PathBuf {
    target_dir().join("interop-venv")
}

/// Marker inside the venv: a copy of the requirements.txt it was installed from.
pub const VENV_MARKER: &str = "acp-interop-requirements.txt";

pub fn venv_python(venv: &Path) -> PathBuf {
    if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    }
}

fn base_python() -> Result<String, String> {
    let hint = "The Python interop tests need Python 3.10+ with the venv module on PATH as `python3` \
                (Debian: `apt-get install python3 python3-venv`); set ACP_INTEROP_PYTHON to use another interpreter.";
    let python = std::env::var("ACP_INTEROP_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let version =
        program_version(&python).ok_or_else(|| format!("`{python}` was not found. {hint}"))?;
    let v = parse_version(&version);
    if v.len() < 2 || v[0] != 3 || v[1] < 10 {
        return Err(format!(
            "`{python}` is {version}; agent-client-protocol needs 3.10 to 3.14. {hint}"
        ));
    }
    Ok(python)
}

fn install_venv() -> Result<PathBuf, String> {
    let requirements_path = py_dir().join("requirements.txt");
    let requirements = fs::read(&requirements_path)
        .map_err(|e| format!("reading {}: {e}", requirements_path.display()))?;
    let venv = venv_dir();
    let python = venv_python(&venv);
    let marker = venv.join(VENV_MARKER);
    let ready = || python.is_file() && marker_matches(&marker, &requirements);
    if ready() {
        return Ok(python);
    }
    let base = base_python()?;
    let _guard = DirLock::acquire("venv")?;
    if ready() {
        return Ok(python);
    }
    if venv.exists() {
        fs::remove_dir_all(&venv).map_err(|e| format!("removing stale {}: {e}", venv.display()))?;
    }
    let mut create = Command::new(&base);
    create.arg("-m").arg("venv").arg(&venv);
    let done = run_with_timeout(&mut create, Duration::from_secs(5 * 60))
        .map_err(|e| format!("running {base} -m venv: {e}"))?;
    if !done.success() {
        return Err(format!(
            "`{base} -m venv {}` failed (on Debian install python3-venv):\n{}",
            venv.display(),
            done.describe()
        ));
    }
    let mut pip = Command::new(&python);
    pip.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-input",
        "-r",
    ])
    .arg(&requirements_path);
    let done = run_with_timeout(&mut pip, Duration::from_secs(15 * 60))
        .map_err(|e| format!("running pip: {e}"))?;
    if !done.success() {
        return Err(format!(
            "`pip install -r {}` failed (it needs PyPI):\n{}",
            requirements_path.display(),
            done.describe()
        ));
    }
    write_marker(&marker, &requirements)?;
    Ok(python)
}

/// Make sure `<target>/interop-venv` has requirements.txt installed; returns its python.
pub fn ensure_python_venv() -> PathBuf {
    static ONCE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match ONCE.get_or_init(install_venv) {
        Ok(p) => p.clone(),
        Err(e) => panic!("cannot prepare the Python interop harness:\n{e}"),
    }
}

// ---------------------------------------------------------------------------
// Interop scripts: one #[test] per scenario

/// Hang guard for one interop script run (the scripts have their own 60 s per-scenario limit).
pub const SCRIPT_GUARD: Duration = Duration::from_secs(240);

/// Run `node <script> <args…>` in tests/interop/ts (installing its node_modules on first use).
pub fn run_node_script(script: &str, args: &[&str]) -> Finished {
    let dir = ensure_node_deps();
    let mut cmd = Command::new("node");
    cmd.arg(script).args(args).current_dir(&dir);
    run_with_timeout(&mut cmd, SCRIPT_GUARD).unwrap_or_else(|e| panic!("failed to start node: {e}"))
}

/// Names listed by an interop script's `--list` (first tab-separated column).
pub fn listed_scenarios(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|l| l.split('\t').next())
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// An interop script whose scenarios are run one per #[test] by [`interop_scenarios!`].
pub struct InteropScript {
    /// The script from the package root, for messages: `tests/interop/ts/interop.mjs`.
    pub path: &'static str,
    /// What one run is called in a failure message: `TypeScript SDK interop scenario`.
    pub what: &'static str,
    /// Runs the script with these arguments (its hang guard included).
    pub run: fn(&[&str]) -> Finished,
    /// The script's first argument for a scenario: the agent binary or the examples directory.
    pub target: fn(scenario: &str) -> PathBuf,
}

impl InteropScript {
    /// Run one scenario; the test fails (with the script's report) unless the script passes.
    #[track_caller]
    pub fn scenario(&self, name: &str) {
        let target = (self.target)(name);
        let target = target.to_str().expect("utf-8 path");
        let done = (self.run)(&[target, name]);
        assert!(
            done.success(),
            "{} `{name}` failed\n{}",
            self.what,
            done.describe()
        );
        // A script that exits 0 by mistake must not turn a failure green: it must also have
        // reported this scenario as passed, and exactly one scenario run.
        let passed = format!("PASS {name} (");
        assert!(
            done.stdout.lines().any(|l| l.starts_with(&passed)),
            "{} `{name}` exited 0 without reporting `PASS {name}`\n{}",
            self.what,
            done.describe()
        );
        assert!(
            done.stdout
                .lines()
                .any(|l| l.trim() == "1 passed, 0 failed"),
            "{} `{name}` exited 0 without its summary line `1 passed, 0 failed`\n{}",
            self.what,
            done.describe()
        );
    }

    /// The script's `--list` names exactly `ours`, the scenario #[test]s of `test_file`.
    #[track_caller]
    pub fn assert_lists(&self, ours: &[&str], test_file: &str) {
        let script = self.path.rsplit('/').next().unwrap_or(self.path);
        let done = (self.run)(&["--list"]);
        assert!(
            done.success(),
            "{script} --list failed\n{}",
            done.describe()
        );
        let mut listed = listed_scenarios(&done.stdout);
        let mut ours: Vec<String> = ours.iter().map(|s| s.to_string()).collect();
        listed.sort();
        ours.sort();
        assert_eq!(
            listed, ours,
            "scenario list of {} vs {test_file}",
            self.path
        );
    }
}

/// `interop_scenarios!(SCRIPT; name, …)`: a #[test] `name` running scenario `name` of `SCRIPT`
/// (an [`InteropScript`]) for each name, and `every_script_scenario_has_a_test`, which checks
/// the names against the script's `--list`.
///
/// Exported to the crate root (`interop_scenarios!` in the test crate) so that test crates
/// which include this module without running interop scripts get no unused-macro warning.
#[macro_export]
macro_rules! interop_scenarios {
    ($script:expr; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                $script.scenario(stringify!($name));
            }
        )*

        /// Every scenario the script knows has a #[test] here (and vice versa).
        #[test]
        fn every_script_scenario_has_a_test() {
            $script.assert_lists(&[$(stringify!($name)),*], file!());
        }
    };
}

// ---------------------------------------------------------------------------
// Raw stdio driver for the echo agent

/// The echo agent driven over raw pipes, recording every stdout line.
pub struct RawAgent {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Every line the agent wrote to stdout, in order.
    pub stdout_log: Arc<Mutex<Vec<String>>>,
    stderr_log: Arc<Mutex<String>>,
    /// Frames received but not yet consumed by an `expect_*` call.
    backlog: VecDeque<Value>,
    next_id: i64,
}

impl RawAgent {
    pub fn spawn() -> RawAgent {
        let bin = echo_binary();
        let mut child = Command::new(&bin)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("RUST_BACKTRACE", "1")
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {}: {e}", bin.display()));
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, rx) = mpsc::channel();
        let stdout_log = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&stdout_log);
        thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut buf = Vec::new();
                match reader.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&buf).into_owned();
                        log.lock().unwrap().push(line.clone());
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let stderr_log = Arc::new(Mutex::new(String::new()));
        let elog = Arc::clone(&stderr_log);
        thread::spawn(move || {
            let mut reader = BufReader::new(stderr);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                elog.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        RawAgent {
            stdin: child.stdin.take(),
            child,
            lines: rx,
            stdout_log,
            stderr_log,
            backlog: VecDeque::new(),
            next_id: 1000,
        }
    }

    /// Spawn and complete `initialize` (with fs capabilities advertised).
    pub fn initialized() -> RawAgent {
        let mut agent = RawAgent::spawn();
        let res = agent.request(
            "initialize",
            json!({
                "protocolVersion": 1,
                "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}},
                "clientInfo": {"name": "raw-pipe-test", "version": "0"}
            }),
        );
        assert!(
            res.get("result").is_some(),
            "initialize failed: {res}\n{}",
            agent.context()
        );
        agent
    }

    /// Spawn, initialize and create one session; returns the agent and the session id.
    pub fn with_session() -> (RawAgent, String) {
        let mut agent = RawAgent::initialized();
        let sid = agent.new_session();
        (agent, sid)
    }

    pub fn new_session(&mut self) -> String {
        let cwd = std::env::temp_dir();
        let res = self.request("session/new", json!({"cwd": cwd, "mcpServers": []}));
        match res.pointer("/result/sessionId").and_then(Value::as_str) {
            Some(s) => s.to_string(),
            None => panic!("session/new failed: {res}\n{}", self.context()),
        }
    }

    /// Transcript + stderr, for assertion messages.
    pub fn context(&self) -> String {
        let out = self.stdout_log.lock().unwrap();
        let err = self.stderr_log.lock().unwrap();
        let mut s = String::from("--- agent stdout so far ---\n");
        for l in out
            .iter()
            .rev()
            .take(60)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            s.push_str(l.trim_end());
            s.push('\n');
        }
        s.push_str("--- agent stderr (tail) ---\n");
        let tail: Vec<&str> = err.lines().rev().take(30).collect();
        for l in tail.into_iter().rev() {
            s.push_str(l);
            s.push('\n');
        }
        s
    }

    pub fn fresh_id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    /// Write one raw line (a newline is appended).
    pub fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin already closed");
        stdin
            .write_all(line.as_bytes())
            .and_then(|_| stdin.write_all(b"\n"))
            .and_then(|_| stdin.flush())
            .unwrap_or_else(|e| panic!("writing to the agent failed: {e}"));
    }

    /// Write raw bytes exactly as given.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin already closed");
        stdin
            .write_all(bytes)
            .and_then(|_| stdin.flush())
            .unwrap_or_else(|e| panic!("writing to the agent failed: {e}"));
    }

    pub fn send(&mut self, msg: &Value) {
        self.send_line(&msg.to_string());
    }

    /// Next frame from the agent (backlog first); panics on non-JSON stdout or after the hang guard.
    pub fn next_frame(&mut self) -> Value {
        if let Some(v) = self.backlog.pop_front() {
            return v;
        }
        self.read_frame(HANG_GUARD).unwrap_or_else(|| {
            panic!(
                "no frame from the agent within {HANG_GUARD:?}\n{}",
                self.context()
            )
        })
    }

    fn read_frame(&mut self, timeout: Duration) -> Option<Value> {
        match self.lines.recv_timeout(timeout) {
            Ok(line) => match serde_json::from_str::<Value>(&line) {
                Ok(v) => Some(v),
                Err(e) => panic!(
                    "agent wrote a non-JSON line to stdout ({e}): {line:?}\n{}",
                    self.context()
                ),
            },
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => {
                panic!("agent stdout closed unexpectedly\n{}", self.context())
            }
        }
    }

    /// Read frames until one satisfies `pred`; earlier frames go to the backlog.
    pub fn expect_frame(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(pos) = self.backlog.iter().position(&pred) {
            return self.backlog.remove(pos).unwrap();
        }
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.read_frame(left) {
                Some(v) if pred(&v) => return v,
                Some(v) => self.backlog.push_back(v),
                None => panic!("timed out waiting for {what}\n{}", self.context()),
            }
        }
    }

    /// The response (result or error) to request `id`.
    pub fn expect_response(&mut self, id: &Value) -> Value {
        let id = id.clone();
        self.expect_frame(&format!("the response to id {id}"), move |v| {
            is_response(v) && v["id"] == id
        })
    }

    /// Send a request with a fresh integer id and wait for its response.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.fresh_id());
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.expect_response(&id)
    }

    /// Send a request without waiting; returns its id.
    pub fn start_request(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.fresh_id());
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Start `session/prompt` with a single text block; returns the request id.
    pub fn start_prompt(&mut self, session_id: &str, text: &str) -> Value {
        self.start_request(
            "session/prompt",
            json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}),
        )
    }

    /// Wait for an agent_message_chunk with exactly `text` for `session_id`.
    pub fn expect_chunk(&mut self, session_id: &str, text: &str) -> Value {
        let sid = session_id.to_string();
        let t = text.to_string();
        self.expect_frame(&format!("agent_message_chunk {text:?}"), move |v| {
            v["method"] == "session/update"
                && v["params"]["sessionId"] == sid.as_str()
                && v["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
                && v["params"]["update"]["content"]["text"] == t.as_str()
        })
    }

    /// Forget frames read earlier but not consumed (they stay in `stdout_log`).
    pub fn discard_backlog(&mut self) {
        self.backlog.clear();
    }

    /// Prove the connection still works: a fresh `session/new` gets a result.
    pub fn assert_still_usable(&mut self) {
        let _ = self.new_session();
    }

    /// Assert that the very next frame is the response to `id` (nothing was sent in between).
    pub fn assert_next_frame_is_response_to(&mut self, id: &Value, why: &str) {
        assert!(
            self.backlog.is_empty(),
            "{why}: unexpected unconsumed frames {:?}\n{}",
            self.backlog,
            self.context()
        );
        let v = self.next_frame();
        assert!(
            is_response(&v) && v["id"] == *id,
            "{why}: expected the response to id {id} next, got {v}\n{}",
            self.context()
        );
    }

    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    /// Wait for the process to exit (hang guard `timeout`); `None` if it did not.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// Every stdout line so far, after the process exited and its stdout was drained.
    pub fn drained_stdout(&mut self) -> Vec<String> {
        // The reader thread ends at EOF; give it the hang guard to get there.
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            match self.lines.recv_timeout(Duration::from_millis(50)) {
                Err(RecvTimeoutError::Disconnected) => break,
                _ if Instant::now() >= deadline => break,
                _ => {}
            }
        }
        self.stdout_log.lock().unwrap().clone()
    }

    /// Close stdin, require a clean exit (status 0) and check that stdout held only
    /// newline-terminated JSON-RPC 2.0 objects.
    pub fn finish(mut self) {
        self.close_stdin();
        let status = self.wait_exit(HANG_GUARD);
        assert!(
            status.is_some(),
            "agent did not exit within {HANG_GUARD:?} after stdin EOF\n{}",
            self.context()
        );
        let status = status.unwrap();
        assert!(
            status.success(),
            "agent exited with {status} after stdin EOF (expected 0)\n{}",
            self.context()
        );
        let lines = self.drained_stdout();
        assert_only_jsonrpc_lines(&lines, &self.context());
    }
}

impl Drop for RawAgent {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

pub fn is_response(v: &Value) -> bool {
    v.get("method").is_none() && (v.get("result").is_some() || v.get("error").is_some())
}

/// Every line must be a newline-terminated JSON object with `"jsonrpc": "2.0"`.
pub fn assert_only_jsonrpc_lines(lines: &[String], context: &str) {
    for (i, line) in lines.iter().enumerate() {
        assert!(
            line.ends_with('\n') && !line.ends_with("\r\n"),
            "stdout line {i} is not LF-terminated: {line:?}\n{context}"
        );
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("stdout line {i} is not JSON ({e}): {line:?}\n{context}"));
        assert!(
            v.is_object() && v["jsonrpc"] == "2.0",
            "stdout line {i} is not a JSON-RPC 2.0 object: {line:?}\n{context}"
        );
    }
}
