//! Rules of the spec an ACP conformance kit checks, through the official TypeScript client SDK
//! (`@agentclientprotocol/sdk`, pinned in tests/interop/ts/package-lock.json). Each test runs
//! one scenario of tests/interop/ts/conformance.mjs against the examples: `session/load` sends
//! nothing for the session after its answer (`modes` and `tour`, whose slash commands close
//! the replay), `session/resume` nothing before it; `additionalDirectories` advertised, sent
//! by the SDK's session builder and honoured end to end (`workspace`); `coder` started with no
//! environment but `PATH`, as an editor starts it, answers `initialize` with its sign-in and
//! `session/new` with `-32000` naming what to do. The script validates every frame the agents
//! send against the JSON Schema shipped in the SDK package.
//!
//! Needs Node.js >= 20 and npm; `npm ci` runs automatically on first use.

use crate::support;

use std::path::PathBuf;

/// The examples directory, after building the examples (`modes`, `tour`, `workspace` and
/// `coder` among them).
fn examples_dir(_scenario: &str) -> PathBuf {
    support::example_binary("coder");
    let modes = support::example_binary("modes");
    support::example_binary("tour");
    support::example_binary("workspace");
    modes.parent().expect("examples directory").to_path_buf()
}

const CONFORMANCE: support::InteropScript = support::InteropScript {
    path: "tests/interop/ts/conformance.mjs",
    what: "TypeScript SDK conformance scenario",
    run: |args| support::run_node_script("conformance.mjs", args),
    target: examples_dir,
};

interop_scenarios!(CONFORMANCE;
    load_sends_nothing_after_its_answer,
    resume_answers_before_its_commands,
    additional_directories,
    coder_starts_anywhere,
);
