//! Sessions: the [`Session`] handle an agent talks to the client through (updates, the
//! client's file system and terminals, permission, cancellation, per-session state, tool
//! calls), what the runtime keeps per session and per connection, and the registry of a
//! connection's sessions.

mod client;
pub(crate) mod config;
pub(crate) mod detached;
mod elicit;
mod fs;
pub(crate) mod grant;
pub(crate) mod local;
mod messages;
mod persist;
pub(crate) mod registry;
mod report;
pub(crate) mod roots;
mod settings;
pub(crate) mod state;
mod subagent;
mod system_prompt;
mod terminal;
pub(crate) mod terminal_meta;
mod tool_call;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

pub use client::Client;
pub(crate) use client::Request;
pub use elicit::Elicited;
pub use fs::Fs;
pub(crate) use messages::user_chunk;
pub use persist::{Persist, PersistLog, Persisted};
pub use report::{Compaction, SESSION_PLAN};
pub(crate) use settings::list;
pub use settings::{Choice, ConfigKind, ConfigOption, ConfigSpec, ConfigValue, Modes, Settings};
pub(crate) use state::{Connection, DEFAULT_LEASE_TTL, Parts, SessionState};
pub use subagent::Subagent;
pub(crate) use system_prompt::check as check_system_prompt;
pub use terminal::{Terminal, Terminals};
pub(crate) use tool_call::adopting;
pub use tool_call::{ToolCallBuilder, ToolCallGuard, in_tool_call};

use crate::peer::{Frame, Journaled};
use crate::protocol::{self, account, methods};
use crate::schema::{
    self, AvailableCommand, AvailableCommandsUpdate, ClientCapabilities, ContentBlock,
    ContentChunk, McpServer, Meta, PermissionOption, PermissionOptionId, RequestPermissionOutcome,
    SessionId, SessionInfoUpdate, SessionUpdate, ToolCallUpdate, UsageUpdate,
};
use crate::sync::lock;
use crate::turn::Turn;
use crate::{Error, Result};
use agent_client_protocol_schema::MaybeUndefined;

/// The handle an agent receives for one session: cheap to clone, `Send + Sync`.
///
/// Inside a prompt turn it is tied to that turn: [`cancelled`](Session::cancelled) resolves
/// when the client cancels it, client calls fail with [`Error::Cancelled`] once it is
/// cancelled, and updates sent after the turn was answered fail with [`Error::TurnEnded`]
/// (the protocol forbids them).
///
/// ```no_run
/// # async fn turn(cx: &acp_core::Session) -> acp_core::Result<()> {
/// cx.thought("Looking at the workspace…").await?;
/// let readme = cx.fs().read_text_file(cx.cwd().join("README.md")).await?;
/// cx.message(format!("Your README has {} lines.", readme.lines().count())).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Session {
    pub(crate) state: Arc<SessionState>,
    pub(crate) turn: Option<Arc<Turn>>,
    /// The request being handled with this handle (`session/new`, a prompt…), if any.
    pub(crate) request: Option<Arc<Request>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.state.id)
            .field("cwd", &self.state.roots.cwd)
            .field("in_turn", &self.turn.is_some())
            .finish_non_exhaustive()
    }
}

impl Session {
    pub(crate) fn new(state: Arc<SessionState>, turn: Option<Arc<Turn>>) -> Self {
        Session {
            state,
            turn,
            request: None,
        }
    }

    /// The same handle, handling `request`.
    pub(crate) fn handling(mut self, request: Arc<Request>) -> Self {
        self.request = Some(request);
        self
    }

    /// A handle of this session that is not tied to the current prompt turn, for updates
    /// outside any turn: a title computed after the turn, progress of a background task,
    /// an agent-initiated mode switch.
    ///
    /// Its updates are sent whenever they are made (before, between or after turns: they are
    /// not ordered against a turn's answer), and recorded with the session like any other.
    /// It does not see the turn's cancellation. Once the session is closed (`session/close`,
    /// `session/delete`, reopened by `session/load`, or the connection ends) everything sent
    /// through it fails with [`Error::SessionClosed`]: keep it no longer than the work it
    /// serves.
    ///
    /// ```no_run
    /// # async fn turn(cx: &acp_core::Session) -> acp_core::Result<()> {
    /// let later = cx.detached();
    /// tokio::spawn(async move {
    ///     let title = "Refactoring the parser"; // e.g. asked of a model
    ///     let _ = later.title(title).await;
    /// });
    /// # Ok(()) }
    /// ```
    pub fn detached(&self) -> Session {
        Session::new(self.state.clone(), None)
    }

