// A command returning something other than a stop reason: one error, at the return type.
use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    /// Says hello.
    #[acp::command]
    async fn hello(&self, _cx: &Session) -> acp::Result<String> {
        Ok("hello".to_owned())
    }
}

fn main() {}
