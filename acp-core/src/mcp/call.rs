//! One call of an MCP tool, through the lifecycle every tool call runs: `tool_call` (kind and
//! title from the tool) → permission by the policy → `in_progress` → the `tools/call` request,
//! raced with the turn's cancellation (dropping the request makes rmcp send the server
//! `notifications/cancelled`) → `completed` with the result mapped to tool-call content, or
//! `failed` with the server's error.

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResult};

use super::McpTool;
use super::connect::Live;
use crate::schema::{ContentBlock, ToolCallContent, ToolCallUpdateFields};
use crate::session::{Session, in_tool_call};
use crate::tools::ToolOutput;
use crate::tools::lifecycle::ask_permission;
use crate::{Error, Result};

/// Runs `tool` of `server` with `args`.
pub(crate) async fn call(
    cx: &Session,
    server: &Arc<Live>,
    tool: &McpTool,
    args: serde_json::Value,
) -> Result<ToolOutput> {
    cx.check_cancelled()?;
    let arguments = match args {
        serde_json::Value::Object(map) => Some(map),
        serde_json::Value::Null => None,
        other => {
            let message = format!(
                "invalid arguments for tool `{}`: the arguments must be a JSON object, not {other}",
                tool.def.name
            );
            let call = cx
                .tool_call(&tool.title)
                .name(tool.def.name.clone())
                .kind(tool.def.kind)
                .raw_input(other)
                .start()
                .await?;
            let _ = call.fail(&message).await;
            return Err(Error::InvalidParams(message));
        }
    };
    let raw = serde_json::Value::Object(arguments.clone().unwrap_or_default());
    let call = cx
        .tool_call(&tool.title)
        .name(tool.def.name.clone())
        .kind(tool.def.kind)
        .raw_input(raw.clone())
        .start()
        .await?;
    if tool.def.permission {
        let fields = ToolCallUpdateFields::new()
            .title(tool.title.clone())
            .kind(tool.def.kind)
            .raw_input(raw);
        if let Err(e) = ask_permission(cx, tool.permission_key(), &call, fields).await {
            let _ = call.fail(&e).await;
            return Err(e);
        }
    }
    if let Err(e) = call.in_progress().await {
        let _ = call.fail(&e).await;
        return Err(e);
    }
    let mut params = CallToolRequestParams::new(tool.remote.clone());
    params.arguments = arguments;
    let request = in_tool_call(&call, server.peer.call_tool(params));
    let outcome = tokio::select! {
        biased;
        outcome = request => outcome,
        () = cx.cancelled() => {
            // The request future is dropped here: rmcp tells the server it was abandoned.
            let _ = call.fail("cancelled").await;
            return Err(Error::Cancelled);
        }
    };
    match outcome {
        Ok(result) if result.is_error != Some(true) => {
            let output = output(result);
            let mut fields = ToolCallUpdateFields::new().content(output.content.clone());
            if let Some(raw) = &output.raw {
                fields = fields.raw_output(raw.clone());
            }
            if let Err(e) = call.complete_with(fields).await {
                tracing::debug!(tool = %tool.def.name, "could not report the tool call completed: {e}");
            }
            Ok(output)
        }
        Ok(result) => {
            let text = output(result).to_text();
            let message = if text.is_empty() {
                format!("the MCP tool `{}` failed", tool.remote)
            } else {
                text
            };
            let _ = call.fail(&message).await;
            Err(Error::msg(message))
        }
        Err(e) => {
            let message = match e {
                rmcp::ServiceError::McpError(e) => e.message.into_owned(),
                other => format!("the MCP server `{}` failed: {other}", tool.server),
            };
            let _ = call.fail(&message).await;
            Err(Error::msg(message))
        }
    }
}

/// A tool result as tool-call content: each content block (text, image, audio, embedded
/// resource, resource link) as the same ACP block (the two protocols share their shapes), and
/// the structured content as `rawOutput`.
pub(crate) fn output(result: CallToolResult) -> ToolOutput {
    let content = result
        .content
        .iter()
        .map(|block| {
            let json = serde_json::to_value(block).unwrap_or(serde_json::Value::Null);
            let acp = serde_json::from_value::<ContentBlock>(json.clone())
                .unwrap_or_else(|_| ContentBlock::from(json.to_string()));
            ToolCallContent::from(acp)
        })
        .collect();
    let mut output = ToolOutput::new(content);
    if let Some(structured) = result.structured_content {
        output = output.raw(structured);
    }
    output
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_map_block_for_block_with_structured_content_as_raw_output() {
        let result: CallToolResult = serde_json::from_value(serde_json::json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a", "text": "A", "mimeType": "text/plain"}},
                {"type": "resource_link", "uri": "file:///b", "name": "b"}
            ],
            "structuredContent": {"n": 1}
        }))
        .unwrap();
        let out = output(result);
        let json = serde_json::to_value(&out.content).unwrap();
        assert_eq!(json[0]["content"]["text"], "hello");
        assert_eq!(json[1]["content"]["type"], "image");
        assert_eq!(json[1]["content"]["mimeType"], "image/png");
        assert_eq!(json[2]["content"]["resource"]["text"], "A");
        assert_eq!(json[3]["content"]["type"], "resource_link");
        assert_eq!(out.raw, Some(serde_json::json!({"n": 1})));
        assert_eq!(out.to_text().lines().next(), Some("hello"));
    }
}
