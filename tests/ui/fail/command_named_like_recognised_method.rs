// A command method named like a recognised method (`prompt`) cannot be both: one error, saying
// to rename the method and set the command's name.
use acp::{Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    /// Starts over.
    #[acp::command]
    async fn prompt(&self, _cx: &Session) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }
}

fn main() {}
