// An extension method takes one params value: a second is one error, at it.
use acp::{Client, Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[acp::ext("_my-agent/add")]
    async fn add(&self, _cx: &Client, a: u32, b: u32) -> acp::Result<u32> {
        Ok(a + b)
    }
}

fn main() {}
