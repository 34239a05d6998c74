//! The [`Agent`] trait: what an agent answers to, and what it advertises in `initialize`.
//!
//! `#[acp::agent]` generates this impl from an inherent impl block; it can also be written by
//! hand. The runtime only routes a method to the agent when the agent advertises it, so what
//! is advertised and what is implemented cannot drift apart.

use std::future::Future;

use crate::schema::{
    self, AgentCapabilities, AuthMethod, AuthMethodId, AvailableCommand, ContentBlock,
    Implementation, StopReason,
};
use crate::session::{Client, Session, Settings};
use crate::tools::{ToolDef, ToolHost, ToolOutput};
use crate::{Error, Result};

/// An ACP agent: one value serves every session of a connection.
///
/// Only [`prompt`](Agent::prompt) is required. Every other method has a default that either
/// does nothing or is never called because the matching capability is not advertised.
/// `#[acp::agent]` writes this impl from an inherent impl block; by hand it reads:
///
/// ```no_run
/// use acp_core::{Agent, Prompt, Result, Session, schema::StopReason};
///
/// struct Echo;
///
/// impl Agent for Echo {
///     async fn prompt(&self, cx: &Session, prompt: Prompt) -> Result<StopReason> {
///         cx.message(prompt.text()).await?;
///         Ok(StopReason::EndTurn)
///     }
/// }
///
/// # async fn run() -> Result<()> {
/// acp_core::serve_stdio(Echo).await
/// # }
/// ```
pub trait Agent: Send + Sync + 'static {
    /// The name, title and version sent as `agentInfo` in the `initialize` answer.
    fn info(&self) -> Implementation {
        Implementation::new("acp-agent", "0.0.0")
    }

    /// The capabilities advertised in `initialize`, beside those the runtime adds itself
    /// (the session history methods with a store, `session/close`, `additionalDirectories`,
    /// MCP transports).
    ///
    /// `loadSession: true` makes the runtime call [`load_session`](Agent::load_session) for
    /// a reopened session (all of `session/load` when sessions are not recorded); prompt capabilities (image, audio, embedded context)
    /// tell the client what it may send, and a prompt with other content is refused
    /// (`-32602`); `auth.logout` routes `logout` to [`logout`](Agent::logout).
    fn capabilities(&self) -> AgentCapabilities {
        AgentCapabilities::new()
    }

    /// The session's modes and config options ([`Settings`]): offered in the answer to
    /// `session/new` (and `load`, `resume`), changed by `session/set_mode` and
    /// `session/set_config_option`, read with [`Session::config`] / [`Session::mode`].
    fn settings(&self) -> Settings {
        Settings::new()
    }

    /// The slash commands the agent runs itself ([`run_command`](Agent::run_command)),
    /// advertised right after a session is created or resumed, and at the end of the replay
    /// of a loaded one.
    fn commands(&self) -> Vec<AvailableCommand> {
        Vec::new()
    }

    /// Runs the slash command `name` (one of [`commands`](Agent::commands)) as a prompt turn:
    /// `input` is the prompt without the `/name` it starts with.
    fn run_command(
        &self,
        cx: &Session,
        name: &str,
        input: Prompt,
    ) -> impl Future<Output = Result<StopReason>> + Send {
        let _ = (cx, input);
        let message = format!("this agent has no command `/{name}`");
        async move { Err(Error::InvalidParams(message)) }
    }

    /// The authentication methods advertised in `initialize`. When non-empty,
    /// `authenticate` is routed to [`authenticate`](Agent::authenticate) (for the methods of
    /// type `agent`: the client runs `terminal` ones itself). Terminal methods are offered
    /// only to clients that advertise `auth.terminal`.
    fn auth_methods(&self) -> Vec<AuthMethod> {
        Vec::new()
    }

    /// Called on `authenticate` with the method the user chose (always one of
    /// [`auth_methods`](Agent::auth_methods), of type `agent`).
    fn authenticate(
        &self,
        cx: &Client,
        method: AuthMethodId,
    ) -> impl Future<Output = Result<()>> + Send {
        let _ = cx;
        async move {
            Err(Error::InvalidParams(format!(
                "unknown authentication method `{method}`"
            )))
        }
    }

    /// Whether the user is authenticated. Asked before `session/new`, `session/load`,
    /// `session/resume`, `session/list` and `session/delete` when the agent has
    /// [`auth_methods`](Agent::auth_methods): `false` answers them `-32000 Authentication
    /// required` (sessions already open go on; `session/close` always works). The default says yes (authentication
    /// is optional); [`Client::has_authenticated`] tells whether `authenticate` succeeded on
    /// this connection.
    fn authenticated(&self, cx: &Client) -> impl Future<Output = bool> + Send {
        let _ = cx;
        async { true }
    }

    /// Called on `logout` (routed only when [`capabilities`](Agent::capabilities) has
    /// `auth.logout`). After it succeeds, [`Client::has_authenticated`] is `false` again.
    fn logout(&self, cx: &Client) -> impl Future<Output = Result<()>> + Send {
        let _ = cx;
        async { Err(Error::method_not_found(crate::protocol::methods::LOGOUT)) }
    }

    /// The extension requests the agent answers (methods starting with `_`), routed to
    /// [`ext_request`](Agent::ext_request); any other is answered `-32601`.
    fn ext_methods(&self) -> &'static [&'static str] {
        &[]
    }

    /// The extension notifications the agent handles, routed to
    /// [`ext_notification`](Agent::ext_notification); any other is ignored.
    fn ext_notifications(&self) -> &'static [&'static str] {
        &[]
    }

    /// Answers the extension request `method` (one of [`ext_methods`](Agent::ext_methods)).
    fn ext_request(
        &self,
        cx: &Client,
        method: &str,
        params: serde_json::Value,
    ) -> impl Future<Output = Result<serde_json::Value>> + Send {
        let _ = (cx, params);
        let error = Error::method_not_found(method);
        async move { Err(error) }
    }

    /// Handles the extension notification `method` (one of
    /// [`ext_notifications`](Agent::ext_notifications)); an error is logged.
    fn ext_notification(
        &self,
        cx: &Client,
        method: &str,
        params: serde_json::Value,
    ) -> impl Future<Output = Result<()>> + Send {
        let _ = (cx, method, params);
        async { Ok(()) }
    }

    /// Called on `session/new`, before the client knows the session: extra slash commands,
    /// the answer's `_meta`. Do not send updates from here.
    fn new_session(&self, cx: &Session) -> impl Future<Output = Result<SessionSetup>> + Send {
        let _ = cx;
        async { Ok(SessionSetup::default()) }
    }

    /// Called for a reopened session when [`capabilities`](Agent::capabilities) says
    /// `loadSession`; history does not need it.
    ///
    /// With sessions recorded (a store: the default of [`serve_stdio`](crate::serve_stdio))
    /// the runtime answers `session/load` and `session/resume` from the store: it replays the
    /// conversation (`load`), restores modes, config options and persisted values, then calls
    /// this instead of [`new_session`](Agent::new_session) for the session's setup. Do not
    /// replay here: the client would see the conversation twice. Without a store
    /// ([`Server::no_store`](crate::Server::no_store), or [`serve`](crate::serve) without
    /// one) this is the whole of `session/load`: replay the conversation with the session's
    /// update methods, then return.
    fn load_session(&self, cx: &Session) -> impl Future<Output = Result<SessionSetup>> + Send {
        let _ = cx;
        async {
            Err(Error::method_not_found(
                crate::protocol::methods::SESSION_LOAD,
            ))
        }
    }

    /// One prompt turn. Send updates through `cx`, then return why the turn stopped.
    ///
    /// When the client cancels the turn, the runtime answers `cancelled` whatever this
    /// returns, and drops the future if it has not finished shortly after the cancel.
    fn prompt(
        &self,
        cx: &Session,
        prompt: Prompt,
    ) -> impl Future<Output = Result<StopReason>> + Send;

    /// The tools this agent offers by name (generated by `#[acp::agent]` from its
    /// `#[acp::tool]` methods), e.g. to hand to a model.
    fn tools(&self) -> Vec<ToolDef> {
        Vec::new()
    }

    /// Runs the tool `name` with JSON arguments, through the full tool-call lifecycle
    /// (generated by `#[acp::agent]`). Reached through [`Session::call_tool`].
    fn call_tool(
        &self,
        cx: &Session,
        name: &str,
        args: serde_json::Value,
    ) -> impl Future<Output = Result<ToolOutput>> + Send {
        let _ = (cx, args);
        let message = format!("this agent has no tool named `{name}`");
        async move { Err(Error::InvalidParams(message)) }
    }

    /// Runs the `check` of the tool `name` (`#[acp::tool(check = …)]`, generated by
    /// `#[acp::agent]`) in the session's current state, without calling the tool: `Ok` when
    /// a call would not be refused by it (a tool without a check, or with no such name,
    /// passes). [`Session::available_tools`] leaves out the tools it refuses.
    fn check_tool(&self, cx: &Session, name: &str) -> impl Future<Output = Result<()>> + Send {
        let _ = (cx, name);
        async { Ok(()) }
    }
}

