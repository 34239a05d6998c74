// Recognised methods may return any `Result<T, E>` whose `E` has `From<acp::Error>` and
// `Display`: `?` works on any error.
use acp::{Prompt, Session, SessionSetup, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> anyhow::Result<StopReason> {
        let n: u32 = prompt.text().parse()?;
        cx.message(format!("{n}")).await?;
        Ok(StopReason::EndTurn)
    }

    async fn new_session(&self, _cx: &Session) -> Result<SessionSetup, anyhow::Error> {
        Ok(SessionSetup::default())
    }

    async fn set_mode(&self, _cx: &Session, _mode: acp::schema::SessionModeId) -> Result<(), acp::Error> {
        Ok(())
    }
}

fn main() {
    let _ = acp::serve_stdio(Agent);
}
