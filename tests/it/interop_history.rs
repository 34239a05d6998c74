//! Session history through the official TypeScript client SDK (`@agentclientprotocol/sdk`,
//! pinned in tests/interop/ts/package-lock.json). Each test runs one scenario of
//! tests/interop/ts/history.mjs against the `echo` example, which records its sessions with no
//! code of its own: fresh agent processes on one temporary `ACP_DATA_DIR` per scenario, driving
//! `session/list`, `session/load`, `session/resume`, `session/close` and `session/delete`
//! across restarts; the script validates every frame the agents send against the JSON Schema
//! shipped in the SDK package.
//!
//! Needs Node.js >= 20 and npm; `npm ci` runs automatically on first use.

use crate::support;

const HISTORY: support::InteropScript = support::InteropScript {
    path: "tests/interop/ts/history.mjs",
    what: "TypeScript SDK session-history scenario",
    run: |args| support::run_node_script("history.mjs", args),
    target: |_| support::echo_binary(),
};

interop_scenarios!(HISTORY;
    advertised,
    store_less,
    load_replays_after_restart,
    load_after_kill,
    list_filters_and_paginates,
    resume_without_replay,
    close_and_delete,
);
