//! [`TestSession`]: one session of a [`TestClient`](super::TestClient): prompt turns (waited
//! for and summed up as a [`Turn`], or started and followed frame by frame), cancellation,
//! and waiting for its updates.

use serde_json::{Value, json};

use super::TestClient;
use super::trace::{Direction, Turn};
use crate::schema::{SessionId, SessionUpdate};
use crate::{Error, Result};

/// A session of a [`TestClient`].
#[derive(Debug)]
pub struct TestSession<'a> {
    pub(super) client: &'a TestClient,
    pub(super) id: SessionId,
    pub(super) answer: Value,
}

impl TestSession<'_> {
    /// The session's id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// The agent's answer to `session/new` (modes, config options…).
    pub fn new_session_response(&self) -> &Value {
        &self.answer
    }

    /// Sends a text prompt and waits for the turn to end.
    pub async fn prompt(&self, text: &str) -> Result<Turn> {
        self.prompt_blocks(json!([{"type": "text", "text": text}]))
            .await
    }

    /// Sends a text prompt without waiting for the turn, and returns the request's id: follow
    /// the turn with [`TestClient::next_frame`] (its answer is among the frames) or wait for
    /// the answer with [`TestClient::wait_for_response`].
    pub fn start_prompt(&self, text: &str) -> Value {
        self.client.send_request(
            "session/prompt",
            json!({"sessionId": self.id, "prompt": [{"type": "text", "text": text}]}),
        )
    }

    /// Sends a prompt made of raw content blocks and waits for the turn to end.
    pub async fn prompt_blocks(&self, blocks: Value) -> Result<Turn> {
        let wire = &self.client.wire;
        let start = wire.len();
        let (answer, end) = wire
            .request(
                "session/prompt",
                json!({"sessionId": self.id, "prompt": blocks}),
            )
            .await?;
        let frames = wire.frames_since(start);
        let updates = frames
            .iter()
            .enumerate()
            .filter(|(i, f)| start + i < end && f.direction == Direction::FromAgent)
            .filter_map(|(_, f)| f.session_update())
            .filter(|n| n.session_id == self.id)
            .map(|n| n.update)
            .collect();
        Ok(Turn {
            session: self.id.clone(),
            answer,
            updates,
            frames,
        })
    }

    /// Sends `session/cancel` for this session now.
    pub fn cancel(&self) {
        self.client
            .notify("session/cancel", json!({"sessionId": self.id}));
    }

    /// Sends `session/cancel` as soon as the agent sends an update matching `when` (the cancel
    /// is written before the client answers any request the agent sends after that update).
    pub fn cancel_when(&self, when: impl Fn(&SessionUpdate) -> bool + Send + 'static) {
        self.client
            .wire
            .cancel_when(self.id.clone(), Box::new(when));
    }

    /// Waits until the agent sends an update of this session for which `pred` holds.
    pub async fn wait_for_update(
        &self,
        what: &str,
        pred: impl Fn(&SessionUpdate) -> bool,
    ) -> Result<SessionUpdate> {
        let frame = self
            .client
            .wait_for(what, |f| {
                f.session_update()
                    .is_some_and(|n| n.session_id == self.id && pred(&n.update))
            })
            .await?;
        frame
            .session_update()
            .map(|n| n.update)
            .ok_or_else(|| Error::msg("the update vanished"))
    }

    /// Sets the session's mode (`session/set_mode`).
    pub async fn set_mode(&self, mode: &str) -> Result<Value> {
        self.client
            .request(
                "session/set_mode",
                json!({"sessionId": self.id, "modeId": mode}),
            )
            .await
    }

    /// Closes the session (`session/close`): its running turn is cancelled and the agent
    /// forgets it.
    pub async fn close(&self) -> Result<Value> {
        self.client
            .request("session/close", json!({"sessionId": self.id}))
            .await
    }
}
