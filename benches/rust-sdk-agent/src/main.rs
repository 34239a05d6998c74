//! The bench workload agent (see examples/bench.rs in the acp workspace) written on the
//! official Rust SDK, `agent-client-protocol` 5.0.0, for benches/throughput/main.rs.
//!
//! Build: `cargo build --release --manifest-path benches/rust-sdk-agent/Cargo.toml`.
//! Served on stdio, or with `--listen ADDR` on the network by the official HTTP crate
//! (`agent-client-protocol-http` 5.0.0, `AcpHttpServer`: WebSocket and HTTP/SSE on
//! `http://ADDR/acp`, one agent per connection; no authentication, as the crate has none).
//! Prompts: `stream N`, `permission N`, `sleep` (as in examples/bench.rs); chunk i of
//! `stream N` says `{i:08} of the streamed answer.\n` (33 bytes), which the bench checks.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ContentBlock, ContentChunk, Implementation,
    InitializeRequest, InitializeResponse, NewSessionRequest, NewSessionResponse, PermissionOption,
    PermissionOptionKind, PromptRequest, PromptResponse, RequestPermissionOutcome,
    RequestPermissionRequest, SessionId, SessionNotification, SessionUpdate, StopReason, ToolCall,
    ToolCallId, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use agent_client_protocol::{Agent, Client, ConnectTo, Stdio};
use agent_client_protocol_http::AcpHttpServer;
use tokio::sync::watch;

/// A cancel signal per session with a running turn.
type Turns = Arc<Mutex<HashMap<SessionId, watch::Sender<bool>>>>;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let listen = match (args.next().as_deref(), args.next()) {
        (None, _) => None,
        (Some("--listen"), Some(addr)) => Some(addr),
        _ => return Err("usage: bench-rust-sdk-agent [--listen ADDR]".into()),
    };
    let next_session = Arc::new(AtomicU64::new(0));
    let Some(addr) = listen else {
        agent(next_session).connect_to(Stdio::new()).await?;
        return Ok(());
    };
    // The official HTTP crate's server, as its docs serve it: one agent per connection
    // (WebSocket upgrade or `initialize` POST), on `axum::serve`.
    let app = AcpHttpServer::new(move || agent(next_session.clone())).into_router();
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    axum::serve(listener, app).await?;
    Ok(())
}

/// The agent of one connection: over stdio the only one; over the network one per connection,
/// all numbering their sessions from one counter.
fn agent(next_session: Arc<AtomicU64>) -> impl ConnectTo<Client> {
    let turns: Turns = Arc::default();
    let cancel_turns = turns.clone();
    Agent
        .v1()
        .name("bench-rust-sdk")
        .on_receive_request(
            async move |init: InitializeRequest, responder, _cx| {
                responder.respond(
                    InitializeResponse::new(init.protocol_version)
                        .agent_capabilities(AgentCapabilities::new())
                        .agent_info(Implementation::new("bench-rust-sdk", "0.0.0")),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_req: NewSessionRequest, responder, _cx| {
                let n = next_session.fetch_add(1, Ordering::Relaxed);
                responder.respond(NewSessionResponse::new(SessionId::new(format!("sess_{n}"))))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |cancel: CancelNotification, _cx| {
                if let Some(tx) = cancel_turns.lock().unwrap().get(&cancel.session_id) {
                    let _ = tx.send(true);
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, responder, cx: ConnectionTo<Client>| {
                let (tx, rx) = watch::channel(false);
                turns.lock().unwrap().insert(req.session_id.clone(), tx);
                let turns = turns.clone();
                // The dispatch loop must stay free to route the client's answers.
                cx.clone().spawn(async move {
                    let session = req.session_id.clone();
                    let reason = run(&cx, req, rx).await;
                    turns.lock().unwrap().remove(&session);
                    match reason {
                        Ok(reason) => responder.respond(PromptResponse::new(reason)),
                        Err(e) => responder.respond_with_error(e),
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
}

async fn run(
    cx: &ConnectionTo<Client>,
    req: PromptRequest,
    mut cancel: watch::Receiver<bool>,
) -> agent_client_protocol::Result<StopReason> {
    let text: String = req
        .prompt
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    let text = text.trim();
    let (command, rest) = text.split_once(' ').unwrap_or((text, ""));
    let n: usize = rest.trim().parse().unwrap_or(0);
    let session = req.session_id;
    match command {
        "stream" => {
            for i in 0..n {
                let chunk = ContentChunk::new(ContentBlock::from(format!(
                    "{i:08} of the streamed answer.\n"
                )));
                cx.send_notification(SessionNotification::new(
                    session.clone(),
                    SessionUpdate::AgentMessageChunk(chunk),
                ))?;
            }
            Ok(StopReason::EndTurn)
        }
        "permission" => {
            let id = ToolCallId::new("call_0");
            let call = ToolCall::new(id.clone(), "Dangerous action")
                .kind(ToolKind::Execute)
                .status(ToolCallStatus::Pending);
            cx.send_notification(SessionNotification::new(
                session.clone(),
                SessionUpdate::ToolCall(call),
            ))?;
            for _ in 0..n {
                let options = vec![
                    PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
                    PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
                ];
                let ask = RequestPermissionRequest::new(
                    session.clone(),
                    ToolCallUpdate::new(id.clone(), ToolCallUpdateFields::new()),
                    options,
                );
                let answer = cx.send_request(ask).block_task().await?;
                if !matches!(answer.outcome, RequestPermissionOutcome::Selected(_)) {
                    return Ok(StopReason::Cancelled);
                }
            }
            let done = ToolCallUpdateFields::new().status(ToolCallStatus::Completed);
            cx.send_notification(SessionNotification::new(
                session,
                SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id, done)),
            ))?;
            Ok(StopReason::EndTurn)
        }
        "sleep" => {
            let chunk = ContentChunk::new(ContentBlock::from("sleeping".to_owned()));
            cx.send_notification(SessionNotification::new(
                session,
                SessionUpdate::AgentMessageChunk(chunk),
            ))?;
            let _ = cancel.wait_for(|c| *c).await;
            Ok(StopReason::Cancelled)
        }
        _ => Ok(StopReason::EndTurn),
    }
}
