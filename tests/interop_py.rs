//! Interop with the official Python client SDK (`agent-client-protocol`, pinned in
//! tests/interop/py/requirements.txt). Each test runs one scenario of
//! tests/interop/py/interop.py against the `echo` example. The SDK's pydantic validation
//! is kept strict: swallowed validation errors and lenient "salvaged" fields fail the run.
//!
//! Needs Python >= 3.10 with the venv module; a venv is created under
//! `<target>/interop-venv` and `pip install -r requirements.txt` runs on first use.

mod support;

use std::process::Command;
use std::time::Duration;

/// Hang guard for one scenario run (the script has its own 60 s per-scenario limit).
const SCRIPT_GUARD: Duration = Duration::from_secs(240);

fn run_py(args: &[&str]) -> support::Finished {
    let python = support::ensure_python_venv();
    let mut cmd = Command::new(python);
    cmd.arg("interop.py")
        .args(args)
        .current_dir(support::py_dir())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1");
    support::run_with_timeout(&mut cmd, SCRIPT_GUARD)
        .unwrap_or_else(|e| panic!("failed to start the venv python: {e}"))
}

fn scenario(name: &str) {
    let echo = support::echo_binary();
    let echo = echo.to_str().expect("utf-8 path");
    let done = run_py(&[echo, name]);
    assert!(
        done.success(),
        "Python SDK interop scenario `{name}` failed\n{}",
        done.describe()
    );
}

macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                scenario(stringify!($name));
            }
        )*

        /// Every scenario the script knows has a #[test] here (and vice versa).
        #[test]
        fn every_script_scenario_has_a_test() {
            let done = run_py(&["--list"]);
            assert!(done.success(), "interop.py --list failed\n{}", done.describe());
            let mut listed = support::listed_scenarios(&done.stdout);
            let mut ours: Vec<String> = vec![$(stringify!($name).to_string()),*];
            listed.sort();
            ours.sort();
            assert_eq!(listed, ours, "scenario list of tests/interop/py/interop.py vs tests/interop_py.rs");
        }
    };
}

scenarios!(
    validation_self_test,
    prompt_streams_chunks_and_plan,
    pipelined_initialize_and_session_new,
    permission_allow,
    permission_reject,
    permission_cancelled_outcome,
    fs_read,
    fs_write,
    fs_read_missing_file,
    no_fs_capability,
    cancel_mid_turn,
    concurrent_sessions,
);
