// A `prompt` whose future is not `Send`: one error, at `prompt`.
use std::rc::Rc;

use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        let count = Rc::new(1);
        cx.message("counting").await?;
        cx.message(count.to_string()).await?;
        Ok(StopReason::EndTurn)
    }
}

fn main() {}
