// A `prompt` returning the wrong type: one error, at the return type, quoting the signature.
use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, prompt: Prompt) -> acp::Result<String> {
        Ok(prompt.text())
    }

    async fn new_session(&self, _cx: &Session) -> Result<acp::SessionSetup, String> {
        Ok(acp::SessionSetup::default())
    }
}

fn main() {
    let _ = StopReason::EndTurn;
}
