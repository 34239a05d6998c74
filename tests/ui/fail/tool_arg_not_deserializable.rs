use acp::{Prompt, Session, StopReason};

struct Agent;

/// Not `Deserialize`, not `JsonSchema`.
struct Options {
    _depth: u32,
}

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[acp::tool(kind = "search")]
    async fn search(&self, _cx: &Session, query: String, options: Options) -> acp::Result<String> {
        let _ = options;
        Ok(query)
    }
}

fn main() {}
