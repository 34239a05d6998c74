//! Interop with the official TypeScript client SDK (`@agentclientprotocol/sdk`, pinned in
//! tests/interop/ts/package-lock.json). Each test runs one scenario of
//! tests/interop/ts/interop.mjs against the `echo` example; the script validates every frame
//! the agent sends against the JSON Schema shipped in the SDK package.
//!
//! Needs Node.js >= 20 and npm; `npm ci` runs automatically on first use.

use crate::support;

const TS: support::InteropScript = support::InteropScript {
    path: "tests/interop/ts/interop.mjs",
    what: "TypeScript SDK interop scenario",
    run: |args| support::run_node_script("interop.mjs", args),
    target: |_| support::echo_binary(),
};

interop_scenarios!(TS;
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
