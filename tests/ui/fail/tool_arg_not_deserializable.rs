// A parameter type without the derives a tool argument needs: one error per parameter, at its
// type, naming all three derives.
use acp::{Prompt, Session, StopReason};

struct Agent;

/// Not `Serialize`, not `Deserialize`, not `JsonSchema`.
struct Options {
    _depth: u32,
}

/// `Serialize` only.
#[derive(serde::Serialize)]
struct Half {
    _depth: u32,
}

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[acp::tool(kind = "search")]
    async fn search(&self, _cx: &Session, query: String, options: Options, half: Half) -> acp::Result<String> {
        let _ = (options, half);
        Ok(query)
    }
}

fn main() {}
