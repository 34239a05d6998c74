//! # coder — a coding agent on a real model
//!
//! Point your editor at it: it reads, searches, edits and runs commands in your workspace with
//! the model you name, asking before it changes anything. The framework does the rest:
//! [`Model::run`] streams the model's text and reasoning, shows each tool call as soon as the
//! model names it, asks permission, runs it, feeds the result back, keeps the conversation
//! across restarts, and reports token usage.
//!
//! - Tools: `read` (with `line`/`limit`), `list` (a glob), `grep`, `write` and `edit` (search
//!   and replace), both shown as diffs, `run` (a command, in the editor's terminal when it
//!   offers one, locally otherwise), `plan` (the model keeps its plan up to date), and the
//!   tools of the MCP servers the editor configured.
//! - Modes: `code` (the default) and `ask`, where `write`, `edit` and `run` are refused before
//!   the user is asked.
//! - Model: a config option of category `model`: `ACP_MODEL`, or `ACP_SMALL_MODEL` when set.
//!
//! Provider from the environment: an OpenAI-compatible server (`OPENAI_BASE_URL`,
//! `OPENAI_API_KEY`: OpenAI, llama.cpp, vLLM, Ollama, LM Studio, OpenRouter…) or Anthropic
//! (`ANTHROPIC_API_KEY`); `ACP_MODEL` names the model, `ACP_CONTEXT_WINDOW` its window. The
//! editor may send the model's requests elsewhere (its gateway, with its headers) through
//! the unstable `providers/*` methods (feature `llm-providers`): the endpoint `main`.
//!
//! Try: `ACP_MODEL=gpt-4.1-mini OPENAI_API_KEY=… cargo run --example coder` as the editor's
//! agent command.

use std::path::PathBuf;

use acp::llm::{Endpoint, Model};
use acp::schema::{PlanEntry, PlanEntryPriority, PlanEntryStatus};
use acp::{Diff, Prompt, Session, StopReason};

/// How the agent works in this session.
#[derive(acp::Modes, Clone, Copy, Default, PartialEq, Eq, Debug)]
pub enum Mode {
    /// Answers questions; never edits files or runs commands.
    Ask,
    /// Reads, edits and runs commands, asking before each change.
    #[default]
    Code,
}

/// Which model answers.
#[derive(acp::ConfigOption, Clone, Copy, Default, PartialEq, Eq, Debug)]
#[config(id = "model", category = "model")]
pub enum ModelChoice {
    /// The model `ACP_MODEL` names.
    #[default]
    Main,
    /// The model `ACP_SMALL_MODEL` names: faster and cheaper.
    Small,
}

/// One step of the plan, as the model gives it.
#[derive(serde::Serialize, serde::Deserialize, acp::JsonSchema, Debug)]
pub struct Step {
    /// What the step does.
    pub step: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: PlanEntryStatus,
}

const SYSTEM: &str = "You are coder, a careful coding agent working in the user's workspace \
(the current directory). Read before you edit; prefer `edit` for small changes; run the \
project's tests after a change; for a task of several steps, keep a `plan` up to date. Paths \
are relative to the workspace. Be brief.";

/// The coding agent: one model per choice of the `model` option.
pub struct Coder {
    main: Model,
    small: Model,
}

impl Coder {
    /// An agent answering with `model`, or with its provider's model `small` when the user
    /// picks the small one.
    pub fn new(model: Model, small: &str) -> Self {
        let main = model.system(SYSTEM);
        Coder {
            small: main.with_name(small),
            main,
        }
    }
}

