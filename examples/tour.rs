//! # tour — everything an agent can offer an editor, each declared in a line or two
//!
//! An agent that advertises every capability the runtime supports, as a map of where each
//! one is declared:
//! - **modes** and **config options** (a model picker and an on/off switch): types with
//!   `#[derive(acp::Modes)]` / `#[derive(acp::ConfigOption)]`, named in `#[acp::agent]`;
//! - **slash commands**: `#[acp::command]` methods;
//! - **authentication**: an API-key method the agent handles (`authenticate`), a terminal
//!   login the editor runs (`tour --login`), `authenticated` gating new sessions, `logout`;
//! - **extension methods**: `_tour/stats` (a request) and `_tour/ping` (a notification);
//! - **prompt content**: images, audio and embedded resources (`prompt(...)`);
//! - **tools** that need the editor's terminal or files (`requires(...)`);
//! - **elicitation**: `/ask` asks the user to fill in a form derived from a type;
//! - the session's **title** and **context usage** (`/title`, `/usage`);
//! - the editor's **system prompt** (`system_prompt` in `#[acp::agent]`, read with
//!   `cx.system_prompt()`: `/instructions`);
//! - a **Markdown plan** with its file (`/plan`), a **notice** (`/notice`), a **context
//!   compaction** (`/compact`), a **subagent** that runs in a child session (`/delegate`),
//!   and **prompt suggestions** (`/suggest`, Unstable): one call each, which the runtime
//!   shows each editor as it can (`plan_update` or a legacy checklist; a notice only where
//!   notices are shown; a child session or text inside the tool call);
//! - and, from the runtime with no code: session history (list, load, resume, close,
//!   delete) and the editor's MCP servers (stdio, HTTP, SSE).
//!
//! Run it under a real client: `./scripts/demo tour "/help" "/title My tour" "hello"` (the
//! demo client authenticates with the API-key method when asked to), or point your editor's
//! agent server setting at `target/debug/examples/tour`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use acp::schema::{
    AuthMethod, AuthMethodAgent, AuthMethodId, AuthMethodTerminal, Cost, Notice, NoticeSeverity,
    PromptSuggestion, UsageUpdate,
};
use acp::{Client, Elicited, Prompt, Session, StopReason, Subagent};

/// How the agent works in this session.
#[derive(acp::Modes, Clone, Copy, Default, Debug, PartialEq)]
pub enum Mode {
    /// Answers questions; never edits.
    #[default]
    Ask,
    /// May edit files.
    Code,
}

/// Which model answers.
#[derive(acp::ConfigOption, Clone, Copy, Default, Debug, PartialEq)]
#[config(category = "model")]
pub enum Model {
    /// Quick answers.
    #[default]
    Fast,
    /// Careful answers.
    Deep,
}

/// Skip confirmations (offered to editors that show on/off switches).
#[derive(acp::ConfigOption, Clone, Copy, Default, Debug, PartialEq)]
#[config(id = "brave", name = "Brave mode")]
pub struct Brave(pub bool);

/// What `_tour/stats` takes.
#[derive(serde::Deserialize)]
pub struct StatsParams {
    /// The words to count.
    pub words: Vec<String>,
}

/// What `_tour/stats` answers.
#[derive(serde::Serialize)]
pub struct Stats {
    /// How many words there were.
    pub count: usize,
}

/// The form `/ask` shows.
#[derive(serde::Deserialize, acp::JsonSchema)]
pub struct Feedback {
    /// How you rate the tour, 1 to 5.
    #[schemars(range(min = 1, max = 5))]
    pub rating: u8,
    /// Anything else?
    pub comment: Option<String>,
}

/// The agent. `logged_in` stands for credentials an agent would keep on disk.
#[derive(Default)]
pub struct Tour {
    logged_in: AtomicBool,
    pings: AtomicUsize,
}

