// `authenticated` answers with a plain `bool`: `acp::Result<bool>` is one error, at the type.
use acp::{Client, Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    fn auth_methods(&self) -> Vec<acp::schema::AuthMethod> {
        Vec::new()
    }

    async fn authenticate(&self, _cx: &Client, _method: acp::schema::AuthMethodId) -> acp::Result<()> {
        Ok(())
    }

    async fn authenticated(&self, _cx: &Client) -> acp::Result<bool> {
        Ok(true)
    }
}

fn main() {}
