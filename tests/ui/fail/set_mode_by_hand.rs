// `set_mode` written by hand: the runtime answers `session/set_mode` from the declared modes,
// so it is an error saying to derive `acp::Modes` and declare them.
use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    async fn set_mode(&self, _cx: &Session, _mode: acp::schema::SessionModeId) -> acp::Result<()> {
        Ok(())
    }
}

fn main() {}
