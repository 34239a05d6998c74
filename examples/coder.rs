//! # coder — a coding agent on a real model
//!
//! Point your editor at it: it reads, searches, edits and runs commands in your workspace with
//! the model you name, asking before it changes anything. The framework does the rest:
//! [`Model::run`] streams the model's text and reasoning, shows each tool call as soon as the
//! model names it, asks permission, runs it, feeds the result back, keeps the conversation
//! across restarts, and reports token usage.
//!
//! - Tools: `read` (with `line`/`limit`), `list` (a glob), `grep`, `write` and `edit` (search
//!   and replace), both shown as diffs, `run` (a command, in the editor's terminal when it
//!   offers one, locally otherwise), `plan` (the model keeps its plan up to date), `task` (a
//!   subagent: the model in a child session with the read-only tools, for research or a
//!   review), and the tools of the MCP servers the editor configured.
//! - The editor's system prompt (`append`, or `override` of coder's own), and `/compact`
//!   (the conversation is also compacted by itself near the context window).
//! - Modes: `code` (the default) and `ask`, where `write`, `edit` and `run` are refused before
//!   the user is asked.
//! - Model: a config option of category `model`: the main model, or `ACP_SMALL_MODEL` when set.
//!
//! Model: signed in, or from the environment. An editor starts agents with no environment of
//! its own, so coder starts anyway: it answers `initialize`, offers its sign-in, and refuses a
//! session with `-32000` (the protocol's "authentication required") naming what to do until
//! it has a model.
//! - **Sign in**: the editor's "Sign in" (a `terminal` auth method: the editor runs
//!   `coder --sign-in` in a terminal), or that command yourself. It asks for the provider (an
//!   OpenAI-compatible server: OpenAI, llama.cpp, vLLM, Ollama, LM Studio, OpenRouter…;
//!   OpenAI's Responses API; or Anthropic), its base URL, the model and the key, and keeps them in
//!   `~/.config/acp-coder/sign-in.json` (`$XDG_CONFIG_HOME`, or the platform's config
//!   directory; `$ACP_CONFIG_DIR` instead), created `0600`. The `saved-sign-in` method
//!   (`authenticate`) checks it; `logout` deletes it.
//! - **Environment** (wins when `ACP_MODEL` is set): an OpenAI-compatible server
//!   (`OPENAI_BASE_URL`, `OPENAI_API_KEY`) or Anthropic (`ANTHROPIC_API_KEY`); `ACP_MODEL`
//!   names the model.
//!
//! `ACP_SMALL_MODEL` and `ACP_CONTEXT_WINDOW` apply to both. The editor may send the model's
//! requests elsewhere (its gateway, with its headers) through the unstable `providers/*`
//! methods (feature `llm-providers`): the endpoint `main`.
//!
//! Try: `cargo run --example coder -- --sign-in`, then `target/debug/examples/coder` as the
//! editor's agent command; or `ACP_MODEL=gpt-4.1-mini OPENAI_API_KEY=… cargo run --example
//! coder` as the agent command.

use std::future::Future;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, RwLock};

use acp::llm::{
    Anthropic, Endpoint, EventStream, Model, OpenAi, OpenAiResponses, Provider, Request, Route,
};
use acp::schema::{
    AuthMethod, AuthMethodAgent, AuthMethodId, AuthMethodTerminal, ErrorCode, Meta, PlanEntry,
    PlanEntryPriority, PlanEntryStatus,
};
use acp::{Client, Diff, Prompt, Session, SessionSetup, StopReason};

/// How the agent works in this session.
#[derive(acp::Modes, Clone, Copy, Default, PartialEq, Eq, Debug)]
pub enum Mode {
    /// Answers questions; never edits files or runs commands.
    Ask,
    /// Reads, edits and runs commands, asking before each change.
    #[default]
    Code,
}

/// Which model answers.
#[derive(acp::ConfigOption, Clone, Copy, Default, PartialEq, Eq, Debug)]
#[config(id = "model", category = "model")]
pub enum ModelChoice {
    /// The model signed in with, or the one `ACP_MODEL` names.
    #[default]
    Main,
    /// The model `ACP_SMALL_MODEL` names: faster and cheaper.
    Small,
}

