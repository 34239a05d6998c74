// Several mistakes at once: every one is reported, and the rest of the crate still compiles
// against the agent (its methods are kept, and a stub `Agent` impl stands in).
use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent(version = "1", colour = "blue")]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[acp::tool(kind = "fetch", title = "Get {url}")]
    async fn get(&self, _cx: &Session, uri: String) -> acp::Result<String> {
        Ok(uri)
    }

    #[acp::tool(kind = "reed")]
    fn read(&self, _cx: &Session) -> acp::Result<String> {
        Ok(String::new())
    }

    #[acp::tool]
    async fn bump(&mut self, _cx: &Session) -> acp::Result<()> {
        Ok(())
    }

    pub fn helper(&self) -> u32 {
        1
    }
}

fn main() {
    let _ = Agent.helper();
    let _ = acp::serve_stdio(Agent);
}
