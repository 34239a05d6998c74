//! The agent the fuzz targets serve: small, but it reaches every part of the runtime a prompt
//! can — message/thought/plan updates, echoed content blocks of every kind, typed and by-name
//! tool calls (with and without permission), fs and terminal requests to the client, a tool
//! call driven by hand, per-session state, cancellation — and never panics on its own.
//!
//! Each line of the prompt's text is one command (at most [`MAX_COMMANDS`]):
//! - `read <path>`: the `read` tool (fs/read_text_file);
//! - `write <path> <text>`: the `write` tool (permission, then fs read and write, a diff);
//! - `call <tool> <json args>`: a tool by name, with the arguments as given (bad JSON is a string);
//! - `add <a> <b>`: the `add` tool, typed;
//! - `run <command>`: the `run` tool (terminal/create, wait_for_exit, release);
//! - `ask`: a hand-driven tool call asking for permission;
//! - `sleep`: waits for the cancel and answers `cancelled`;
//! - `stream <n>`: n message chunks (at most 32);
//! - `think <text>` / `plan`: a thought / a plan;
//! - `count`: bumps a per-session counter and reports it;
//! - `tools`: lists the tool table;
//! - `fail <text>`: the turn fails with that error;
//! - `refuse`: the turn ends with `refusal`;
//! - anything else: echoed as a message chunk.
//!
//! Non-text blocks of the prompt (images, audio, resource links, resources) are echoed back.
//!
//! Beside prompts it declares modes and two config options (a select and a boolean), a slash
//! command (`/flip`, which switches both and sets the title), an extension request
//! (`_fuzz/echo`, typed params) and notification (`_fuzz/note`), an authentication method and
//! `logout`: the runtime routes and validates all of them.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use acp::schema::{
    AuthMethod, AuthMethodAgent, AuthMethodId, AvailableCommand, ContentBlock, PermissionOption,
    PermissionOptionKind,
};
use acp::{
    Client, Diff, Json, PlanEntry, PlanEntryPriority, PlanEntryStatus, Prompt, Session,
    SessionSetup, StopReason, Terminal, ToolKind,
};

/// The fuzzed agent's modes.
#[derive(acp::Modes, Clone, Copy, Default, Debug, PartialEq)]
pub enum FuzzMode {
    /// Answers.
    #[default]
    Ask,
    /// Edits.
    Code,
}

/// A select option.
#[derive(acp::ConfigOption, Clone, Copy, Default, Debug, PartialEq)]
pub enum Tone {
    /// Plain.
    #[default]
    Plain,
    /// Loud.
    Loud,
}

/// A boolean option.
#[derive(acp::ConfigOption, Clone, Copy, Default, Debug, PartialEq)]
pub struct Brave(pub bool);

/// Commands run per prompt, at most.
pub const MAX_COMMANDS: usize = 8;

/// Message chunks a `stream` command sends, at most.
pub const MAX_STREAM: usize = 32;

/// The fuzzed agent. Holds a token whose weak count lets the harness check that `serve` drops
/// the agent before it returns.
#[derive(Default)]
pub struct FuzzAgent {
    alive: Arc<()>,
}

impl FuzzAgent {
    /// A weak handle that stops upgrading once the agent is dropped.
    pub fn liveness(&self) -> std::sync::Weak<()> {
        Arc::downgrade(&self.alive)
    }
}

/// Per-session state for `count`.
#[derive(Default)]
struct Counter(AtomicU64);

/// The `add` tool's structured output.
#[derive(serde::Serialize)]
pub struct Sum {
    sum: i64,
    note: Option<String>,
}

