// Two commands with one name: an error at the second, naming the method that has it.
use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    /// Clears the screen.
    #[acp::command]
    async fn clear(&self, _cx: &Session) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    /// Clears everything.
    #[acp::command(name = "clear")]
    async fn clear_all(&self, _cx: &Session) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }
}

fn main() {}
