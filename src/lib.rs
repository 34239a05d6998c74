//! # acp — Agent Client Protocol agents as plain async functions
//!
//! [ACP](https://agentclientprotocol.com) connects code editors (Zed, JetBrains, neovim, …) to
//! coding agents over JSON-RPC on stdio. With this crate an agent is an ordinary Rust type:
//! write its prompt turn and its tools as async methods, put [`#[acp::agent]`](macro@agent) on
//! the impl, and call [`serve_stdio`]. The runtime does the protocol: routing, capability
//! advertisement, session and tool-call ids, tool-call status updates, permission round trips
//! (remembering "always"), cancellation, ordering, and the JSON-RPC errors the spec names.
//!
//! ```no_run
//! use std::path::PathBuf;
//! use acp::{Prompt, Session, StopReason};
//!
//! struct Reader;
//!
//! #[acp::agent(name = "reader")]
//! impl Reader {
//!     async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
//!         let text = self.read(cx, prompt.text().trim().into()).await?; // a tool call the user sees
//!         cx.message(format!("{} lines", text.lines().count())).await?;
//!         Ok(StopReason::EndTurn)
//!     }
//!
//!     /// Reads a text file through the editor.
//!     #[acp::tool(kind = "read", title = "Read {path}")]
//!     async fn read(&self, cx: &Session, path: PathBuf) -> acp::Result<String> {
//!         cx.fs().read_text_file(&path).await
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> acp::Result<()> {
//!     acp::init_logging(); // tracing to stderr
//!     acp::serve_stdio(Reader).await
//! }
//! ```
//!
//! Where to go next:
//! - [`Session`]: everything a turn says to the editor (messages, thoughts, plans, files,
//!   terminals, permission, cancellation, per-session state);
//! - [`macro@agent`] and [`macro@tool`]: every option, and what a tool call does;
//! - [`macro@JsonSchema`]: the derive your own tool parameter types need;
//! - [`Agent`]: the trait the macro implements, to write by hand if you prefer;
//! - [`Session::tools`] / [`Session::call_tool`]: the agent's tools and those of the MCP
//!   servers the editor gave the session, which the runtime connects (stdio always, streamable
//!   HTTP with feature `mcp-http` and the legacy HTTP+SSE transport with feature `mcp-sse`);
//!   [`Session::mcp_status`] says which failed;
//! - `llm` (feature `llm`): a language model in the loop — OpenAI-compatible and Anthropic
//!   providers, streamed, and `llm::Model::run`, which runs a turn through the session's tools;
//! - [`testing`]: an in-process editor to unit-test an agent with (feature `testing`);
//! - [`schema`]: the protocol's wire types, from the official schema crate.
//!
//! Never print to stdout in an agent: stdout carries protocol frames only. Log with `tracing`
//! (see [`init_logging`]).
//!
//! # Features
//!
//! The package is `acp-framework`; its library is `acp`. No feature is on by default, and
//! each only adds.
//!
//! - `testing` (off by default): [`testing`], the scripted editor for an agent's tests. Turn
//!   it on for tests only, so the agent you ship does not compile it:
//!
//!   ```toml
//!   [dependencies]
//!   acp-framework = "0.1"
//!
//!   [dev-dependencies]
//!   acp-framework = { version = "0.1", features = ["testing"] }
//!   ```
//! - `llm` (off by default): `acp::llm`, a model in the loop (OpenAI Chat Completions, OpenAI
//!   Responses and Anthropic Messages providers, streamed; `llm::Model::run`; `llm::scripted` for tests).
//! - `postgres` (off by default): `acp::store::PostgresStore`, sessions in a PostgreSQL
//!   database that several replicas of an agent share (with ownership leases), picked with no
//!   code by `ACP_DATABASE_URL=postgres://…` (see [`store`]).
//! - `http` (off by default): `acp::net`, the agent as a network service: WebSocket and
//!   Streamable HTTP on `/acp` behind a bearer token (`Server::serve_http`,
//!   `Server::router` for an axum app); [`serve_main`] then serves it with `--listen ADDR`
//!   and `$ACP_TOKEN` (stdio otherwise).
//! - `mcp-http` and `mcp-sse` (off by default): the client's MCP servers over streamable HTTP
//!   and over the legacy HTTP+SSE transport, advertised as `mcpCapabilities.http` / `.sse`
//!   exactly when compiled in (stdio servers are always supported). Without them the agent
//!   does not link an HTTP client (a third of a stdio agent's crates, half its cold build).
//! - `v2` (off by default): ACP protocol v2 (Preview) beside v1, negotiated per connection;
//!   without it a client asking for 2 is answered 1. Not a default because it turns on the
//!   schema crate's `unstable_protocol_v2`, which removes `ProtocolVersion::LATEST` for every
//!   crate in the build.
//!
#![cfg_attr(feature = "testing", doc = "[`testing`]: crate::testing")]
#![cfg_attr(not(feature = "testing"), doc = "[`testing`]: #features")]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub use acp_core::{
    Agent, Choice, Client, CommandInput, Compaction, ConfigKind, ConfigOption, ConfigSpec,
    ConfigValue, Elicited, Error, Fs, McpPermission, McpState, McpStatus, Modes, Persist,
    PersistLog, Persisted, Prompt, Requirement, Result, SESSION_PLAN, Server, Session,
    SessionSetup, Settings, Subagent, Terminal, Terminals, ToolCallBuilder, ToolCallGuard, ToolDef,
    ToolOutput, in_tool_call, schema, serve, serve_main, serve_stdio,
};

