//! # modes — session modes, slash commands and a config option, declared
//!
//! Shows what an agent offers besides prompts, each declared on a type or a method and
//! answered by the runtime:
//! - two **modes** (`ask`: answers only; `code`: may also edit), switched from the editor's
//!   mode picker or config UI, or by the agent itself (`/code`, `/ask`);
//! - **slash commands**: each `#[acp::command]` method is advertised when the session starts
//!   (its doc comment is the description) and runs when a prompt starts with `/name`;
//! - a **config option** (`tone`: plain or cheerful) set from the editor's settings UI;
//! - a **tool gated on the mode**: `/note <text>` saves a note through a tool that asks the
//!   user first, but only in code mode: in ask mode its `check` refuses the call before the
//!   user is asked (also when a model calls the tool by name).
//!
//! The runtime validates what the editor sends (an unknown mode or value is `-32602` naming
//! the valid ones), keeps the modes and the `mode` config option in step, and saves the
//! session's choices with its history.
//!
//! Run it under a real client: `./scripts/demo modes "/help" "/code" "hello"`, or point your
//! editor's agent server setting at `target/debug/examples/modes` (see the README).

use acp::{Prompt, Session, StopReason};

/// How the agent works in this session.
#[derive(acp::Modes, Clone, Copy, Default, PartialEq, Debug)]
pub enum Mode {
    /// Answers questions; never edits.
    #[default]
    Ask,
    /// May edit files.
    Code,
}

/// How the agent words its answers.
#[derive(acp::ConfigOption, Clone, Copy, Default, PartialEq, Debug)]
pub enum Tone {
    /// Just the facts.
    #[default]
    Plain,
    /// With a little celebration.
    Cheerful,
}

/// The agent: stateless itself; the runtime keeps each session's mode and tone.
#[derive(Default)]
pub struct Modes;

#[acp::agent(name = "modes", title = "Modes", modes = Mode, config(Tone))]
impl Modes {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let mode = format!("{:?}", cx.mode::<Mode>()?).to_lowercase();
        say(cx, format!("[{mode} mode] You said: {}", prompt.text())).await
    }

    /// List what this agent can do.
    #[acp::command]
    async fn help(&self, cx: &Session) -> acp::Result<StopReason> {
        let commands: Vec<_> = cx
            .commands()
            .iter()
            .map(|c| format!("/{}", c.name))
            .collect();
        let help = format!(
            "Commands: {}. Modes: ask (answers only), code (may edit: /note).",
            commands.join(", ")
        );
        say(cx, help).await
    }

    /// Switch to code mode.
    #[acp::command]
    async fn code(&self, cx: &Session) -> acp::Result<StopReason> {
        cx.set_mode(Mode::Code).await?; // tells the editor
        say(cx, "Switched to code mode.".into()).await
    }

    /// Switch to ask mode.
    #[acp::command]
    async fn ask(&self, cx: &Session) -> acp::Result<StopReason> {
        cx.set_mode(Mode::Ask).await?;
        say(cx, "Switched to ask mode.".into()).await
    }

    /// Repeat the text after the command.
    #[acp::command(hint = "text to repeat")]
    async fn echo(&self, cx: &Session, text: String) -> acp::Result<StopReason> {
        say(cx, text).await
    }

    /// Save a note (code mode only).
    #[acp::command(hint = "the note")]
    async fn note(&self, cx: &Session, text: String) -> acp::Result<StopReason> {
        let reply = match self.save_note(cx, text).await {
            Ok(saved) => saved,
            Err(acp::Error::PermissionDenied) => "Okay, not saved.".to_owned(),
            // The check's refusal: the tool call shows it too.
            Err(e) => format!("Not saved: {e}"),
        };
        say(cx, reply).await
    }

    /// Saves a note in this session, after asking the user; refused in ask mode.
    #[acp::tool(kind = "edit", title = "Save a note", permission, check = Self::may_edit)]
    async fn save_note(&self, cx: &Session, text: String) -> acp::Result<String> {
        let notes = cx.state::<Notes>();
        let mut notes = notes.0.lock().unwrap_or_else(|e| e.into_inner());
        notes.push(text);
        Ok(format!("Saved ({} notes).", notes.len()))
    }

    /// Ask mode never edits: refuses a tool that would, before the user is asked.
    fn may_edit(&self, cx: &Session) -> acp::Result<()> {
        match cx.mode::<Mode>()? {
            Mode::Code => Ok(()),
            Mode::Ask => Err(acp::Error::msg(
                "ask mode never edits; switch to code mode (/code) first",
            )),
        }
    }
}

/// The notes of a session.
#[derive(Default)]
struct Notes(std::sync::Mutex<Vec<String>>);

/// Answers in the session's tone.
async fn say(cx: &Session, reply: String) -> acp::Result<StopReason> {
    let reply = match cx.config::<Tone>()? {
        Tone::Cheerful => format!("{reply} 🎉"),
        Tone::Plain => reply,
    };
    cx.message(reply).await?;
    Ok(StopReason::EndTurn)
}

#[tokio::main]
async fn main() -> acp::Result<()> {
    acp::init_logging();
    acp::serve_main(Modes).await
}
