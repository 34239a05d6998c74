use acp::Session;

struct Helper;

impl Helper {
    #[acp::tool(kind = "read")]
    async fn read(&self, _cx: &Session) -> acp::Result<String> {
        Ok(String::new())
    }
}

fn main() {
    let _ = Helper;
}