/// What a new or reopened session starts with besides its declared settings and commands:
/// slash commands the agent handles in `prompt` itself, and the `_meta` of the answer.
///
/// ```
/// use acp_core::{SessionSetup, schema::AvailableCommand};
///
/// let setup = SessionSetup::default()
///     .commands(vec![AvailableCommand::new("plan", "Make a plan first")]);
/// ```
#[derive(Debug, Default, Clone)]
#[non_exhaustive]
pub struct SessionSetup {
    /// Slash commands beside the agent's `#[acp::command]`s, sent in the
    /// `available_commands_update` right after the session's answer (at the end of the
    /// replay, before the answer, for `session/load`); prompts starting with
    /// them reach `prompt`.
    pub commands: Vec<AvailableCommand>,
    /// The `_meta` of the answer to `session/new` (or `load`, `resume`).
    pub meta: Option<schema::Meta>,
}

impl SessionSetup {
    /// Sets the extra slash commands advertised when the session starts.
    #[must_use]
    pub fn commands(mut self, commands: Vec<AvailableCommand>) -> Self {
        self.commands = commands;
        self
    }

    /// Sets the `_meta` of the session's answer.
    #[must_use]
    pub fn meta(mut self, meta: schema::Meta) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// The user's message of one prompt turn: content blocks, and the request's `_meta`.
///
/// ```
/// use acp_core::Prompt;
/// use acp_core::schema::{ContentBlock, ResourceLink};
///
/// let prompt = Prompt::new(vec![
///     "Explain".into(),
///     ContentBlock::ResourceLink(ResourceLink::new("main.rs", "file:///src/main.rs")),
/// ]);
/// assert_eq!(prompt.text(), "Explain\n[@main.rs](file:///src/main.rs)");
/// assert_eq!(prompt.links().count(), 1);
/// ```
#[derive(Debug, Clone)]
pub struct Prompt {
    blocks: Vec<ContentBlock>,
    meta: Option<schema::Meta>,
}

impl Prompt {
    /// A prompt made of these content blocks.
    pub fn new(blocks: Vec<ContentBlock>) -> Self {
        Prompt { blocks, meta: None }
    }

