//! # model — an agent whose tool choices come from a language model
//!
//! The whole loop every LLM agent runs is one call: [`Model::run`] hands the model the
//! conversation and the session's tool table (`cx.tools()`: the `#[acp::tool]` methods, and the
//! tools of the MCP servers the editor gave the session, connected by the runtime), streams its
//! text to the editor, runs the tools it picks by name (the same tool-call lifecycle,
//! permission included, as a typed call), feeds the results back, and stops when it answers —
//! or after `max_turn_requests` model calls (`StopReason::MaxTurnRequests`).
//!
//! The model here is [`scripted()`], a [`Scripted`] provider, so the example runs offline and
//! deterministically; `examples/coder.rs` is the same agent shape on a real model
//! (`acp::llm::from_env`). The conversation is the session's [`acp::llm::Conversation`], a
//! `Persist` value: saved after each turn (a cancelled one included) and given back when the
//! editor loads or resumes the session, also after the agent restarted.
//!
//! Try: `./scripts/demo model "read Cargo.toml" "write notes.txt hello" "hi" "history"`.

use std::path::PathBuf;

use acp::llm::scripted::{Reply, Scripted};
use acp::llm::{Model, Part, Provider, Request, Role};
use acp::{Diff, Prompt, Session, StopReason};
use serde_json::json;

/// The scripted model: `read <path>` reads a file, `write <path> <text>` writes one,
/// `use <tool> <json>` calls any tool on offer (the agent's own, or one of the editor's MCP
/// servers'), `spin` keeps calling tools forever (to show `max_turn_requests`), `bad` passes a
/// wrong argument, `history` lists what the user said before in the session, anything else is
/// echoed. After a tool ran, it reports the result.
pub fn scripted() -> Scripted {
    Scripted::from_fn(reply)
}

/// The scripted model's answer to `request`.
pub fn reply(request: &Request<'_>) -> Reply {
    let offered = |name: &str| request.tools.iter().any(|t| t.name == name);
    let said: Vec<&str> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| &m.content)
        .filter_map(|p| match p {
            Part::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let asked = said.last().copied().unwrap_or_default();
    let (command, rest) = asked.split_once(' ').unwrap_or((asked, ""));
    let result = request
        .messages
        .last()
        .and_then(|m| m.content.last())
        .and_then(|p| match p {
            Part::ToolResult {
                content, is_error, ..
            } => Some((content, *is_error)),
            _ => None,
        });
    let call = |name: &str, args| Reply::new().tool_call("call", name, args);
    match (result, command) {
        (Some((output, true)), c) if c != "spin" => {
            Reply::new().text(format!("The tool failed: {output}"))
        }
        (Some((output, false)), c) if c != "spin" => {
            Reply::new().text(format!("Done. The tool returned:\n{output}"))
        }
        (_, "read") if offered("read_file") => call("read_file", json!({ "path": rest })),
        (_, "write") if offered("write_file") => {
            let (path, content) = rest.split_once(' ').unwrap_or((rest, ""));
            call("write_file", json!({ "path": path, "content": content }))
        }
        (_, "use") => {
            let (name, args) = rest.split_once(' ').unwrap_or((rest, "{}"));
            match serde_json::from_str(args) {
                Ok(args) if offered(name) => call(name, args),
                Ok(_) => Reply::new().text(format!("I have no tool named `{name}`.")),
                Err(e) => Reply::new().text(format!("Those arguments are not JSON: {e}")),
            }
        }
        (_, "spin") => call("read_file", json!({ "path": "." })),
        // A model mistake: the wrong type for `path`.
        (_, "bad") => call("read_file", json!({ "path": 42 })),
        (_, "history") => {
            let earlier = &said[..said.len().saturating_sub(1)];
            Reply::new().text(format!("You said before: {}", earlier.join(" | ")))
        }
        _ => Reply::new().text(format!("You said: {asked}")),
    }
}

/// An agent driven by a model.
pub struct ModelAgent {
    model: Model,
}

impl ModelAgent {
    /// An agent driven by `provider`, allowing 8 model calls per turn.
    pub fn new(provider: impl Provider) -> Self {
        ModelAgent {
            model: Model::new(provider, "scripted").max_turn_requests(8),
        }
    }

    /// Allows `n` model calls per turn.
    pub fn max_turn_requests(mut self, n: usize) -> Self {
        self.model = self.model.max_turn_requests(n);
        self
    }
}

#[acp::agent(name = "model", title = "Model-driven agent", system_prompt)]
impl ModelAgent {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        self.model.run(cx, &prompt).await
    }

    /// Reads a text file from the user's workspace.
    #[acp::tool(kind = "read", title = "Read {path}")]
    async fn read_file(&self, cx: &Session, path: PathBuf) -> acp::Result<String> {
        cx.fs().read_text_file(&path).await
    }

    /// Writes a text file in the user's workspace, replacing its content.
    #[acp::tool(kind = "edit", title = "Write {path}", permission)]
    async fn write_file(&self, cx: &Session, path: PathBuf, content: String) -> acp::Result<Diff> {
        let old = cx.fs().read_text_file(&path).await.ok();
        cx.fs().write_text_file(&path, content.clone()).await?;
        Ok(Diff::new(cx.cwd().join(&path), content).old_text(old))
    }
}

#[tokio::main]
async fn main() -> acp::Result<()> {
    acp::init_logging();
    acp::serve_main(ModelAgent::new(scripted())).await
}
