// An extension method's context is the client, not a session: one error, at that parameter.
use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[acp::ext("_my-agent/stats")]
    async fn stats(&self, _cx: &Session, _params: serde_json::Value) -> acp::Result<u32> {
        Ok(0)
    }
}

fn main() {}