    /// The client this session belongs to: its `clientInfo`, and the agent's extension
    /// requests and notifications to it (cancelled with the turn, inside one).
    pub fn client(&self) -> Client {
        Client {
            conn: self.state.conn.clone(),
            request: None,
            cancel: self.turn.as_ref().map(|t| t.cancel.clone()),
        }
    }

    /// The `_meta` the client sent with the request this handle is handling (the prompt of
    /// a turn, `session/new`, `session/load`…), if any.
    pub fn request_meta(&self) -> Option<&Meta> {
        self.request.as_ref().and_then(|r| r.meta())
    }

    /// Sets the `_meta` of the answer to the request this handle is handling: the
    /// `session/prompt` answer inside a turn. Does nothing on a handle that handles no request
    /// (use [`SessionSetup::meta`](crate::SessionSetup::meta) for `session/new`).
    pub fn set_answer_meta(&self, meta: Meta) {
        if let Some(request) = &self.request {
            request.set_answer_meta(meta);
        }
    }

    /// Sets the session's title, shown by the client and by `session/list`
    /// (`session_info_update`).
    pub async fn title(&self, title: impl Into<String>) -> Result<()> {
        self.update(SessionUpdate::SessionInfoUpdate(
            SessionInfoUpdate::new().title(title.into()),
        ))
        .await
    }

