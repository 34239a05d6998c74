// An extension method name must start with `_`: an error at the name, with the name to write.
use acp::{Client, Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[acp::ext("my-agent/stats")]
    async fn stats(&self, _cx: &Client, _params: serde_json::Value) -> acp::Result<u32> {
        Ok(0)
    }
}

fn main() {}
