//! The method table of a connection that negotiated protocol v2, and what only v2 has: its
//! `initialize` answer, the prompt lifecycle (a prompt answered once accepted, queued behind
//! the running turn, its turn told by `state_update`s), `session/resume` with `replayFrom`,
//! `session/close` that ends the running turn first, and `auth/login` / `auth/logout`.
//!
//! The other methods are v1's handlers: [`v1_params`] gives them their params in the v1 shape,
//! and `routes::answer` writes their answers in v2's.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tracing::{Instrument, debug, debug_span};

use super::queue::{self, PromptQueue};
use super::routes::{always, answer, has_auth, offered_auth_methods, recorded};
use super::{Handler, Route, Router, auth, history, params, sessions};
use crate::agent::{Agent, Prompt};
use crate::jsonrpc;
use crate::mcp;
use crate::peer::Frame;
use crate::protocol::{Version, methods, v2};
use crate::schema::v2 as v2s;
use crate::schema::{self, ErrorCode, ProtocolVersion, RequestId};
use crate::session::{Request, Session, SessionState, user_chunk};
use crate::store::Record;
use crate::sync::lock;
use crate::turn::{self, Turn};

/// v2's method names that v1 spells differently.
const AUTH_LOGIN: &str = "auth/login";
const AUTH_LOGOUT: &str = "auth/logout";

/// The requests a v2 connection answers.
pub(super) fn requests<A: Agent>() -> Vec<Route<A>> {
    #[cfg(feature = "llm-providers")]
    let [providers_list, providers_set, providers_disable] = super::providers::requests();
    vec![
        Route {
            method: methods::INITIALIZE,
            gate: always,
            handler: Handler::Inline(initialize),
        },
        Route {
            method: AUTH_LOGIN,
            gate: has_auth,
            handler: Handler::Spawned(login),
        },
        Route {
            method: AUTH_LOGOUT,
            gate: has_auth,
            handler: Handler::Spawned(logout),
        },
        Route {
            method: methods::SESSION_NEW,
            gate: always,
            handler: Handler::Spawned(new_session),
        },
        // Baseline in v2: without a store no session is kept, so none is listed or resumed.
        Route {
            method: methods::SESSION_RESUME,
            gate: always,
            handler: Handler::Spawned(resume),
        },
        Route {
            method: methods::SESSION_LIST,
            gate: always,
            handler: Handler::Spawned(list),
        },
        Route {
            method: methods::SESSION_DELETE,
            gate: recorded,
            handler: Handler::Spawned(history::delete),
        },
        Route {
            method: methods::SESSION_PROMPT,
            gate: always,
            handler: Handler::Spawned(prompt),
        },
        Route {
            method: methods::SESSION_CLOSE,
            gate: always,
            handler: Handler::Spawned(close),
        },
        Route {
            method: methods::SESSION_SET_CONFIG_OPTION,
            gate: |r: &Router<A>| !r.settings.is_empty(),
            handler: Handler::Spawned(set_config_option),
        },
        Route {
            method: schema::v2::AGENT_METHOD_NAMES.tool_call_cancel,
            gate: always,
            handler: Handler::Inline(tool_call_cancel),
        },
        Route {
            method: schema::v2::AGENT_METHOD_NAMES.terminal_cancel,
            gate: always,
            handler: Handler::Inline(terminal_cancel),
        },
        // The same methods, params and answers as in v1.
        #[cfg(feature = "llm-providers")]
        providers_list,
        #[cfg(feature = "llm-providers")]
        providers_set,
        #[cfg(feature = "llm-providers")]
        providers_disable,
    ]
}

/// What `tool_call/cancel` and `terminal/cancel` name.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Target {
    session_id: schema::SessionId,
    tool_call_id: Option<String>,
    terminal_id: Option<String>,
}