#[acp::agent(
    name = "tour",
    title = "Tour",
    prompt(image, audio, embedded_context),
    modes = Mode,
    config(Model, Brave),
    system_prompt
)]
impl Tour {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let extra = prompt.images().count() + prompt.audio().count() + prompt.resources().count();
        let reply = format!(
            "[{:?}, {:?}{}] {} ({extra} attachments)",
            cx.mode::<Mode>()?,
            cx.config::<Model>()?,
            if cx.config::<Brave>()?.0 {
                ", brave"
            } else {
                ""
            },
            prompt.text()
        );
        cx.message(reply).await?;
        Ok(StopReason::EndTurn)
    }

    /// List the commands.
    #[acp::command]
    async fn help(&self, cx: &Session) -> acp::Result<StopReason> {
        let names: Vec<_> = cx
            .commands()
            .iter()
            .map(|c| format!("/{}", c.name))
            .collect();
        let pings = self.pings.load(Ordering::Relaxed);
        cx.message(format!(
            "Commands: {} (pinged {pings} times)",
            names.join(", ")
        ))
        .await?;
        Ok(StopReason::EndTurn)
    }

    /// Name this session.
    #[acp::command(hint = "the new title")]
    async fn title(&self, cx: &Session, title: String) -> acp::Result<StopReason> {
        cx.title(title).await?;
        Ok(StopReason::EndTurn)
    }

    /// Show the context meter.
    #[acp::command]
    async fn usage(&self, cx: &Session) -> acp::Result<StopReason> {
        cx.usage(UsageUpdate::new(1_200, 200_000).cost(Cost::new(0.01, "USD")))
            .await?;
        Ok(StopReason::EndTurn)
    }

    /// Show the editor's instructions for this session.
    #[acp::command]
    async fn instructions(&self, cx: &Session) -> acp::Result<StopReason> {
        let said = cx
            .instructions(None)
            .unwrap_or_else(|| "No instructions from the editor.".into());
        cx.message(said).await?;
        Ok(StopReason::EndTurn)
    }

    /// Publish the tour's plan, kept in TOUR.md.
    #[acp::command]
    async fn plan(&self, cx: &Session) -> acp::Result<StopReason> {
        let plan = "# Tour\n\n- [x] Modes and options\n- [x] Commands\n- [ ] Subagents\n";
        cx.markdown_plan(plan, Some("TOUR.md".into())).await?;
        Ok(StopReason::EndTurn)
    }

    /// Tell the user something outside the conversation.
    #[acp::command]
    async fn notice(&self, cx: &Session) -> acp::Result<StopReason> {
        let notice = Notice::new(NoticeSeverity::Info, "The tour is half way through");
        if !cx.notice(notice).await? {
            cx.message("(this editor shows no notices)").await?;
        }
        Ok(StopReason::EndTurn)
    }

    /// Summarise the conversation so far.
    #[acp::command]
    async fn compact(&self, cx: &Session) -> acp::Result<StopReason> {
        let compaction = cx.compaction().await?;
        compaction.summary("The user is taking the tour.").await?;
        compaction.completed().await?;
        Ok(StopReason::EndTurn)
    }

    /// Hand a job to a guide that runs in a session of its own.
    #[acp::command(hint = "what the guide should do")]
    async fn delegate(&self, cx: &Session, job: String) -> acp::Result<StopReason> {
        let guide = Subagent::new("Guide").instructions(job.clone());
        let found = cx
            .subagent(guide, |child| async move {
                child.message(format!("Looking into: {job}\n")).await?;
                Ok("the tour has 5 stops".to_owned())
            })
            .await?;
        cx.message(format!("The guide says {found}.")).await?;
        Ok(StopReason::EndTurn)
    }

    /// Offer the user a next prompt (Unstable: prompt suggestions).
    #[acp::command]
    async fn suggest(&self, cx: &Session) -> acp::Result<StopReason> {
        let next = PromptSuggestion::new(vec!["/delegate count the stops".into()]);
        if !cx.suggest(vec![next]).await? {
            cx.message("(this editor shows no suggestions)").await?;
        }
        Ok(StopReason::EndTurn)
    }

    /// Switch to code mode.
    #[acp::command]
    async fn code(&self, cx: &Session) -> acp::Result<StopReason> {
        cx.set_mode(Mode::Code).await?;
        Ok(StopReason::EndTurn)
    }

    /// Ask for feedback in a form.
    #[acp::command]
    async fn ask(&self, cx: &Session) -> acp::Result<StopReason> {
        let said = match cx.elicit::<Feedback>("How was the tour?").await {
            Ok(Elicited::Accepted(f)) => format!("Thanks for the {}/5.", f.rating),
            Ok(_) => "Maybe next time.".to_owned(),
            Err(acp::Error::Unsupported(_)) => "This editor cannot show forms.".to_owned(),
            Err(e) => return Err(e),
        };
        cx.message(said).await?;
        Ok(StopReason::EndTurn)
    }

    fn auth_methods(&self) -> Vec<AuthMethod> {
        vec![
            AuthMethod::Agent(AuthMethodAgent::new("api-key", "Use an API key")),
            AuthMethod::Terminal(
                AuthMethodTerminal::new("login", "Log in from a terminal")
                    .args(vec!["--login".into()]),
            ),
        ]
    }

    async fn authenticate(&self, _cx: &Client, _method: AuthMethodId) -> acp::Result<()> {
        self.logged_in.store(true, Ordering::Release);
        Ok(())
    }

    async fn authenticated(&self, cx: &Client) -> bool {
        cx.has_authenticated() || self.logged_in.load(Ordering::Acquire)
    }

    async fn logout(&self, _cx: &Client) -> acp::Result<()> {
        self.logged_in.store(false, Ordering::Release);
        Ok(())
    }

    /// Counts words for the editor.
    #[acp::ext("_tour/stats")]
    async fn stats(&self, _cx: &Client, params: StatsParams) -> acp::Result<Stats> {
        Ok(Stats {
            count: params.words.len(),
        })
    }

    /// The editor says hello.
    #[acp::ext("_tour/ping", notification)]
    async fn ping(&self, _cx: &Client, _params: serde_json::Value) -> acp::Result<()> {
        self.pings.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Runs a command in the editor's terminal.
    #[acp::tool(
        kind = "execute",
        title = "Run {command}",
        permission,
        requires(terminal)
    )]
    async fn run(&self, cx: &Session, command: String) -> acp::Result<String> {
        let terminal = cx.terminal().create(command, Vec::<String>::new()).await?;
        terminal.wait_for_exit().await?;
        Ok(terminal.output().await?.output)
    }

    /// Reads a file through the editor.
    #[acp::tool(kind = "read", title = "Read {path}", requires(fs_read))]
    async fn read(&self, cx: &Session, path: std::path::PathBuf) -> acp::Result<String> {
        cx.fs().read_text_file(&path).await
    }
}

#[tokio::main]
async fn main() -> acp::Result<()> {
    acp::init_logging();
    if std::env::args().any(|a| a == "--login") {
        // The terminal login the editor runs (`type: "terminal"`): a real agent would sign
        // the user in here and store the credentials; the tour has none to store.
        eprintln!("tour: logged in (nothing to remember)");
        return Ok(());
    }
    acp::serve_main(Tour::default()).await
}