/// One step of the plan, as the model gives it.
#[derive(serde::Serialize, serde::Deserialize, acp::JsonSchema, Debug)]
pub struct Step {
    /// What the step does.
    pub step: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: PlanEntryStatus,
}

const SYSTEM: &str = "You are coder, a careful coding agent working in the user's workspace \
(the current directory). Read before you edit; prefer `edit` for small changes; run the \
project's tests after a change; for a task of several steps, keep a `plan` up to date. Paths \
are relative to the workspace. Be brief.";

/// The `type: "terminal"` sign-in the editor runs: `coder --sign-in` in a terminal.
pub const SIGN_IN_METHOD: &str = "sign-in";
/// The `type: "agent"` method: `authenticate` uses the saved sign-in (or the environment).
pub const SAVED_METHOD: &str = "saved-sign-in";
/// The argument that runs the terminal sign-in instead of serving ACP.
pub const SIGN_IN_ARG: &str = "--sign-in";
/// The variable naming the directory of the saved sign-in, instead of the user's config
/// directory's `acp-coder/` (`$XDG_CONFIG_HOME/acp-coder/` or `~/.config/acp-coder/` on Linux).
pub const CONFIG_DIR_VAR: &str = "ACP_CONFIG_DIR";
/// The saved sign-in's file name, in [`config_dir`].
pub const SIGN_IN_FILE: &str = "sign-in.json";

/// What a session answers while no model is configured: what to do about it.
pub const NOT_CONFIGURED: &str = "coder has no model yet: sign in (the editor's \"Sign in\", \
or run `coder --sign-in` in a terminal: it asks for the provider, the model and the key), or \
set ACP_MODEL and the provider's key in the agent's environment (OPENAI_API_KEY, with \
OPENAI_BASE_URL for another OpenAI-compatible server; or ANTHROPIC_API_KEY)";

/// The coding agent: one model per choice of the `model` option, once it knows which.
///
/// Made by [`Coder::from_config`] it may start with no model (an editor launches agents with
/// no environment of its own): it answers `initialize` all the same, advertises its sign-in,
/// and refuses a session with `-32000` naming what to do until there is one.
pub struct Coder {
    models: RwLock<Option<Arc<Models>>>,
    /// How to make the models once a configuration appears; `None` when made with its model
    /// ([`Coder::new`]).
    later: Option<Later>,
}

/// The models of a configured agent.
struct Models {
    main: Model,
    small: Model,
    /// Whether the saved sign-in configured them (`logout` forgets them then).
    from_sign_in: bool,
}

impl Models {
    fn new(model: Model, small: &str, from_sign_in: bool) -> Self {
        let main = model.system(SYSTEM);
        Models {
            small: main.with_name(small),
            main,
            from_sign_in,
        }
    }
}

/// What [`Coder::from_config`] keeps to make the models later.
struct Later {
    /// The provider of the configuration, once there is one.
    slot: Slot,
    /// The endpoint the editor may reroute (`providers/*`), calling `slot`: the models'.
    endpoint: Endpoint,
}

impl Coder {
    /// An agent answering with `model`, or with its provider's model `small` when the user
    /// picks the small one.
    pub fn new(model: Model, small: &str) -> Self {
        Coder {
            models: RwLock::new(Some(Arc::new(Models::new(model, small, false)))),
            later: None,
        }
    }

    /// An agent configured by the environment when `ACP_MODEL` is set, else by the saved
    /// sign-in ([`SignIn`]); with neither, configured at the first session after one appears.
    /// Also answers the endpoint `main` its models call, for
    /// [`Server::llm_providers`](acp::Server::llm_providers).
    pub fn from_config() -> (Self, Endpoint) {
        let slot = Slot::default();
        let endpoint = Endpoint::new("main", slot.clone());
        let coder = Coder {
            models: RwLock::new(None),
            later: Some(Later {
                slot,
                endpoint: endpoint.clone(),
            }),
        };
        // Configured now when it can be; otherwise the reason is the answer to a session.
        let _ = coder.models();
        (coder, endpoint)
    }

