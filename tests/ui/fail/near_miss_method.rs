// Methods named almost like recognised ones would never be called: each is an error saying
// what to write. (No "missing `prompt`" error on top of `promt`.)
use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn promt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    async fn new_sesion(&self, _cx: &Session) -> acp::Result<acp::SessionSetup> {
        Ok(acp::SessionSetup::default())
    }

    /// A helper far from any recognised name: fine.
    fn greeting(&self) -> &'static str {
        "hi"
    }
}

fn main() {
    let _ = Agent.greeting();
}