#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use acp_core::net;

#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub use acp_core::testing;

#[cfg(feature = "llm")]
#[cfg_attr(docsrs, doc(cfg(feature = "llm")))]
pub use acp_core::llm;

pub use acp_core::{IntoToolOutput, Json, ToolLocations};

pub use acp_core::store;

/// Derives [`JsonSchema`](trait@JsonSchema), the JSON Schema a model reads to call a tool with
/// a parameter of this type, for a crate that depends on `acp` alone.
///
/// ```
/// use acp::{Agent, Prompt, Session, StopReason};
///
/// /// How deep to search.
/// #[derive(serde::Serialize, serde::Deserialize, acp::JsonSchema)]
/// #[serde(rename_all = "camelCase")]
/// struct Depth {
///     /// Directories below the start, at most.
///     max_depth: u32,
/// }
///
/// struct Finder;
///
/// #[acp::agent]
/// impl Finder {
///     async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
///         Ok(StopReason::EndTurn)
///     }
///
///     /// Finds files by name.
///     #[acp::tool(kind = "search")]
///     async fn find(&self, _cx: &Session, name: String, depth: Depth) -> acp::Result<String> {
///         Ok(format!("{name} within {}", depth.max_depth))
///     }
/// }
///
/// let schema = &Finder.tools()[0].input_schema;
/// assert_eq!(schema["$defs"]["Depth"]["properties"]["maxDepth"]["type"], "integer");
/// ```
///
/// It is [schemars](https://docs.rs/schemars)' own derive, so its `#[schemars(…)]` and
/// `#[serde(…)]` attributes work, told to find schemars inside `acp`. It names the facade
/// `::acp`; with a renamed dependency, depend on `schemars` and derive `schemars::JsonSchema`.
pub use acp_macros::JsonSchema;
#[doc(no_inline)]
pub use json_schema::*;

/// The trait alone: `acp::JsonSchema` names the derive above in the macro namespace.
mod json_schema {
    pub use schemars::JsonSchema;
}

