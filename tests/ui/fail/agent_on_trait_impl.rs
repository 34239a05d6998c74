use acp::{Prompt, Session, StopReason};

struct Echo;

#[acp::agent]
impl acp::Agent for Echo {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }
}

fn main() {}
