//! # scribe — the agent of the design document, written with `#[acp::agent]`
//!
//! Each prompt appends a line to `NOTES.md` in the session's working directory: it reads the
//! file through the editor (a `read` tool call the user sees), then writes it back (an `edit`
//! tool call that asks for permission first and shows a diff). In an editor that does not let
//! agents read and write files, it says so instead.
//!
//! Run it under a real ACP client: `cargo build --example scribe` and point your editor's
//! agent server setting at `target/debug/examples/scribe`.

use std::path::PathBuf;

use acp::{Diff, Prompt, Session, StopReason};

/// A tiny agent that edits files in the user's editor.
#[derive(Default)]
pub struct Scribe;

#[acp::agent(name = "scribe", title = "Scribe", version = env!("CARGO_PKG_VERSION"))]
impl Scribe {
    /// One prompt turn. Returning ends the turn; `?` on a cancelled call ends it as cancelled.
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        // The notes live in a file the editor reads and writes for us. An editor that does
        // not offer that gets told why nothing happens, and the turn still ends normally.
        let fs = cx.fs();
        if !fs.can_read() || !fs.can_write() {
            let (verb, capability) = if fs.can_write() {
                ("read", "fs.readTextFile")
            } else {
                ("write", "fs.writeTextFile")
            };
            cx.message(format!(
                "This editor does not let agents {verb} files (no {capability} capability), \
                 so I can't keep notes."
            ))
            .await?;
            return Ok(StopReason::EndTurn);
        }
        let path = cx.cwd().join("NOTES.md");
        let notes = self.read(cx, path.clone()).await?; // a tool call the user sees
        match self
            .write(cx, path, format!("{notes}- {}\n", prompt.text()))
            .await
        {
            Ok(_) => cx.message("Noted.").await?,
            Err(acp::Error::PermissionDenied) => cx.message("Not noted: you said no.").await?,
            Err(e) => return Err(e),
        }
        Ok(StopReason::EndTurn)
    }

    /// Reads a text file through the editor (sees unsaved changes); a missing file is empty.
    ///
    /// # Arguments
    /// - `path`: the file to read, absolute or relative to the session's directory.
    #[acp::tool(kind = "read", title = "Read {path}")]
    async fn read(&self, cx: &Session, path: PathBuf) -> acp::Result<String> {
        match cx.fs().read_text_file(&path).await {
            Err(e) if e.is_not_found() => Ok(String::new()),
            other => other,
        }
    }

    /// Writes a text file through the editor.
    ///
    /// # Arguments
    /// - `path`: the file to write, absolute or relative to the session's directory.
    /// - `content`: the file's new content.
    #[acp::tool(kind = "edit", title = "Write {path}", permission)]
    async fn write(&self, cx: &Session, path: PathBuf, content: String) -> acp::Result<Diff> {
        let old = cx.fs().read_text_file(&path).await.ok();
        cx.fs().write_text_file(&path, &content).await?;
        Ok(Diff::new(cx.cwd().join(path), content).old_text(old))
    }
}

#[tokio::main]
async fn main() -> acp::Result<()> {
    acp::init_logging();
    acp::serve_main(Scribe).await
}
