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

    async fn logout(&self, _cx: &acp::Client) -> Result<(), acp::Error> {
        Ok(())
    }

    fn auth_methods(&self) -> Vec<acp::schema::AuthMethod> {
        Vec::new()
    }

    async fn authenticate(&self, _cx: &acp::Client, _method: acp::schema::AuthMethodId) -> anyhow::Result<()> {
        Ok(())
    }

    /// Repeats the text after it.
    #[acp::command]
    async fn again(&self, cx: &Session, text: String) -> anyhow::Result<StopReason> {
        cx.message(text).await?;
        Ok(StopReason::EndTurn)
    }
}

fn main() {
    let _ = acp::serve_stdio(Agent);
}
