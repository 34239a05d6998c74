// A tool's check takes `&self` and `&acp::Session` and returns `acp::Result<()>` (sync or
// async): one that does not fit is an error at the `check = …` path, saying what to write.
use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    /// Commits the staged changes.
    #[acp::tool(permission, check = Self::may_commit)]
    async fn commit(&self, _cx: &Session, message: String) -> acp::Result<String> {
        Ok(message)
    }

    /// Pushes the branch.
    #[acp::tool(permission, check = Self::may_push)]
    async fn push(&self, _cx: &Session) -> acp::Result<String> {
        Ok(String::new())
    }

    // Takes the tool's argument too.
    fn may_commit(&self, _cx: &Session, _message: &str) -> acp::Result<()> {
        Ok(())
    }

    // Answers with a `bool` instead of a `Result`.
    async fn may_push(&self, _cx: &Session) -> bool {
        true
    }
}

fn main() {}
