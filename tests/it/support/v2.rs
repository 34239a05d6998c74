//! What the protocol v2 tests share: [`Two`], a small agent, and a raw v2 client over
//! `acp::testing::TestClient` (every update read as the schema crate's v2 type). `support::v2`,
//! used by `tests/it/protocol_v2*.rs` as `common`.
#![allow(dead_code)]

use std::path::PathBuf;

use acp::schema::{StopReason, v2};
use acp::store::MemoryStore;
use acp::testing::{Frame, TestClient};
use acp::{Prompt, Session};
use serde_json::{Value, json};

/// A frame's message, as an `Option` (for `filter_map` and `?`).
pub trait Json {
    fn json(&self) -> Option<Value>;
}

impl Json for Frame {
    fn json(&self) -> Option<Value> {
        Some(self.message.clone())
    }
}

/// A small agent: `stream N` streams N chunks; `write` asks permission through a tool;
/// `wait` runs until cancelled; `plan` sends a plan; `fail` fails; `run CMD` runs a command
/// in a tool call; `background CMD` leaves a command running after the turn; `usage`
/// reports tokens.
#[derive(Default)]
pub struct Two;

#[acp::agent(name = "two")]
impl Two {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let text = prompt.text();
        let mut words = text.split_whitespace();
        match words.next() {
            Some("stream") => {
                let n: usize = words.next().and_then(|n| n.parse().ok()).unwrap_or(3);
                for i in 0..n {
                    cx.message(format!("chunk {i} ")).await?;
                }
            }
            Some("write") => {
                let out = cx
                    .call_tool("write", json!({"path": "/w/a.txt", "content": "hi"}))
                    .await;
                cx.message(format!("{out:?}")).await?;
            }
            Some("wait") => {
                cx.message("waiting").await?;
                cx.cancelled().await;
                return Ok(StopReason::Cancelled);
            }
            Some("plan") => {
                cx.plan(vec![acp::schema::PlanEntry::new(
                    "step",
                    acp::schema::PlanEntryPriority::High,
                    acp::schema::PlanEntryStatus::Pending,
                )])
                .await?;
            }
            Some("fail") => return Err(acp::Error::msg("it went wrong")),
            Some("background") => {
                // A command left running after the turn, from a handle outside it.
                let command: Vec<&str> = words.collect();
                let later = cx.detached();
                let terminal = later
                    .terminal()
                    .create("sh", ["-c", command.join(" ").as_str()])
                    .await?;
                tokio::spawn(async move {
                    let _ = terminal.wait_for_exit().await;
                });
                cx.message("started").await?;
            }
            Some("usage") => {
                // Two model calls' tokens, added up by the runtime.
                cx.token_usage(acp::schema::Usage::new(15, 10, 5));
                cx.token_usage(acp::schema::Usage::new(30, 20, 10).thought_tokens(4));
            }
            Some("run") => {
                let command: Vec<&str> = words.collect();
                cx.call_tool("run", json!({"command": command.join(" ")}))
                    .await?;
            }
            _ => cx.message(text.clone()).await?,
        }
        Ok(StopReason::EndTurn)
    }

    /// Runs a shell command on the agent's machine (v2 has no client terminals).
    ///
    /// # Arguments
    /// - `command`: the shell command.
    #[acp::tool(kind = "execute", title = "Run {command}")]
    async fn run(&self, cx: &Session, command: String) -> acp::Result<acp::Terminal> {
        let terminal = cx.terminal().create("sh", ["-c", command.as_str()]).await?;
        terminal.wait_for_exit().await?;
        Ok(terminal)
    }

    /// Writes a file (pretend), after asking.
    ///
    /// # Arguments
    /// - `path`: where.
    /// - `content`: what.
    #[acp::tool(kind = "edit", title = "Write {path}", permission)]
    async fn write(&self, cx: &Session, path: PathBuf, content: String) -> acp::Result<String> {
        let _ = cx;
        Ok(format!(
            "wrote {} bytes to {}",
            content.len(),
            path.display()
        ))
    }
}

/// A v2 connection to [`Two`] with a memory store, holding permission requests.
pub async fn connect() -> TestClient {
    let server = acp::Server::new(Two).store(MemoryStore::new());
    let client = TestClient::builder()
        .skip_initialize()
        .hold("session/request_permission")
        .serve(server)
        .await
        .expect("connecting");
    let init = client
        .request("initialize", v2_initialize())
        .await
        .expect("initialize");
    let init: v2::InitializeResponse =
        serde_json::from_value(init).expect("a v2 initialize answer");
    assert_eq!(init.protocol_version, acp::schema::ProtocolVersion::V2);
    client
}

pub async fn new_session(client: &TestClient) -> String {
    new_session_in(client, "/w").await
}

pub async fn new_session_in(client: &TestClient, cwd: &str) -> String {
    let answer = client
        .request("session/new", json!({"cwd": cwd}))
        .await
        .expect("session/new");
    let answer: v2::NewSessionResponse = serde_json::from_value(answer).expect("v2 answer");
    answer.session_id.0.to_string()
}

/// The update of a `session/update` frame (checked as a v2 update), if it is one.
pub fn update(frame: &Frame) -> Option<Value> {
    let message = frame.json()?;
    if message.get("method")? != "session/update" {
        return None;
    }
    let update = message["params"]["update"].clone();
    let _: v2::SessionUpdate = serde_json::from_value(update.clone())
        .unwrap_or_else(|e| panic!("not a v2 session update ({e}): {update}"));
    Some(update)
}

pub fn kind(update: &Value) -> String {
    let kind = update["sessionUpdate"].as_str().unwrap_or_default();
    match update["state"].as_str() {
        Some(state) => format!("{kind}:{state}"),
        None => kind.to_owned(),
    }
}

/// Frames until the `idle` state update, with their kinds (`answer:<id>` for answers).
pub async fn until_idle(client: &TestClient) -> (Vec<String>, Vec<Frame>) {
    let mut kinds = Vec::new();
    let mut frames = Vec::new();
    loop {
        let frame = client.next_frame().await.expect("a frame before idle");
        let message = frame.json().expect("JSON");
        let k = match update(&frame) {
            Some(u) => kind(&u),
            None if message.get("id").is_some() && message.get("method").is_none() => {
                format!("answer:{}", message["id"])
            }
            None => message["method"].as_str().unwrap_or("?").to_owned(),
        };
        let idle = k == "state_update:idle";
        kinds.push(k);
        frames.push(frame);
        if idle {
            return (kinds, frames);
        }
    }
}

pub fn prompt(client: &TestClient, session: &str, text: &str) -> Value {
    client.send_request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
    )
}

/// The params of a v2 `initialize`.
pub fn v2_initialize() -> Value {
    json!({"protocolVersion": 2, "info": {"name": "t", "version": "1"}, "capabilities": {}})
}

/// The frames for `session` not read yet (taking them).
pub fn unread_for(client: &TestClient, session: &str) -> Vec<Value> {
    client
        .take_unread()
        .iter()
        .filter_map(Frame::json)
        .filter(|m| m["params"]["sessionId"] == session)
        .collect()
}