/// The target of a `method` request, in a session of the connection.
fn target<A: Agent>(
    r: &Router<A>,
    method: &str,
    raw: Option<&RawValue>,
) -> Result<(Target, Arc<SessionState>), schema::Error> {
    let target: Target = params(method, raw)?;
    match r.conn.sessions.get(&target.session_id) {
        Some(state) => Ok((target, state)),
        None => Err(schema::Error::session_not_found(target.session_id)),
    }
}

/// `tool_call/cancel`: no tool call of ours advertises `capabilities.cancel` (a tool call
/// ends with its turn: `session/cancel`), so it is `-32602`, as v2 says for one that is not
/// cancellable.
fn tool_call_cancel<A: Agent>(
    r: &Router<A>,
    _id: &RequestId,
    raw: Option<&RawValue>,
) -> Result<Vec<u8>, schema::Error> {
    let (target, _) = target(r, "tool_call/cancel", raw)?;
    let id = target.tool_call_id.unwrap_or_default();
    Err(crate::Error::InvalidParams(format!(
        "tool call `{id}` is not cancellable (it does not advertise `capabilities.cancel`); \
         cancel the turn with `session/cancel`"
    ))
    .to_rpc())
}

/// `terminal/cancel`: stops one of the session's local terminals (every one advertises
/// `capabilities.cancel`), its whole process group, gently first, without touching the turn;
/// its `terminal_update` with the exit status follows. A terminal that is unknown or no
/// longer runs is `-32602`, as v2 says.
fn terminal_cancel<A: Agent>(
    r: &Router<A>,
    id: &RequestId,
    raw: Option<&RawValue>,
) -> Result<Vec<u8>, schema::Error> {
    let (target, state) = target(r, "terminal/cancel", raw)?;
    let wanted = target.terminal_id.unwrap_or_default();
    let Some(terminal) = queue::running_terminals(&state)
        .into_iter()
        .find(|t| *t.id.0 == *wanted)
    else {
        return Err(crate::Error::InvalidParams(format!(
            "terminal `{wanted}` is not running in session `{}`",
            state.id
        ))
        .to_rpc());
    };
    debug!(session = %state.id, terminal = %wanted, "terminal cancelled by the client");
    terminal.kill();
    Ok(jsonrpc::encode_result(id, &json!({})))
}

/// The params of a v2 request of `method` in the v1 shape its handler reads.
fn v1_params(method: &str, raw: Option<&RawValue>) -> Result<Box<RawValue>, schema::Error> {
    let mut value: Value = params(method, raw)?;
    v2::request_params(method, &mut value);
    serde_json::value::to_raw_value(&value)
        .map_err(|e| schema::Error::new(ErrorCode::InternalError.into(), e.to_string()))
}

/// `initialize` asking for protocol 2 or later: answered with 2, in v2's shape.
pub(super) fn initialize<A: Agent>(
    r: &Router<A>,
    id: &RequestId,
    raw: Option<&RawValue>,
) -> Result<Vec<u8>, schema::Error> {
    let req: schema::v2::InitializeRequest = params(methods::INITIALIZE, raw)?;
    let journal = &r.conn.peer.journal;
    if !journal.set_version(Version::V2) && journal.version() != Version::V2 {
        return Err(schema::Error::new(
            ErrorCode::InvalidRequest.into(),
            "this connection was initialized with protocol v1; a connection speaks one version",
        ));
    }
    debug!(client = ?req.info, "initialized (protocol v2)");
    // A v2 client has no file system or terminals (`cx.fs()` / `cx.terminal()` do not ask it),
    // and shows boolean config options (v2's baseline).
    let mut client = schema::ClientCapabilities::new();
    client.session = Some(
        schema::ClientSessionCapabilities::new().config_options(
            schema::SessionConfigOptionsCapabilities::new()
                .boolean(schema::BooleanConfigOptionCapabilities::new()),
        ),
    );
    let _ = r.conn.client.set(client);
    // `cx.fs()` / `cx.terminal()` act on the agent's machine, inside the session's roots, and
    // its terminals are shown as v2's agent-owned terminals.
    r.conn.use_local_backend();
    super::v2_terminals::display(&r.conn);
    let _ = r.conn.client_info.set(None);
    let response = initialize_response(r);
    Ok(jsonrpc::encode_result(id, &response))
}

