//! The method table: one entry per method the runtime answers or handles, with its name in
//! each protocol version, its gate and its handler. Adding a protocol method is one entry
//! here (plus one in the macro's table of recognised methods, when the author implements it). Also `initialize`, whose answer is everything the
//! agent and the runtime advertise, and the answer helper the handlers share.

use serde_json::value::RawValue;
use tracing::debug;

use super::{Handler, Names, NotificationRoute, Route, Router, auth, params, prompt, sessions};
use crate::Result;
use crate::agent::Agent;
use crate::jsonrpc;
use crate::mcp;
use crate::protocol::methods;
use crate::schema::{self, ProtocolVersion, RequestId};

/// A gate every connection passes.
pub(super) fn always<A>(_: &Router<A>) -> bool {
    true
}

/// The gate of the methods answered from the session store.
pub(super) fn recorded<A: Agent>(r: &Router<A>) -> bool {
    r.store().is_some()
}

/// The gate of the sign-in methods: the agent declares some.
pub(super) fn has_auth<A: Agent>(r: &Router<A>) -> bool {
    !r.agent.auth_methods().is_empty()
}

/// The requests the runtime answers (extension methods are routed apart: see `ext`): every
/// method of every version, once. A row names the method in each version that has it (the
/// same handler and gate serve both); a method whose versions differ in what it does has a
/// row per version.
pub(super) fn requests<A: Agent>() -> Vec<Route<A>> {
    #[cfg(feature = "llm-providers")]
    let [providers_list, providers_set, providers_disable] = super::providers::requests();
    vec![
        Route {
            names: Names::both(methods::INITIALIZE),
            gate: always,
            handler: Handler::Inline(initialize),
        },
        Route {
            names: Names::v1(methods::AUTHENTICATE),
            gate: has_auth,
            handler: Handler::Spawned(auth::authenticate),
        },
        Route {
            names: Names::v1(methods::LOGOUT),
            gate: |r: &Router<A>| r.agent.capabilities().auth.logout.is_some(),
            handler: Handler::Spawned(auth::logout),
        },
        Route {
            names: Names::v1(methods::SESSION_NEW),
            gate: always,
            handler: Handler::Spawned(sessions::new_session),
        },
        Route {
            names: Names::v1(methods::SESSION_LOAD),
            gate: |r: &Router<A>| recorded(r) || r.agent.capabilities().load_session,
            handler: Handler::Spawned(sessions::load_session),
        },
        Route {
            names: Names::v1(methods::SESSION_RESUME),
            gate: recorded,
            handler: Handler::Spawned(super::history::resume),
        },
        Route {
            names: Names::v1(methods::SESSION_LIST),
            gate: recorded,
            handler: Handler::Spawned(super::history::list),
        },
        Route {
            names: Names::v1(methods::SESSION_DELETE),
            gate: recorded,
            handler: Handler::Spawned(super::history::delete),
        },
        Route {
            names: Names::v1(methods::SESSION_PROMPT),
            gate: always,
            handler: Handler::Spawned(prompt::prompt),
        },
        Route {
            names: Names::v1(methods::SESSION_CLOSE),
            gate: always,
            handler: Handler::Inline(sessions::close_session),
        },
        Route {
            names: Names::v1(methods::SESSION_SET_MODE),
            gate: |r: &Router<A>| r.settings.has_modes(),
            handler: Handler::Spawned(sessions::set_mode),
        },
        Route {
            names: Names::v1(methods::SESSION_SET_CONFIG_OPTION),
            gate: |r: &Router<A>| !r.settings.is_empty(),
            handler: Handler::Spawned(sessions::set_config_option),
        },
        // What v2 does its own way (see `v2`).
        #[cfg(feature = "v2")]
        Route {
            names: Names::v2(methods::AUTH_LOGIN),
            gate: has_auth,
            handler: Handler::Spawned(super::v2::login),
        },
        #[cfg(feature = "v2")]
        Route {
            names: Names::v2(methods::AUTH_LOGOUT),
            gate: has_auth,
            handler: Handler::Spawned(super::v2::logout),
        },
        #[cfg(feature = "v2")]
        Route {
            names: Names::v2(methods::SESSION_NEW),
            gate: always,
            handler: Handler::Spawned(super::v2::new_session),
        },
        // Baseline in v2: without a store no session is kept, so none is listed or resumed.
        #[cfg(feature = "v2")]
        Route {
            names: Names::v2(methods::SESSION_RESUME),
            gate: always,
            handler: Handler::Spawned(super::v2::resume),
        },
        #[cfg(feature = "v2")]
        Route {
            names: Names::v2(methods::SESSION_LIST),
            gate: always,
            handler: Handler::Spawned(super::v2::list),
        },
        #[cfg(feature = "v2")]
        Route {
            names: Names::v2(methods::SESSION_DELETE),
            gate: recorded,
            handler: Handler::Spawned(super::v2::delete),
        },
        #[cfg(feature = "v2")]
        Route {
            names: Names::v2(methods::SESSION_PROMPT),
            gate: always,
            handler: Handler::Spawned(super::v2::prompt),
        },
        #[cfg(feature = "v2")]
        Route {
            names: Names::v2(methods::SESSION_CLOSE),
            gate: always,
            handler: Handler::Spawned(super::v2::close),
        },
        #[cfg(feature = "v2")]
        Route {
            names: Names::v2(methods::SESSION_SET_CONFIG_OPTION),
            gate: |r: &Router<A>| !r.settings.is_empty(),
            handler: Handler::Spawned(super::v2::set_config_option),
        },
        #[cfg(feature = "v2")]
        Route {
            names: Names::v2(methods::TOOL_CALL_CANCEL),
            gate: always,
            handler: Handler::Inline(super::v2::tool_call_cancel),
        },
        #[cfg(feature = "v2")]
        Route {
            names: Names::v2(methods::TERMINAL_CANCEL),
            gate: always,
            handler: Handler::Inline(super::v2::terminal_cancel),
        },
        // Unstable, each behind its feature (see `unstable`). Fork and options read v1's
        // params only: v2's differ (absolute paths, tagged MCP servers) and are not
        // converted yet.
        #[cfg(feature = "unstable-session-fork")]
        Route {
            names: Names::v1(methods::SESSION_FORK),
            gate: recorded,
            handler: Handler::Spawned(super::unstable::fork),
        },
        #[cfg(feature = "unstable-session-options")]
        Route {
            names: Names::v1(methods::SESSION_OPTIONS),
            gate: always,
            handler: Handler::Spawned(super::unstable::options),
        },
        // The same params in both versions (a session id, a title); the answers are written
        // in each version's shape.
        #[cfg(feature = "unstable-session-status")]
        Route {
            names: Names::both(methods::SESSION_STATUS),
            gate: always,
            handler: Handler::Spawned(super::unstable::status),
        },
        #[cfg(feature = "unstable-session-set-title")]
        Route {
            names: Names::both(methods::SESSION_SET_TITLE),
            gate: recorded,
            handler: Handler::Spawned(super::unstable::set_title),
        },
        #[cfg(feature = "unstable-session-archive")]
        Route {
            names: Names::both(methods::SESSION_ARCHIVE),
            gate: recorded,
            handler: Handler::Spawned(super::unstable::archive),
        },
        #[cfg(feature = "unstable-session-archive")]
        Route {
            names: Names::both(methods::SESSION_UNARCHIVE),
            gate: recorded,
            handler: Handler::Spawned(super::unstable::unarchive),
        },
        // The same methods, params and answers in both versions.
        #[cfg(feature = "llm-providers")]
        providers_list,
        #[cfg(feature = "llm-providers")]
        providers_set,
        #[cfg(feature = "llm-providers")]
        providers_disable,
    ]
}

