// No `prompt`: an error at the agent type; the stub impl keeps `serve_stdio(Silent)` compiling.
struct Silent;

#[acp::agent]
impl Silent {
    async fn new_session(&self, _cx: &acp::Session) -> acp::Result<acp::SessionSetup> {
        Ok(acp::SessionSetup::default())
    }
}

fn main() {
    let _ = acp::serve_stdio(Silent);
}
