//! The answers of the runtime's handlers (v1 types) as a v2 client reads them, typed: modes
//! are dropped (a v2 session's modes are its config option of category `mode`), config
//! options are in v2's shape.

use super::updates::config_options;
use crate::schema::{self, v2 as t};

/// An answer of the runtime's handlers (a v1 type), and the v2 answer a connection that
/// negotiated v2 gets instead (`router::routes::answer`).
pub(crate) trait Answer: serde::Serialize {
    /// The schema crate's v2 type of the answer.
    type V2: serde::Serialize;

    /// The answer as v2 writes it.
    fn into_v2(self) -> Self::V2;
}

/// No answer (the handler answers an error).
impl Answer for () {
    type V2 = ();
    fn into_v2(self) {}
}

/// An extension method's answer: the agent's own JSON, the same in both versions.
impl Answer for serde_json::Value {
    type V2 = Self;
    fn into_v2(self) -> Self {
        self
    }
}

/// Config options of a v1 answer (none: none).
fn options(options: Option<Vec<schema::SessionConfigOption>>) -> Vec<t::SessionConfigOption> {
    options.as_deref().map(config_options).unwrap_or_default()
}

/// `session/new`.
impl Answer for schema::NewSessionResponse {
    type V2 = t::NewSessionResponse;
    fn into_v2(self) -> Self::V2 {
        t::NewSessionResponse::new(self.session_id.0)
            .config_options(options(self.config_options))
            .meta(self.meta)
    }
}

/// `session/resume` without a replay.
impl Answer for schema::ResumeSessionResponse {
    type V2 = t::ResumeSessionResponse;
    fn into_v2(self) -> Self::V2 {
        t::ResumeSessionResponse::new()
            .config_options(options(self.config_options))
            .meta(self.meta)
    }
}

/// `session/resume` with a replay (v1's `session/load`, which the runtime answers for it).
impl Answer for schema::LoadSessionResponse {
    type V2 = t::ResumeSessionResponse;
    fn into_v2(self) -> Self::V2 {
        t::ResumeSessionResponse::new()
            .config_options(options(self.config_options))
            .meta(self.meta)
    }
}

/// `session/set_config_option`.
impl Answer for schema::SetSessionConfigOptionResponse {
    type V2 = t::SetSessionConfigOptionResponse;
    fn into_v2(self) -> Self::V2 {
        t::SetSessionConfigOptionResponse::new(config_options(&self.config_options)).meta(self.meta)
    }
}

/// `session/set_mode` is v1's only (a v2 session's mode is a config option): no v2 connection
/// routes it, and its answer would be the same empty object.
impl Answer for schema::SetSessionModeResponse {
    type V2 = Self;
    fn into_v2(self) -> Self {
        self
    }
}

/// `session/list`.
impl Answer for schema::ListSessionsResponse {
    type V2 = t::ListSessionsResponse;
    fn into_v2(self) -> Self::V2 {
        let sessions = self
            .sessions
            .into_iter()
            .map(|session| {
                t::SessionInfo::new(session.session_id.0, session.cwd)
                    .additional_directories(session.additional_directories)
                    .title(session.title)
                    .updated_at(session.updated_at)
                    .meta(session.meta)
            })
            .collect();
        t::ListSessionsResponse::new(sessions)
            .next_cursor(self.next_cursor.map(t::SessionListCursor::from))
            .meta(self.meta)
    }
}

/// `session/close`.
impl Answer for schema::CloseSessionResponse {
    type V2 = t::CloseSessionResponse;
    fn into_v2(self) -> Self::V2 {
        t::CloseSessionResponse::new().meta(self.meta)
    }
}

/// `session/delete`.
impl Answer for schema::DeleteSessionResponse {
    type V2 = t::DeleteSessionResponse;
    fn into_v2(self) -> Self::V2 {
        t::DeleteSessionResponse::new().meta(self.meta)
    }
}

/// `auth/login` (v1's `authenticate`).
impl Answer for schema::AuthenticateResponse {
    type V2 = t::LoginAuthResponse;
    fn into_v2(self) -> Self::V2 {
        t::LoginAuthResponse::new().meta(self.meta)
    }
}

/// `auth/logout`.
impl Answer for schema::LogoutResponse {
    type V2 = t::LogoutAuthResponse;
    fn into_v2(self) -> Self::V2 {
        t::LogoutAuthResponse::new().meta(self.meta)
    }
}