/// The v2 answer to `initialize`, typed with the schema crate's v2 types: what the agent
/// advertises (its prompt content, the MCP transports, additional directories, `delete`
/// with a store, `providers` when the client may set them) and its `agent` sign-in methods.
fn initialize_response<A: Agent>(r: &Router<A>) -> v2s::InitializeResponse {
    let v1 = r.agent.capabilities();
    let prompt = &v1.prompt_capabilities;
    let prompt = v2s::PromptCapabilities::new()
        .image(prompt.image.then(v2s::PromptImageCapabilities::new))
        .audio(prompt.audio.then(v2s::PromptAudioCapabilities::new))
        .embedded_context(
            prompt
                .embedded_context
                .then(v2s::PromptEmbeddedContextCapabilities::new),
        );
    let mcp = v2s::McpCapabilities::new()
        .stdio(v2s::McpStdioCapabilities::new())
        .http(mcp::capabilities().http.then(v2s::McpHttpCapabilities::new));
    let session = v2s::SessionCapabilities::new()
        .prompt(prompt)
        .mcp(mcp)
        .additional_directories(v2s::SessionAdditionalDirectoriesCapabilities::new())
        .delete(
            r.store()
                .is_some()
                .then(v2s::SessionDeleteCapabilities::new),
        );
    #[cfg_attr(not(feature = "llm-providers"), allow(unused_mut))]
    let mut capabilities = v2s::AgentCapabilities::new().session(session);
    #[cfg(feature = "llm-providers")]
    if super::providers::configurable(r) {
        capabilities = capabilities.providers(v2s::ProvidersCapabilities::new());
    }
    let auth_methods = offered_auth_methods(r.agent.auth_methods(), r.conn.client_capabilities())
        .into_iter()
        .filter_map(|method| match method {
            schema::AuthMethod::Agent(m) => Some(v2s::AuthMethod::Agent(
                v2s::AuthMethodAgent::new(m.id.0.to_string(), m.name)
                    .description(m.description)
                    .meta(m.meta),
            )),
            _ => None,
        })
        .collect();
    let info = r.agent.info();
    let info = v2s::Implementation::new(info.name, info.version).title(info.title);
    v2s::InitializeResponse::new(ProtocolVersion::V2, info)
        .capabilities(capabilities)
        .auth_methods(auth_methods)
}

fn login<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    auth::authenticate(r, id, Some(&v1_params(AUTH_LOGIN, raw)?))
}

fn logout<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    auth::logout(r, id, Some(&v1_params(AUTH_LOGOUT, raw)?))
}

fn new_session<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    sessions::new_session(r, id, Some(&v1_params(methods::SESSION_NEW, raw)?))
}

fn set_config_option<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let raw = v1_params(methods::SESSION_SET_CONFIG_OPTION, raw)?;
    sessions::set_config_option(r, id, Some(&raw))
}

/// `session/list`: the store's sessions; none without a store.
fn list<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    if r.store().is_some() {
        return history::list(r, id, raw);
    }
    let _: Value = params(methods::SESSION_LIST, raw)?;
    let conn = r.conn.clone();
    Ok(Box::pin(async move {
        answer(
            &conn,
            &id,
            Ok(schema::ListSessionsResponse::new(Vec::new())),
        )
        .await;
    }))
}

