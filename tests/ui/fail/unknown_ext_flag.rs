// An unknown flag after the name of #[acp::ext]: an error at it, naming `notification`.
use acp::{Client, Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[acp::ext("_my-agent/ping", notify)]
    async fn ping(&self, _cx: &Client, _params: serde_json::Value) -> acp::Result<()> {
        Ok(())
    }
}

fn main() {}
