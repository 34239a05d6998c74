//! The schema crate's Unstable session methods from the client's side, each behind the
//! feature that compiles it into the runtime: `session/fork` ([`TestSession::fork`],
//! [`TestClient::fork_session`]), `session/status`, `session/set_title`, `session/archive` /
//! `session/unarchive` (and `session/list`'s `archived` filter) and `session/options`. Each
//! sends the request and returns the agent's answer (its `result`), or the error it answered.

#![cfg_attr(
    not(any(
        feature = "unstable-session-fork",
        feature = "unstable-session-status",
        feature = "unstable-session-set-title",
        feature = "unstable-session-archive",
        feature = "unstable-session-options"
    )),
    allow(unused_imports)
)]

use serde_json::{Value, json};

use super::{TestClient, TestSession};
use crate::Result;
use crate::protocol::methods;
use crate::schema::SessionId;

impl TestClient {
    /// Forks stored session `id` (`session/fork`) in the configured cwd (and additional
    /// directories): the new session, ready for prompts (its history is the parent's).
    #[cfg(feature = "unstable-session-fork")]
    pub async fn fork_session(&self, id: &SessionId) -> Result<TestSession<'_>> {
        let params = self.opening(json!({"sessionId": id, "mcpServers": []}));
        let answer = self.request(methods::SESSION_FORK, params).await?;
        let child: SessionId = serde_json::from_value(answer["sessionId"].clone())?;
        Ok(self.opened(child, answer))
    }

    /// `session/status` of session `id`: the answer (`status`: `open` or `saved`; on v2 also
    /// `state`), or `-32002` for a session the agent does not know.
    #[cfg(feature = "unstable-session-status")]
    pub async fn session_status(&self, id: &SessionId) -> Result<Value> {
        self.request(methods::SESSION_STATUS, json!({"sessionId": id}))
            .await
    }

    /// Retitles session `id` (`session/set_title`): the answer, whose `title` is the one the
    /// agent stored.
    #[cfg(feature = "unstable-session-set-title")]
    pub async fn set_session_title(&self, id: &SessionId, title: &str) -> Result<Value> {
        self.request(
            methods::SESSION_SET_TITLE,
            json!({"sessionId": id, "title": title}),
        )
        .await
    }

    /// Archives session `id` (`session/archive`): hidden from `session/list` by default.
    #[cfg(feature = "unstable-session-archive")]
    pub async fn archive_session(&self, id: &SessionId) -> Result<Value> {
        self.request(methods::SESSION_ARCHIVE, json!({"sessionId": id}))
            .await
    }

    /// Unarchives session `id` (`session/unarchive`).
    #[cfg(feature = "unstable-session-archive")]
    pub async fn unarchive_session(&self, id: &SessionId) -> Result<Value> {
        self.request(methods::SESSION_UNARCHIVE, json!({"sessionId": id}))
            .await
    }

    /// One page of `session/list` with its `archived` filter (`"exclude"`, `"include"`,
    /// `"only"`, or anything else to see it refused).
    #[cfg(feature = "unstable-session-archive")]
    pub async fn list_sessions_archived(&self, archived: &str) -> Result<Value> {
        self.request(methods::SESSION_LIST, json!({"archived": archived}))
            .await
    }

    /// `session/options` in the configured cwd: the modes and config options a new session
    /// would start with, or (with `session`) the ones that stored session would be loaded
    /// with.
    #[cfg(feature = "unstable-session-options")]
    pub async fn session_options(&self, session: Option<&SessionId>) -> Result<Value> {
        let mut params = self.opening(json!({}));
        if let Some(session) = session {
            params["sessionId"] = json!(session);
        }
        self.request(methods::SESSION_OPTIONS, params).await
    }
}

impl<'a> TestSession<'a> {
    /// Forks this session (`session/fork`, see [`TestClient::fork_session`]).
    #[cfg(feature = "unstable-session-fork")]
    pub async fn fork(&self) -> Result<TestSession<'a>> {
        self.client.fork_session(&self.id).await
    }
}