/// Turns an inherent `impl` block into an ACP agent: `impl acp::Agent` is generated from the
/// methods it holds.
///
/// ```no_run
/// use std::path::PathBuf;
/// use acp::{Diff, Prompt, Session, StopReason};
///
/// /// A tiny agent that edits files in the user's editor.
/// struct Scribe;
///
/// #[acp::agent(name = "scribe", title = "Scribe", version = env!("CARGO_PKG_VERSION"))]
/// impl Scribe {
///     async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
///         let path = cx.cwd().join("NOTES.md");
///         let notes = self.read(cx, path.clone()).await?;
///         self.write(cx, path, format!("{notes}- {}\n", prompt.text())).await?;
///         cx.message("Noted.").await?;
///         Ok(StopReason::EndTurn)
///     }
///
///     /// Reads a text file through the editor; a missing file is empty.
///     #[acp::tool(kind = "read", title = "Read {path}")]
///     async fn read(&self, cx: &Session, path: PathBuf) -> acp::Result<String> {
///         match cx.fs().read_text_file(&path).await {
///             Err(e) if e.is_not_found() => Ok(String::new()),
///             other => other,
///         }
///     }
///
///     /// Writes a text file through the editor.
///     #[acp::tool(kind = "edit", title = "Write {path}", permission)]
///     async fn write(&self, cx: &Session, path: PathBuf, content: String) -> acp::Result<Diff> {
///         let old = cx.fs().read_text_file(&path).await.ok();
///         cx.fs().write_text_file(&path, &content).await?;
///         Ok(Diff::new(cx.cwd().join(path), content).old_text(old))
///     }
/// }
///
/// #[tokio::main]
/// async fn main() -> acp::Result<()> {
///     acp::serve_stdio(Scribe).await
/// }
/// ```
///
/// # Options
///
/// | option | meaning | default |
/// | --- | --- | --- |
/// | `name = expr` | `agentInfo.name` in the `initialize` answer (anything `Into<String>`) | `env!("CARGO_PKG_NAME")` of your crate |
/// | `title = expr` | `agentInfo.title`, shown by clients | none |
/// | `version = expr` | `agentInfo.version` | `env!("CARGO_PKG_VERSION")` of your crate |
/// | `prompt(image, audio, embedded_context)` | prompt capabilities: the content the client may send in a prompt; anything else is refused with `-32602` naming the block | text and resource links only |
/// | `system_prompt`, `system_prompt(override)` | the editor's system prompt is taken (`sessionCapabilities.systemPrompt`, `append` mode; with `override`, that mode too): read it with [`Session::system_prompt`] / [`Session::instructions`]; `acp::llm`'s `Model::run` applies it. A prompt in another mode, or with other than text, is refused with `-32602` and no session opens | not taken: a `systemPrompt` is refused with `-32602` |
/// | `modes = Type` | the session's modes: a [`Modes`](trait@Modes) type (`#[derive(acp::Modes)]`), offered as `modes` and as the `mode` config option, answered by the runtime (see [`Session::mode`]) | no modes |
/// | `config(TypeA, TypeB, …)` | the session's config options, in this order: [`ConfigOption`](trait@ConfigOption) types (`#[derive(acp::ConfigOption)]`), answered by the runtime (see [`Session::config`]) | no options |
/// | `crate = path` (or `crate = "path"`) | where the `acp` crate is, for a renamed dependency or a re-export | `::acp` |
///
/// MCP transports are not an option: the runtime connects the client's MCP servers itself
/// and advertises exactly the transports compiled in (features `mcp-http`, `mcp-sse`).
///
/// # Methods it recognises
///
/// Methods are recognised by name; their signatures are checked, and everything else in the
/// block is left as written. `prompt` is required; each optional one that exists is routed,
/// and advertised where the protocol advertises it (nothing advertised that is not
/// implemented):
///
/// | method | signature | effect |
/// | --- | --- | --- |
/// | `prompt` | `async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason>` | one prompt turn ([`Agent::prompt`]); required |
/// | `new_session` | `async fn new_session(&self, cx: &Session) -> acp::Result<SessionSetup>` | extra slash commands and the answer's `_meta` for a new session (modes and options are declared) |
/// | `load_session` | `async fn load_session(&self, cx: &Session) -> acp::Result<SessionSetup>` | the setup of a reopened session, not its history: with sessions recorded (the default) the runtime answers `session/load` (replaying the conversation) and `session/resume` itself, then calls this instead of `new_session`, so do not replay here; without a store ([`Server::no_store`], [`serve`]) it is all of `session/load`: replay through `cx`, then return; advertises `loadSession` |
/// | `auth_methods` | `fn auth_methods(&self) -> Vec<schema::AuthMethod>` | the authentication methods advertised in `initialize` (terminal ones only to clients with `auth.terminal`); needs `authenticate` |
/// | `authenticate` | `async fn authenticate(&self, cx: &Client, method: schema::AuthMethodId) -> acp::Result<()>` | the `authenticate` request, for one of the advertised methods of type `agent`; needs `auth_methods` |
/// | `authenticated` | `async fn authenticated(&self, cx: &Client) -> bool` | whether the user is authenticated: `false` answers `session/new`, `load`, `resume`, `list` and `delete` with `-32000 Authentication required`; needs `auth_methods` |
/// | `logout` | `async fn logout(&self, cx: &Client) -> acp::Result<()>` | the `logout` request; advertises `auth.logout`; needs `auth_methods` |
///
/// `acp::Result<T>` may be any `Result<T, E>` whose `E` has `From<acp::Error>` and `Display`
/// (and is `Send + 'static`), e.g. `anyhow::Result<StopReason>`, so `?` works on any error.
/// The error is turned back into an [`Error`]: unchanged when it is one (also inside an
/// `anyhow::Error`), so `Error::Cancelled` still ends the turn as cancelled; otherwise its
/// message (with its causes) is answered as `-32603`.
///
/// The rest of [`Agent`] is written by the macro: `info` from the options, `capabilities`
/// from the methods and options, `tools` and `call_tool` from the `#[acp::tool]` methods. A
/// method named like one of those, or a near miss of a recognised name (`promt`,
/// `new_sesion`), is an error saying what to write instead, since it would never be called;
/// helpers with such names belong in another `impl` block.
///
/// Every `#[acp::tool]` method becomes a tool: [`Agent::tools`] lists their definitions (name,
/// description, kind, title, permission policy, JSON Schema of the parameters) and
/// [`Agent::call_tool`] / [`Session::call_tool`] run one by name with JSON arguments. Every
/// [`#[acp::command]`](macro@command) method becomes a slash command, and every
/// [`#[acp::ext("_…")]`](macro@ext) method an extension request or notification.
///
/// Generics and `where` clauses on the impl carry over to the generated impl, and so do
/// `#[cfg(...)]` attributes on methods (a tool compiled out is not listed). Futures must be
/// `Send` (the runtime is multi-threaded); a method whose future is not is reported at that
/// method only.
///
/// # Errors
///
/// Mistakes are reported together, at your code, with what to write instead: a missing or
/// misshapen `prompt`, a wrong return type (one error at it, quoting the expected signature),
/// an unknown or repeated option (the valid ones are listed), an unknown tool kind, a
/// duplicate tool name, a title placeholder that is not a parameter, a tool that is not
/// `async`, lacks the `&Session` parameter, takes a reference (`&str`: use `String`) or does
/// not return a `Result`, a parameter type that is not `Serialize + Deserialize + JsonSchema`
/// (one error at it), an error type without `From<acp::Error>`, a future that is not `Send`,
/// a `modes`/`config` type that is not one (at the type), a command or extension method of
/// the wrong shape, an extension name without its leading `_`.
/// The impl is still emitted (with a stand-in `Agent` impl) so the rest of the crate and the
/// IDE keep working.
#[doc(inline)]
pub use acp_macros::agent;

