// Extension params that are not `Deserialize`: one error, at the type, saying to derive it.
use acp::{Client, Prompt, Session, StopReason};

struct Query {
    limit: u32,
}

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[acp::ext("_my-agent/stats")]
    async fn stats(&self, _cx: &Client, query: Query) -> acp::Result<u32> {
        Ok(query.limit)
    }
}

fn main() {}