#[acp::agent(
    name = "fuzz",
    title = "Fuzz target",
    prompt(image, audio, embedded_context),
    modes = FuzzMode,
    config(Tone, Brave)
)]
impl FuzzAgent {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        for block in prompt.blocks() {
            if !matches!(block, ContentBlock::Text(_)) {
                cx.message(block.clone()).await?;
            }
        }
        let text = prompt.text();
        for line in text.lines().take(MAX_COMMANDS) {
            let line = line.trim();
            let (command, rest) = line.split_once(' ').unwrap_or((line, ""));
            match command {
                "read" => {
                    let content = self.read(cx, PathBuf::from(rest)).await?;
                    cx.message(format!("{} bytes", content.len())).await?;
                }
                "write" => {
                    let (path, content) = rest.split_once(' ').unwrap_or((rest, ""));
                    self.write(cx, PathBuf::from(path), content.to_owned())
                        .await?;
                }
                "call" => {
                    let (name, args) = rest.split_once(' ').unwrap_or((rest, "{}"));
                    let args = serde_json::from_str(args)
                        .unwrap_or_else(|_| serde_json::Value::String(args.to_owned()));
                    match cx.call_tool(name, args).await {
                        Ok(output) => cx.message(output.to_text()).await?,
                        Err(acp::Error::Cancelled) => return Err(acp::Error::Cancelled),
                        Err(e) => cx.message(format!("tool failed: {e}")).await?,
                    }
                }
                "add" => {
                    let (a, b) = rest.split_once(' ').unwrap_or((rest, "0"));
                    let a = a.trim().parse().unwrap_or(0);
                    let b = b.trim().parse().unwrap_or(0);
                    let Json(sum) = self.add(cx, a, b, None).await?;
                    cx.message(format!("{}", sum.sum)).await?;
                }
                "run" => {
                    self.run(cx, rest.to_owned()).await?;
                }
                "ask" => ask(cx).await?,
                "sleep" => {
                    cx.message("sleeping").await?;
                    cx.cancelled().await;
                    return Ok(StopReason::Cancelled);
                }
                "stream" => {
                    let n: usize = rest.trim().parse().unwrap_or(1);
                    for i in 0..n.min(MAX_STREAM) {
                        cx.check_cancelled()?;
                        cx.message(format!("chunk {i}\n")).await?;
                    }
                }
                "think" => cx.thought(rest).await?,
                "plan" => {
                    cx.plan([
                        PlanEntry::new(
                            "first",
                            PlanEntryPriority::High,
                            PlanEntryStatus::Completed,
                        ),
                        PlanEntry::new(rest, PlanEntryPriority::Low, PlanEntryStatus::Pending),
                    ])
                    .await?
                }
                "count" => {
                    let n = cx.state::<Counter>().0.fetch_add(1, Ordering::Relaxed) + 1;
                    cx.message(format!("count {n}")).await?;
                }
                "tools" => {
                    let names: Vec<String> = cx
                        .tools()
                        .await
                        .into_iter()
                        .map(|t| t.name.into_owned())
                        .collect();
                    cx.message(names.join(",")).await?;
                }
                "fail" => return Err(acp::Error::msg(rest.to_owned())),
                "refuse" => return Ok(StopReason::Refusal),
                _ => cx.message(line.to_owned()).await?,
            }
        }
        Ok(StopReason::EndTurn)
    }

    async fn new_session(&self, _cx: &Session) -> acp::Result<SessionSetup> {
        Ok(SessionSetup::default()
            .commands(vec![AvailableCommand::new("help", "Lists the commands")]))
    }

    /// Switches mode and tone, as an agent may at any time.
    #[acp::command(hint = "anything")]
    async fn flip(&self, cx: &Session, _input: String) -> acp::Result<StopReason> {
        let mode = match cx.mode::<FuzzMode>()? {
            FuzzMode::Ask => FuzzMode::Code,
            FuzzMode::Code => FuzzMode::Ask,
        };
        cx.set_mode(mode).await?;
        cx.set_config(Tone::Loud).await?;
        cx.title(format!("{mode:?}")).await?;
        Ok(StopReason::EndTurn)
    }

    /// An extension request with typed params.
    #[acp::ext("_fuzz/echo")]
    async fn ext_echo(&self, _cx: &Client, params: Vec<u32>) -> acp::Result<Vec<u32>> {
        Ok(params)
    }

    /// An extension notification.
    #[acp::ext("_fuzz/note", notification)]
    async fn ext_note(&self, _cx: &Client, _params: serde_json::Value) -> acp::Result<()> {
        Ok(())
    }

    async fn load_session(&self, cx: &Session) -> acp::Result<SessionSetup> {
        cx.message(format!("replaying {}", cx.id())).await?;
        Ok(SessionSetup::default())
    }

    fn auth_methods(&self) -> Vec<AuthMethod> {
        vec![AuthMethod::Agent(AuthMethodAgent::new("token", "Token"))]
    }

    async fn logout(&self, _cx: &Client) -> acp::Result<()> {
        Ok(())
    }

    async fn authenticate(&self, _cx: &Client, method: AuthMethodId) -> acp::Result<()> {
        if method.0.as_ref() == "token" {
            Ok(())
        } else {
            Err(acp::Error::msg("no such method"))
        }
    }

    /// Reads a text file through the editor; a missing file is empty.
    ///
    /// # Arguments
    /// - `path`: the file to read.
    #[acp::tool(kind = "read", title = "Read {path}")]
    async fn read(&self, cx: &Session, path: PathBuf) -> acp::Result<String> {
        match cx.fs().read_text_file(&path).await {
            Err(e) if e.is_not_found() => Ok(String::new()),
            other => other,
        }
    }

    /// Writes a text file through the editor, after asking the user.
    #[acp::tool(kind = "edit", title = "Write {path}", permission)]
    async fn write(&self, cx: &Session, path: PathBuf, content: String) -> acp::Result<Diff> {
        let old = cx.fs().read_text_file(&path).await.ok();
        cx.fs().write_text_file(&path, &content).await?;
        Ok(Diff::new(cx.cwd().join(path), content).old_text(old))
    }

    /// Adds two numbers.
    #[acp::tool(kind = "think", name = "add")]
    async fn add(
        &self,
        _cx: &Session,
        a: i64,
        b: i64,
        note: Option<String>,
    ) -> acp::Result<Json<Sum>> {
        Ok(Json(Sum {
            sum: a.wrapping_add(b),
            note,
        }))
    }

    /// Runs a command in the editor's terminal until it exits.
    #[acp::tool(kind = "execute", title = "Run {command}")]
    async fn run(&self, cx: &Session, command: String) -> acp::Result<Terminal> {
        let terminal = cx.terminal().create(command, ["-c", "x"]).await?;
        terminal.wait_for_exit().await?;
        Ok(terminal)
    }
}

/// A tool call driven by hand that runs only if the user allows it.
async fn ask(cx: &Session) -> acp::Result<()> {
    let call = cx
        .tool_call("Dangerous action")
        .kind(ToolKind::Execute)
        .start()
        .await?;
    let options = vec![
        PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
        PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
    ];
    let choice = call.request_permission(options).await?;
    if choice.0.as_ref() == "allow" {
        call.complete(vec!["done".into()]).await?;
        cx.message("allowed").await?;
    } else {
        call.fail("rejected by the user").await?;
        cx.message("rejected").await?;
    }
    Ok(())
}
