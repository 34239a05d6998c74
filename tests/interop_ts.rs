//! Interop with the official TypeScript client SDK (`@agentclientprotocol/sdk`, pinned in
//! tests/interop/ts/package-lock.json). Each test runs one scenario of
//! tests/interop/ts/interop.mjs against the `echo` example; the script validates every frame
//! the agent sends against the JSON Schema shipped in the SDK package.
//!
//! Needs Node.js >= 20 and npm; `npm ci` runs automatically on first use.

mod support;

use std::process::Command;
use std::time::Duration;

/// Hang guard for one scenario run (the script has its own 60 s per-scenario limit).
const SCRIPT_GUARD: Duration = Duration::from_secs(240);

fn run_ts(args: &[&str]) -> support::Finished {
    let dir = support::ensure_node_deps();
    let mut cmd = Command::new("node");
    cmd.arg("interop.mjs").args(args).current_dir(&dir);
    support::run_with_timeout(&mut cmd, SCRIPT_GUARD)
        .unwrap_or_else(|e| panic!("failed to start node: {e}"))
}

fn scenario(name: &str) {
    let echo = support::echo_binary();
    let echo = echo.to_str().expect("utf-8 path");
    let done = run_ts(&[echo, name]);
    assert!(
        done.success(),
        "TypeScript SDK interop scenario `{name}` failed\n{}",
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
            let done = run_ts(&["--list"]);
            assert!(done.success(), "interop.mjs --list failed\n{}", done.describe());
            let mut listed = support::listed_scenarios(&done.stdout);
            let mut ours: Vec<String> = vec![$(stringify!($name).to_string()),*];
            listed.sort();
            ours.sort();
            assert_eq!(listed, ours, "scenario list of tests/interop/ts/interop.mjs vs tests/interop_ts.rs");
        }
    };
}

scenarios!(
    schema_validator_self_test,
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
