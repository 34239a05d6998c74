// `check = Self::name` names a method of the impl: a missing one is an error at the path,
// saying what to add.
use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    /// Commits the staged changes.
    #[acp::tool(kind = "execute", permission, check = Self::may_commit)]
    async fn commit(&self, _cx: &Session, message: String) -> acp::Result<String> {
        Ok(message)
    }
}

fn main() {}
