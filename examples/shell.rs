//! # shell — runs commands in the editor's terminal
//!
//! Shows: a tool that asks permission, then runs a command in the client's terminal with the
//! live terminal embedded in the tool call; what happens on cancel (the tool's future is
//! dropped, which kills and releases the terminal); and a clear answer to the user, ending the
//! turn normally, when the client has no terminal capability or refuses to run the command
//! (`acp::Error::Refused`: editors refuse terminals they advertised, e.g. acpx unless the
//! user approved terminal commands).
//!
//! Every prompt is a shell command: `ls -la`, `cargo test`, …
//!
//! Run it in an editor with terminal support (e.g. Zed): point the agent server setting at
//! `target/debug/examples/shell` (see the README).

use acp::{Prompt, Session, StopReason, Terminal};

/// The agent: no state of its own.
#[derive(Default)]
pub struct Shell;

#[acp::agent(name = "shell", title = "Shell")]
impl Shell {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let command = prompt.text().trim().to_owned();
        if command.is_empty() {
            cx.message("Send a shell command to run, e.g. `ls -la`.")
                .await?;
            return Ok(StopReason::EndTurn);
        }
        if !cx.terminal().is_supported() {
            cx.message(
                "This editor did not offer a terminal (no `terminal` capability), so I can't \
                 run commands here. Try an editor with ACP terminal support.",
            )
            .await?;
            return Ok(StopReason::EndTurn);
        }
        match self.run(cx, command).await {
            Ok(terminal) => {
                let output = terminal.output().await?;
                let code = output
                    .exit_status
                    .and_then(|s| s.exit_code)
                    .map_or_else(|| "no exit code".to_owned(), |c| format!("exit code {c}"));
                let lines = output.output.lines().count();
                cx.message(format!("Done ({code}, {lines} lines of output)."))
                    .await?;
                // The editor keeps showing the output in the tool call after release.
                terminal.release().await?;
            }
            Err(acp::Error::PermissionDenied) => cx.message("Okay, I won't run it.").await?,
            // The editor advertised a terminal but would not run this command (its settings,
            // a policy, its own prompt answered no). Not a failure of the turn: say so.
            Err(refused @ acp::Error::Refused { .. }) => {
                cx.message(format!(
                    "The editor would not run it ({refused}). Allow terminal commands in its \
                     settings, or run it yourself."
                ))
                .await?
            }
            Err(e) => return Err(e),
        }
        Ok(StopReason::EndTurn)
    }

    /// Runs a shell command in the editor's terminal and waits for it to exit.
    #[acp::tool(kind = "execute", title = "Run `{command}`", permission)]
    async fn run(&self, cx: &Session, command: String) -> acp::Result<Terminal> {
        let terminal = cx.terminal().create("sh", ["-c", command.as_str()]).await?;
        // If the turn is cancelled while waiting, this future is dropped, and so is
        // `terminal`: dropping it kills the command and releases the terminal.
        terminal.wait_for_exit().await?;
        Ok(terminal)
    }
}

#[tokio::main]
async fn main() -> acp::Result<()> {
    acp::init_logging();
    acp::serve_main(Shell).await
}
