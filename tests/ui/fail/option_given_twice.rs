// An option given twice is an error at the second one (for the tool and the agent alike).
use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent(name = "a", name = "b", prompt(image, image))]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[acp::tool(kind = "read", kind = "edit")]
    async fn read(&self, _cx: &Session) -> acp::Result<String> {
        Ok(String::new())
    }
}

fn main() {}
