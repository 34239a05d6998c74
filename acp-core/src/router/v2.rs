//! The handlers of the method table's v2 rows, what only v2 has or does its own way: its
//! `initialize` answer, the prompt lifecycle (a prompt answered once accepted, queued behind
//! the running turn, its turn told by `state_update`s), `session/resume` with `replayFrom`,
//! `session/close` that ends the running turn first, and `auth/login` / `auth/logout`.
//!
//! The other methods are v1's handlers: [`v1_params`] gives them their params in the v1 shape,
//! and the codec writes their answers in v2's.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tracing::debug;

use super::queue::{self, PromptQueue};
use super::{Router, answer, auth, history, params, sessions};
use crate::agent::Agent;
use crate::jsonrpc;
use crate::mcp;
use crate::protocol::{Version, methods, v2};
use crate::schema::v2 as v2s;
use crate::schema::{self, ErrorCode, ProtocolVersion, RequestId};
use crate::session::SessionState;

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
    match r.conn.sessions().get(&target.session_id) {
        Some(state) => Ok((target, state)),
        None => Err(schema::Error::session_not_found(target.session_id)),
    }
}

/// `tool_call/cancel`: no tool call of ours advertises `capabilities.cancel` (a tool call
/// ends with its turn: `session/cancel`), so it is `-32602`, as v2 says for one that is not
/// cancellable.
pub(super) fn tool_call_cancel<A: Agent>(
    r: &Router<A>,
    _id: &RequestId,
    raw: Option<&RawValue>,
) -> Result<Vec<u8>, schema::Error> {
    let (target, _) = target(r, methods::TOOL_CALL_CANCEL, raw)?;
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
pub(super) fn terminal_cancel<A: Agent>(
    r: &Router<A>,
    id: &RequestId,
    raw: Option<&RawValue>,
) -> Result<Vec<u8>, schema::Error> {
    let (target, state) = target(r, methods::TERMINAL_CANCEL, raw)?;
    let wanted = target.terminal_id.unwrap_or_default();
    let Some(terminal) = queue::running_terminals(&state)
        .into_iter()
        .find(|t| *t.id.0 == *wanted)
    else {
        return Err(crate::Error::InvalidParams(format!(
            "terminal `{wanted}` is not running in session `{}`",
            state.id()
        ))
        .to_rpc());
    };
    debug!(session = %state.id(), terminal = %wanted, "terminal cancelled by the client");
    terminal.kill();
    Ok(jsonrpc::encode_result(
        id,
        &v2s::CancelTerminalResponse::new(),
    ))
}

/// The params of a v2 request of `method` (`V2`, the schema crate's v2 type), as the v1
/// request its handler reads (`convert`, from [`v2::params`]).
fn v1_params<V2: DeserializeOwned, V1: Serialize>(
    method: &str,
    raw: Option<&RawValue>,
    convert: fn(V2) -> Result<V1, schema::Error>,
) -> Result<Box<RawValue>, schema::Error> {
    let v1 = convert(params(method, raw)?)?;
    serde_json::value::to_raw_value(&v1)
        .map_err(|e| schema::Error::new(ErrorCode::InternalError.into(), e.to_string()))
}

/// `initialize` asking for protocol 2 or later: answered with 2, in v2's shape.
pub(super) fn initialize<A: Agent>(
    r: &Router<A>,
    id: &RequestId,
    raw: Option<&RawValue>,
) -> Result<Vec<u8>, schema::Error> {
    let req: schema::v2::InitializeRequest = params(methods::INITIALIZE, raw)?;
    if !r.conn.codec().negotiate(Version::V2) {
        return Err(schema::Error::new(
            ErrorCode::InvalidRequest.into(),
            "this connection was initialized with protocol v1; a connection speaks one version",
        ));
    }
    debug!(client = ?req.info, "initialized (protocol v2)");
    // A v2 client has no file system or terminals (`cx.fs()` / `cx.terminal()` do not ask it),
    // and what v2 has in its baseline: boolean config options, plan operations, subagents,
    // notices and compactions.
    let mut client = schema::ClientCapabilities::new()
        .plan(schema::PlanCapabilities::new())
        .subagents(schema::SubagentCapabilities::new());
    #[cfg_attr(not(feature = "unstable-prompt-suggestions"), allow(unused_mut))]
    let mut session = schema::ClientSessionCapabilities::new()
        .config_options(
            schema::SessionConfigOptionsCapabilities::new()
                .boolean(schema::BooleanConfigOptionCapabilities::new()),
        )
        .notices(schema::NoticeCapabilities::new())
        .compaction(schema::CompactionCapabilities::new());
    // The prompt suggestions it shows (`Session::suggest`), in v1's shape (the same fields).
    #[cfg(feature = "unstable-prompt-suggestions")]
    {
        session.prompt_suggestions = req
            .capabilities
            .session
            .as_ref()
            .and_then(|s| s.prompt_suggestions.as_ref())
            .and_then(|p| v2::same_shape(p).ok());
    }
    client.session = Some(session);
    r.conn.initialized(client, None);
    // `cx.fs()` / `cx.terminal()` act on the agent's machine, inside the session's roots, and
    // its terminals are shown as v2's agent-owned terminals.
    r.conn.use_local_backend();
    super::v2_terminals::display(&r.conn);
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
        )
        .system_prompt(
            v1.session_capabilities
                .system_prompt
                .as_ref()
                .map(|offered| {
                    let takes_override = offered
                        .mode
                        .as_ref()
                        .is_some_and(|mode| mode.override_.is_some());
                    v2s::SessionSystemPromptCapabilities::new().mode(takes_override.then(|| {
                        v2s::SessionSystemPromptModeCapabilities::new()
                            .override_(v2s::SessionSystemPromptOverrideCapabilities::new())
                    }))
                }),
        );
    // The Unstable methods routed on v2 (see `unstable`), as v1 advertises them.
    #[cfg(feature = "unstable-session-status")]
    let session = session.status(v2s::SessionStatusCapabilities::new());
    #[cfg(feature = "unstable-session-set-title")]
    let session = session.title(r.store().is_some().then(v2s::SessionTitleCapabilities::new));
    #[cfg(feature = "unstable-session-archive")]
    let session = session.archive(
        r.store()
            .is_some()
            .then(v2s::SessionArchiveCapabilities::new),
    );
    #[cfg_attr(not(feature = "llm-providers"), allow(unused_mut))]
    let mut capabilities = v2s::AgentCapabilities::new().session(session);
    #[cfg(feature = "llm-providers")]
    if super::providers::configurable(r) {
        capabilities = capabilities.providers(v2s::ProvidersCapabilities::new());
    }
    let auth_methods =
        auth::offered_auth_methods(r.agent.auth_methods(), r.conn.client_capabilities())
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

pub(super) fn login<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let raw = v1_params(methods::AUTH_LOGIN, raw, v2::params::login)?;
    auth::authenticate(r, id, Some(&raw))
}