    /// The models, made first if there are none yet; else `-32000` saying what to do.
    /// The model the session chose (its `model` config option).
    fn model(&self, cx: &Session) -> acp::Result<Model> {
        let models = self.models()?;
        Ok(match cx.config::<ModelChoice>()? {
            ModelChoice::Main => models.main.clone(),
            ModelChoice::Small => models.small.clone(),
        })
    }

    fn models(&self) -> acp::Result<Arc<Models>> {
        if let Some(models) = &*self.models.read().unwrap_or_else(|e| e.into_inner()) {
            return Ok(models.clone());
        }
        let Some(later) = &self.later else {
            return Err(auth_required(NOT_CONFIGURED.to_owned()));
        };
        let mut models = self.models.write().unwrap_or_else(|e| e.into_inner());
        if let Some(models) = &*models {
            return Ok(models.clone());
        }
        let config = Config::find().map_err(auth_required)?;
        later.slot.set(Some(config.provider));
        let small = var("ACP_SMALL_MODEL").unwrap_or_else(|| config.model.clone());
        // `ACP_MAX_TOKENS`, `ACP_CONTEXT_WINDOW`, `ACP_TEMPERATURE`: read as every agent
        // built on `acp::llm` reads them.
        let main = Model::new(later.endpoint.clone(), config.model)
            .max_turn_requests(100)
            .with_env_settings()
            .map_err(|e| auth_required(e.to_string()))?;
        let made = Arc::new(Models::new(main, &small, config.from_sign_in));
        *models = Some(made.clone());
        Ok(made)
    }

    /// Forgets the models when the saved sign-in made them (the environment's stay).
    fn forget_sign_in(&self) {
        let mut models = self.models.write().unwrap_or_else(|e| e.into_inner());
        if let (Some(later), Some(true)) = (&self.later, models.as_ref().map(|m| m.from_sign_in)) {
            *models = None;
            later.slot.set(None);
        }
    }
}

/// `-32000 Authentication required` (what an editor answers by offering the sign-in), with
/// `message` saying what to do.
fn auth_required(message: String) -> acp::Error {
    acp::Error::Rpc {
        code: ErrorCode::AuthRequired.into(),
        message,
        data: None,
    }
}

/// A variable of the environment; empty counts as unset.
fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// A provider and a model: the environment's, or the saved sign-in's.
struct Config {
    provider: Arc<dyn Provider>,
    model: String,
    from_sign_in: bool,
}

impl Config {
    /// The environment's when `ACP_MODEL` is set (it wins: the README's commands and the
    /// tests set it), else the saved sign-in's; else what to do, as the error.
    fn find() -> Result<Config, String> {
        if var(acp::llm::MODEL_VAR).is_some() {
            let (provider, model) = acp::llm::from_env().map_err(|e| e.to_string())?;
            let model = model.ok_or_else(|| NOT_CONFIGURED.to_owned())?;
            return Ok(Config {
                provider,
                model,
                from_sign_in: false,
            });
        }
        let path = sign_in_path().ok_or_else(|| NOT_CONFIGURED.to_owned())?;
        let sign_in = match SignIn::load(&path) {
            Ok(Some(sign_in)) => sign_in,
            Ok(None) => return Err(NOT_CONFIGURED.to_owned()),
            Err(e) => {
                return Err(format!(
                    "cannot use the sign-in saved in {}: {e}; sign in again (`coder --sign-in`)",
                    path.display()
                ));
            }
        };
        Ok(Config {
            provider: sign_in.provider().map_err(|e| e.to_string())?,
            model: sign_in.model,
            from_sign_in: true,
        })
    }
}

/// The provider of the configuration, once there is one: the endpoint `main` is made at
/// start (the editor sees it in `providers/list` whatever the configuration), and calls it.
#[derive(Clone, Default)]
struct Slot(Arc<RwLock<Option<Arc<dyn Provider>>>>);

