//! The `probe` binary: [`probe_agent::Probe`] served on stdio, for the runtime's
//! out-of-process tests (`tests/it/guarantees.rs`). Not a template: see `examples/` for those.

#[path = "probe_agent.rs"]
mod probe_agent;

#[tokio::main]
async fn main() -> acp::Result<()> {
    acp::init_logging();
    acp::serve_stdio(probe_agent::Probe::default()).await
}
