// `modes = T` where `T` derives `acp::ConfigOption` rather than `acp::Modes`: one error, at `T`.
use acp::{Prompt, Session, StopReason};

#[derive(acp::ConfigOption, Default)]
enum Model {
    #[default]
    Fast,
    Deep,
}

struct Agent;

#[acp::agent(modes = Model)]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }
}

fn main() {}
