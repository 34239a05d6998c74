//! The `faulty` binary: an agent written the way a careless author would, for the process
//! boundary tests (`tests/it/boundary.rs`). Not a template: see `examples/` for those.
//!
//! Commands (the prompt's first word):
//! - `shout`: the `shout` tool prints to stdout (a stray line and a forged frame answering
//!   request 999) and runs a child process that writes to its inherited stdout;
//! - `print`: the same prints, from the prompt before it sends anything;
//! - `boom`: the `boom` tool panics; `panic`: the prompt itself panics;
//! - `risky`: the `risky` tool, which asks the user for permission first;
//! - `fds`: reports, for fd 0, 1 and 2, whether it is non-blocking and what it points to;
//! - `log N`: logs N warnings of ~100 bytes each, then answers `logged N`;
//! - `flood N`: sends N message chunks as fast as it can;
//! - `read PATH` / `read-anywhere PATH`: reads PATH through the client's file system (bounded
//!   by the session's directories / unrestricted) and answers with the text or the error;
//! - `run LINE`: runs the command line in a terminal (a local one when the client has none:
//!   the agent is served with `local_fallback`) and answers with its output;
//! - anything else: echoed back.

use acp::{Prompt, Session, StopReason};

struct Faulty;

#[acp::agent(name = "faulty")]
impl Faulty {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let text = prompt.text();
        let (command, rest) = text.split_once(' ').unwrap_or((&text, ""));
        let count = || rest.trim().parse::<usize>().unwrap_or(0);
        match command {
            "shout" => {
                let said = self.shout(cx).await?;
                cx.message(said).await?;
            }
            "boom" => {
                self.boom(cx).await?;
            }
            "panic" => panic!("the prompt panicked on purpose"),
            "print" => {
                print_like_careless_code()?;
                cx.message("printed").await?;
            }
            "risky" => {
                let done = self.risky(cx).await?;
                cx.message(done).await?;
            }
            "fds" => cx.message(fd_report()).await?,
            "log" => {
                for i in 0..count() {
                    tracing::warn!("log line {i:08}: the agent is talkative on stderr today");
                }
                cx.message(format!("logged {}", count())).await?;
            }
            "flood" => {
                for i in 0..count() {
                    cx.message(format!("{i:08} flooding the client")).await?;
                }
            }
            "read" => {
                let answer = match cx.fs().read_text_file(rest).await {
                    Ok(text) => format!("read: {text}"),
                    Err(e) => format!("error: {e}"),
                };
                cx.message(answer).await?;
            }
            "read-anywhere" => {
                let answer = match cx.fs().unrestricted().read_text_file(rest).await {
                    Ok(text) => format!("read: {text}"),
                    Err(e) => format!("error: {e}"),
                };
                cx.message(answer).await?;
            }
            "run" => {
                let terminal = cx.terminal().create(rest, Vec::<String>::new()).await?;
                let status = terminal.wait_for_exit().await?;
                let output = terminal.output().await?.output;
                cx.message(format!("ran ({:?}): {output}", status.exit_code))
                    .await?;
            }
            _ => cx.message(text.clone()).await?,
        }
        Ok(StopReason::EndTurn)
    }

    /// Prints to stdout, as careless code does, and runs a child that does the same.
    #[acp::tool(kind = "execute")]
    async fn shout(&self, _cx: &Session) -> acp::Result<String> {
        let status = print_like_careless_code()?;
        Ok(format!("shouted (child: {status})"))
    }

    /// Panics.
    #[acp::tool]
    async fn boom(&self, _cx: &Session) -> acp::Result<String> {
        panic!("the tool blew up on purpose")
    }

    /// Does nothing, after asking the user.
    #[acp::tool(kind = "edit", permission)]
    async fn risky(&self, _cx: &Session) -> acp::Result<String> {
        Ok("risky done".to_owned())
    }
}

/// Prints a stray line and a forged frame answering request 999 to stdout, and runs a child
/// process that writes to its inherited stdout.
fn print_like_careless_code() -> std::io::Result<std::process::ExitStatus> {
    println!("a stray line printed by a tool");
    println!(r#"{{"jsonrpc":"2.0","id":999,"result":{{"stopReason":"end_turn"}}}}"#);
    std::process::Command::new("sh")
        .args(["-c", "echo a child process writing to its stdout"])
        .status()
}

/// `fd N: nonblocking=BOOL target=PATH` for fd 0, 1 and 2 (Linux: from /proc/self).
fn fd_report() -> String {
    (0..3)
        .map(|fd| {
            let flags = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}"))
                .ok()
                .and_then(|info| {
                    info.lines()
                        .find_map(|l| l.strip_prefix("flags:"))
                        .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
                });
            let target = std::fs::read_link(format!("/proc/self/fd/{fd}"))
                .map(|p| p.display().to_string())
                .unwrap_or_else(|e| format!("unknown ({e})"));
            // O_NONBLOCK is 0o4000 on Linux.
            let nonblocking = flags.map(|f| f & 0o4000 != 0);
            format!("fd {fd}: nonblocking={nonblocking:?} target={target}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::main]
async fn main() -> acp::Result<()> {
    acp::init_logging();
    acp::Server::new(Faulty)
        .local_fallback(true)
        .serve_stdio()
        .await
}
