//! The bare loop as an agent: a blocking serde_json loop on stdin and stdout that answers the
//! bench's workloads in the fewest steps there are (one thread, no runtime, no queue), run as
//! `<bench executable> --bare-agent`. It is the ceiling every agent column is compared with,
//! measured over the same pipes by the same client.

use std::io::{self, BufRead, BufWriter, Write};

use acp::schema::{ContentBlock, ContentChunk, SessionId, SessionNotification, SessionUpdate};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::frames::{PERMISSION_OPTIONS, chunk_text};
use crate::workloads::Notification;

const SESSION: &str = "bare";

#[derive(Deserialize)]
struct In<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    method: Option<&'a str>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct PromptParams {
    prompt: Vec<Block>,
}

#[derive(Deserialize)]
struct Block {
    text: Option<String>,
}

fn update(out: &mut impl Write, update: &serde_json::Value) -> io::Result<()> {
    let frame = serde_json::json!({
        "jsonrpc": "2.0", "method": "session/update",
        "params": {"sessionId": SESSION, "update": update},
    });
    serde_json::to_writer(&mut *out, &frame)?;
    out.write_all(b"\n")
}

fn answer(out: &mut impl Write, id: &RawValue, result: &str) -> io::Result<()> {
    writeln!(
        out,
        r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#,
        id.get()
    )
}

/// Serves the bench's workloads on stdio until stdin closes.
pub(crate) fn run() -> io::Result<()> {
    let mut input = io::stdin().lock();
    let mut out = BufWriter::with_capacity(64 * 1024, io::stdout().lock());
    let mut line = Vec::new();
    // The id of the `sleep` prompt waiting for its cancel.
    let mut sleeping: Option<Box<RawValue>> = None;
    let mut text = String::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        let Ok(msg) = serde_json::from_slice::<In<'_>>(&line) else {
            continue;
        };
        match (msg.method, msg.id) {
            (Some("initialize"), Some(id)) => {
                answer(
                    &mut out,
                    id,
                    r#"{"protocolVersion":1,"agentCapabilities":{}}"#,
                )?;
            }
            (Some("session/new"), Some(id)) => {
                answer(&mut out, id, &format!(r#"{{"sessionId":"{SESSION}"}}"#))?;
            }
            (Some("session/prompt"), Some(id)) => {
                let params: PromptParams =
                    serde_json::from_str(msg.params.map_or("{}", RawValue::get))?;
                let prompt = params.prompt.into_iter().find_map(|b| b.text);
                let prompt = prompt.unwrap_or_default();
                let (command, count) = prompt.split_once(' ').unwrap_or((&prompt, "0"));
                let n: usize = count.trim().parse().unwrap_or(0);
                match command {
                    "stream" => {
                        // Typed frames, serialized straight into the buffer.
                        let session = SessionId::new(SESSION);
                        for i in 0..n {
                            chunk_text(i, &mut text);
                            let note = SessionNotification::new(
                                session.clone(),
                                SessionUpdate::AgentMessageChunk(ContentChunk::new(
                                    ContentBlock::from(text.as_str()),
                                )),
                            );
                            serde_json::to_writer(&mut out, &Notification::new(&note))?;
                            out.write_all(b"\n")?;
                        }
                        answer(&mut out, id, r#"{"stopReason":"end_turn"}"#)?;
                    }
                    "permission" => {
                        let id = id.to_owned();
                        permission(&mut input, &mut out, n)?;
                        answer(&mut out, &id, r#"{"stopReason":"end_turn"}"#)?;
                    }
                    _ => {
                        update(
                            &mut out,
                            &serde_json::json!({"sessionUpdate": "agent_message_chunk",
                                "content": {"type": "text", "text": "sleeping"}}),
                        )?;
                        sleeping = Some(id.to_owned());
                    }
                }
            }
            (Some("session/cancel"), None) => {
                if let Some(id) = sleeping.take() {
                    answer(&mut out, &id, r#"{"stopReason":"cancelled"}"#)?;
                }
            }
            _ => {}
        }
        out.flush()?;
    }
}

/// One tool call, then `n` permission requests, each waiting for its answer.
fn permission(input: &mut impl BufRead, out: &mut impl Write, n: usize) -> io::Result<()> {
    update(
        out,
        &serde_json::json!({"sessionUpdate": "tool_call", "toolCallId": "call_0",
            "title": "Dangerous action", "kind": "execute"}),
    )?;
    let options: Vec<_> = PERMISSION_OPTIONS
        .iter()
        .map(|(id, name, kind)| serde_json::json!({"optionId": id, "name": name, "kind": kind}))
        .collect();
    let mut line = Vec::new();
    for k in 0..n {
        let request = serde_json::json!({
            "jsonrpc": "2.0", "id": k, "method": "session/request_permission",
            "params": {"sessionId": SESSION, "toolCall": {"toolCallId": "call_0"}, "options": options},
        });
        serde_json::to_writer(&mut *out, &request)?;
        out.write_all(b"\n")?;
        out.flush()?;
        // Wait for the answer to request k.
        loop {
            line.clear();
            if input.read_until(b'\n', &mut line)? == 0 {
                return Ok(());
            }
            if let Ok(msg) = serde_json::from_slice::<In<'_>>(&line)
                && msg.method.is_none()
                && msg.id.is_some_and(|id| id.get() == k.to_string())
            {
                break;
            }
        }
    }
    update(
        out,
        &serde_json::json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_0",
            "status": "completed"}),
    )
}
