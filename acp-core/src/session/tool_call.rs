//! Tool calls: the `tool_call` / `tool_call_update` lifecycle the client shows to the user.
//!
//! [`ToolCallGuard`] is the low-level handle: start a call, update it, finish it. A guard
//! dropped unfinished reports the call `failed`, and the runtime fails every call still open
//! when its turn ends, so no tool call stays pending or in progress after its turn.
//!
//! A call already shown can be handed to the next tool call the session starts
//! ([`adopting`]): the call is then updated in place instead of a new one being announced, which
//! is how a model's tool call appears as soon as the model names the tool and is then run by
//! name ([`Session::call_tool_in`](super::Session::call_tool_in)).
//!
//! Content embedded in a call while its body runs (a terminal created there) stays in the
//! call: every later content the call is given, its output or its error included, is shown
//! after it rather than instead of it.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use super::Session;
use super::local::LocalTerminal;
use crate::Result;
use crate::peer::Frame;
use crate::protocol::account;
use crate::schema::{
    self, ContentBlock, PermissionOption, PermissionOptionId, SessionUpdate, ToolCallContent,
    ToolCallId, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use crate::sync::lock;

tokio::task_local! {
    /// The tool call whose body is running on this task.
    static CURRENT: Current;
}

tokio::task_local! {
    /// A tool call already shown, waiting for the next tool call this task starts.
    static ADOPTED: Adopted;
}

/// A shown tool call that the next [`ToolCallBuilder::start`] of its session takes over.
#[derive(Clone)]
struct Adopted {
    session: crate::schema::SessionId,
    call: Arc<Mutex<Option<ToolCallGuard>>>,
}

/// Runs `body` so that the first tool call it starts in `call`'s session is `call` itself,
/// updated in place (title, kind, input, locations, content) rather than announced anew;
/// later ones are announced as usual. Returns `call` if nothing in `body` took it.
pub(crate) async fn adopting<F: std::future::Future>(
    call: ToolCallGuard,
    body: F,
) -> (F::Output, Option<ToolCallGuard>) {
    let adopted = Adopted {
        session: call.cx.id().clone(),
        call: Arc::new(Mutex::new(Some(call))),
    };
    let slot = adopted.call.clone();
    let output = ADOPTED.scope(adopted, body).await;
    let left = lock(&slot).take();
    (output, left)
}

/// The tool call whose body is running: its session, its id, and what is embedded in it.
#[derive(Clone)]
struct Current {
    session: crate::schema::SessionId,
    id: ToolCallId,
    embedded: Embedded,
}

/// Something embedded in a tool call while it runs.
#[derive(Debug, Clone)]
pub(crate) enum Embed {
    /// Content shown as it is (a client's terminal).
    Content(Box<ToolCallContent>),
    /// A terminal running on the agent's machine, which a v1 client cannot show (it does not
    /// know its id): shown as text, rendered anew each time the call's content is sent.
    Local(Arc<LocalTerminal>),
    /// A subagent the call delegated to: a reference to its session, or the text of its work
    /// for a client that does not show subagents, rendered anew each time.
    Subagent(Arc<super::subagent::ChildView>),
}

impl Embed {
    /// The content to send for it now.
    pub fn render(&self) -> ToolCallContent {
        match self {
            Embed::Content(content) => (**content).clone(),
            // Shown by the connection itself (v2's `terminal_update`s): a reference to it.
            Embed::Local(terminal) if terminal.is_displayed() => {
                ToolCallContent::Terminal(crate::schema::Terminal::new(terminal.id.clone()))
            }
            Embed::Local(terminal) => ContentBlock::from(terminal.as_text()).into(),
            Embed::Subagent(child) => child.render(),
        }
    }

    /// Whether it is rendered anew with every update of the call (it changes while the call
    /// runs).
    fn is_live(&self) -> bool {
        matches!(self, Embed::Local(_) | Embed::Subagent(_))
    }

    fn is(&self, other: &Embed) -> bool {
        match (self, other) {
            (Embed::Content(a), Embed::Content(b)) => a == b,
            (Embed::Local(a), Embed::Local(b)) => Arc::ptr_eq(a, b),
            (Embed::Subagent(a), Embed::Subagent(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// What a tool call shows: the content embedded in it while it runs (terminals), in front of
/// the content it was last given. Shared by the call's guard and its body.
#[derive(Debug, Clone, Default)]
struct Embedded(Arc<Mutex<Shown>>);

#[derive(Debug, Default)]
struct Shown {
    embedded: Vec<Embed>,
    /// The content the call was last given (by its start, an update, its end).
    given: Vec<ToolCallContent>,
    /// The call as the client shows it now, but its content and raw values (title, name,
    /// kind, status, locations): what announcing it anew (Zed's `_meta.terminal_info`, see
    /// [`terminal_meta`](super::terminal_meta)) must repeat, or the client would reset them.
    card: Option<schema::ToolCall>,
}

impl Embedded {
    /// Starting with the call as it was announced.
    fn new(call: &schema::ToolCall) -> Self {
        let mut card = call.clone();
        card.content = Vec::new();
        card.raw_input = None;
        card.raw_output = None;
        card.meta = None;
        let shown = Shown {
            embedded: Vec::new(),
            given: call.content.clone(),
            card: Some(card),
        };
        Embedded(Arc::new(Mutex::new(shown)))
    }

    /// The call announced anew (a `tool_call` with its id) with `terminal` embedded, after
    /// what is embedded already and before the content it was given; its status at least
    /// `in_progress` (a command runs in it). `None` for a call whose announcement is unknown.
    fn announced_with(&self, terminal: ToolCallContent) -> Option<schema::ToolCall> {
        let mut shown = self.lock();
        let card = shown.card.as_mut()?;
        if card.status == ToolCallStatus::Pending {
            card.status = ToolCallStatus::InProgress;
        }
        let mut call = card.clone();
        let mut content: Vec<ToolCallContent> = shown.embedded.iter().map(Embed::render).collect();
        if !content.contains(&terminal) {
            content.push(terminal);
        }
        for item in &shown.given {
            if !content.contains(item) {
                content.push(item.clone());
            }
        }
        call.content = content;
        Some(call)
    }

    /// Adds `embed` (once) without sending anything: the client was shown it already.
    fn add_quietly(&self, embed: Embed) {
        let _ = self.add(embed);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shown> {
        lock(&self.0)
    }

    /// Adds `embed` (once); returns the call's whole content now.
    fn add(&self, embed: Embed) -> Vec<ToolCallContent> {
        let mut shown = self.lock();
        if !shown.embedded.iter().any(|e| e.is(&embed)) {
            shown.embedded.push(embed);
        }
        shown.content()
    }

    /// `fields` with the embedded content in front of the content they set, if they set
    /// any (what the call shows already is left out of theirs, so it is not shown twice).
    /// With a local terminal embedded, the call's whole content is sent with every update,
    /// so the terminal's text is brought up to date.
    fn keep(&self, mut fields: ToolCallUpdateFields) -> ToolCallUpdateFields {
        let mut shown = self.lock();
        if let Some(card) = shown.card.as_mut() {
            follow(card, &fields);
        }
        let local = shown.embedded.iter().any(Embed::is_live);
        match fields.content.take() {
            Some(given) => {
                shown.given = given;
                fields.content = Some(shown.content());
            }
            None if local => fields.content = Some(shown.content()),
            None => {}
        }
        fields
    }
}

/// `card` as the client shows it once it has applied `fields` (content and raw values left
/// out).
fn follow(card: &mut schema::ToolCall, fields: &ToolCallUpdateFields) {
    if let Some(title) = &fields.title {
        card.title.clone_from(title);
    }
    if let Some(kind) = fields.kind {
        card.kind = kind;
    }
    if let Some(status) = fields.status {
        card.status = status;
    }
    if fields.name.is_some() {
        card.name.clone_from(&fields.name);
    }
    if let Some(locations) = &fields.locations {
        card.locations.clone_from(locations);
    }
}

impl Shown {
    /// The embedded content, then the given content that is not already shown.
    fn content(&self) -> Vec<ToolCallContent> {
        let mut content: Vec<ToolCallContent> = self.embedded.iter().map(Embed::render).collect();
        let embedded = content.len();
        for item in &self.given {
            if !content[..embedded].contains(item) {
                content.push(item.clone());
            }
        }
        content
    }
}

/// Runs `body` as the body of tool call `call`: within it,
/// [`Session::current_tool_call`] names the call, and terminals created in the same session
/// are embedded in it (and stay in it when the call completes or fails).
pub async fn in_tool_call<F: std::future::Future>(call: &ToolCallGuard, body: F) -> F::Output {
    let current = Current {
        session: call.cx.id().clone(),
        id: call.id.clone(),
        embedded: call.embedded.clone(),
    };
    CURRENT.scope(current, body).await
}

/// The tool call whose body is running, held to update it from elsewhere (a subagent's work
/// shown in it).
#[derive(Clone)]
pub(crate) struct CallRef(Current);

impl std::fmt::Debug for CallRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("CallRef").field(&self.0.id).finish()
    }
}

impl CallRef {
    /// The call's id.
    pub fn id(&self) -> &ToolCallId {
        &self.0.id
    }

    /// Embeds `embed` in the call for the rest of its life (sent through `cx`, the call's
    /// session).
    pub async fn embed(&self, cx: &Session, embed: Embed) -> Result<()> {
        let content = self.0.embedded.add(embed);
        self.send(cx, content).await
    }

    /// Sends the call's whole content again (what it embeds changed).
    pub async fn refresh(&self, cx: &Session) -> Result<()> {
        let content = self.0.embedded.lock().content();
        self.send(cx, content).await
    }

    async fn send(&self, cx: &Session, content: Vec<ToolCallContent>) -> Result<()> {
        let fields = ToolCallUpdateFields::new().content(content);
        cx.update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            self.0.id.clone(),
            fields,
        )))
        .await
    }
}

impl Session {
    /// The running tool call of this session, held (see [`CallRef`]).
    pub(crate) fn running_call(&self) -> Option<CallRef> {
        self.current().map(CallRef)
    }

    /// The tool call whose body is running, when called from inside an `#[acp::tool]` body
    /// (or [`in_tool_call`]) of this session.
    pub fn current_tool_call(&self) -> Option<ToolCallId> {
        self.current().map(|c| c.id)
    }

    fn current(&self) -> Option<Current> {
        CURRENT
            .try_with(|c| (c.session == self.state.id).then(|| c.clone()))
            .ok()
            .flatten()
    }

    /// Updates the running tool call (see [`current_tool_call`](Self::current_tool_call)),
    /// e.g. to show progress; does nothing outside a tool body. Content set here is shown
    /// after the terminals embedded in the call, which stay.
    pub async fn update_tool_call(&self, fields: ToolCallUpdateFields) -> Result<()> {
        match self.current() {
            Some(current) => {
                let fields = current.embedded.keep(fields);
                self.update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    current.id, fields,
                )))
                .await
            }
            None => Ok(()),
        }
    }

    /// Embeds `embed` in the running tool call for the rest of its life: shown now, and
    /// in front of whatever content the call is given later (its output or its error
    /// included). Does nothing outside a tool body.
    pub(crate) async fn embed_in_tool_call(&self, embed: Embed) -> Result<()> {
        match self.current() {
            Some(current) => {
                let content = current.embedded.add(embed);
                let fields = ToolCallUpdateFields::new().content(content);
                self.update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    current.id, fields,
                )))
                .await
            }
            None => Ok(()),
        }
    }

    /// The observer that shows a local terminal about to start in the running tool call the
    /// way Zed reads it ([`terminal_meta`](super::terminal_meta)), when the v1 client asked
    /// for it (`clientCapabilities._meta.terminal_output`); `None` outside a tool body, and for
    /// any other client (which is shown the terminal as text).
    pub(crate) fn terminal_meta_observer(&self) -> Option<super::local::TerminalObserver> {
        let conn = &self.state.conn;
        if conn.codec().version() != crate::protocol::Version::V1
            || !super::terminal_meta::asked(conn.client_capabilities())
        {
            return None;
        }
        let current = self.current()?;
        let embedded = current.embedded.clone();
        let display = super::terminal_meta::Display::new(
            conn.clone(),
            self.state.id.clone(),
            current.id,
            self.turn.as_ref().map(|t| t.sequence.clone()),
            Box::new(move |terminal| embedded.announced_with(terminal)),
        );
        Some(display.observer())
    }

    /// Embeds `embed` in the running tool call, as [`embed_in_tool_call`](Self::embed_in_tool_call)
    /// does, without sending anything: the client was shown it already.
    pub(crate) fn embed_quietly(&self, embed: Embed) {
        if let Some(current) = self.current() {
            current.embedded.add_quietly(embed);
        }
    }

    /// Prepares a tool call with this title; [`ToolCallBuilder::start`] sends it.
    ///
    /// ```no_run
    /// # async fn demo(cx: &acp_core::Session) -> acp_core::Result<()> {
    /// use acp_core::schema::ToolKind;
    /// let call = cx.tool_call("Search the docs").kind(ToolKind::Search).start().await?;
    /// call.in_progress().await?;
    /// call.complete(vec!["3 matches".into()]).await?;
    /// # Ok(()) }
    /// ```
    pub fn tool_call(&self, title: impl Into<String>) -> ToolCallBuilder<'_> {
        let n = self.state.next_tool_call.fetch_add(1, Ordering::Relaxed);
        ToolCallBuilder {
            cx: self,
            call: schema::ToolCall::new(ToolCallId::new(format!("call_{n}")), title),
        }
    }
}

