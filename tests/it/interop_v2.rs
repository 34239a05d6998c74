//! Protocol v2 (Preview) interop with the official TypeScript SDK's experimental v2 client
//! (`@agentclientprotocol/sdk/experimental/v2`, pinned in tests/interop/ts/package-lock.json).
//! Each scenario test runs one scenario of tests/interop/ts/v2/interop.mjs against the example
//! it names (`echo`, `mcp`, `tour`, `coder`); the script validates every frame the agent
//! sends against the SDK's schema/v2/schema.json.
//!
//! Beside the scenarios: v1 still answered as v1 (`initialize_v1_still_v1`), and the proof of
//! the drivers themselves: the validator self-test, the scenario list, and
//! `reference_agent_proves_the_drivers` (tests/interop/ts/v2/prove.mjs: every scenario passes
//! on a v2 agent written on the SDK's own agent side, and fails on each of its defects).
//!
//! Needs Node.js >= 20 and npm; `npm ci` runs automatically on first use.

use crate::support;

use std::path::PathBuf;

/// The examples directory (after `cargo build --examples`), or nothing for the self-test.
fn target(scenario: &str) -> PathBuf {
    if scenario == "schema_validator_self_test" {
        return support::ts_dir(); // needs no agent; the script only prints it
    }
    let echo = support::example_binary("echo");
    echo.parent().expect("examples directory").to_path_buf()
}

const V2: support::InteropScript = support::InteropScript {
    path: "tests/interop/ts/v2/interop.mjs",
    what: "TypeScript SDK protocol v2 scenario",
    run: |args| support::run_node_script("v2/interop.mjs", args),
    target,
};

/// One #[test] per scenario against the examples, and the check that the script's
/// `--list` names exactly these (plus the self-test).
macro_rules! v2_scenarios {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                V2.scenario(stringify!($name));
            }
        )*

        /// Every scenario the script knows has a #[test] here (and vice versa).
        #[test]
        fn every_script_scenario_has_a_test() {
            V2.assert_lists(
                &["schema_validator_self_test", "initialize_v1_still_v1", $(stringify!($name)),*],
                file!(),
            );
        }
    };
}

v2_scenarios!(
    initialize_v2,
    initialize_v3_answers_v2,
    plain_turn,
    permission,
    tool_calls,
    cancel_mid_turn,
    cancel_during_permission,
    queued_prompts,
    session_list,
    resume_with_replay,
    resume_without_replay,
    close_idle,
    close_during_turn,
    auth,
    coder_starts_anywhere,
);

#[test]
fn schema_validator_self_test() {
    V2.scenario("schema_validator_self_test");
}

/// A v1 client still gets v1 from the same example binaries.
#[test]
fn initialize_v1_still_v1() {
    V2.scenario("initialize_v1_still_v1");
}

/// The drivers pass a correct v2 agent and fail each defective variant of it.
#[test]
fn reference_agent_proves_the_drivers() {
    let done = support::run_node_script("v2/prove.mjs", &[]);
    assert!(
        done.success() && done.stdout.lines().any(|l| l.starts_with("proved: ")),
        "tests/interop/ts/v2/prove.mjs failed\n{}",
        done.describe()
    );
}
