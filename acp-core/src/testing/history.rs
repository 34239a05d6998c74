//! The session history methods from the client's side: `session/load` (with the updates it
//! replayed), `session/resume`, `session/list`, `session/delete`. To restart an agent on the
//! same store, serve it with [`TestClientBuilder::serve`](super::TestClientBuilder::serve)
//! and a store shared with the next client ([`Server::shared_store`](crate::Server::shared_store)).

use serde_json::{Value, json};

use super::{Direction, TestClient, TestSession};
use crate::protocol::methods;
use crate::schema::{SessionId, SessionUpdate};
use crate::{Error, Result};

/// A session reopened with [`TestClient::load_session`]: the handle, and what was replayed.
#[derive(Debug)]
pub struct Loaded<'a> {
    /// The session, ready for prompts.
    pub session: TestSession<'a>,
    /// The updates the agent sent for the session before answering, in order.
    pub replayed: Vec<SessionUpdate>,
}

impl Loaded<'_> {
    /// The concatenated text of the agent's message chunks in the replay (the whole
    /// conversation's answers, as [`Turn::text`](super::Turn::text) is one turn's).
    pub fn text(&self) -> String {
        super::trace::message_text(&self.replayed)
    }
}

impl TestClient {
    /// Loads a stored session (`session/load`) in the configured cwd (and additional
    /// directories), collecting the updates
    /// the agent replays before its answer.
    ///
    /// On protocol v2, which has no `session/load`, this is `session/resume` with
    /// `replayFrom` the start of the conversation (v2's way to replay it).
    pub async fn load_session(&self, id: &SessionId) -> Result<Loaded<'_>> {
        let start = self.transcript().len();
        let mut params = self.opening(json!({"sessionId": id, "mcpServers": []}));
        let method = if self.wire.is_v2() {
            params["replayFrom"] = json!({"type": "start"});
            methods::SESSION_RESUME
        } else {
            methods::SESSION_LOAD
        };
        let (answer, at) = self.wire.request(method, params).await?;
        let answer = answer?;
        let replayed = self.transcript()[start..at]
            .iter()
            .filter(|f| f.direction == Direction::FromAgent)
            .filter_map(|f| f.session_update())
            .filter(|n| &n.session_id == id)
            .map(|n| n.update)
            .collect();
        Ok(Loaded {
            session: self.opened(id.clone(), answer),
            replayed,
        })
    }

    /// Resumes a stored session (`session/resume`) in the configured cwd (and additional
    /// directories): nothing is
    /// replayed.
    pub async fn resume_session(&self, id: &SessionId) -> Result<TestSession<'_>> {
        let answer = self
            .request(
                methods::SESSION_RESUME,
                self.opening(json!({"sessionId": id, "mcpServers": []})),
            )
            .await?;
        Ok(self.opened(id.clone(), answer))
    }

    /// One page of `session/list` (optionally only sessions in `cwd`, from `cursor`): the
    /// answer's `sessions` and `nextCursor`.
    pub async fn list_sessions(&self, cwd: Option<&str>, cursor: Option<&str>) -> Result<Value> {
        let mut params = json!({});
        if let Some(cwd) = cwd {
            params["cwd"] = json!(cwd);
        }
        if let Some(cursor) = cursor {
            params["cursor"] = json!(cursor);
        }
        self.request(methods::SESSION_LIST, params).await
    }

    /// Every session `session/list` returns, following the cursors.
    pub async fn all_sessions(&self, cwd: Option<&str>) -> Result<Vec<Value>> {
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = self.list_sessions(cwd, cursor.as_deref()).await?;
            let sessions = page["sessions"]
                .as_array()
                .ok_or_else(|| Error::msg(format!("no `sessions` in {page}")))?;
            all.extend(sessions.iter().cloned());
            match page["nextCursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return Ok(all),
            }
        }
    }

    /// Deletes a session's history (`session/delete`).
    pub async fn delete_session(&self, id: &SessionId) -> Result<Value> {
        self.request(methods::SESSION_DELETE, json!({"sessionId": id}))
            .await
    }

    /// A handle for session `id`, opened by `answer`.
    pub(super) fn opened(&self, id: SessionId, answer: Value) -> TestSession<'_> {
        TestSession {
            client: self,
            id,
            answer,
        }
    }
}
