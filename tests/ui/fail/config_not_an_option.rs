// `config(T)` where `T` is not a config option: one error, at `T`, saying to derive it.
use acp::{Prompt, Session, StopReason};

#[derive(acp::ConfigOption, Default)]
enum Model {
    #[default]
    Fast,
    Deep,
}

#[derive(Default)]
struct Verbose(bool);

struct Agent;

#[acp::agent(config(Model, Verbose))]
impl Agent {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }
}

fn main() {}
