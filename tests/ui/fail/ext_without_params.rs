// An extension method takes its params after the client: none is one error, at the parameters.
use acp::{Client, Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[acp::ext("_my-agent/stats")]
    async fn stats(&self, _cx: &Client) -> acp::Result<u32> {
        Ok(0)
    }
}

fn main() {}
