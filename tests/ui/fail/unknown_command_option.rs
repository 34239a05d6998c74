// An unknown option of #[acp::command]: an error at it, listing the valid ones.
use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    /// Says something.
    #[acp::command(hint = "what to say", description = "Says something")]
    async fn say(&self, _cx: &Session, _text: String) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }
}

fn main() {}
