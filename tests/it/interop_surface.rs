//! What an agent declares — modes, config options, slash commands, authentication, extension
//! methods, prompt content, message ids, elicitation, the cancel cascade — through the
//! official TypeScript client SDK (`@agentclientprotocol/sdk`, pinned in
//! tests/interop/ts/package-lock.json). Each test runs one scenario of
//! tests/interop/ts/surface.mjs or tests/interop/ts/auth_ext.mjs against the `tour` example
//! (which declares everything), `modes`, and `echo` (which declares none of it: not
//! advertised, and refused); the scripts assert the frames that matter and validate every
//! frame the agents send against the JSON Schema shipped in the SDK package.
//!
//! Needs Node.js >= 20 and npm; `npm ci` runs automatically on first use.

use crate::support;

use std::path::PathBuf;

/// The examples directory, after building the examples (`tour`, `modes` and `echo` among them).
fn examples_dir(_scenario: &str) -> PathBuf {
    let tour = support::example_binary("tour");
    for example in ["modes", "echo"] {
        support::example_binary(example);
    }
    tour.parent().expect("examples directory").to_path_buf()
}

const SURFACE: support::InteropScript = support::InteropScript {
    path: "tests/interop/ts/surface.mjs",
    what: "TypeScript SDK declared-surface scenario",
    run: |args| support::run_node_script("surface.mjs", args),
    target: examples_dir,
};

/// Modes, config options, slash commands, the latest wave's fallbacks, prompt content,
/// message ids.
mod surface {
    crate::interop_scenarios!(super::SURFACE;
        initialize_advertises,
        modes,
        config_options,
        slash_commands,
        latest_wave_fallbacks,
        prompt_content,
        message_ids,
    );
}

const AUTH_EXT: support::InteropScript = support::InteropScript {
    path: "tests/interop/ts/auth_ext.mjs",
    what: "TypeScript SDK auth/extension/elicitation/cancel scenario",
    run: |args| support::run_node_script("auth_ext.mjs", args),
    target: examples_dir,
};

/// Authentication, extension methods, elicitation, the cancel cascade.
mod auth_ext {
    crate::interop_scenarios!(super::AUTH_EXT;
        auth,
        extensions,
        elicitation,
        cancel_cascade,
    );
}
