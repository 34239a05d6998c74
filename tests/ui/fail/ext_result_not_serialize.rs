// A request whose result is not `Serialize`: one error, at the return type.
use acp::{Client, Prompt, Session, StopReason};

struct Stats {
    turns: u32,
}

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[acp::ext("_my-agent/stats")]
    async fn stats(&self, _cx: &Client, _params: serde_json::Value) -> acp::Result<Stats> {
        Ok(Stats { turns: 0 })
    }
}

fn main() {}
