//! The runtime's guarantees through the official TypeScript client SDK
//! (`@agentclientprotocol/sdk`, pinned in tests/interop/ts/package-lock.json). Each test runs
//! one scenario of tests/interop/ts/guarantees.mjs against the `probe` test agent
//! (tests/agents/probe_agent.rs, built as the example `probe`); the script asserts the exact
//! frames the agent sends for each turn and validates every one against the JSON Schema
//! shipped in the SDK package.
//!
//! Needs Node.js >= 20 and npm; `npm ci` runs automatically on first use.

use crate::support;

const GUARANTEES: support::InteropScript = support::InteropScript {
    path: "tests/interop/ts/guarantees.mjs",
    what: "TypeScript SDK guarantee scenario",
    run: |args| support::run_node_script("guarantees.mjs", args),
    target: |_| support::example_binary("probe"),
};

interop_scenarios!(GUARANTEES;
    error_after_cancel,
    turn_ignoring_cancel_is_answered,
    panic_answers_internal_error,
    cancel_request_cancels_prompt,
    unanswered_permission_then_cancel,
    cancel_before_further_updates,
);
