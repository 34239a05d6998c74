// A command's input is `String` or `acp::Prompt`: any other type is one error, at the type.
use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    /// Goes back some turns.
    #[acp::command(hint = "how many turns")]
    async fn undo(&self, _cx: &Session, _turns: u32) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }
}

fn main() {}
