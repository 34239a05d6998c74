// #[acp::command] outside an #[acp::agent] impl: an error at the attribute.
use acp::{Session, StopReason};

struct Helper;

impl Helper {
    /// Clears the screen.
    #[acp::command]
    async fn clear(&self, _cx: &Session) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }
}

fn main() {
    let _ = Helper;
}
