// Two extension methods with one name: an error at the second, naming the method that has it.
use acp::{Client, Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[acp::ext("_my-agent/stats")]
    async fn stats(&self, _cx: &Client, _params: serde_json::Value) -> acp::Result<u32> {
        Ok(0)
    }

    #[acp::ext("_my-agent/stats")]
    async fn more_stats(&self, _cx: &Client, _params: serde_json::Value) -> acp::Result<u32> {
        Ok(1)
    }
}

fn main() {}