/// A tool call about to be announced; see [`Session::tool_call`].
#[derive(Debug)]
#[must_use = "a tool call is only sent by `start`"]
pub struct ToolCallBuilder<'a> {
    cx: &'a Session,
    call: schema::ToolCall,
}

impl ToolCallBuilder<'_> {
    /// The tool's programmatic name (the one a model or a by-name call uses), beside the
    /// title the user reads. Tool calls of `#[acp::tool]` methods, of calls by name and of
    /// the client's MCP servers carry it already.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.call = self.call.name(name.into());
        self
    }

    /// The kind of tool, which picks the icon the client shows.
    pub fn kind(mut self, kind: ToolKind) -> Self {
        self.call = self.call.kind(kind);
        self
    }

    /// The tool's arguments, shown to the user as they were given.
    ///
    /// Whatever nests deeper than 100 levels is sent as the string
    /// `"(nested too deeply to show)"` (so are raw inputs and outputs in any tool call update):
    /// clients that read frames with serde_json cannot read a frame nested deeper than 128.
    pub fn raw_input(mut self, input: serde_json::Value) -> Self {
        self.call = self.call.raw_input(input);
        self
    }

    /// Files the call touches, so the client can follow along.
    pub fn locations(mut self, locations: Vec<ToolCallLocation>) -> Self {
        self.call = self.call.locations(locations);
        self
    }

    /// Initial content.
    pub fn content(mut self, content: Vec<ToolCallContent>) -> Self {
        self.call = self.call.content(content);
        self
    }

    /// Sends the `tool_call` update (status `pending`) and returns the guard that finishes it.
    pub async fn start(self) -> Result<ToolCallGuard> {
        if let Some(call) = self.adopt() {
            return self.start_in(call).await;
        }
        let id = self.call.tool_call_id.clone();
        let call = self.call.status(ToolCallStatus::Pending);
        let embedded = Embedded::new(&call);
        self.cx.update(SessionUpdate::ToolCall(call)).await?;
        if let Some(turn) = &self.cx.turn {
            turn.opened(&id);
        }
        Ok(ToolCallGuard {
            cx: self.cx.clone(),
            id,
            finished: false,
            embedded,
        })
    }
}

