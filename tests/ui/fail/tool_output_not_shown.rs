use acp::{Prompt, Session, StopReason};

struct Agent;

struct Report {
    _lines: usize,
}

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[acp::tool]
    async fn report(&self, _cx: &Session) -> acp::Result<Report> {
        Ok(Report { _lines: 1 })
    }
}

fn main() {}
