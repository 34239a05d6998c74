//! The `coder` example (a coding agent on the model loop) through the official TypeScript
//! client SDK (`@agentclientprotocol/sdk`, pinned in tests/interop/ts/package-lock.json), its
//! model an OpenAI-compatible server that tests/interop/ts/coder.mjs runs in its own process
//! (`OPENAI_BASE_URL` on 127.0.0.1, replies streamed in the Chat Completions chunk format and
//! decided from the request's messages). Each test runs one scenario of the script: a task that
//! reads, edits and runs a command with permissions; ask mode refusing an edit; a restart
//! mid-conversation resumed with the model's history; the editor rerouting the model
//! through its gateway (`providers/*`, unstable). The script asserts the exact frames of
//! each turn, the files on disk and what coder sent the model, and validates every frame
//! against the SDK's JSON Schema.
//!
//! Needs Node.js >= 20 and npm; `npm ci` runs automatically on first use.

use crate::support;

const CODER: support::InteropScript = support::InteropScript {
    path: "tests/interop/ts/coder.mjs",
    what: "TypeScript SDK coder scenario",
    run: |args| support::run_node_script("coder.mjs", args),
    target: |_| support::example_binary("coder"),
};

interop_scenarios!(CODER;
    read_edit_run,
    ask_mode_refuses_edit,
    restart_resumes_history,
    editor_reroutes_the_model,
);
