//! Subagents: a child session that a turn starts and drives ([`Session::subagent`]), with
//! its own updates, tool calls, permission requests and usage, announced to the client on the
//! parent (`subagent_update`) and shown inside the parent's tool call.
//!
//! A client that advertised `subagents` (every v2 client) sees the child as a session of its
//! own: its updates on its id, its work state on the parent's `subagent_update` (and, on v2,
//! its own `state_update`s), the instructions it was given as `session_message`s, and a
//! `session` reference in the parent's tool call. Any other client is never sent a frame that
//! names the child: the child's messages and tool calls show as text inside the parent's tool
//! call, its permission requests are asked about that call, and its requests to the client
//! are made for the parent session. Either way the child is recorded in the session store
//! (listed, and loaded with the parent's replay or on its own).

use std::future::Future;
use std::sync::{Arc, Mutex};

use futures_util::FutureExt;

use super::state::SessionState;
use super::tool_call::{CallRef, Embed};
use super::{Session, registry};
use crate::peer::Frame;
use crate::schema::{
    ContentBlock, ErrorStopReason, IdleStateUpdate, IdleStopReason, MessageId,
    RequiresActionStateUpdate, RunningStateUpdate, SessionCancelCapabilities, SessionId,
    SessionMessage, SessionReference, SessionUpdate, StateUpdate, StopReason,
    SubagentSessionCapabilities, SubagentUpdate, ToolCallContent, ToolKind,
};
use crate::store::StoredSession;
use crate::sync::lock;
use crate::turn::Turn;
use crate::{Error, Result};

/// What a subagent is, for [`Session::subagent`]: the title and description the client shows
/// for it, and the instructions its parent gives it.
///
/// ```
/// let investigator = acp_core::Subagent::new("Test investigator")
///     .description("Finds why the integration tests fail")
///     .instructions("Run the tests and find the first failure's cause.");
/// ```
#[derive(Debug, Clone)]
pub struct Subagent {
    title: String,
    description: Option<String>,
    instructions: Vec<ContentBlock>,
}

impl Subagent {
    /// A subagent shown as `title`.
    pub fn new(title: impl Into<String>) -> Self {
        Subagent {
            title: title.into(),
            description: None,
            instructions: Vec::new(),
        }
    }

    /// What the subagent is for, shown by the client.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The instructions the parent gives the subagent (a block of them; call again for more),
    /// shown as the message the parent sent it (`session_message`, to a client that shows
    /// subagents). Giving them to the work itself (a model's prompt, say) is the work's.
    #[must_use]
    pub fn instructions(mut self, content: impl Into<ContentBlock>) -> Self {
        self.instructions.push(content.into());
        self
    }
}

/// A child session's tie to its parent.
#[derive(Debug)]
pub(crate) struct Parent {
    /// The parent's handle, in the turn that started the child.
    pub session: Session,
    /// Where the child is shown to a client that does not show subagents: the nearest call
    /// of a session the client knows, and the text it shows there. `None` when the client
    /// shows subagents.
    pub hidden: Option<Hidden>,
}

/// Where a child the client is not shown lives in what it is shown.
#[derive(Debug, Clone)]
pub(crate) struct Hidden {
    /// The session the client knows (the root of the children's tree).
    pub visible: Session,
    /// Its tool call the children's work shows in.
    pub call: CallRef,
    /// The text shown there.
    pub view: Arc<ChildView>,
}

/// How a child shows in its parent's tool call.
#[derive(Debug)]
pub(crate) struct ChildView {
    id: SessionId,
    /// The client shows subagents: the call refers to the child's session.
    shown: bool,
    /// Otherwise, the text of the child's work (its latest part, if long).
    transcript: Mutex<String>,
}

/// How much of a hidden child's work its parent's tool call shows: the latest 16 KiB, so
/// that every update of the call stays small whatever the child does.
const TRANSCRIPT_TAIL: usize = 16 << 10;

