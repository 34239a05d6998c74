//! Shared helpers for the interop and protocol tests.
//!
//! * locating the example binaries (`echo`, …) next to the test executable,
//! * installing the Node / Python client SDKs and the MCP servers on first use (safe when
//!   several test threads or test processes start at once), and the `server-everything`
//!   MCP server as a session's `mcpServers` entry,
//! * running a child process with a hang guard,
//! * [`interop_scenarios!`]: one #[test] per scenario of an interop script.
//!
//! (Tests that drive an agent over pipes themselves use `acp::testing::TestClient::spawn`.)
//!
//! The modules of `tests/it` share this one module (`crate::support`), each a different subset
//! of it; `support::v2` is the protocol v2 tests' agent and client.
#![allow(dead_code)]

#[cfg(feature = "v2")]
pub mod v2;

use std::ffi::OsStr;
use std::fs;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant, SystemTime};

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

/// The data directory (`ACP_DATA_DIR`: the agents' session stores) of every agent the tests
/// start: under cargo's temporary directory for tests, never the user's own.
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("acp-data")
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
    // The agents an interop script starts inherit this: their stores stay in a temporary
    // directory.
    cmd.env("ACP_DATA_DIR", data_dir());
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
    install_npm(ts_dir())
}

/// `npm ci` in `dir` unless its node_modules already matches its package-lock.json.
fn install_npm(dir: PathBuf) -> Result<PathBuf, String> {
    check_node()?;
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

/// The real MCP servers the MCP tests connect to, pinned by tests/mcp/package-lock.json.
pub fn mcp_dir() -> PathBuf {
    package_root().join("tests").join("mcp")
}

/// Make sure tests/mcp/node_modules matches package-lock.json (`npm ci`, as .ci/run does);
/// returns the directory.
pub fn ensure_mcp_servers() -> PathBuf {
    static ONCE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match ONCE.get_or_init(|| install_npm(mcp_dir())) {
        Ok(p) => p.clone(),
        Err(e) => panic!("cannot install the MCP servers the tests connect to:\n{e}"),
    }
}

/// tests/mcp/node_modules, installed on first use.
pub fn mcp_node_modules() -> PathBuf {
    ensure_mcp_servers().join("node_modules")
}

/// The entry point of `@modelcontextprotocol/server-everything` (installed on first use).
pub fn everything_js() -> PathBuf {
    mcp_node_modules().join("@modelcontextprotocol/server-everything/dist/index.js")
}

/// server-everything over stdio, named `name`, with `ACP_MCP_TEST_TAG=tag` in its env (by
/// which a test finds its processes, and which its `get-env` tool shows).
pub fn everything(name: &str, tag: &str) -> acp::schema::McpServer {
    use acp::schema::{EnvVariable, McpServer, McpServerStdio};
    McpServer::Stdio(
        McpServerStdio::new(name, "node")
            .args(vec![everything_js().display().to_string(), "stdio".into()])
            .env(vec![EnvVariable::new("ACP_MCP_TEST_TAG", tag)]),
    )
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
/// Exported to the crate root: `interop_scenarios!` (textually after `#[macro_use] mod support`)
/// or `crate::interop_scenarios!` in any module of `tests/it`.
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
