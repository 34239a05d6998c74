// Tool parameters are owned: a reference says which owned type to use.
use std::path::Path;

use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[acp::tool(kind = "search")]
    async fn grep(&self, _cx: &Session, pattern: &str, path: &Path, bytes: &[u8]) -> acp::Result<String> {
        Ok(format!("{pattern} {} {}", path.display(), bytes.len()))
    }
}

fn main() {}