/// Marks a method of an [`#[acp::agent]`](macro@agent) impl as a tool: a step the user sees in
/// the editor, that a model can call by name.
///
/// ```no_run
/// use std::path::PathBuf;
/// use acp::{Json, Prompt, Session, StopReason};
///
/// #[derive(serde::Serialize)]
/// struct Count { lines: usize }
///
/// struct Counter;
///
/// #[acp::agent(name = "counter")]
/// impl Counter {
///     async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
///         // A typed call…
///         let count = self.count(cx, prompt.text().into()).await?;
///         // …and the same tool by name, as a model would pick it.
///         let output = cx.call_tool("count_lines", serde_json::json!({ "path": "a.txt" })).await?;
///         cx.message(format!("{} / {}", count.0.lines, output.to_text())).await?;
///         Ok(StopReason::EndTurn)
///     }
///
///     /// Counts the lines of a file.
///     ///
///     /// # Arguments
///     /// - `path`: the file, relative to the session's directory.
///     #[acp::tool(kind = "search", title = "Count lines in {path}", name = "count_lines")]
///     async fn count(&self, cx: &Session, path: PathBuf) -> acp::Result<Json<Count>> {
///         let text = cx.fs().read_text_file(&path).await?;
///         Ok(Json(Count { lines: text.lines().count() }))
///     }
/// }
/// ```
///
/// # Options
///
/// | option | meaning | default |
/// | --- | --- | --- |
/// | `kind = "…"` | the icon the client shows: `read`, `edit`, `delete`, `move`, `search`, `execute`, `think`, `fetch`, `switch_mode`, `other` | `other` |
/// | `title = "…"` | the title shown, with `{param}` placeholders filled from the arguments (`{{`/`}}` for braces); placeholders are checked at compile time | the tool's name |
/// | `permission` (or `permission = bool`) | ask the user before running | no |
/// | `check = Self::may_run` | a method of the impl, `fn may_run(&self, cx: &Session) -> acp::Result<()>` (or `async fn`), run before the permission request: an `Err` refuses the call (shown failed with the error's message, the user is not asked, the body does not run, the call returns the error); it also runs before each model call of `acp::llm::Model::run`, and a tool it refuses is not offered to the model (`cx.available_tools()`) | none |
/// | `name = "…"` | the tool's name for calls by name (1–64 of `A-Za-z0-9_-`, unique) | the method's name |
/// | `requires(terminal, fs, fs_read, fs_write)` | client capabilities the tool cannot run without: with a client lacking one (and no [`Server::local_fallback`] doing it locally), the tool is left out of [`Session::tools`] and a call fails with [`Error::Unsupported`] before anything is sent | none |
///
/// # The method
///
/// `async fn name(&self, cx: &Session, param: Type, …) -> Result<T, E>`. The parameters after
/// `cx` are the tool's input: each is a JSON property of the same name, so its type must be
/// an owned `Serialize + Deserialize + JsonSchema` type — derive
/// `serde::Serialize, serde::Deserialize, acp::JsonSchema` on your own types (an `Option`
/// parameter may be left out).
/// The description of the tool, and of each parameter, comes from the doc comment: list the
/// parameters as `` - `name`: description `` (an `# Arguments` section holding them is left
/// out of the tool's description). Parameters typed `PathBuf`, `Option<PathBuf>` or
/// `Vec<PathBuf>` are sent as the call's locations, so the client can follow along.
///
/// `T` is shown as the call's content (see [`IntoToolOutput`]: `String`, [`Diff`],
/// [`Terminal`], [`ToolOutput`], [`Json`] for any serializable value, `()`…). `E` is
/// [`Error`], or any error type with `From<acp::Error>` and `Display` such as
/// `anyhow::Error`.
///
/// # What a call does
///
/// The signature is left alone; the body is wrapped, so a typed call
/// (`self.write(cx, …).await`) and a call by name run the same lifecycle:
///
/// 1. `tool_call` (pending) with the title, kind, `rawInput` and locations;
/// 2. with `check`, the check: an error fails the call with its message and is returned, so
///    a tool refused in the session's state (e.g. its mode) never reaches the user;
/// 3. with `permission`, `session/request_permission` offering allow once / allow always /
///    reject once / reject always (option ids `allow_once`, `allow_always`, `reject_once`,
///    `reject_always`); an *always* answer is remembered for this tool in this session and
///    not asked again; a rejection fails the call and returns [`Error::PermissionDenied`];
/// 4. `tool_call_update` in progress;
/// 5. the body, raced with the turn's cancellation (a cancelled turn fails the call and
///    returns [`Error::Cancelled`]) and guarded against panics (the call fails, an error is
///    returned, the process lives on);
/// 6. `tool_call_update` completed with the output, or failed with the error's message.
///
/// Called by name with arguments that do not fit, the call is shown failed and returns
/// [`Error::InvalidParams`] describing every problem, ready to hand back to a model.
///
/// Outside an `#[acp::agent]` impl this attribute is an error.
#[doc(inline)]
pub use acp_macros::tool;

