use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[acp::tool]
    async fn nothing(&self, _cx: &Session) {}
}

fn main() {}