impl ToolCallBuilder<'_> {
    /// The shown call waiting in this task for a tool call of this session, if any.
    fn adopt(&self) -> Option<ToolCallGuard> {
        ADOPTED
            .try_with(|a| {
                if a.session != self.cx.state.id {
                    return None;
                }
                lock(&a.call).take()
            })
            .ok()
            .flatten()
    }

    /// Starts this call as `call`, already shown: updates it with the builder's fields.
    async fn start_in(self, call: ToolCallGuard) -> Result<ToolCallGuard> {
        let c = self.call;
        let mut fields = ToolCallUpdateFields::new()
            .title(c.title)
            .kind(c.kind)
            .name(c.name);
        if let Some(raw) = c.raw_input {
            fields = fields.raw_input(raw);
        }
        if !c.locations.is_empty() {
            fields = fields.locations(c.locations);
        }
        if !c.content.is_empty() {
            fields = fields.content(c.content);
        }
        call.update(fields).await?;
        Ok(call)
    }
}

/// An announced tool call. Finish it with [`complete`](Self::complete) or
/// [`fail`](Self::fail); dropping it unfinished reports it `failed`.
///
/// Terminals created while the call runs (inside [`in_tool_call`]) stay embedded in it:
/// content given later, by [`update`](Self::update), `complete` or `fail`, is shown after them.
#[derive(Debug)]
#[must_use = "dropping a tool call guard reports the call as failed"]
pub struct ToolCallGuard {
    cx: Session,
    id: ToolCallId,
    finished: bool,
    embedded: Embedded,
}

