// `logout` needs `auth_methods`: the error names it and its signature.
use acp::{Client, Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    async fn logout(&self, _cx: &Client) -> acp::Result<()> {
        Ok(())
    }
}

fn main() {}