pub(super) fn logout<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let raw = v1_params(methods::AUTH_LOGOUT, raw, v2::params::logout)?;
    auth::logout(r, id, Some(&raw))
}

pub(super) fn new_session<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let raw = v1_params(methods::SESSION_NEW, raw, v2::params::new_session)?;
    sessions::new_session(r, id, Some(&raw))
}

pub(super) fn set_config_option<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let raw = v1_params(
        methods::SESSION_SET_CONFIG_OPTION,
        raw,
        v2::params::set_config_option,
    )?;
    sessions::set_config_option(r, id, Some(&raw))
}

/// `session/list`: the store's sessions; none without a store.
pub(super) fn list<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let raw = v1_params(methods::SESSION_LIST, raw, v2::params::list_sessions)?;
    if r.store().is_some() {
        return history::list(r, id, Some(&raw));
    }
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
pub(super) fn resume<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: v2s::ResumeSessionRequest = params(methods::SESSION_RESUME, raw)?;
    if r.store().is_none() {
        // Nothing is kept without a store: no session can come back.
        return Err(schema::Error::session_not_found(schema::SessionId::new(
            req.session_id.0,
        )));
    }
    let (req, replay) = v2::params::resume_session(req)?;
    super::not_a_live_subagent(&r.conn, &req.session_id, methods::SESSION_RESUME)?;
    let initial = initial_options!(methods::SESSION_RESUME, req);
    let roots = r.conn.roots(req.cwd, req.additional_directories)?;
    let system_prompt =
        super::open::system_prompt(&*r.agent, methods::SESSION_RESUME, req.system_prompt)?;
    Ok(history::reopen(
        r,
        id,
        history::Reopen {
            session_id: req.session_id,
            roots,
            mcp_servers: req.mcp_servers,
            meta: req.meta,
            system_prompt,
            initial,
            replay,
        },
    ))
}

/// `session/close`: a running turn ends (`idle`, `cancelled`) and prompts waiting are refused
/// before the answer.
pub(super) fn close<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let raw = v1_params(methods::SESSION_CLOSE, raw, v2::params::close_session)?;
    let session = sessions::closing(r, Some(&raw))?;
    session.cancel_turn();
    let conn = r.conn.clone();
    Ok(Box::pin(async move {
        crate::peer::release_admission();
        // Free once the running turn has sent its idle (and queued prompts gave up).
        let _free = PromptQueue::of(&session).turn.clone().lock_owned().await;
        debug!(session = %session.id(), "session closed");
        answer(&conn, &id, Ok(schema::CloseSessionResponse::new())).await;
        sessions::stop_after_grace(session);
    }))
}

/// `session/delete`: v1's, its params read as v2's.
pub(super) fn delete<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let raw = v1_params(methods::SESSION_DELETE, raw, v2::params::delete_session)?;
    history::delete(r, id, Some(&raw))
}

/// A v2 `session/prompt`: its idempotency key taken apart, then the one prompt driver
/// ([`start`](super::prompt::start)), which queues it behind the session's running turn.
pub(super) fn prompt<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: v2s::PromptRequest = params(methods::SESSION_PROMPT, raw)?;
    let (req, key) = v2::params::prompt(req)?;
    let bytes = raw.map_or(0, |raw| raw.get().len());
    super::prompt::start(r, id, req, key, bytes)
}
