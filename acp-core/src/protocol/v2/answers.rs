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
                let info = t::SessionInfo::new(session.session_id.0.clone(), session.cwd.clone())
                    .additional_directories(session.additional_directories.clone())
                    .title(session.title.clone())
                    .updated_at(session.updated_at.clone())
                    .meta(session.meta.clone());
                archived(info, &session)
            })
            .collect();
        t::ListSessionsResponse::new(sessions)
            .next_cursor(self.next_cursor.map(t::SessionListCursor::from))
            .meta(self.meta)
    }
}

/// `info` with `session`'s archived flag when `session/archive` is compiled in.
fn archived(info: t::SessionInfo, session: &schema::SessionInfo) -> t::SessionInfo {
    #[cfg(feature = "unstable-session-archive")]
    return info.archived(session.archived);
    #[cfg(not(feature = "unstable-session-archive"))]
    {
        let _ = session;
        info
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

/// `session/fork` (v1 only for now: no v2 connection routes it).
#[cfg(feature = "unstable-session-fork")]
impl Answer for schema::ForkSessionResponse {
    type V2 = t::ForkSessionResponse;
    fn into_v2(self) -> Self::V2 {
        t::ForkSessionResponse::new(self.session_id.0)
            .config_options(options(self.config_options))
            .meta(self.meta)
    }
}

/// `session/status` (its foreground state, which only v2 has, is added by its handler).
#[cfg(feature = "unstable-session-status")]
impl Answer for schema::SessionStatusResponse {
    type V2 = t::SessionStatusResponse;
    fn into_v2(self) -> Self::V2 {
        let status = match self.status {
            schema::SessionStatus::Open => t::SessionStatus::Open,
            schema::SessionStatus::Saved => t::SessionStatus::Saved,
            other => t::SessionStatus::Other(
                serde_json::to_value(&other)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
            ),
        };
        t::SessionStatusResponse::new(status).meta(self.meta)
    }
}

/// `session/set_title`.
#[cfg(feature = "unstable-session-set-title")]
impl Answer for schema::SetSessionTitleResponse {
    type V2 = t::SetSessionTitleResponse;
    fn into_v2(self) -> Self::V2 {
        t::SetSessionTitleResponse::new(self.title).meta(self.meta)
    }
}

/// `session/archive`.
#[cfg(feature = "unstable-session-archive")]
impl Answer for schema::ArchiveSessionResponse {
    type V2 = t::ArchiveSessionResponse;
    fn into_v2(self) -> Self::V2 {
        t::ArchiveSessionResponse::new().meta(self.meta)
    }
}

/// `session/unarchive`.
#[cfg(feature = "unstable-session-archive")]
impl Answer for schema::UnarchiveSessionResponse {
    type V2 = t::UnarchiveSessionResponse;
    fn into_v2(self) -> Self::V2 {
        t::UnarchiveSessionResponse::new().meta(self.meta)
    }
}

/// `session/options` (v1 only for now: no v2 connection routes it).
#[cfg(feature = "unstable-session-options")]
impl Answer for schema::SessionOptionsResponse {
    type V2 = t::SessionOptionsResponse;
    fn into_v2(self) -> Self::V2 {
        t::SessionOptionsResponse::new()
            .config_options(options(self.config_options))
            .meta(self.meta)
    }
}
