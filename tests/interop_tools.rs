//! The tool-call lifecycle of `#[acp::tool]` through the official TypeScript client SDK
//! (`@agentclientprotocol/sdk`, pinned in tests/interop/ts/package-lock.json). Each test runs
//! one scenario of tests/interop/ts/tools.mjs against the `scribe`, `model` or `shell`
//! example (named by the scenario's first word); the script asserts the exact frame sequence
//! of each turn and validates every frame the agent sends against the SDK's JSON Schema.
//!
//! Needs Node.js >= 20 and npm; `npm ci` runs automatically on first use.

mod support;

use std::process::Command;
use std::time::Duration;

/// Hang guard for one scenario run (the script has its own 60 s per-scenario limit).
const SCRIPT_GUARD: Duration = Duration::from_secs(240);

fn run_tools(args: &[&str]) -> support::Finished {
    let dir = support::ensure_node_deps();
    let mut cmd = Command::new("node");
    cmd.arg("tools.mjs").args(args).current_dir(&dir);
    support::run_with_timeout(&mut cmd, SCRIPT_GUARD)
        .unwrap_or_else(|e| panic!("failed to start node: {e}"))
}

fn scenario(name: &str) {
    let example = name.split('_').next().expect("scenario name");
    let binary = support::example_binary(example);
    let examples = binary.parent().expect("examples directory");
    let examples = examples.to_str().expect("utf-8 path");
    let done = run_tools(&[examples, name]);
    assert!(
        done.success(),
        "TypeScript SDK tool-call scenario `{name}` failed\n{}",
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
            let done = run_tools(&["--list"]);
            assert!(done.success(), "tools.mjs --list failed\n{}", done.describe());
            let mut listed = support::listed_scenarios(&done.stdout);
            let mut ours: Vec<String> = vec![$(stringify!($name).to_string()),*];
            listed.sort();
            ours.sort();
            assert_eq!(listed, ours, "scenario list of tests/interop/ts/tools.mjs vs tests/interop_tools.rs");
        }
    };
}

scenarios!(
    scribe_allow_once,
    scribe_allow_always,
    scribe_reject_once,
    model_bad_arguments,
    model_read_by_name,
    shell_cancel_releases_terminal,
    shell_without_terminal,
);