impl ToolCallGuard {
    /// The tool call's id.
    pub fn id(&self) -> &ToolCallId {
        &self.id
    }

    /// The session the call belongs to.
    pub fn session(&self) -> &Session {
        &self.cx
    }

    /// Sends a `tool_call_update` with these fields (content after the embedded terminals).
    pub async fn update(&self, fields: ToolCallUpdateFields) -> Result<()> {
        self.cx
            .update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                self.id.clone(),
                self.embedded.keep(fields),
            )))
            .await
    }

    /// Marks the call `in_progress`.
    pub async fn in_progress(&self) -> Result<()> {
        self.update(ToolCallUpdateFields::new().status(ToolCallStatus::InProgress))
            .await
    }

    /// Asks the user for permission to run this call; returns the chosen option.
    pub async fn request_permission(
        &self,
        options: Vec<PermissionOption>,
    ) -> Result<PermissionOptionId> {
        let call = ToolCallUpdate::new(self.id.clone(), ToolCallUpdateFields::new());
        self.cx.request_permission(call, options).await
    }

    /// Marks the call `completed` with this content (after the embedded terminals).
    pub async fn complete(self, content: Vec<ToolCallContent>) -> Result<()> {
        self.complete_with(ToolCallUpdateFields::new().content(content))
            .await
    }

    /// Marks the call `completed`, with any other fields (e.g. `raw_output`).
    pub async fn complete_with(mut self, fields: ToolCallUpdateFields) -> Result<()> {
        self.finish(fields.status(ToolCallStatus::Completed)).await
    }

    /// Marks the call `failed`, showing `message` as its content (after the embedded
    /// terminals).
    pub async fn fail(mut self, message: impl std::fmt::Display) -> Result<()> {
        let fields = account::failed_fields(&message.to_string());
        self.finish(fields).await
    }

    async fn finish(&mut self, fields: ToolCallUpdateFields) -> Result<()> {
        self.finished = true;
        self.forget();
        self.update(fields).await
    }

    fn forget(&self) {
        if let Some(turn) = &self.cx.turn {
            turn.finished(&self.id);
        }
    }
}

impl Drop for ToolCallGuard {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let closing = self.cx.turn.as_ref().is_some_and(|t| t.is_closing());
        if closing {
            return;
        }
        let message = if self.cx.is_cancelled() {
            "cancelled"
        } else {
            "the tool call was abandoned before it finished"
        };
        // If the queue is full, the end-of-turn sweep reports it instead.
        let conn = &self.cx.state.conn;
        let fields = self.embedded.keep(account::failed_fields(message));
        let update = SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(self.id.clone(), fields));
        let Ok((bytes, record)) = conn.update_frame(self.cx.id(), &update) else {
            return;
        };
        let frame = Frame::new(bytes, self.cx.turn.as_ref().map(|t| t.sequence.clone()))
            .of_session(self.cx.id())
            .recorded(record);
        if conn.peer().try_send(frame) {
            self.forget();
        }
    }
}