    /// Offers the user prompts the agent predicts they will send next, most likely first
    /// (`prompt_suggestions_update`; an empty list withdraws the ones offered), and tells
    /// whether they were sent: only to a client that advertised
    /// `session.promptSuggestions` (else nothing is sent, `Ok(false)`). Suggestions are not
    /// part of the session's history: they are not recorded, and a reload does not replay
    /// them.
    ///
    /// Each suggestion is a prompt the client can send unchanged: at least one content block,
    /// `text` or `resource_link` (other blocks only where both the agent's prompt
    /// capabilities and the client's `promptSuggestions` allow them), never only blank text.
    /// A suggestion that breaks these rules is an [`Error::InvalidParams`] and nothing is
    /// sent.
    ///
    /// ```no_run
    /// # async fn turn(cx: &acp_core::Session) -> acp_core::Result<()> {
    /// use acp_core::schema::PromptSuggestion;
    /// let next = PromptSuggestion::new(vec!["Run the tests".into()]);
    /// if !cx.suggest(vec![next]).await? {
    ///     // The client shows no suggestions.
    /// }
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "unstable-prompt-suggestions")]
    #[cfg_attr(docsrs, doc(cfg(feature = "unstable-prompt-suggestions")))]
    pub async fn suggest(&self, suggestions: Vec<crate::schema::PromptSuggestion>) -> Result<bool> {
        for (i, suggestion) in suggestions.iter().enumerate() {
            check_suggestion(suggestion)
                .map_err(|why| Error::InvalidParams(format!("prompt suggestion {i} {why}")))?;
        }
        let Some(session) = &self.client_capabilities().session else {
            return Ok(false);
        };
        if session.prompt_suggestions.is_none() {
            return Ok(false);
        }
        if self.turn.is_none() && self.state.is_closed() {
            return Err(Error::SessionClosed);
        }
        let update = SessionUpdate::PromptSuggestionsUpdate(
            crate::schema::PromptSuggestionsUpdate::new(suggestions),
        );
        // Not recorded: suggestions are not part of the session's history.
        let encoded =
            self.state
                .conn
                .codec()
                .update(&self.state.id, &update, self.client_capabilities())?;
        if encoded.bytes.is_empty() {
            return Ok(false);
        }
        self.send_update(encoded.bytes, None).await?;
        Ok(true)
    }

    /// Reports how much of the model's context the session uses, and optionally what it cost
    /// so far (`usage_update`), for the client's context meter.
    ///
    /// ```no_run
    /// # async fn turn(cx: &acp_core::Session) -> acp_core::Result<()> {
    /// use acp_core::schema::{Cost, UsageUpdate};
    /// cx.usage(UsageUpdate::new(53_000, 200_000).cost(Cost::new(0.045, "USD"))).await?;
    /// # Ok(()) }
    /// ```
    pub async fn usage(&self, usage: UsageUpdate) -> Result<()> {
        self.update(SessionUpdate::UsageUpdate(usage)).await
    }

    /// Reports tokens the turn used (e.g. one model call's): added up over the turn and told
    /// to the client when the turn ends, as the `usage` of v1's answer to `session/prompt` and
    /// of v2's `idle` (both unstable: the end-turn token usage RFD). Outside a turn (a
    /// [`detached`](Session::detached) handle) it is not told anywhere.
    ///
    /// ```no_run
    /// # fn turn(cx: &acp_core::Session) {
    /// use acp_core::schema::Usage;
    /// cx.token_usage(Usage::new(1_250, 1_000, 250)); // total, input, output
    /// # }
    /// ```
    pub fn token_usage(&self, usage: crate::schema::Usage) {
        if let Some(turn) = &self.turn {
            turn.add_usage(usage);
        }
    }

    /// Starts a new message: the next [`message`](Session::message) (or
    /// [`thought`](Session::thought)) chunk gets a new `messageId`. Chunks are grouped into
    /// messages on their own (a run of chunks of one kind is one message); call this between
    /// two messages that follow each other directly.
    pub fn new_message(&self) {
        self.state.messages.end();
    }

    /// The slash commands the client was last told about (`available_commands_update`).
    pub fn commands(&self) -> Vec<AvailableCommand> {
        lock(&self.state.commands).clone()
    }

    /// Replaces the session's slash commands and tells the client
    /// (`available_commands_update`). A prompt starting with `/name` runs the agent's
    /// `#[acp::command]` method `name` only while `name` is among them; the others (commands
    /// without a method) reach `prompt` as text.
    pub async fn set_commands(
        &self,
        commands: impl IntoIterator<Item = AvailableCommand>,
    ) -> Result<()> {
        let commands: Vec<_> = commands.into_iter().collect();
        *lock(&self.state.commands) = commands.clone();
        self.update(SessionUpdate::AvailableCommandsUpdate(
            AvailableCommandsUpdate::new(commands),
        ))
        .await
    }

    /// The session's id.
    pub fn id(&self) -> &SessionId {
        &self.state.id
    }

    /// The working directory the client gave for this session: absolute (a relative or empty
    /// one is refused with `-32602` before the session exists) and normalized.
    pub fn cwd(&self) -> &Path {
        &self.state.roots.cwd
    }

    /// The other workspace roots the client gave for this session (`additionalDirectories`),
    /// absolute and normalized. With the cwd, they bound the paths [`Session::fs`] accepts.
    pub fn additional_directories(&self) -> &[PathBuf] {
        &self.state.roots.additional
    }

    /// The MCP servers the client asked the agent to connect to.
    pub fn mcp_servers(&self) -> &[McpServer] {
        &self.state.mcp_servers
    }

    /// What the client said it supports in `initialize`.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        self.state.conn.client_capabilities()
    }

    /// The shared state of this session's connection.
    pub(crate) fn connection(&self) -> &Arc<Connection> {
        &self.state.conn
    }

    /// Whether this handle belongs to a prompt turn that has been cancelled (or whose
    /// connection closed). Always `false` outside a turn.
    pub fn is_cancelled(&self) -> bool {
        self.turn.as_ref().is_some_and(|t| t.cancel.is_cancelled())
    }

    /// Resolves when the current turn is cancelled; never resolves outside a turn.
    ///
    /// ```no_run
    /// # async fn turn(cx: &acp_core::Session) -> acp_core::Result<acp_core::schema::StopReason> {
    /// tokio::select! {
    ///     _ = cx.cancelled() => Ok(acp_core::schema::StopReason::Cancelled),
    ///     _ = tokio::time::sleep(std::time::Duration::from_secs(5)) => Ok(acp_core::schema::StopReason::EndTurn),
    /// }
    /// # }
    /// ```
    pub async fn cancelled(&self) {
        match &self.turn {
            Some(turn) => turn.cancel.cancelled().await,
            None => std::future::pending().await,
        }
    }

    /// Fails with [`Error::Cancelled`] if the turn was cancelled: a checkpoint for loops.
    pub fn check_cancelled(&self) -> Result<()> {
        if self.is_cancelled() {
            Err(Error::Cancelled)
        } else {
            Ok(())
        }
    }

    /// Sends a chunk of the agent's answer (`agent_message_chunk`).
    pub async fn message(&self, content: impl Into<ContentBlock>) -> Result<()> {
        self.update(SessionUpdate::AgentMessageChunk(ContentChunk::new(
            content.into(),
        )))
        .await
    }

    /// Sends a chunk of the agent's reasoning (`agent_thought_chunk`).
    pub async fn thought(&self, content: impl Into<ContentBlock>) -> Result<()> {
        self.update(SessionUpdate::AgentThoughtChunk(ContentChunk::new(
            content.into(),
        )))
        .await
    }

    /// Sends any `session/update`.
    ///
    /// Updates of one session reach the client in the order they were sent, and every update of
    /// a turn reaches it before the turn's answer.
    pub async fn update(&self, mut update: SessionUpdate) -> Result<()> {
        if self.turn.is_none() && self.state.is_closed() {
            return Err(Error::SessionClosed);
        }
        self.state.messages.stamp(&mut update);
        account::fit_tool_call(&mut update);
        if let Some(hidden) = self.hidden() {
            if self.turn.as_ref().is_some_and(|t| t.is_closing()) {
                return Err(Error::TurnEnded);
            }
            return self.update_hidden(hidden, &update).await;
        }
        let conn = &self.state.conn;
        let journal = &conn.peer().journal;
        // A title for `session/list`.
        let title = match &update {
            SessionUpdate::SessionInfoUpdate(info) if journal.is_recording() => match &info.title {
                MaybeUndefined::Value(title) => Some(Some(title.clone())),
                MaybeUndefined::Null => Some(None),
                MaybeUndefined::Undefined => None,
            },
            _ => None,
        };
        let (bytes, record) = conn.update_frame(&self.state.id, &update)?;
        self.send_update(bytes, record).await?;
        if let (Some(title), Some(store)) = (title, journal.store())
            && let Err(e) = store.set_title(&self.state.id, title.as_deref()).await
        {
            tracing::warn!(session = %self.state.id, "could not store the session's title: {e}");
        }
        Ok(())
    }

    /// Sends the `session/update` frame `bytes` (recorded as `record`), refused once the turn
    /// this handle belongs to has been answered.
    async fn send_update(&self, bytes: Vec<u8>, record: Option<Journaled>) -> Result<()> {
        if let Some(turn) = &self.turn
            && turn.is_closing()
        {
            return Err(Error::TurnEnded);
        }
        let sequence = self.turn.as_ref().map(|t| t.sequence.clone());
        let frame = Frame::new(bytes, sequence)
            .of_session(&self.state.id)
            .recorded(record);
        self.state.conn.peer().send(frame).await
    }

    /// What a request to the client checks first, for work done locally instead: fails with
    /// [`Error::Cancelled`] once the turn is cancelled, and with [`Error::SessionClosed`]
    /// through a handle outside any turn once the session is closed.
    pub(crate) fn check_usable(&self) -> Result<()> {
        self.check_cancelled()?;
        if self.turn.is_none() && self.state.is_closed() {
            return Err(Error::SessionClosed);
        }
        Ok(())
    }

    /// Sends a request to the client in this session's context; fails with
    /// [`Error::Cancelled`] as soon as the turn is cancelled.
    pub(crate) async fn request<P: Serialize, T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<T> {
        self.check_usable()?;
        let cancel = self.turn.as_ref().map(|t| &t.cancel);
        let session = Some(self.client_session().id());
        self.state
            .conn
            .request(method, params, cancel, session)
            .await
    }

    /// Asks the user to choose one of `options` about `tool_call`
    /// (`session/request_permission`), and returns the chosen option's id.
    ///
    /// Fails with [`Error::Cancelled`] when the turn is cancelled while waiting or the client
    /// answers `cancelled`. Tool calls made with `#[acp::tool(permission)]` do all of this,
    /// including remembering "always" answers; call this directly for anything else.
    pub async fn request_permission(
        &self,
        mut tool_call: ToolCallUpdate,
        options: Vec<PermissionOption>,
    ) -> Result<PermissionOptionId> {
        account::fit_fields(&mut tool_call.fields);
        // A subagent the client is not shown asks about the call it shows in.
        if let Some(hidden) = self.hidden() {
            tool_call = ToolCallUpdate::new(hidden.call.id().clone(), tool_call.fields);
        }
        let asked = self.client_session().id().clone();
        let params = schema::RequestPermissionRequest::new(asked, tool_call, options);
        let answer: schema::RequestPermissionResponse = self
            .waiting_on_user(self.request(methods::REQUEST_PERMISSION, &params))
            .await?;
        match answer.outcome {
            RequestPermissionOutcome::Selected(selected) => Ok(selected.option_id),
            _ => Err(Error::Cancelled),
        }
    }

    /// Runs `ask` (a question to the user) with the turn reported waiting on the user while it
    /// runs, and running again after (v2's `requires_action`; nothing on v1).
    pub(crate) async fn waiting_on_user<T>(&self, ask: impl Future<Output = T>) -> T {
        self.report_state(protocol::State::RequiresAction).await;
        let out = ask.await;
        if !self.turn.as_ref().is_some_and(|t| t.cancel.is_cancelled()) {
            self.report_state(protocol::State::Running).await;
        }
        out
    }

    /// Reports the turn's state to the client, if the connection's protocol does.
    async fn report_state(&self, state: protocol::State) {
        let Some(turn) = &self.turn else { return };
        let conn = &self.state.conn;
        if turn.is_closing() {
            return;
        }
        if let Some(bytes) = conn.codec().state(&self.state.id, state) {
            let _ = conn
                .peer()
                .send(Frame::new(bytes, Some(turn.sequence.clone())).of_session(&self.state.id))
                .await;
        }
        // A subagent's state is also its parent's to tell.
        self.mirror_state(state).await;
    }

    /// The client's terminals (`terminal/*`); local processes, where the client lacks them
    /// and the server opted in with [`Server::local_fallback`](crate::Server::local_fallback).
    pub fn terminal(&self) -> Terminals<'_> {
        Terminals::new(self)
    }

    /// This session's value of type `T`, created with `T::default()` on first use.
    ///
    /// One agent value serves every session; per-session state (a conversation history, the
    /// current mode, …) lives here instead of in a map keyed by session id. Every handle of
    /// the session (turns, `set_mode`, …) sees the same value.
    ///
    /// ```
    /// use std::sync::Mutex;
    ///
    /// #[derive(Default)]
    /// struct History(Mutex<Vec<String>>);
    ///
    /// # fn demo(cx: &acp_core::Session) {
    /// cx.state::<History>().0.lock().unwrap().push("hello".into());
    /// # }
    /// ```
    pub fn state<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        self.state.values.get_or_insert_with(T::default)
    }

    /// The session's [`Persist`] value of type `T`: like [`state`](Session::state), one per
    /// type and session, but saved in the session store after each turn and back when the
    /// session is loaded or resumed (see [`Persist`]).
    pub fn persisted<T: Persist>(&self) -> Arc<Persisted<T>> {
        self.state.persisted::<T>()
    }

    /// Remembers an "always" answer for a permission key in this session.
    pub fn remember_permission(&self, key: impl Into<String>, allowed: bool) {
        lock(&self.state.remembered).insert(key.into(), allowed);
    }

    /// The "always" answer remembered for a permission key in this session, if any.
    pub fn remembered_permission(&self, key: &str) -> Option<bool> {
        lock(&self.state.remembered).get(key).copied()
    }
}

/// Why `suggestion` may not be sent (see [`Session::suggest`]): no content, only blank text,
/// or a block other than text and resource links.
#[cfg(feature = "unstable-prompt-suggestions")]
fn check_suggestion(suggestion: &crate::schema::PromptSuggestion) -> Result<(), &'static str> {
    use crate::schema::ContentBlock;
    if suggestion.prompt.is_empty() {
        return Err("has no content (it needs at least one content block)");
    }
    let mut substance = false;
    for block in &suggestion.prompt {
        match block {
            ContentBlock::Text(text) => substance |= !text.text.trim().is_empty(),
            ContentBlock::ResourceLink(_) => substance = true,
            _ => return Err("has a content block other than `text` and `resource_link`"),
        }
    }
    if substance {
        Ok(())
    } else {
        Err("is only blank text")
    }
}