/// `session/resume`: with `replayFrom` the whole conversation is replayed (v1's `session/load`),
/// then `replay_complete`; without, none.
fn resume<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let mut value: Value = params(methods::SESSION_RESUME, raw)?;
    if r.store().is_none() {
        // Nothing is kept without a store: no session can come back.
        let session = value
            .get("sessionId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        return Err(schema::Error::session_not_found(schema::SessionId::new(
            session,
        )));
    }
    let replay = match value.as_object_mut().and_then(|f| f.remove("replayFrom")) {
        None | Some(Value::Null) => false,
        Some(from) if from.get("type").and_then(Value::as_str) == Some("start") => true,
        Some(from) => {
            return Err(schema::Error::new(
                ErrorCode::InvalidParams.into(),
                format!(
                    "`replayFrom` {from} is not supported; replay from `{{\"type\": \"start\"}}`"
                ),
            ));
        }
    };
    v2::request_params(methods::SESSION_RESUME, &mut value);
    let req: schema::ResumeSessionRequest = serde_json::from_value(value)
        .map_err(|e| crate::Error::InvalidParams(e.to_string()).to_rpc())?;
    let roots = r.conn.roots(req.cwd, req.additional_directories)?;
    Ok(history::reopen(
        r,
        id,
        history::Reopen {
            session_id: req.session_id,
            roots,
            mcp_servers: req.mcp_servers,
            meta: req.meta,
            replay,
        },
    ))
}

/// `session/close`: a running turn ends (`idle`, `cancelled`) and prompts waiting are refused
/// before the answer.
fn close<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let session = sessions::closing(r, raw)?;
    session.cancel_turn();
    let conn = r.conn.clone();
    Ok(Box::pin(async move {
        crate::peer::release_admission();
        // Free once the running turn has sent its idle (and queued prompts gave up).
        let _free = PromptQueue::of(&session).turn.clone().lock_owned().await;
        debug!(session = %session.id, "session closed");
        answer(&conn, &id, Ok(schema::CloseSessionResponse::new())).await;
        sessions::stop_after_grace(session);
    }))
}

