//! [`TestSession`]: one session of a [`TestClient`](super::TestClient): prompt turns (waited
//! for, or started and followed frame by frame, and summed up as a [`Turn`] either way),
//! cancellation, and waiting for its updates.

use serde_json::{Value, json};

use super::TestClient;
use super::trace::{Direction, Turn};
use super::view::{Builder, SessionView, view};
use crate::protocol::methods;
use crate::schema::{SessionId, SessionUpdate};
use crate::sync::lock;
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
    /// the turn with [`TestClient::next_frame`] or [`TestClient::next_request`] (to answer a
    /// [held](super::TestClientBuilder::hold) request), then sum it up with
    /// [`finish`](Self::finish), which waits for the answer and returns the same [`Turn`] as
    /// [`prompt`](Self::prompt).
    pub fn start_prompt(&self, text: &str) -> Value {
        self.start_prompt_blocks(json!([{"type": "text", "text": text}]))
    }

    /// [`start_prompt`](Self::start_prompt) with a prompt made of raw content blocks.
    pub fn start_prompt_blocks(&self, blocks: Value) -> Value {
        self.client.send_request(
            methods::SESSION_PROMPT,
            json!({"sessionId": self.id, "prompt": blocks}),
        )
    }

    /// Waits for the end of the turn started with [`start_prompt`](Self::start_prompt) (`id`
    /// is what it returned) and sums it up: the same [`Turn`] as [`prompt`](Self::prompt)
    /// returns, with every update of the turn, whether or not the test already read them with
    /// [`TestClient::next_frame`]. The answer is taken: `next_frame` does not return it after
    /// this (unless it already did).
    ///
    /// ```
    /// use acp_core::schema::{PermissionOption, PermissionOptionKind, StopReason};
    /// use acp_core::testing::TestClient;
    /// use acp_core::{Agent, Prompt, Result, Session};
    ///
    /// struct Careful;
    /// impl Agent for Careful {
    ///     async fn prompt(&self, cx: &Session, _prompt: Prompt) -> Result<StopReason> {
    ///         let allow = PermissionOption::new("yes", "Yes", PermissionOptionKind::AllowOnce);
    ///         let call = cx.tool_call("Delete the build").start().await?;
    ///         call.request_permission(vec![allow]).await?;
    ///         call.complete(vec![]).await?;
    ///         cx.message("deleted").await?;
    ///         Ok(StopReason::EndTurn)
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<()> {
    /// let client = TestClient::builder()
    ///     .hold("session/request_permission")
    ///     .connect(Careful)
    ///     .await?;
    /// let session = client.new_session().await?;
    /// let id = session.start_prompt("clean up");
    /// client.next_request("session/request_permission").await?.select("yes");
    /// let turn = session.finish(&id).await?;
    /// assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    /// assert_eq!(turn.text(), "deleted");
    /// assert_eq!(turn.permission_requests().len(), 1);
    /// # Ok(()) }
    /// ```
    pub async fn finish(&self, id: &Value) -> Result<Turn> {
        let (answer, start, end) = self.client.wire.answer_to(id).await?;
        let (answer, end) = self.ended(answer, end).await?;
        Ok(self.turn(answer, start, end))
    }

    /// Sends a prompt made of raw content blocks and waits for the turn to end.
    pub async fn prompt_blocks(&self, blocks: Value) -> Result<Turn> {
        let wire = &self.client.wire;
        let start = wire.len();
        let (answer, end) = wire
            .request(
                methods::SESSION_PROMPT,
                json!({"sessionId": self.id, "prompt": blocks}),
            )
            .await?;
        let (answer, end) = self.ended(answer, end).await?;
        Ok(self.turn(answer, start, end))
    }

    /// How a turn whose `session/prompt` was answered `answer` (at transcript index `at`)
    /// ended, and where: on v1 that answer; on v2 (where the answer only says the prompt was
    /// accepted) the `idle` that ends the turn, read as v1's answer.
    async fn ended(&self, answer: Result<Value>, at: usize) -> Result<(Result<Value>, usize)> {
        #[cfg(feature = "v2")]
        if let (true, Ok(accepted)) = (self.client.wire.is_v2(), &answer) {
            let (idle, end) = self.client.wire.turn_idle_after(&self.id.0, at).await?;
            return Ok((
                super::v2::answer_of_idle(&idle, &accepted["messageId"]),
                end,
            ));
        }
        Ok((answer, at))
    }

    /// The turn whose prompt is at transcript index `start` (or later) and whose `answer` is
    /// at `end`.
    fn turn(&self, answer: Result<Value>, start: usize, end: usize) -> Turn {
        let frames = self.client.wire.frames_since(start);
        let updates = frames
            .iter()
            .enumerate()
            .filter(|(i, f)| start + i < end && f.direction == Direction::FromAgent)
            .filter_map(|(_, f)| f.session_update())
            .filter(|n| n.session_id == self.id)
            .map(|n| n.update)
            .collect();
        Turn {
            session: self.id.clone(),
            answer,
            updates,
            frames,
        }
    }

    /// Sends `session/cancel` for this session now.
    pub fn cancel(&self) {
        self.client
            .notify(methods::SESSION_CANCEL, json!({"sessionId": self.id}));
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

    /// Sets the session's mode (`session/set_mode`; on protocol v2, which has no such method,
    /// `session/set_config_option` on the mode's config option).
    pub async fn set_mode(&self, mode: &str) -> Result<Value> {
        if self.client.wire.is_v2() {
            let option = self.mode_option().ok_or_else(|| {
                Error::msg("the session has no config option of category `mode` to set")
            })?;
            return self.set_config_option(&option, mode).await;
        }
        self.client
            .request(
                methods::SESSION_SET_MODE,
                json!({"sessionId": self.id, "modeId": mode}),
            )
            .await
    }

    /// The id of the session's config option of category `mode`, if it has one.
    fn mode_option(&self) -> Option<String> {
        use crate::schema::SessionConfigOptionCategory;
        self.view()
            .config_options
            .iter()
            .find(|o| o.category == Some(SessionConfigOptionCategory::Mode))
            .map(|o| o.id.0.to_string())
    }

    /// Sets a config option (`session/set_config_option`) and returns the agent's answer (every
    /// option with its current value). A JSON boolean `value` is sent as a boolean option's
    /// value (`"type": "boolean"`), anything else as a value id.
    ///
    /// ```no_run
    /// # async fn demo(session: &acp_core::testing::TestSession<'_>) -> acp_core::Result<()> {
    /// session.set_config_option("tone", "cheerful").await?;
    /// session.set_config_option("brave_mode", true).await?;
    /// assert_eq!(session.view().config("tone"), Some("cheerful".into()));
    /// # Ok(()) }
    /// ```
    pub async fn set_config_option(&self, id: &str, value: impl Into<Value>) -> Result<Value> {
        let value = value.into();
        let params = match value {
            Value::Bool(on) => {
                json!({"sessionId": self.id, "configId": id, "type": "boolean", "value": on})
            }
            // v2 tags an id value with its type, as it does a boolean.
            other if self.client.wire.is_v2() => {
                json!({"sessionId": self.id, "configId": id, "type": "id", "value": other})
            }
            other => json!({"sessionId": self.id, "configId": id, "value": other}),
        };
        self.client
            .request(methods::SESSION_SET_CONFIG_OPTION, params)
            .await
    }

    /// Runs the slash command `/name input` (a prompt turn) and waits for the turn to end.
    pub async fn run_command(&self, name: &str, input: &str) -> Result<Turn> {
        let text = if input.is_empty() {
            format!("/{name}")
        } else {
            format!("/{name} {input}")
        };
        self.prompt(&text).await
    }

    /// What the client knows of the session after the frames so far: current mode, config
    /// options, slash commands, title, usage.
    pub fn view(&self) -> SessionView {
        view(&self.id, &self.client.transcript())
    }

    /// Waits until the session, as the client sees it, satisfies `pred` (e.g. a title set by
    /// a background task after the turn), and returns that view.
    pub async fn wait_for_view(
        &self,
        what: &str,
        pred: impl Fn(&SessionView) -> bool,
    ) -> Result<SessionView> {
        // Every frame is looked at once, in order: the view is built as they come.
        let builder = std::sync::Mutex::new(Builder::new(self.id.clone()));
        self.client
            .wire
            .wait_for(what, |frame| {
                let mut builder = lock(&builder);
                builder.feed(frame);
                pred(&builder.view)
            })
            .await?;
        let view = builder.into_inner().unwrap_or_else(|e| e.into_inner()).view;
        Ok(view)
    }

    /// Closes the session (`session/close`): its running turn is cancelled and the agent
    /// forgets it.
    pub async fn close(&self) -> Result<Value> {
        self.client
            .request(methods::SESSION_CLOSE, json!({"sessionId": self.id}))
            .await
    }
}
