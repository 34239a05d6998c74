// `Agent` methods the macro writes itself: defining them in the impl would be silently
// ignored, so each is an error saying what to write instead.
use acp::{Prompt, Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    fn info(&self) -> acp::schema::Implementation {
        acp::schema::Implementation::new("agent", "1.0.0")
    }

    fn capabilities(&self) -> acp::schema::AgentCapabilities {
        acp::schema::AgentCapabilities::new()
    }

    fn tools(&self) -> Vec<acp::ToolDef> {
        Vec::new()
    }

    async fn call_tool(&self, _cx: &Session, _name: &str) -> acp::Result<acp::ToolOutput> {
        Ok(acp::ToolOutput::default())
    }
}

fn main() {}
