// Generics and a where clause on the agent type carry over to the generated impl.
use std::fmt::Display;

use acp::{Agent, Prompt, Session, StopReason};

struct Greeter<T, const N: usize> {
    greeting: T,
}

#[acp::agent(name = "greeter")]
impl<T, const N: usize> Greeter<T, N>
where
    T: Display + Send + Sync + 'static,
{
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let text = self.greet(cx, prompt.text()).await?;
        cx.message(text).await?;
        Ok(StopReason::EndTurn)
    }

    /// Greets someone N times.
    #[acp::tool(title = "Greet {name}")]
    async fn greet(&self, _cx: &Session, name: String) -> acp::Result<String> {
        Ok(format!("{}, {name}!", self.greeting).repeat(N))
    }
}

fn assert_agent<A: Agent>(_: &A) {}

fn main() {
    let agent = Greeter::<_, 2> { greeting: "Hello" };
    assert_agent(&agent);
    assert_eq!(agent.tools()[0].name, "greet");
}
