// A value that is not `Send` held across an await in a tool: one error, at that tool, even
// though `prompt` awaits the tool (the turn's future stays `Send`).
use std::rc::Rc;

use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        let thought = self.think(cx).await?;
        cx.message(thought).await?;
        Ok(StopReason::EndTurn)
    }

    #[acp::tool(kind = "think")]
    async fn think(&self, cx: &Session) -> acp::Result<String> {
        let shared = Rc::new(1);
        cx.thought("thinking").await?;
        Ok(shared.to_string())
    }

    #[acp::tool(kind = "read")]
    async fn read(&self, cx: &Session) -> acp::Result<String> {
        self.think(cx).await
    }
}

fn main() {}
