//! Interop over the network with the official TypeScript client SDK's experimental clients
//! (`@agentclientprotocol/sdk/experimental/ws-client` and `.../http-client`, pinned in
//! tests/interop/ts/package-lock.json): each test runs one scenario of
//! tests/interop/ts/net.mjs against the `echo` example started with `--listen` and
//! `$ACP_TOKEN`, under the SDK's v1 and (experimental) v2 client apps; the script validates
//! every frame the agent sends against the SDK's schema (v1's or v2's) and checks the
//! transport RFD's status codes and headers on the wire.
//!
//! Needs Node.js >= 20 and npm; `npm ci` runs automatically on first use.

use crate::support;

const NET: support::InteropScript = support::InteropScript {
    path: "tests/interop/ts/net.mjs",
    what: "TypeScript SDK network interop scenario",
    run: |args| support::run_node_script("net.mjs", args),
    target: |_| support::echo_binary(),
};

interop_scenarios!(NET;
    websocket_turn,
    http_turn,
    websocket_turn_v2,
    http_turn_v2,
    websocket_refused_without_token,
    http_status_codes,
    websocket_permission_and_cancel,
    http_load_and_resume,
    websocket_dropped_mid_turn,
);

/// `--listen` without `$ACP_TOKEN`: the example refuses to listen, says why on stderr (never
/// stdout) and exits non-zero.
#[test]
fn listen_without_a_token_is_refused() {
    let mut cmd = std::process::Command::new(support::echo_binary());
    cmd.args(["--listen", "127.0.0.1:0"])
        .env_remove("ACP_TOKEN");
    let done = support::run_with_timeout(&mut cmd, std::time::Duration::from_secs(20))
        .expect("run the echo example");
    assert!(!done.timed_out, "it must not listen\n{}", done.describe());
    assert!(
        done.status.is_some_and(|s| !s.success()),
        "{}",
        done.describe()
    );
    assert!(done.stderr.contains("ACP_TOKEN"), "{}", done.describe());
    assert!(done.stdout.is_empty(), "{}", done.describe());
}