    pub(crate) fn from_request(req: schema::PromptRequest) -> Self {
        Prompt {
            blocks: req.prompt,
            meta: req.meta,
        }
    }

    /// What the user wrote, as text: the text blocks, the text of embedded text resources,
    /// and each @-mention (a resource link) as a Markdown link `[@name](uri)`, so a model sees
    /// what was referenced; joined by newlines. Images, audio and binary resources are left
    /// out (see [`images`](Prompt::images), [`audio`](Prompt::audio),
    /// [`resources`](Prompt::resources)).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.blocks {
            let text = match block {
                ContentBlock::Text(t) => std::borrow::Cow::Borrowed(t.text.as_str()),
                ContentBlock::Resource(r) => match &r.resource {
                    schema::EmbeddedResourceResource::TextResourceContents(t) => {
                        std::borrow::Cow::Borrowed(t.text.as_str())
                    }
                    _ => continue,
                },
                ContentBlock::ResourceLink(link) => {
                    std::borrow::Cow::Owned(format!("[@{}]({})", link.name, link.uri))
                }
                _ => continue,
            };
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&text);
        }
        out
    }

    /// The resource links (how editors send @-mentions of files, folders, symbols).
    pub fn links(&self) -> impl Iterator<Item = &schema::ResourceLink> {
        self.blocks.iter().filter_map(|b| match b {
            ContentBlock::ResourceLink(link) => Some(link),
            _ => None,
        })
    }

    /// The embedded resources (file contents the editor included; needs
    /// `prompt(embedded_context)`).
    pub fn resources(&self) -> impl Iterator<Item = &schema::EmbeddedResource> {
        self.blocks.iter().filter_map(|b| match b {
            ContentBlock::Resource(resource) => Some(resource),
            _ => None,
        })
    }

    /// The images (needs `prompt(image)`).
    pub fn images(&self) -> impl Iterator<Item = &schema::ImageContent> {
        self.blocks.iter().filter_map(|b| match b {
            ContentBlock::Image(image) => Some(image),
            _ => None,
        })
    }

    /// The audio clips (needs `prompt(audio)`).
    pub fn audio(&self) -> impl Iterator<Item = &schema::AudioContent> {
        self.blocks.iter().filter_map(|b| match b {
            ContentBlock::Audio(audio) => Some(audio),
            _ => None,
        })
    }

    /// The content blocks as the client sent them.
    pub fn blocks(&self) -> &[ContentBlock] {
        &self.blocks
    }

    /// Takes the content blocks.
    pub fn into_blocks(self) -> Vec<ContentBlock> {
        self.blocks
    }

    /// The request's `_meta`, if the client sent one.
    pub fn meta(&self) -> Option<&schema::Meta> {
        self.meta.as_ref()
    }

    /// The slash command this prompt starts with: `Some(("web", rest))` for a first text
    /// block `/web agent client protocol`, where `rest` is the prompt without `/web` (its
    /// first block `agent client protocol`, and every other block).
    pub fn command(&self) -> Option<(&str, Prompt)> {
        let Some(ContentBlock::Text(first)) = self.blocks.first() else {
            return None;
        };
        let line = first.text.trim_start().strip_prefix('/')?;
        let end = line.find(char::is_whitespace).unwrap_or(line.len());
        let (name, rest) = line.split_at(end);
        if name.is_empty() {
            return None;
        }
        let rest = rest.trim_start();
        let mut blocks = Vec::with_capacity(self.blocks.len());
        if !rest.is_empty() {
            blocks.push(ContentBlock::from(rest.to_owned()));
        }
        blocks.extend(self.blocks[1..].iter().cloned());
        Some((
            name,
            Prompt {
                blocks,
                meta: self.meta.clone(),
            },
        ))
    }

    /// The first block the agent did not advertise it accepts, with its position and the
    /// capability it needs (text and resource links are always accepted).
    pub(crate) fn unaccepted(
        &self,
        accepted: &schema::PromptCapabilities,
    ) -> Option<(usize, &'static str, &'static str)> {
        self.blocks.iter().enumerate().find_map(|(i, b)| match b {
            ContentBlock::Image(_) if !accepted.image => Some((i, "an image", "image")),
            ContentBlock::Audio(_) if !accepted.audio => Some((i, "audio", "audio")),
            ContentBlock::Resource(_) if !accepted.embedded_context => {
                Some((i, "an embedded resource", "embeddedContext"))
            }
            _ => None,
        })
    }
}

