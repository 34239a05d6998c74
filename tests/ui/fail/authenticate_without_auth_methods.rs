// A recognised method that needs another one: the error names it and its signature.
use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    async fn authenticate(&self, _cx: &acp::Client, _method: acp::schema::AuthMethodId) -> acp::Result<()> {
        Ok(())
    }
}

fn main() {}
