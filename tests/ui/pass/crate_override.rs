// `crate = …` names the facade the expansion uses, here through a re-export module.
mod facade {
    pub use acp::*;
}

use acp::{Agent, Prompt, Session, StopReason};

struct Agent1;

#[facade::agent(crate = crate::facade)]
impl Agent1 {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[crate::facade::tool(kind = "read")]
    async fn read(&self, _cx: &Session) -> acp::Result<String> {
        Ok(String::new())
    }
}

struct Agent2;

// The string form, as in `#[serde(crate = "…")]`.
#[acp::agent(crate = "::acp")]
impl Agent2 {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[::acp::tool]
    async fn nothing(&self, _cx: &Session) -> acp::Result<()> {
        Ok(())
    }
}

fn main() {
    assert_eq!(Agent1.tools()[0].name, "read");
    assert_eq!(Agent2.tools()[0].name, "nothing");
}
