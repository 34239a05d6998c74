//! # echo — the smallest complete agent
//!
//! Shows: `#[acp::agent]` on a plain impl with just `prompt`; streaming message chunks, a
//! plan, a thought; reading and writing files through the editor; a tool call driven by hand
//! (`cx.tool_call(..)`) that asks the user for permission; and cancellation.
//!
//! Run it under a real ACP client:
//! `cargo build --example echo` and point your editor's agent server setting at
//! `target/debug/examples/echo` (see the README for Zed).
//!
//! What it does with the prompt text:
//! - `read <path>` / `write <path> <text>`: reads or writes a file through the editor;
//! - `permission`: a tool call that runs only if the user allows it;
//! - `sleep`: waits until the turn is cancelled;
//! - `stream <n> [ms]`: sends n message chunks, pausing `ms` milliseconds between them;
//! - anything else: echoes it back, word by word, under a small plan.

use acp::schema::{
    PermissionOption, PermissionOptionKind, PlanEntry, PlanEntryPriority, PlanEntryStatus,
};
use acp::{Prompt, Session, StopReason, ToolKind};

/// The agent: no state of its own.
pub struct Echo;

#[acp::agent(name = "echo", title = "Echo")]
impl Echo {
    /// One prompt turn: everything the agent does happens here.
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let text = prompt.text();
        let text = text.trim();
        let (command, rest) = text.split_once(' ').unwrap_or((text, ""));
        match command {
            "read" => read(cx, rest).await,
            "write" => write(cx, rest).await,
            "permission" => permission(cx).await,
            "sleep" => {
                cx.message("sleeping").await?;
                cx.cancelled().await;
                Ok(StopReason::Cancelled)
            }
            "stream" => {
                let mut args = rest.split_whitespace().map(str::parse::<u64>);
                // Not a count: tell the user what works rather than failing the turn.
                let (Some(Ok(n)), pause, None) = (args.next(), args.next(), args.next()) else {
                    cx.message("`stream` needs a count, like `stream 3` (and a pause in ms: `stream 3 100`).")
                        .await?;
                    return Ok(StopReason::EndTurn);
                };
                let pause =
                    std::time::Duration::from_millis(pause.and_then(Result::ok).unwrap_or(0));
                for i in 0..n {
                    if i > 0 && !pause.is_zero() {
                        tokio::select! {
                            () = tokio::time::sleep(pause) => {}
                            () = cx.cancelled() => return Ok(StopReason::Cancelled),
                        }
                    }
                    cx.message(format!("chunk {i}\n")).await?;
                }
                Ok(StopReason::EndTurn)
            }
            _ => echo(cx, text).await,
        }
    }
}

fn step(content: &str, status: PlanEntryStatus) -> PlanEntry {
    PlanEntry::new(content, PlanEntryPriority::Medium, status)
}

async fn echo(cx: &Session, text: &str) -> acp::Result<StopReason> {
    cx.plan([step("Echo the prompt", PlanEntryStatus::InProgress)])
        .await?;
    cx.thought("Repeating what you said.").await?;
    // Each word keeps the whitespace that follows it, so the chunks add up to the prompt.
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if c.is_whitespace()
            && text[i + c.len_utf8()..]
                .chars()
                .next()
                .is_some_and(|n| !n.is_whitespace())
        {
            cx.message(&text[start..i + c.len_utf8()]).await?;
            start = i + c.len_utf8();
        }
    }
    if start < text.len() {
        cx.message(&text[start..]).await?;
    }
    cx.plan([step("Echo the prompt", PlanEntryStatus::Completed)])
        .await?;
    Ok(StopReason::EndTurn)
}

async fn read(cx: &Session, path: &str) -> acp::Result<StopReason> {
    match cx.fs().read_text_file(path.trim()).await {
        Ok(content) => cx.message(content).await?,
        // The editor did not offer this (nothing was sent): say so, and end the turn normally.
        Err(acp::Error::Unsupported(cap)) => {
            cx.message(format!(
                "fs unavailable: this editor does not let agents read files \
                 (no {cap} capability), so I can't read {path}."
            ))
            .await?
        }
        // A missing file is the user's business, not a failed turn.
        Err(e) if e.is_not_found() => cx.message(format!("no such file: {path}")).await?,
        Err(e) => return Err(e),
    }
    Ok(StopReason::EndTurn)
}

async fn write(cx: &Session, args: &str) -> acp::Result<StopReason> {
    let (path, content) = args.split_once(' ').unwrap_or((args, ""));
    match cx.fs().write_text_file(path, content).await {
        Ok(()) => cx.message(format!("wrote {path}")).await?,
        Err(acp::Error::Unsupported(cap)) => {
            cx.message(format!(
                "fs unavailable: this editor does not let agents write files \
                 (no {cap} capability), so I can't write {path}."
            ))
            .await?
        }
        Err(e) => return Err(e),
    }
    Ok(StopReason::EndTurn)
}

async fn permission(cx: &Session) -> acp::Result<StopReason> {
    let call = cx
        .tool_call("Dangerous action")
        .kind(ToolKind::Execute)
        .start()
        .await?;
    let options = vec![
        PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
        PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
    ];
    // A cancelled turn fails here with `Error::Cancelled`; the runtime answers `cancelled`
    // and reports the dropped tool call as failed.
    let choice = call.request_permission(options).await?;
    if choice.0.as_ref() == "allow" {
        call.complete(vec!["done".into()]).await?;
        cx.message("allowed").await?;
    } else {
        call.fail("rejected by the user").await?;
        cx.message("rejected").await?;
    }
    Ok(StopReason::EndTurn)
}

#[tokio::main]
async fn main() -> acp::Result<()> {
    acp::init_logging();
    acp::serve_main(Echo).await
}
