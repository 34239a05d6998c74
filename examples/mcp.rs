//! # mcp — the editor's MCP servers, connected for you
//!
//! Shows: the MCP servers an editor passes in `session/new` are connected by the runtime;
//! their tools sit beside the agent's own `#[acp::tool]`s in `cx.tools()` and run by name with
//! `cx.call_tool` (tool call shown, permission asked unless the server marks the tool
//! read-only, result mapped, cancellation passed on to the server); servers that did not start
//! are reported by `cx.mcp_status()`. The agent writes nothing for any of it.
//!
//! It is also a way to check the feature from outside, under any ACP client:
//! - `tools`: answers with every tool name a model would see, one per line;
//! - `call NAME JSON`: calls that tool with those arguments, answers with its text output;
//! - `status`: one line per MCP server: `NAME: connected (N tools)` or `NAME: failed: WHY`.

use acp::{McpState, Prompt, Session, StopReason};

/// The agent: one tool of its own, the rest from the editor's MCP servers.
pub struct McpAgent;

#[acp::agent(name = "mcp", title = "MCP tools")]
impl McpAgent {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        // The command is the first line; @-mentions follow it as `[@name](uri)` lines.
        let text = prompt.text();
        let text = text.lines().next().unwrap_or_default().trim();
        let (command, rest) = text.split_once(' ').unwrap_or((text, ""));
        let answer = match command {
            "tools" => {
                let names: Vec<String> = cx
                    .tools()
                    .await
                    .into_iter()
                    .map(|t| t.name.into_owned())
                    .collect();
                names.join("\n")
            }
            "call" => {
                let (name, args) = rest.trim().split_once(' ').unwrap_or((rest.trim(), "{}"));
                let args: serde_json::Value = match serde_json::from_str(args) {
                    Ok(args) => args,
                    Err(e) => {
                        cx.message(format!("error: the arguments are not JSON: {e}"))
                            .await?;
                        return Ok(StopReason::EndTurn);
                    }
                };
                match cx.call_tool(name, args).await {
                    Ok(output) => output.to_text(),
                    Err(acp::Error::Cancelled) => return Ok(StopReason::Cancelled),
                    // A model would get the error back to retry; so does the user here.
                    Err(e) => format!("error: {e}"),
                }
            }
            "status" => {
                let lines: Vec<String> = cx
                    .mcp_status()
                    .await
                    .into_iter()
                    .map(|s| match s.state {
                        McpState::Connected { tools } => {
                            format!("{}: connected ({} tools)", s.name, tools.len())
                        }
                        McpState::Failed(why) => format!("{}: failed: {why}", s.name),
                        _ => format!("{}: unknown", s.name),
                    })
                    .collect();
                lines.join("\n")
            }
            _ => "Say `tools`, `call NAME JSON` or `status`.".to_owned(),
        };
        cx.message(answer).await?;
        Ok(StopReason::EndTurn)
    }

    /// Answers with the text it was given (the agent's own tool, beside the MCP ones).
    ///
    /// # Arguments
    /// - `text`: what to say back.
    #[acp::tool(kind = "other", title = "Say {text}")]
    async fn say(&self, _cx: &Session, text: String) -> acp::Result<String> {
        Ok(text)
    }
}

#[tokio::main]
async fn main() -> acp::Result<()> {
    acp::init_logging();
    acp::serve_main(McpAgent).await
}