/// A v2 `session/prompt`: checked here, then queued behind the session's running turn; once
/// its turn starts it is answered with its user message's id, the message echoed, and the
/// turn told by `running` … `idle`.
fn prompt<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let mut value: Value = params(methods::SESSION_PROMPT, raw)?;
    let key = value
        .as_object_mut()
        .and_then(|f| f.remove("idempotencyKey"))
        .and_then(|k| k.as_str().map(str::to_owned));
    let req: schema::PromptRequest = serde_json::from_value(value)
        .map_err(|e| crate::Error::InvalidParams(e.to_string()).to_rpc())?;
    let state = r
        .conn
        .sessions
        .get(&req.session_id)
        .ok_or_else(|| schema::Error::session_not_found(req.session_id.clone()))?;
    // A retry of a prompt already inserted: its message id again, no second turn.
    if let Some(key) = &key
        && let Some(message) = PromptQueue::of(&state).prompt_with_key(key)
    {
        let conn = r.conn.clone();
        return Ok(Box::pin(async move {
            let bytes = v2::prompt_answer(&id, &message.0);
            let _ = conn.peer.send(Frame::new(bytes, None).answering(&id)).await;
        }));
    }
    // A bounded queue: beyond it the prompt is refused, and nothing of it is kept.
    let bytes = raw.map_or(0, |raw| raw.get().len());
    let prompts_queue = PromptQueue::of(&state);
    let queued = prompts_queue.admit(bytes).ok_or_else(|| {
        schema::Error::new(
            schema::ErrorCode::InvalidRequest.into(),
            format!(
                "session `{}` has too many prompts waiting (at most {} prompts, {} MiB in all); \
                 send this one once a waiting prompt has started, or cancel",
                state.id,
                queue::MAX_QUEUED_PROMPTS,
                queue::MAX_QUEUED_BYTES >> 20,
            ),
        )
    })?;
    let blocks = req.prompt.clone();
    let prompt = Prompt::from_request(req);
    super::prompt::refuse_unaccepted(r, &prompt, "session.prompt")?;
    let command = super::prompt::command_of(r, &state, &prompt);
    // The message id is the session's from now: a retry with the same key gets it.
    let message = state.messages.user_message();
    if let Some(key) = key {
        prompts_queue.remember_key(key, message.clone());
    }
    let waiting = lock(&state.waiting).clone();
    let (agent, prompts) = (r.agent.clone(), r.prompts.clone());
    let span =
        debug_span!("turn", session = %state.id, command = command.as_ref().map(|c| c.0.as_str()));
    Ok(Box::pin(
        async move {
            crate::peer::release_admission();
            let peer = state.conn.peer.clone();
            // FIFO behind the running turn; a cancel of the session drops waiting prompts.
            let slot = tokio::select! {
                // A cancel that came first wins over the slot it freed.
                biased;
                () = waiting.cancelled() => {
                    let e = crate::Error::Cancelled.to_rpc();
                    let frame = Frame::new(jsonrpc::encode_error(&id, &e), None).answering(&id);
                    let _ = peer.send(frame).await;
                    return;
                }
                // The connection's turns are cancelled: nothing more runs.
                () = peer.turns.cancelled() => return,
                slot = prompts_queue.turn.clone().lock_owned() => slot,
            };
            // Out of the queue: its place is free for the next prompt.
            drop(queued);
            let turn = Arc::new(Turn::new(&peer.turns));
            if state.is_closed() || !state.start_turn(&turn) {
                let e = crate::Error::SessionClosed.to_rpc();
                let _ = peer
                    .send(Frame::new(jsonrpc::encode_error(&id, &e), None).answering(&id))
                    .await;
                return;
            }
            lock(&prompts).insert(id.clone(), turn.clone());
            state.messages.end();
            let _ = peer
                .send(Frame::new(v2::prompt_answer(&id, &message.0), None).answering(&id))
                .await;
            echo(&state, &turn, &blocks, &message).await;
            if let Ok(running) = v2::state_update(&state.id, crate::protocol::State::Running) {
                let _ = peer
                    .send(Frame::new(running, Some(turn.sequence.clone())).of_session(&state.id))
                    .await;
            }
            let request = Request::new(prompt.meta().cloned());
            let cx = Session::new(state.clone(), Some(turn.clone())).handling(request);
            let outcome = super::prompt::run_turn(&*agent, &cx, &turn, command, prompt).await;
            state.save_persisted().await;
            let (frame, ended) = turn
                .end(
                    &peer,
                    &state.id,
                    turn::Ending::Idle {
                        background: &|| queue::background_terminal_ids(&state),
                    },
                    outcome,
                )
                .await;
            state.end_turn();
            lock(&prompts).remove(&id);
            // Like v1's answer, the idle skips the writer's queue when nothing waits in it (the
            // turn's end is recorded after it, so a cancel's latency never waits on the store).
            let _ = peer.send_now(frame).await;
            if let Some(ended) = ended {
                let _ = peer.send(ended).await;
            }
            drop(slot);
        }
        .instrument(span),
    ))
}

/// Echoes the prompt as the `user_message` of id `message` (recorded as its chunks: the
/// account of a prompt is the same for both versions).
async fn echo(
    state: &SessionState,
    turn: &Turn,
    blocks: &[schema::ContentBlock],
    message: &schema::MessageId,
) {
    let peer = &state.conn.peer;
    let update = json!({
        "sessionUpdate": "user_message",
        "messageId": message,
        "content": blocks,
    });
    let Ok(Some(bytes)) = v2::session_update(&state.id, update) else {
        return;
    };
    let records: Vec<Record> = blocks
        .iter()
        .filter_map(|block| Record::update(&user_chunk(block.clone(), message)).ok())
        .collect();
    let frame = match peer.journal.records_only(&state.id, &records) {
        Some(mut frame) => {
            frame.bytes = bytes;
            frame.sequence = Some(turn.sequence.clone());
            frame
        }
        None => Frame::new(bytes, Some(turn.sequence.clone())).of_session(&state.id),
    };
    let _ = peer.send(frame).await;
}
