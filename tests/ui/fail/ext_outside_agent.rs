// #[acp::ext] outside an #[acp::agent] impl: an error at the attribute.
use acp::Client;

struct Helper;

impl Helper {
    #[acp::ext("_my-agent/stats")]
    async fn stats(&self, _cx: &Client, _params: serde_json::Value) -> acp::Result<u32> {
        Ok(0)
    }
}

fn main() {
    let _ = Helper;
}
