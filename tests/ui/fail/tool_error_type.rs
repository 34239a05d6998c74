// The error type must be able to carry the lifecycle's own errors (cancelled, denied).
use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[acp::tool]
    async fn text(&self, _cx: &Session) -> Result<String, String> {
        Ok(String::new())
    }
}

fn main() {}