impl Slot {
    fn set(&self, provider: Option<Arc<dyn Provider>>) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = provider;
    }

    fn get(&self) -> Option<Arc<dyn Provider>> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Provider for Slot {
    fn stream<'a>(
        &'a self,
        request: Request<'a>,
    ) -> Pin<Box<dyn Future<Output = acp::Result<EventStream>> + Send + 'a>> {
        let provider = self.get();
        Box::pin(async move {
            match provider {
                Some(provider) => provider.stream(request).await,
                None => Err(auth_required(NOT_CONFIGURED.to_owned())),
            }
        })
    }

    fn route(&self) -> Option<Route> {
        self.get().and_then(|p| p.route())
    }
}

/// The provider a sign-in names.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI's Chat Completions API, at OpenAI or any compatible server (llama.cpp, vLLM,
    /// Ollama, LM Studio, OpenRouter…).
    OpenAi,
    /// OpenAI's Responses API (the only API of some current OpenAI models).
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// Anthropic's Messages API.
    Anthropic,
}

impl ProviderKind {
    /// Where its requests go by default.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::OpenAi | ProviderKind::OpenAiResponses => {
                acp::llm::openai::DEFAULT_BASE_URL
            }
            ProviderKind::Anthropic => acp::llm::anthropic::DEFAULT_BASE_URL,
        }
    }

    /// A client of its API at `base_url`; fails when that is not a URL.
    fn client(self, base_url: &str, api_key: Option<String>) -> acp::Result<Arc<dyn Provider>> {
        Ok(match self {
            ProviderKind::OpenAi => Arc::new(OpenAi::new(base_url, api_key)?),
            ProviderKind::OpenAiResponses => Arc::new(OpenAiResponses::new(base_url, api_key)?),
            ProviderKind::Anthropic => Arc::new(Anthropic::new(base_url, api_key)?),
        })
    }
}

/// The sign-in `coder --sign-in` asks for and keeps in [`sign_in_path`]: a JSON file of
/// exactly these fields, created readable and writable by the user only (`0600`, in a
/// directory it creates `0700`). The key is never logged nor shown (`Debug` hides it).
#[derive(serde::Serialize, serde::Deserialize, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SignIn {
    /// The API.
    pub provider: ProviderKind,
    /// Where its requests go, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// The model's name, e.g. `gpt-4.1-mini`.
    pub model: String,
    /// The API key; none for a local server that needs none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
}

impl std::fmt::Debug for SignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignIn")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "…"))
            .finish()
    }
}

impl SignIn {
    /// The sign-in saved in `path`; `None` when there is none.
    pub fn load(path: &Path) -> std::io::Result<Option<SignIn>> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Saves it in `path`, replacing what was there: written to a new file created `0600`
    /// (never readable by others, not even for a moment), then renamed over `path`; the
    /// directory is created `0700` if missing.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)?;
        let json = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        let temporary = dir.join(format!(".{SIGN_IN_FILE}.{}", std::process::id()));
        let _ = std::fs::remove_file(&temporary);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let written = options.open(&temporary).and_then(|mut file| {
            file.write_all(&json)?;
            file.sync_all()
        });
        match written.and_then(|()| std::fs::rename(&temporary, path)) {
            Ok(()) => Ok(()),
            Err(e) => {
                let _ = std::fs::remove_file(&temporary);
                Err(e)
            }
        }
    }

    /// A client of its provider.
    fn provider(&self) -> acp::Result<Arc<dyn Provider>> {
        self.provider.client(&self.base_url, self.api_key.clone())
    }
}

/// The directory of the saved sign-in: `$ACP_CONFIG_DIR`, else the user's config directory's
/// `acp-coder/` (`$XDG_CONFIG_HOME/acp-coder`, `~/.config/acp-coder` on Linux; `~/Library/
/// Application Support/acp-coder` on macOS); `None` with no home directory.
pub fn config_dir() -> Option<PathBuf> {
    var(CONFIG_DIR_VAR)
        .map(PathBuf::from)
        .or_else(|| dirs::config_dir().map(|d| d.join("acp-coder")))
}

/// The saved sign-in's file: [`SIGN_IN_FILE`] in [`config_dir`].
pub fn sign_in_path() -> Option<PathBuf> {
    config_dir().map(|d| d.join(SIGN_IN_FILE))
}