pub use acp_core::schema::{
    ContentBlock, Cost, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, StopReason,
    ToolCallContent, ToolKind, UsageUpdate,
};

/// Derives [`ConfigOption`](trait@ConfigOption): a session setting the user changes in the
/// editor, declared with `#[acp::agent(config(MyOption))]` and read with
/// [`Session::config`].
///
/// - On an **enum of unit variants**, a choice (`type: "select"`): each variant is a value,
///   its id the variant's name in snake_case, its label the name in words, its description
///   the variant's doc comment. Sessions start at the `#[default]` variant (else the first).
/// - On a **`struct Name(bool)`**, a switch (`type: "boolean"`), offered only to clients that
///   advertise boolean config options; sessions start off unless `#[config(default = true)]`.
///
/// The option's id is the type's name in snake_case, its label the name in words and its
/// description the type's doc comment. `#[config(id = "…", name = "…", category = "…")]` on
/// the type changes them (categories: `model`, `model_config`, `thought_level`, `mode`, or a
/// custom one starting with `_`); `#[config(id = "…", name = "…")]` on a variant changes that
/// value's.
///
/// ```
/// /// Which model answers.
/// #[derive(acp::ConfigOption, Clone, Copy, Default, PartialEq, Debug)]
/// #[config(category = "model")]
/// enum Model {
///     /// Quick answers.
///     #[default]
///     Fast,
///     /// Careful answers.
///     #[config(name = "Deep thought")]
///     Deep,
/// }
///
/// use acp::ConfigOption;
/// let spec = Model::spec();
/// assert_eq!((spec.id, spec.name, spec.category), ("model", "Model", Some("model")));
/// assert_eq!(Model::from_value(acp::ConfigValue::Choice("deep")), Some(Model::Deep));
/// ```
pub use acp_macros::ConfigOption;

