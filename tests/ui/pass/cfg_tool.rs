// `#[cfg(...)]` on a tool is honoured: a tool compiled out is neither listed nor dispatched.
use acp::{Agent, Prompt, Session, StopReason};

struct Agent1;

#[acp::agent]
impl Agent1 {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    /// Always here.
    #[acp::tool(kind = "read")]
    async fn read(&self, _cx: &Session, path: String) -> acp::Result<String> {
        Ok(path)
    }

    /// Compiled out, with a parameter type that would not even be a valid tool argument.
    #[cfg(any())]
    #[acp::tool(kind = "edit")]
    async fn write(&self, _cx: &Session, content: NotAnArgument) -> acp::Result<()> {
        let _ = content;
        Ok(())
    }

    #[cfg(all())]
    #[acp::tool(kind = "think")]
    async fn think(&self, _cx: &Session) -> acp::Result<()> {
        Ok(())
    }
}

fn main() {
    let names: Vec<_> = Agent1.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["read", "think"]);
}
