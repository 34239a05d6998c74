// A command whose first parameter is not the session: one error, at that parameter.
use acp::{Client, Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    /// Clears the screen.
    #[acp::command]
    async fn clear(&self, _cx: &Client) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }
}

fn main() {}
