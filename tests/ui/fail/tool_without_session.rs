use std::path::PathBuf;

use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[acp::tool(kind = "read")]
    async fn read(&self, path: PathBuf) -> acp::Result<String> {
        Ok(path.display().to_string())
    }
}

fn main() {}