#[acp::agent(name = "coder", title = "Coder", modes = Mode, config(ModelChoice))]
impl Coder {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let model = match cx.config::<ModelChoice>()? {
            ModelChoice::Main => &self.main,
            ModelChoice::Small => &self.small,
        };
        model.run(cx, &prompt).await
    }

    /// Refuses changes in ask mode, before the user is asked.
    fn may_change(&self, cx: &Session) -> acp::Result<()> {
        match cx.mode::<Mode>()? {
            Mode::Code => Ok(()),
            Mode::Ask => Err(acp::Error::msg(
                "refused in ask mode: the user must switch to code mode for changes",
            )),
        }
    }

    /// Reads a text file: all of it, or `limit` lines from the 1-based `line`.
    #[acp::tool(kind = "read", title = "Read {path}")]
    async fn read(
        &self,
        cx: &Session,
        path: PathBuf,
        line: Option<u32>,
        limit: Option<u32>,
    ) -> acp::Result<String> {
        cx.fs().read_lines(&path, line, limit).await
    }

    /// Lists the files under `dir` (default: the workspace) whose name matches `glob`
    /// (default: all), e.g. `*.rs`.
    #[acp::tool(kind = "search", title = "List {glob}")]
    async fn list(
        &self,
        cx: &Session,
        dir: Option<String>,
        glob: Option<String>,
    ) -> acp::Result<String> {
        let dir = dir.unwrap_or_else(|| ".".into());
        let glob = glob.unwrap_or_else(|| "*".into());
        let args = [
            &dir, "-path", "*/.git", "-prune", "-o", "-type", "f", "-name", &glob, "-print",
        ];
        command(cx, "find", &args).await
    }

    /// Searches the files under `dir` (default: the workspace) for a regular expression;
    /// answers `file:line:text` lines.
    #[acp::tool(kind = "search", title = "Grep {pattern}")]
    async fn grep(
        &self,
        cx: &Session,
        pattern: String,
        dir: Option<String>,
    ) -> acp::Result<String> {
        let dir = dir.unwrap_or_else(|| ".".into());
        let args = ["-rnIE", "--exclude-dir=.git", "-e", &pattern, &dir];
        command(cx, "grep", &args).await
    }

    /// Writes a whole file (creating it), shown as a diff.
    #[acp::tool(kind = "edit", title = "Write {path}", permission, check = Self::may_change)]
    async fn write(&self, cx: &Session, path: PathBuf, content: String) -> acp::Result<Diff> {
        let old = cx.fs().read_text_file(&path).await.ok();
        cx.fs().write_text_file(&path, content.clone()).await?;
        Ok(Diff::new(cx.cwd().join(&path), content).old_text(old))
    }

    /// Replaces `old` (which must occur exactly once in the file) with `new`, shown as a diff.
    #[acp::tool(kind = "edit", title = "Edit {path}", permission, check = Self::may_change)]
    async fn edit(
        &self,
        cx: &Session,
        path: PathBuf,
        old: String,
        new: String,
    ) -> acp::Result<Diff> {
        let text = cx.fs().read_text_file(&path).await?;
        match text.matches(&old).count() {
            1 => {}
            0 => return Err(acp::Error::msg("`old` is not in the file: read it again")),
            n => {
                return Err(acp::Error::msg(format!(
                    "`old` occurs {n} times: include more context"
                )));
            }
        }
        let changed = text.replacen(&old, &new, 1);
        cx.fs().write_text_file(&path, changed.clone()).await?;
        Ok(Diff::new(cx.cwd().join(&path), changed).old_text(Some(text)))
    }

    /// Runs a shell command in the workspace; answers its output and exit code.
    #[acp::tool(kind = "execute", title = "Run {command}", permission, check = Self::may_change)]
    async fn run(&self, cx: &Session, command: String) -> acp::Result<String> {
        self::command(cx, "sh", &["-c", &command]).await
    }

    /// Replaces the plan shown to the user: every step, with its status.
    #[acp::tool(kind = "think", title = "Plan")]
    async fn plan(&self, cx: &Session, steps: Vec<Step>) -> acp::Result<String> {
        let entries = steps
            .into_iter()
            .map(|s| PlanEntry::new(s.step, PlanEntryPriority::Medium, s.status));
        cx.plan(entries).await?;
        Ok("plan updated".into())
    }
}

/// Runs `program` in the editor's terminal (shown in the tool call) or locally; answers its
/// output and exit code.
async fn command(cx: &Session, program: &str, args: &[&str]) -> acp::Result<String> {
    let terminal = cx.terminal().create(program, args.iter().copied()).await?;
    let status = terminal.wait_for_exit().await?;
    let output = terminal.output().await?;
    let code = status.exit_code.map_or("none".into(), |c| c.to_string());
    Ok(format!("{}\n(exit code {code})", output.output))
}

#[tokio::main]
async fn main() -> acp::Result<()> {
    acp::init_logging();
    let (provider, model) = acp::llm::from_env()?;
    let main = model.ok_or_else(|| acp::Error::msg("set ACP_MODEL to the model's name"))?;
    let small = std::env::var("ACP_SMALL_MODEL").unwrap_or_else(|_| main.clone());
    // The editor may send the model's requests through its own gateway (`providers/set`).
    let endpoint = Endpoint::new("main", provider);
    let mut model = Model::new(endpoint.clone(), main).max_turn_requests(100);
    if let Some(window) = std::env::var("ACP_CONTEXT_WINDOW")
        .ok()
        .and_then(|w| w.parse().ok())
    {
        model = model.context_window(window);
    }
    acp::Server::new(Coder::new(model, &small))
        .local_fallback(true)
        .llm_providers([endpoint])
        .serve_main()
        .await
}
