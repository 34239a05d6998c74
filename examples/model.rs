//! # model — an agent whose tool choices come from a language model
//!
//! Shows the loop every LLM agent runs: hand the model the conversation and the session's tool
//! table (`cx.tools()`: the `#[acp::tool]` methods, and the tools of the MCP servers the
//! editor gave the session, connected by the runtime), run the tools it picks
//! by name (`cx.call_tool(name, args)`: the same tool-call lifecycle, permission included, as
//! a typed call), feed the results back, and stop when it answers — or after
//! `max_turn_requests` model calls (`StopReason::MaxTurnRequests`).
//!
//! [`Model`] is the seam: [`ScriptedModel`] makes the example run offline and
//! deterministically; back it with a real LLM API by sending `history` as the conversation and
//! the serialized [`acp::ToolDef`]s (`{"name", "description", "input_schema"}`) as its tools,
//! and mapping the API's tool-use blocks to [`Reply::ToolCalls`].
//!
//! The conversation is a [`Persist`](acp::Persist) value of the session: the runtime saves it
//! after each turn (a cancelled one included) and gives it back when the editor loads or
//! resumes the session, also after the agent restarted — the model picks up where it was.
//!
//! Try: `./scripts/demo model "read Cargo.toml" "write notes.txt hello" "hi" "history"`.

use std::future::Future;
use std::path::PathBuf;

use acp::{Diff, Prompt, Session, StopReason, ToolDef};
use serde_json::{Value, json};

/// One entry of the conversation the model sees.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Message {
    /// What the user typed.
    User(String),
    /// What the model answered.
    Assistant(String),
    /// A tool the model asked for.
    ToolCall { name: String, args: Value },
    /// What that tool returned (or why it failed).
    ToolResult { output: String, is_error: bool },
}

/// What the model wants next.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A final answer for the user: the turn ends.
    Text(String),
    /// Tools to run, by name with JSON arguments; their results go back to the model.
    ToolCalls(Vec<(String, Value)>),
}

/// A language model that can call tools.
pub trait Model: Send + Sync + 'static {
    /// The next step, given the conversation so far and the tools on offer.
    fn complete(
        &self,
        history: &[Message],
        tools: &[ToolDef],
    ) -> impl Future<Output = acp::Result<Reply>> + Send;
}

/// A stand-in model with a fixed script, so the example runs offline:
/// `read <path>` reads a file, `write <path> <text>` writes one, `use <tool> <json>` calls any
/// tool on offer (the agent's own, or one of the editor's MCP servers'), `spin` keeps calling
/// tools forever (to show `max_turn_requests`), `bad` passes a wrong argument, `history` lists
/// what the user said before in the session, anything else is echoed.
#[derive(Debug, Default)]
pub struct ScriptedModel;

impl Model for ScriptedModel {
    async fn complete(&self, history: &[Message], tools: &[ToolDef]) -> acp::Result<Reply> {
        let offered = |name: &str| tools.iter().any(|t| t.name == name);
        let asked = history
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::User(text) => Some(text.as_str()),
                _ => None,
            })
            .unwrap_or_default();
        let (command, rest) = asked.split_once(' ').unwrap_or((asked, ""));
        Ok(match history.last() {
            Some(Message::ToolResult { output, is_error }) if command != "spin" => {
                Reply::Text(if *is_error {
                    format!("The tool failed: {output}")
                } else {
                    format!("Done. The tool returned:\n{output}")
                })
            }
            _ => match command {
                "read" if offered("read_file") => {
                    Reply::ToolCalls(vec![("read_file".into(), json!({ "path": rest }))])
                }
                "write" if offered("write_file") => {
                    let (path, content) = rest.split_once(' ').unwrap_or((rest, ""));
                    Reply::ToolCalls(vec![(
                        "write_file".into(),
                        json!({ "path": path, "content": content }),
                    )])
                }
                "use" => {
                    let (name, args) = rest.split_once(' ').unwrap_or((rest, "{}"));
                    match serde_json::from_str(args) {
                        Ok(args) if offered(name) => Reply::ToolCalls(vec![(name.into(), args)]),
                        Ok(_) => Reply::Text(format!("I have no tool named `{name}`.")),
                        Err(e) => Reply::Text(format!("Those arguments are not JSON: {e}")),
                    }
                }
                "spin" => Reply::ToolCalls(vec![("read_file".into(), json!({ "path": "." }))]),
                // A model mistake: the wrong type for `path`.
                "bad" => Reply::ToolCalls(vec![("read_file".into(), json!({ "path": 42 }))]),
                "history" => {
                    let said: Vec<&str> = history
                        .iter()
                        .filter_map(|m| match m {
                            Message::User(text) => Some(text.as_str()),
                            _ => None,
                        })
                        .collect();
                    let earlier = &said[..said.len().saturating_sub(1)];
                    Reply::Text(format!("You said before: {}", earlier.join(" | ")))
                }
                _ => Reply::Text(format!("You said: {asked}")),
            },
        })
    }
}

/// The conversation of one session, kept across restarts.
#[derive(Default, serde::Serialize, serde::Deserialize)]
struct History(Vec<Message>);

impl acp::Persist for History {
    const KEY: &'static str = "model.history";
}

/// An agent driven by `M`.
pub struct ModelAgent<M> {
    model: M,
    /// Model calls allowed in one turn before it stops with `max_turn_requests`.
    pub max_turn_requests: usize,
}

impl<M> ModelAgent<M> {
    /// An agent driven by `model`, allowing 8 model calls per turn.
    pub fn new(model: M) -> Self {
        ModelAgent {
            model,
            max_turn_requests: 8,
        }
    }
}

#[acp::agent(name = "model", title = "Model-driven agent")]
impl<M: Model> ModelAgent<M> {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let history = cx.persisted::<History>();
        let push = |message| history.lock().0.push(message);
        push(Message::User(prompt.text()));
        let tools = cx.tools().await;
        for _ in 0..self.max_turn_requests {
            cx.check_cancelled()?;
            let conversation = history.lock().0.clone();
            match self.model.complete(&conversation, &tools).await? {
                Reply::Text(text) => {
                    cx.message(text.clone()).await?;
                    push(Message::Assistant(text));
                    return Ok(StopReason::EndTurn);
                }
                Reply::ToolCalls(calls) => {
                    for (name, args) in calls {
                        push(Message::ToolCall {
                            name: name.clone(),
                            args: args.clone(),
                        });
                        // Errors (bad arguments, permission denied, a failing tool) go back
                        // to the model as text; only cancellation ends the turn.
                        let result = match cx.call_tool(&name, args).await {
                            Ok(output) => Message::ToolResult {
                                output: output.to_text(),
                                is_error: false,
                            },
                            Err(acp::Error::Cancelled) => return Err(acp::Error::Cancelled),
                            Err(e) => Message::ToolResult {
                                output: e.to_string(),
                                is_error: true,
                            },
                        };
                        push(result);
                    }
                }
            }
        }
        cx.message("I stopped: this turn reached its limit of model requests.")
            .await?;
        Ok(StopReason::MaxTurnRequests)
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
    acp::serve_stdio(ModelAgent::new(ScriptedModel)).await
}