/// The notifications the runtime handles (extension notifications are routed apart); any
/// other is ignored.
pub(super) fn notifications<A: Agent>() -> Vec<NotificationRoute<A>> {
    vec![
        NotificationRoute {
            method: methods::SESSION_CANCEL,
            handler: prompt::cancel,
        },
        NotificationRoute {
            method: methods::CANCEL_REQUEST,
            handler: prompt::cancel_request,
        },
    ]
}

fn initialize<A: Agent>(
    r: &Router<A>,
    id: &RequestId,
    raw: Option<&RawValue>,
) -> Result<Vec<u8>, schema::Error> {
    /// The version the client asks for, whatever the shape of the rest.
    #[derive(serde::Deserialize)]
    #[cfg_attr(not(feature = "v2"), allow(dead_code))]
    struct Asked {
        #[serde(rename = "protocolVersion")]
        protocol_version: ProtocolVersion,
    }
    let asked: Asked = params(methods::INITIALIZE, raw)?;
    // A connection speaks the version its first `initialize` chose.
    #[cfg(feature = "v2")]
    if match r.conn.codec().negotiated() {
        None => asked.protocol_version >= ProtocolVersion::V2,
        Some(version) => version == crate::protocol::Version::V2,
    } {
        return super::v2::initialize(r, id, raw);
    }
    // Anything else (v1, or the pre-release 0) is answered with v1.
    let _ = asked;
    let version = ProtocolVersion::V1;
    let req: schema::InitializeRequest = params(methods::INITIALIZE, raw)?;
    r.conn.codec().negotiate(crate::protocol::Version::V1);
    // The unstable parts of v1 it gets: those it asked for.
    r.conn
        .codec()
        .opt_in(crate::protocol::Unstable::asked(&req.client_capabilities));
    debug!(capabilities = ?req.client_capabilities, "initialized");
    r.conn.initialized(req.client_capabilities, req.client_info);
    // Where `cx.fs()` and `cx.terminal()` act, from what the client advertised.
    r.conn.choose_v1_backends();
    // What the runtime answers for every agent, beside what the agent advertises.
    let mut capabilities = r.agent.capabilities();
    capabilities.session_capabilities.close = Some(schema::SessionCloseCapabilities::new());
    // Every session's `additionalDirectories` are checked, bound `cx.fs()` and are kept with
    // its history (`cx.additional_directories()` gives them to the agent).
    capabilities.session_capabilities.additional_directories =
        Some(schema::SessionAdditionalDirectoriesCapabilities::new());
    capabilities.mcp_capabilities = mcp::capabilities();
    #[cfg(feature = "llm-providers")]
    if super::providers::configurable(r) {
        capabilities.providers = Some(schema::ProvidersCapabilities::new());
    }
    if r.store().is_some() {
        capabilities.load_session = true;
        let sessions = &mut capabilities.session_capabilities;
        sessions.list = Some(schema::SessionListCapabilities::new());
        sessions.resume = Some(schema::SessionResumeCapabilities::new());
        sessions.delete = Some(schema::SessionDeleteCapabilities::new());
        #[cfg(feature = "unstable-session-fork")]
        {
            sessions.fork = Some(schema::SessionForkCapabilities::new());
        }
        #[cfg(feature = "unstable-session-set-title")]
        {
            sessions.title = Some(schema::SessionTitleCapabilities::new());
        }
        #[cfg(feature = "unstable-session-archive")]
        {
            sessions.archive = Some(schema::SessionArchiveCapabilities::new());
        }
    }
    // Answered with or without a store.
    #[cfg(feature = "unstable-session-status")]
    {
        capabilities.session_capabilities.status = Some(schema::SessionStatusCapabilities::new());
    }
    #[cfg(feature = "unstable-session-options")]
    {
        capabilities.session_capabilities.options = Some(schema::SessionOptionsCapabilities::new());
    }
    let auth_methods =
        auth::offered_auth_methods(r.agent.auth_methods(), r.conn.client_capabilities());
    let response = schema::InitializeResponse::new(version)
        .agent_capabilities(capabilities)
        .auth_methods(auth_methods)
        .agent_info(r.agent.info());
    Ok(jsonrpc::encode_result(id, &response))
}
