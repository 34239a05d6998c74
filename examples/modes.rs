//! # modes — session modes, slash commands and a config option
//!
//! Shows what an agent offers besides prompts:
//! - two **modes** (`ask`: answers only; `code`: may also edit), switched by the editor's mode
//!   picker (`session/set_mode`) or by the agent itself (`/code`, `/ask`);
//! - **slash commands**, advertised when the session starts and handled when a prompt starts
//!   with `/name`;
//! - a **config option** (`tone`: plain or cheerful) set from the editor's settings UI.
//!
//! Per-session state lives in `cx.state::<T>()`, not in a map keyed by session id.
//!
//! Run it under a real client: `./scripts/demo modes "/help" "/code" "hello"`, or point your
//! editor's agent server setting at `target/debug/examples/modes` (see the README).

use std::sync::Mutex;

use acp::schema::{
    AvailableCommand, AvailableCommandInput, CurrentModeUpdate, SessionConfigId,
    SessionConfigOption, SessionConfigOptionValue, SessionConfigSelectOption, SessionMode,
    SessionModeId, SessionModeState, SessionUpdate, UnstructuredCommandInput,
};
use acp::{Prompt, Session, SessionSetup, StopReason};

/// The agent: stateless itself, its sessions keep their mode and tone.
#[derive(Default)]
pub struct Modes;

/// What one session remembers.
struct Settings {
    mode: Mutex<String>,
    tone: Mutex<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            mode: Mutex::new("ask".into()),
            tone: Mutex::new("plain".into()),
        }
    }
}

fn get(value: &Mutex<String>) -> String {
    value.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

fn set(value: &Mutex<String>, to: &str) {
    *value.lock().unwrap_or_else(|e| e.into_inner()) = to.to_owned();
}

const MODES: [(&str, &str, &str); 2] = [
    ("ask", "Ask", "Answers questions; never edits"),
    ("code", "Code", "May edit files"),
];

fn mode_state(current: &str) -> SessionModeState {
    let modes = MODES
        .iter()
        .map(|(id, name, description)| SessionMode::new(*id, *name).description(*description))
        .collect();
    SessionModeState::new(current.to_owned(), modes)
}

fn tone_option(current: &str) -> SessionConfigOption {
    SessionConfigOption::select(
        "tone",
        "Tone",
        current.to_owned(),
        vec![
            SessionConfigSelectOption::new("plain", "Plain"),
            SessionConfigSelectOption::new("cheerful", "Cheerful"),
        ],
    )
    .description("How the agent words its answers")
}

#[acp::agent(name = "modes", title = "Modes")]
impl Modes {
    /// A new session starts in `ask` mode, with a plain tone, and these slash commands.
    async fn new_session(&self, _cx: &Session) -> acp::Result<SessionSetup> {
        Ok(SessionSetup::default()
            .modes(mode_state("ask"))
            .config_options(vec![tone_option("plain")])
            .commands(vec![
                AvailableCommand::new("help", "List what this agent can do"),
                AvailableCommand::new("code", "Switch to code mode"),
                AvailableCommand::new("ask", "Switch to ask mode"),
                AvailableCommand::new("echo", "Repeat the text after the command").input(
                    AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(
                        "text to repeat",
                    )),
                ),
            ]))
    }

    /// The editor's mode picker.
    async fn set_mode(&self, cx: &Session, mode: SessionModeId) -> acp::Result<()> {
        if !MODES.iter().any(|(id, ..)| **id == *mode.0) {
            return Err(acp::Error::InvalidParams(format!(
                "unknown mode `{mode}`; expected `ask` or `code`"
            )));
        }
        set(&cx.state::<Settings>().mode, &mode.0);
        Ok(())
    }

    /// The editor's settings UI; answers with every option's new state.
    async fn set_config_option(
        &self,
        cx: &Session,
        option: SessionConfigId,
        value: SessionConfigOptionValue,
    ) -> acp::Result<Vec<SessionConfigOption>> {
        let tone = value.as_value_id().map(|v| v.0.to_string());
        match (&*option.0, tone.as_deref()) {
            ("tone", Some(tone @ ("plain" | "cheerful"))) => {
                set(&cx.state::<Settings>().tone, tone);
                Ok(vec![tone_option(tone)])
            }
            ("tone", _) => Err(acp::Error::InvalidParams(
                "`tone` is `plain` or `cheerful`".into(),
            )),
            _ => Err(acp::Error::InvalidParams(format!(
                "unknown config option `{option}`"
            ))),
        }
    }

    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let text = prompt.text();
        let settings = cx.state::<Settings>();
        let reply = match text.trim().strip_prefix('/') {
            Some(command) => {
                let (name, rest) = command.split_once(' ').unwrap_or((command, ""));
                match name {
                    "help" => "Commands: /help, /code, /ask, /echo <text>. \
                               Modes: ask (answers only), code (may edit)."
                        .to_owned(),
                    "code" | "ask" => {
                        set(&settings.mode, name);
                        // The agent changed the mode itself: tell the editor.
                        cx.update(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
                            name.to_owned(),
                        )))
                        .await?;
                        format!("Switched to {name} mode.")
                    }
                    "echo" => rest.to_owned(),
                    other => format!("Unknown command /{other}; try /help."),
                }
            }
            None => format!("[{} mode] You said: {text}", get(&settings.mode)),
        };
        let reply = if get(&settings.tone) == "cheerful" {
            format!("{reply} 🎉")
        } else {
            reply
        };
        cx.message(reply).await?;
        Ok(StopReason::EndTurn)
    }
}

#[tokio::main]
async fn main() -> acp::Result<()> {
    acp::init_logging();
    acp::serve_stdio(Modes).await
}
