// `requires(…)` names client capabilities: an unknown one is an error at it, listing them.
use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    /// Trains a model.
    #[acp::tool(requires(terminal, gpu))]
    async fn train(&self, _cx: &Session) -> acp::Result<String> {
        Ok(String::new())
    }
}

fn main() {}
