use std::rc::Rc;

use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[acp::tool(kind = "think")]
    async fn think(&self, cx: &Session) -> acp::Result<String> {
        let shared = Rc::new(1);
        cx.thought("thinking").await?;
        Ok(shared.to_string())
    }
}

fn main() {}
