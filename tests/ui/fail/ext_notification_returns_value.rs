// A notification is never answered: returning `acp::Result<String>` is one error, at the type.
use acp::{Client, Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[acp::ext("_my-agent/ping", notification)]
    async fn ping(&self, _cx: &Client, _params: serde_json::Value) -> acp::Result<String> {
        Ok("pong".to_owned())
    }
}

fn main() {}
