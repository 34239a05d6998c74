//! # bench — a workload agent for measuring the runtime from outside
//!
//! `benches/throughput/main.rs` spawns this agent (release build) and drives it over pipes, the
//! way an editor would; `benches/ts-agent/agent.mjs` is the same workload on the official
//! TypeScript SDK. Run the whole comparison with `cargo bench --bench throughput`, or build
//! this agent alone with `cargo build --release --example bench`.
//!
//! What it does with the prompt text:
//! - `stream <n>`: sends n `agent_message_chunk` updates, then `end_turn`; chunk i says
//!   `{i:08} of the streamed answer.\n` (33 bytes, e.g. `00000042 of the streamed answer.`
//!   and a newline), which the bench checks, in order;
//! - `permission <n>`: starts one tool call and asks n sequential
//!   `session/request_permission` questions about it, then `end_turn`;
//! - `llm`: runs the turn through `acp::llm::Model::run` with `OpenAi::from_env()`
//!   (`OPENAI_BASE_URL`; the model named by `ACP_MODEL`, `bench` if unset): the bench points
//!   it at a loopback server streaming the chunks of `stream N` as Chat Completions deltas;
//! - `sleep`: sends one chunk (`sleeping`), waits until the turn is cancelled, then answers
//!   `cancelled`;
//! - anything else, or a count that is not a number: a short message saying what it
//!   understands, then `end_turn`.

use std::sync::OnceLock;

use acp::llm::{Model, OpenAi};
use acp::schema::{PermissionOption, PermissionOptionKind};
use acp::{Agent, Prompt, Session, StopReason, ToolKind};

const USAGE: &str = "This agent runs bench workloads: `stream N` (N message chunks), \
                     `permission N` (N permission questions), `llm` (a model in the loop) \
                     or `sleep` (until cancelled).";

struct Bench {
    /// Made at the first `llm` prompt, so that the startup workload does not pay for an
    /// HTTP client it never uses.
    model: OnceLock<Model>,
}

impl Agent for Bench {
    fn info(&self) -> acp::schema::Implementation {
        acp::schema::Implementation::new("bench", env!("CARGO_PKG_VERSION"))
    }

    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let text = prompt.text();
        let text = text.trim();
        let (command, rest) = text.split_once(' ').unwrap_or((text, ""));
        let count = rest.trim().parse::<usize>();
        match (command, count) {
            ("stream", Ok(n)) => stream(cx, n).await,
            ("permission", Ok(n)) => permission(cx, n).await,
            ("stream" | "permission", Err(_)) => {
                let why =
                    format!("`{text}`: the count must be a whole number, like `{command} 100`.");
                cx.message(why).await?;
                Ok(StopReason::EndTurn)
            }
            ("llm", _) => {
                let model = match self.model.get() {
                    Some(model) => model,
                    None => {
                        let name = std::env::var("ACP_MODEL").unwrap_or_else(|_| "bench".into());
                        let model = Model::new(OpenAi::from_env()?, name);
                        self.model.get_or_init(|| model)
                    }
                };
                model.run(cx, &prompt).await
            }
            ("sleep", _) => {
                // Tells the driver the turn is running, so its cancel cannot overtake it.
                cx.message("sleeping").await?;
                cx.cancelled().await;
                Ok(StopReason::Cancelled)
            }
            _ => {
                cx.message(USAGE).await?;
                Ok(StopReason::EndTurn)
            }
        }
    }
}

async fn stream(cx: &Session, n: usize) -> acp::Result<StopReason> {
    for i in 0..n {
        cx.message(format!("{i:08} of the streamed answer.\n"))
            .await?;
    }
    Ok(StopReason::EndTurn)
}

async fn permission(cx: &Session, n: usize) -> acp::Result<StopReason> {
    let call = cx
        .tool_call("Dangerous action")
        .kind(ToolKind::Execute)
        .start()
        .await?;
    for _ in 0..n {
        let options = vec![
            PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
        ];
        call.request_permission(options).await?;
    }
    call.complete(Vec::new()).await?;
    Ok(StopReason::EndTurn)
}

// One thread: an agent waits on pipes, and on a single-threaded runtime the hops between the
// reader, a turn and the writer are same-thread wake-ups instead of cross-thread ones (the
// cancel latency halves; see BENCHMARKS.md). Use `#[tokio::main]` when turns do heavy work.
#[tokio::main(flavor = "current_thread")]
async fn main() -> acp::Result<()> {
    acp::init_logging();
    // Sessions are recorded in the default store, as for every agent; the benchmark also
    // measures the runtime without it.
    let server = acp::Server::new(Bench {
        model: OnceLock::new(),
    });
    let server = match std::env::var_os("ACP_BENCH_NO_STORE") {
        Some(_) => server.no_store(),
        None => server,
    };
    server.serve_main().await
}