#[acp::agent(
    name = "coder",
    title = "Coder",
    modes = Mode,
    config(ModelChoice),
    system_prompt(override)
)]
impl Coder {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        self.model(cx)?.run(cx, &prompt).await
    }

    /// Summarise the conversation so far, keeping the last two turns (done by itself when
    /// the context window fills up).
    #[acp::command]
    async fn compact(&self, cx: &Session) -> acp::Result<StopReason> {
        if !self.model(cx)?.compact(cx).await? {
            cx.message("Nothing to compact yet.").await?;
        }
        Ok(StopReason::EndTurn)
    }

    /// Refuses a session (new, loaded or resumed) while no model is configured: `-32000`
    /// naming what to do.
    async fn new_session(&self, _cx: &Session) -> acp::Result<SessionSetup> {
        self.models()?;
        Ok(SessionSetup::default())
    }

    /// The sign-in an editor runs in a terminal (offered to editors that advertise
    /// `auth.terminal`), and the saved sign-in checked by `authenticate`, which also carries
    /// Zed's `_meta["terminal-auth"]` launch (the command, its arguments and a label: the
    /// editors that read it run it, then send `authenticate`).
    fn auth_methods(&self) -> Vec<AuthMethod> {
        let args = vec![SIGN_IN_ARG.to_owned()];
        let terminal = AuthMethodTerminal::new(SIGN_IN_METHOD, "Sign in")
            .description(
                "Asks in a terminal for the provider (an OpenAI-compatible server or \
                 Anthropic), the model and the API key, and keeps them in your config \
                 directory, readable by you only",
            )
            .args(args.clone());
        let mut saved = AuthMethodAgent::new(SAVED_METHOD, "Use the saved sign-in").description(
            "Uses what `coder --sign-in` saved (or ACP_MODEL and the provider's key in the \
             agent's environment); fails saying what to do when there is neither",
        );
        if let Ok(command) = std::env::current_exe() {
            let launch = serde_json::json!({
                "command": command,
                "args": args,
                "label": "Sign in to Coder",
            });
            saved = saved.meta(Meta::from_iter([("terminal-auth".to_owned(), launch)]));
        }
        vec![AuthMethod::Terminal(terminal), AuthMethod::Agent(saved)]
    }

    /// `saved-sign-in` (the runtime refuses the terminal method, which editors never send):
    /// succeeds when a model is configured, else `-32000` naming what to do.
    async fn authenticate(&self, _cx: &Client, _method: AuthMethodId) -> acp::Result<()> {
        self.models().map(drop)
    }

    /// Always: coder refuses sessions itself (`new_session`), saying what to do, where the
    /// runtime's gate could only say "authenticate"; recorded sessions are listed and
    /// deleted without a model.
    async fn authenticated(&self, _cx: &Client) -> bool {
        true
    }

    /// Deletes the saved sign-in and forgets the models it made (a model the environment
    /// configures stays: the environment wins).
    async fn logout(&self, _cx: &Client) -> acp::Result<()> {
        if let Some(path) = sign_in_path() {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e.into()),
            }
        }
        self.forget_sign_in();
        Ok(())
    }

    /// Refuses changes in ask mode, before the user is asked.
    fn may_change(&self, cx: &Session) -> acp::Result<()> {
        match cx.mode::<Mode>()? {
            Mode::Code => Ok(()),
            Mode::Ask => Err(acp::Error::msg(
                "refused in ask mode: the user must switch to code mode for changes",
            )),
        }
    }

    /// Reads a text file: all of it, or `limit` lines from the 1-based `line`.
    #[acp::tool(kind = "read", title = "Read {path}")]
    async fn read(
        &self,
        cx: &Session,
        path: PathBuf,
        line: Option<u32>,
        limit: Option<u32>,
    ) -> acp::Result<String> {
        cx.fs().read_lines(&path, line, limit).await
    }

    /// Lists the files under `dir` (default: the workspace) whose name matches `glob`
    /// (default: all), e.g. `*.rs`.
    #[acp::tool(kind = "search", title = "List {glob}")]
    async fn list(
        &self,
        cx: &Session,
        dir: Option<String>,
        glob: Option<String>,
    ) -> acp::Result<String> {
        let dir = dir.unwrap_or_else(|| ".".into());
        let glob = glob.unwrap_or_else(|| "*".into());
        let args = [
            &dir, "-path", "*/.git", "-prune", "-o", "-type", "f", "-name", &glob, "-print",
        ];
        command(cx, "find", &args).await
    }

    /// Searches the files under `dir` (default: the workspace) for a regular expression;
    /// answers `file:line:text` lines.
    #[acp::tool(kind = "search", title = "Grep {pattern}")]
    async fn grep(
        &self,
        cx: &Session,
        pattern: String,
        dir: Option<String>,
    ) -> acp::Result<String> {
        let dir = dir.unwrap_or_else(|| ".".into());
        let args = ["-rnIE", "--exclude-dir=.git", "-e", &pattern, &dir];
        command(cx, "grep", &args).await
    }

    /// Writes a whole file (creating it), shown as a diff.
    #[acp::tool(kind = "edit", title = "Write {path}", permission, check = Self::may_change)]
    async fn write(&self, cx: &Session, path: PathBuf, content: String) -> acp::Result<Diff> {
        let old = cx.fs().read_text_file(&path).await.ok();
        cx.fs().write_text_file(&path, content.clone()).await?;
        Ok(Diff::new(cx.cwd().join(&path), content).old_text(old))
    }

    /// Replaces `old` (which must occur exactly once in the file) with `new`, shown as a diff.
    #[acp::tool(kind = "edit", title = "Edit {path}", permission, check = Self::may_change)]
    async fn edit(
        &self,
        cx: &Session,
        path: PathBuf,
        old: String,
        new: String,
    ) -> acp::Result<Diff> {
        let text = cx.fs().read_text_file(&path).await?;
        match text.matches(&old).count() {
            1 => {}
            0 => return Err(acp::Error::msg("`old` is not in the file: read it again")),
            n => {
                return Err(acp::Error::msg(format!(
                    "`old` occurs {n} times: include more context"
                )));
            }
        }
        let changed = text.replacen(&old, &new, 1);
        cx.fs().write_text_file(&path, changed.clone()).await?;
        Ok(Diff::new(cx.cwd().join(&path), changed).old_text(Some(text)))
    }

    /// Runs a shell command in the workspace; answers its output and exit code.
    #[acp::tool(kind = "execute", title = "Run {command}", permission, check = Self::may_change)]
    async fn run(&self, cx: &Session, command: String) -> acp::Result<String> {
        self::command(cx, "sh", &["-c", &command]).await
    }

    /// Hands a self-contained task (research across files, a review) to a subagent with a
    /// fresh context and read-only tools; returns its findings.
    #[acp::tool(kind = "think", title = "{description}")]
    async fn task(&self, cx: &Session, description: String, prompt: String) -> acp::Result<String> {
        self.model(cx)?.task(cx, &description, &prompt).await
    }

    /// Replaces the plan shown to the user: every step, with its status.
    #[acp::tool(kind = "think", title = "Plan")]
    async fn plan(&self, cx: &Session, steps: Vec<Step>) -> acp::Result<String> {
        let entries = steps
            .into_iter()
            .map(|s| PlanEntry::new(s.step, PlanEntryPriority::Medium, s.status));
        cx.plan(entries).await?;
        Ok("plan updated".into())
    }
}

