use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[acp::tool(kind = "read")]
    async fn read(&self, _cx: &Session) -> acp::Result<String> {
        Ok(String::new())
    }

    #[acp::tool(kind = "read", name = "read")]
    async fn read_again(&self, _cx: &Session) -> acp::Result<String> {
        Ok(String::new())
    }
}

fn main() {}
