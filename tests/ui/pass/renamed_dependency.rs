// The `acp` library under another name (as with `renamed = { package = "acp-framework", … }`).
extern crate acp as renamed;

use renamed::{Agent, Prompt, Session, StopReason, tool};

struct Scribe;

#[renamed::agent(crate = renamed, name = "scribe")]
impl Scribe {
    async fn prompt(&self, cx: &Session, _prompt: Prompt) -> renamed::Result<StopReason> {
        let _ = self.read(cx, "a.txt".into()).await?;
        Ok(StopReason::EndTurn)
    }

    /// Reads a file.
    #[renamed::tool(kind = "read", title = "Read {path}")]
    async fn read(&self, cx: &Session, path: std::path::PathBuf) -> renamed::Result<String> {
        cx.fs().read_text_file(path).await
    }

    /// Imported attribute, recognised by its bare name.
    #[tool(kind = "think")]
    async fn ponder(&self, _cx: &Session) -> renamed::Result<()> {
        Ok(())
    }
}

fn main() {
    assert_eq!(Scribe.info().name, "scribe");
    assert_eq!(Scribe.tools().len(), 2);
}