/// Runs `program` in the editor's terminal (shown in the tool call) or locally; answers its
/// output and exit code.
async fn command(cx: &Session, program: &str, args: &[&str]) -> acp::Result<String> {
    let terminal = cx.terminal().create(program, args.iter().copied()).await?;
    let status = terminal.wait_for_exit().await?;
    let output = terminal.output().await?;
    let code = status.exit_code.map_or("none".into(), |c| c.to_string());
    Ok(format!("{}\n(exit code {code})", output.output))
}

#[tokio::main]
async fn main() -> acp::Result<()> {
    if std::env::args().skip(1).any(|a| a == SIGN_IN_ARG) {
        std::process::exit(sign_in_on_terminal());
    }
    acp::init_logging();
    let (coder, endpoint) = Coder::from_config();
    // The editor may send the model's requests through its own gateway (`providers/set`).
    acp::Server::new(coder)
        .local_fallback(true)
        .llm_providers([endpoint])
        .serve_main()
        .await
}

/// `coder --sign-in`, the terminal sign-in: asks for the provider, the model and the key, saves
/// them ([`SignIn::save`]); exits 0 once saved, 1 otherwise (what an editor's terminal reads).
///
/// The one place coder talks to a person: this process is not serving ACP. Its questions go
/// to stderr all the same (in a terminal they show alike), so that whatever the arguments
/// coder never writes anything but ACP to stdout.
fn sign_in_on_terminal() -> i32 {
    let mut out = std::io::stderr();
    let Some(path) = sign_in_path() else {
        let _ = writeln!(
            out,
            "coder: no config directory to keep the sign-in in: set HOME or {CONFIG_DIR_VAR}"
        );
        return 1;
    };
    let mut input = std::io::stdin().lock();
    match ask_sign_in(&mut input, &mut out, &path).and_then(|s| s.save(&path).map(|()| s)) {
        Ok(sign_in) => {
            let _ = writeln!(
                out,
                "Signed in: {} at {}. Saved in {} (readable by you only).",
                sign_in.model,
                sign_in.base_url,
                path.display()
            );
            0
        }
        Err(e) => {
            let _ = writeln!(out, "coder: not signed in: {e}");
            1
        }
    }
}

