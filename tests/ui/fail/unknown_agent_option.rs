use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent(nmae = "agent", prompt(images))]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }
}

fn main() {}