/// Derives [`Modes`](trait@Modes): the session's modes, one per variant of an enum of unit
/// variants, declared with `#[acp::agent(modes = MyModes)]`, read with [`Session::mode`] and
/// switched by the agent with [`Session::set_mode`].
///
/// The runtime offers them both as the session's `modes` and as a config option of category
/// `mode` (id `mode`), keeps the two in step, and answers `session/set_mode` with `-32602`
/// (listing the modes) for a mode that is not one. Each variant's id is its name in
/// snake_case, its label the name in words, its description its doc comment;
/// `#[mode(id = "…", name = "…")]` changes them. Sessions start in the `#[default]` mode
/// (else the first).
///
/// ```
/// #[derive(acp::Modes, Clone, Copy, Default, PartialEq, Debug)]
/// enum Mode {
///     /// Answers questions; never edits.
///     #[default]
///     Ask,
///     /// May edit files.
///     Code,
/// }
///
/// use acp::ConfigOption;
/// assert_eq!(Mode::spec().id, "mode");
/// assert_eq!(Mode::Code.to_value(), acp::ConfigValue::Choice("code"));
/// ```
pub use acp_macros::Modes;

/// Marks a method of an [`#[acp::agent]`](macro@agent) impl as a slash command: advertised to
/// the editor when a session starts (`available_commands_update`, the doc comment as its
/// description), and run — as a prompt turn — when a prompt starts with `/name`.
///
/// ```no_run
/// use acp::{Prompt, Session, StopReason};
///
/// struct Notes;
///
/// #[acp::agent(name = "notes")]
/// impl Notes {
///     async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
///         cx.message(prompt.text()).await?;
///         Ok(StopReason::EndTurn)
///     }
///
///     /// Forget everything noted so far.
///     #[acp::command]
///     async fn clear(&self, cx: &Session) -> acp::Result<StopReason> {
///         cx.message("Cleared.").await?;
///         Ok(StopReason::EndTurn)
///     }
///
///     /// Search the notes.
///     #[acp::command(hint = "words to look for")]
///     async fn find(&self, cx: &Session, words: String) -> acp::Result<StopReason> {
///         cx.message(format!("Looking for {words}…")).await?;
///         Ok(StopReason::EndTurn)
///     }
/// }
/// ```
///
/// `async fn name(&self, cx: &Session[, input]) -> acp::Result<StopReason>`: the input, if
/// any, is the text after `/name` (`String`) or the whole rest of the prompt (`acp::Prompt`,
/// with its images and links). Options: `name = "…"` (the name typed after `/`; default the
/// method's), `hint = "…"` (shown while the user types the input). The session's commands
/// can change while it runs ([`Session::set_commands`]); a prompt starting with a command
/// that is not (or no longer) among them reaches `prompt` as text. The runtime records the
/// prompt, cancels and answers the turn exactly as for `prompt`.
///
/// Outside an `#[acp::agent]` impl this attribute is an error.
#[doc(inline)]
pub use acp_macros::command;

