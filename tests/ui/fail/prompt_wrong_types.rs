use acp::{Session, StopReason};

struct Agent;

#[acp::agent]
impl Agent {
    async fn prompt(&self, _cx: &Session, prompt: String) -> acp::Result<String> {
        Ok(prompt)
    }
}

fn main() {
    let _ = StopReason::EndTurn;
}