impl ChildView {
    /// The content it stands for in the parent's call now.
    pub fn render(&self) -> ToolCallContent {
        if self.shown {
            return ToolCallContent::Session(SessionReference::new(self.id.clone()));
        }
        ContentBlock::from(lock(&self.transcript).clone()).into()
    }

    /// Takes in the child's `update`; returns whether the call should be shown anew (at a
    /// line's end, a tool call, not at every streamed chunk).
    fn absorb(&self, update: &SessionUpdate) -> bool {
        let mut text = lock(&self.transcript);
        let refresh = match update {
            SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
                ContentBlock::Text(t) => {
                    text.push_str(&t.text);
                    t.text.contains('\n')
                }
                _ => false,
            },
            SessionUpdate::ToolCall(call) => {
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str("▸ ");
                text.push_str(&call.title);
                text.push('\n');
                true
            }
            _ => false,
        };
        if text.len() > TRANSCRIPT_TAIL {
            let mut cut = text.len() - TRANSCRIPT_TAIL;
            while !text.is_char_boundary(cut) {
                cut += 1;
            }
            text.replace_range(..cut, "…");
        }
        refresh
    }
}

impl Session {
    /// Runs `work` as a subagent: a child session of this one, which `work` drives through
    /// the child's handle as a turn drives its session (messages, thoughts, plans, tool calls
    /// and `#[acp::tool]`s by name, permission requests, a model loop: `Model::run` on the
    /// child). Returns what `work` returns.
    ///
    /// - The child runs inside this session's running tool call (an `#[acp::tool]` that
    ///   delegates), or inside a tool call of its own titled by the subagent.
    /// - Cancelling this turn cancels the child; a client that shows subagents may also
    ///   cancel the child alone (`session/cancel` on its id). A cancelled child's work sees it
    ///   as any turn does ([`Session::cancelled`]), and `subagent` then returns
    ///   [`Error::Cancelled`].
    /// - The child's failure (an error or a panic of `work`) is returned here: the failure of
    ///   the tool call it runs in, not of this turn.
    /// - The child's token usage is added to this turn's.
    ///
    /// To a client that advertised `subagents` (every v2 client) the child is announced
    /// (`subagent_update`: title, description, `running`, `cancel` allowed) before any of its
    /// traffic, its updates and requests carry its own session id, the parent's tool call
    /// refers to it, and its end is reported (`idle` with its stop reason, or `error`). Any
    /// other client is never told its id: its messages and tool calls show as text in the
    /// parent's tool call, and its permission requests are asked about that call.
    ///
    /// ```no_run
    /// # async fn turn(cx: &acp_core::Session) -> acp_core::Result<()> {
    /// use acp_core::Subagent;
    /// let findings = cx
    ///     .subagent(Subagent::new("Investigator").instructions("Find the bug."), |child| async move {
    ///         child.message("Reading the logs…\n").await?;
    ///         Ok("the cache is never invalidated".to_owned())
    ///     })
    ///     .await?;
    /// cx.message(format!("The subagent found: {findings}")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn subagent<T, F, Fut>(&self, subagent: Subagent, work: F) -> Result<T>
    where
        F: FnOnce(Session) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        if self.running_call().is_some() {
            return self.run_subagent(subagent, work).await;
        }
        // No tool call to show it in: one of its own.
        let call = self
            .tool_call(subagent.title.clone())
            .kind(ToolKind::Think)
            .start()
            .await?;
        call.in_progress().await?;
        let outcome = super::in_tool_call(&call, self.run_subagent(subagent, work)).await;
        match &outcome {
            Ok(_) => call.complete(Vec::new()).await?,
            Err(Error::Cancelled) => call.fail("cancelled").await?,
            Err(e) => call.fail(e).await?,
        }
        outcome
    }

    async fn run_subagent<T, F, Fut>(&self, subagent: Subagent, work: F) -> Result<T>
    where
        F: FnOnce(Session) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        self.check_usable()?;
        let Some(call) = self.running_call() else {
            return Err(Error::msg("a subagent runs inside a tool call"));
        };
        let conn = self.state.conn.clone();
        let id = registry::fresh_id();
        let shown = conn.client_capabilities().subagents.is_some();
        let view = Arc::new(ChildView {
            id: id.clone(),
            shown,
            transcript: Mutex::default(),
        });
        let hidden = match self.state.parent.as_ref().and_then(|p| p.hidden.clone()) {
            // A child of a hidden child shows where its parent shows.
            Some(hidden) => Some(hidden),
            None if shown => None,
            None => Some(Hidden {
                visible: self.clone(),
                call: call.clone(),
                view: view.clone(),
            }),
        };
        let parent = Parent {
            session: self.clone(),
            hidden,
        };
        let state = SessionState::child(&conn, id.clone(), self.state.roots.clone(), parent);
        let cancel = match &self.turn {
            Some(turn) => turn.cancel.clone(),
            None => conn.peer().turns.clone(),
        };
        let turn = Arc::new(Turn::new(&cancel));
        state.start_turn(&turn);
        let child = Session::new(state.clone(), Some(turn.clone()));
        save_child(&child, &subagent.title).await;
        conn.sessions().insert(state.clone());

        // Announced before any of its traffic, then shown in the parent's call.
        let mut announced = SubagentUpdate::new(id.clone()).title(subagent.title.clone());
        if let Some(description) = &subagent.description {
            announced = announced.description(description.clone());
        }
        let announced = announced
            .capabilities(
                SubagentSessionCapabilities::new().cancel(SessionCancelCapabilities::new()),
            )
            .state(StateUpdate::Running(RunningStateUpdate::new()));
        let started = async {
            self.update(SessionUpdate::SubagentUpdate(announced))
                .await?;
            child.report_state(crate::protocol::State::Running).await;
            if !subagent.instructions.is_empty() {
                self.send_instructions(&child, &subagent.instructions)
                    .await?;
            }
            call.embed(self, Embed::Subagent(view.clone())).await
        };
        let outcome = match started.await {
            Ok(()) => std::panic::AssertUnwindSafe(work(child.clone()))
                .catch_unwind()
                .await
                .unwrap_or_else(|panic| Err(Error::msg(panic_message(&*panic)))),
            Err(e) => Err(e),
        };
        let outcome = if turn.cancel.is_cancelled() {
            outcome.and(Err(Error::Cancelled))
        } else {
            outcome
        };
        self.end_subagent(&child, &turn, &outcome, &call).await;
        outcome
    }

    /// The parent's instructions to `child`, as the two views of one session message: sent,
    /// in this session's transcript; received, in the child's.
    async fn send_instructions(&self, child: &Session, content: &[ContentBlock]) -> Result<()> {
        let (sent, received) = (
            self.state.messages.user_message(),
            child.state.messages.user_message(),
        );
        let view = |id: &MessageId| {
            SessionMessage::new(id.clone())
                .sender_session_id(self.id().clone())
                .recipient_session_id(child.id().clone())
                .content(content.to_vec())
        };
        let sent_view = view(&sent).recipient_message_id(received.clone());
        let received_view = view(&received).sender_message_id(sent);
        self.update(SessionUpdate::SessionMessage(sent_view))
            .await?;
        child
            .update(SessionUpdate::SessionMessage(received_view))
            .await
    }

    /// The end of `child`'s work: its open tool calls failed, its end told (the parent's
    /// `subagent_update`, v2's `idle` of the child), its usage added to this turn's, its
    /// call's content brought up to date, and the child no longer live.
    async fn end_subagent<T>(
        &self,
        child: &Session,
        turn: &Arc<Turn>,
        outcome: &Result<T>,
        call: &CallRef,
    ) {
        for open in turn.take_open() {
            let update = crate::protocol::account::tool_call_failed(&open, "the subagent ended");
            let _ = child.update(update).await;
        }
        let usage = turn.take_usage();
        let stop = match outcome {
            Ok(_) => IdleStopReason::EndTurn,
            Err(Error::Cancelled) => IdleStopReason::Cancelled,
            Err(e) => IdleStopReason::Error(ErrorStopReason::new().error(e.to_rpc())),
        };
        let idle = IdleStateUpdate::new()
            .stop_reason(stop)
            .usage(usage.clone());
        let ended = SubagentUpdate::new(child.id().clone()).state(StateUpdate::Idle(idle));
        let _ = self.update(SessionUpdate::SubagentUpdate(ended)).await;
        let conn = &self.state.conn;
        let outcome = match outcome {
            Ok(_) => Ok(StopReason::EndTurn),
            Err(Error::Cancelled) => Err(Error::Cancelled),
            Err(e) => Err(Error::msg(e.to_string())),
        };
        if let Some(bytes) = conn.codec().child_ended(child.id(), outcome, usage.clone()) {
            let frame = Frame::new(bytes, Some(turn.sequence.clone())).of_session(child.id());
            let _ = conn.peer().send(frame).await;
        }
        if let (Some(usage), Some(parent_turn)) = (usage, &self.turn) {
            parent_turn.add_usage(usage);
        }
        turn.close();
        if let Some(hidden) = &child.state.parent.as_ref().and_then(|p| p.hidden.clone()) {
            let _ = hidden.call.refresh(&hidden.visible).await;
        } else {
            let _ = call.refresh(self).await;
        }
        conn.sessions().remove(child.id());
        child.state.end_turn();
    }

    /// Reports a child's foreground state on its parent's `subagent_update` (v1's only way,
    /// v2's mirror of the child's own `state_update`).
    pub(crate) async fn mirror_state(&self, state: crate::protocol::State) {
        let Some(parent) = &self.state.parent else {
            return;
        };
        let state = match state {
            crate::protocol::State::Running => StateUpdate::Running(RunningStateUpdate::new()),
            crate::protocol::State::RequiresAction => {
                StateUpdate::RequiresAction(RequiresActionStateUpdate::new())
            }
        };
        let update = SubagentUpdate::new(self.id().clone()).state(state);
        let _ = parent
            .session
            .update(SessionUpdate::SubagentUpdate(update))
            .await;
    }

    /// For a child the client is not shown: where it shows instead.
    pub(crate) fn hidden(&self) -> Option<&Hidden> {
        self.state.parent.as_ref()?.hidden.as_ref()
    }

    /// Sends `update` of a child the client is not shown: recorded under the child's id,
    /// sent as nothing, and shown as text in the call it lives in.
    pub(crate) async fn update_hidden(
        &self,
        hidden: &Hidden,
        update: &SessionUpdate,
    ) -> Result<()> {
        let (_, record) = self.state.conn.update_frame(&self.state.id, update)?;
        if record.is_some() {
            let frame = Frame::new(Vec::new(), None).recorded(record);
            self.state.conn.peer().send(frame).await?;
        }
        if hidden.view.absorb(update) {
            // Boxed: the refresh is an update of the visible session (no recursion at run
            // time, but the future's type would be).
            Box::pin(hidden.call.refresh(&hidden.visible)).await?;
        }
        Ok(())
    }

    /// The session the client knows this one's requests by: its own, or for a child the
    /// client is not shown, the session it shows in.
    pub(crate) fn client_session(&self) -> &Session {
        match self.hidden() {
            Some(hidden) => &hidden.visible,
            None => self,
        }
    }
}

/// Saves a new child in the store: listed, and loadable, as the user's other sessions.
async fn save_child(child: &Session, title: &str) {
    let conn = &child.state.conn;
    let Some(store) = conn.peer().journal.store() else {
        return;
    };
    let mut session = StoredSession::new(child.id().clone(), child.cwd());
    session.additional_directories = child.additional_directories().to_vec();
    session.title = Some(title.to_owned());
    session.owner = conn.user().map(str::to_owned);
    if let Err(e) = store.save_session(&session).await {
        tracing::warn!(session = %child.id(), "could not save the subagent's session: {e}");
    }
}

/// The message of a panic's payload.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned());
    format!("the subagent panicked: {what}")
}
