struct Agent;

#[acp::agent]
impl Agent {
    fn prompt(&self, cx: &acp::Session) -> acp::Result<acp::StopReason> {
        let _ = cx;
        Ok(acp::StopReason::EndTurn)
    }
}

fn main() {}
