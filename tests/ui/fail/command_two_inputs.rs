// A command takes at most one input after the session: one error, at the second one.
use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    /// Renames a file.
    #[acp::command(hint = "from to")]
    async fn rename(&self, _cx: &Session, _from: String, _to: String) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }
}

fn main() {}
