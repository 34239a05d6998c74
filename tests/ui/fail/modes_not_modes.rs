// `modes = T` where `T` is a plain struct: one error, at `T`, saying to derive `acp::Modes`.
use acp::{Prompt, Session, StopReason};

#[derive(Default)]
struct Mode;

struct Agent;

#[acp::agent(modes = Mode)]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }
}

fn main() {}
