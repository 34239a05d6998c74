// A command without a return type: one error, at its name, quoting the signature to write.
use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    /// Clears the screen.
    #[acp::command]
    async fn clear(&self, _cx: &Session) {}
}

fn main() {}
