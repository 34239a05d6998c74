// #[acp::ext] without the method's name: an error at the attribute, saying what to write.
use acp::{Client, Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[acp::ext]
    async fn stats(&self, _cx: &Client, _params: serde_json::Value) -> acp::Result<u32> {
        Ok(0)
    }
}

fn main() {}