impl From<&str> for Prompt {
    fn from(text: &str) -> Self {
        Prompt::new(vec![text.into()])
    }
}

/// What an `#[acp::command]` method takes as its input: the text after `/name`
/// ([`String`]), or the whole rest of the prompt ([`Prompt`], with images and links).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the input of an #[acp::command]",
    label = "a command's input is `String` (the text after `/name`) or `acp::Prompt` (the rest of the prompt)",
    note = "write `async fn name(&self, cx: &acp::Session, input: String) -> acp::Result<acp::StopReason>`"
)]
pub trait CommandInput: Sized + Send {
    /// The input, from the prompt without its `/name`.
    fn from_prompt(prompt: Prompt) -> Self;
}

impl CommandInput for String {
    fn from_prompt(prompt: Prompt) -> Self {
        prompt.text()
    }
}

impl CommandInput for Prompt {
    fn from_prompt(prompt: Prompt) -> Self {
        prompt
    }
}

/// The agent's tools, as its sessions reach them at run time.
impl<A: Agent> ToolHost for A {
    fn tools(&self) -> Vec<ToolDef> {
        Agent::tools(self)
    }

    fn call_tool<'a>(
        &'a self,
        cx: &'a Session,
        name: &'a str,
        args: serde_json::Value,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<ToolOutput>> + Send + 'a>> {
        Box::pin(Agent::call_tool(self, cx, name, args))
    }

    fn check_tool<'a>(
        &'a self,
        cx: &'a Session,
        name: &'a str,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<()>> + Send + 'a>> {
        Box::pin(Agent::check_tool(self, cx, name))
    }
}
