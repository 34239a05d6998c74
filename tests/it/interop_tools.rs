//! The tool-call lifecycle of `#[acp::tool]` through the official TypeScript client SDK
//! (`@agentclientprotocol/sdk`, pinned in tests/interop/ts/package-lock.json). Each test runs
//! one scenario of tests/interop/ts/tools.mjs against the `scribe`, `model` or `shell`
//! example (named by the scenario's first word); the script asserts the exact frame sequence
//! of each turn and validates every frame the agent sends against the SDK's JSON Schema.
//!
//! Needs Node.js >= 20 and npm; `npm ci` runs automatically on first use.

use crate::support;

use std::path::PathBuf;

/// The examples directory, after checking that the scenario's example (its first word) is built.
fn examples_dir(scenario: &str) -> PathBuf {
    let example = scenario.split('_').next().expect("scenario name");
    let binary = support::example_binary(example);
    binary.parent().expect("examples directory").to_path_buf()
}

const TOOLS: support::InteropScript = support::InteropScript {
    path: "tests/interop/ts/tools.mjs",
    what: "TypeScript SDK tool-call scenario",
    run: |args| support::run_node_script("tools.mjs", args),
    target: examples_dir,
};

interop_scenarios!(TOOLS;
    scribe_allow_once,
    scribe_allow_always,
    scribe_reject_once,
    model_bad_arguments,
    model_read_by_name,
    shell_cancel_releases_terminal,
    shell_terminal_refused,
    shell_without_terminal,
);