/// Marks a method of an [`#[acp::agent]`](macro@agent) impl as an extension method: a
/// JSON-RPC request (or, with `notification`, a notification) outside the protocol, whose name
/// starts with `_` (`_vendor/name`).
///
/// ```no_run
/// use acp::{Client, Prompt, Session, StopReason};
///
/// #[derive(serde::Deserialize)]
/// struct StatsParams { path: String }
///
/// #[derive(serde::Serialize)]
/// struct Stats { lines: usize }
///
/// struct Indexer;
///
/// #[acp::agent(name = "indexer")]
/// impl Indexer {
///     async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
///         Ok(StopReason::EndTurn)
///     }
///
///     /// `_indexer/stats`: answered with typed params and result.
///     #[acp::ext("_indexer/stats")]
///     async fn stats(&self, _cx: &Client, params: StatsParams) -> acp::Result<Stats> {
///         Ok(Stats { lines: params.path.len() })
///     }
///
///     /// `_indexer/reindex`: a notification, never answered (an error is logged).
///     #[acp::ext("_indexer/reindex", notification)]
///     async fn reindex(&self, _cx: &Client, _params: serde_json::Value) -> acp::Result<()> {
///         Ok(())
///     }
/// }
/// ```
///
/// `async fn name(&self, cx: &Client, params: P) -> acp::Result<R>` with `P: Deserialize`
/// (params that do not fit are answered `-32602` naming the field) and `R: Serialize`; a
/// notification returns `acp::Result<()>`. Extension methods the agent does not declare are
/// answered `-32601` (requests) or ignored (notifications), as the protocol says. The agent
/// sends its own with [`Client::ext_request`] and [`Client::ext_notify`]; the request's
/// `_meta` is [`Client::request_meta`].
///
/// Outside an `#[acp::agent]` impl this attribute is an error.
#[doc(inline)]
pub use acp_macros::ext;

mod logging;
pub use logging::init_logging;

/// What the expansions of the macros name. Not a stable API: use the macros.
#[doc(hidden)]
pub mod __private;
