//! Interop with the official Python client SDK (`agent-client-protocol`, pinned in
//! tests/interop/py/requirements.txt). Each test runs one scenario of
//! tests/interop/py/interop.py against the `echo` example. The SDK's pydantic validation
//! is kept strict: swallowed validation errors and lenient "salvaged" fields fail the run.
//!
//! Needs Python >= 3.10 with the venv module; a venv is created under
//! `<target>/interop-venv` and `pip install -r requirements.txt` runs on first use.

use crate::support;

use std::process::Command;

fn run_py(args: &[&str]) -> support::Finished {
    let python = support::ensure_python_venv();
    let mut cmd = Command::new(python);
    cmd.arg("interop.py")
        .args(args)
        .current_dir(support::py_dir())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1");
    support::run_with_timeout(&mut cmd, support::SCRIPT_GUARD)
        .unwrap_or_else(|e| panic!("failed to start the venv python: {e}"))
}

const PY: support::InteropScript = support::InteropScript {
    path: "tests/interop/py/interop.py",
    what: "Python SDK interop scenario",
    run: run_py,
    target: |_| support::echo_binary(),
};

interop_scenarios!(PY;
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