/// Asks the sign-in's questions on `out`, reading the answers from `input`; asks again after
/// an answer it cannot use. Fails when `input` ends first.
fn ask_sign_in(
    input: &mut impl BufRead,
    out: &mut impl Write,
    path: &Path,
) -> std::io::Result<SignIn> {
    writeln!(
        out,
        "Sign in to coder: the model it works with, saved in {}.",
        path.display()
    )?;
    let provider = loop {
        let question = "Provider: 1 for an OpenAI-compatible server (OpenAI, llama.cpp, vLLM, \
                        Ollama, LM Studio, OpenRouter…), 2 for Anthropic, 3 for OpenAI's \
                        Responses API";
        match ask(input, out, question, Some("1"))?
            .to_lowercase()
            .as_str()
        {
            "1" | "openai" => break ProviderKind::OpenAi,
            "2" | "anthropic" => break ProviderKind::Anthropic,
            "3" | "openai-responses" => break ProviderKind::OpenAiResponses,
            _ => writeln!(out, "Answer 1, 2 or 3.")?,
        }
    };
    let base_url = loop {
        let url = ask(input, out, "Base URL", Some(provider.default_base_url()))?;
        match provider.client(&url, None) {
            Ok(_) => break url,
            Err(e) => writeln!(out, "{e}")?,
        }
    };
    let model = loop {
        let model = ask(
            input,
            out,
            "Model (e.g. gpt-4.1-mini, claude-sonnet-4-5)",
            None,
        )?;
        if !model.is_empty() {
            break model;
        }
    };
    let hidden = std::io::stdin().is_terminal() && echo(false);
    let key = ask(
        input,
        out,
        "API key (empty for a server that needs none)",
        None,
    );
    if hidden {
        echo(true);
        writeln!(out)?;
    }
    let key = key?;
    Ok(SignIn {
        provider,
        base_url,
        model,
        api_key: (!key.is_empty()).then_some(key),
    })
}

/// One question, its default in brackets; the answer trimmed, or the default when empty.
fn ask(
    input: &mut impl BufRead,
    out: &mut impl Write,
    question: &str,
    default: Option<&str>,
) -> std::io::Result<String> {
    match default {
        Some(default) => write!(out, "{question} [{default}]: ")?,
        None => write!(out, "{question}: ")?,
    }
    out.flush()?;
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the input ended before the answers",
        ));
    }
    let answer = line.trim();
    Ok(match (answer, default) {
        ("", Some(default)) => default.to_owned(),
        _ => answer.to_owned(),
    })
}

/// Turns the terminal's echo on or off (so the key is not shown as it is typed); whether it
/// could.
fn echo(on: bool) -> bool {
    std::process::Command::new("stty")
        .arg(if on { "echo" } else { "-echo" })
        .stdin(std::process::Stdio::inherit())
        .status()
        .is_ok_and(|s| s.success())
}
