// Everything an agent declares besides its prompt, written correctly: modes, a select and a
// boolean config option with every key, commands with and without input (`String` and
// `acp::Prompt`), a request and a notification extension method, the auth methods, and a tool
// that requires client capabilities. `main` checks what the generated `acp::Agent` reports.
use acp::schema::{AuthMethod, AuthMethodAgent, AuthMethodId};
use acp::{Agent, Choice, Client, ConfigKind, ConfigOption, ConfigValue, Prompt, Requirement};
use acp::{Session, Settings, StopReason};

/// How the agent works.
#[derive(acp::Modes, Clone, Copy, Default, Debug, PartialEq)]
#[mode(name = "Way of working")]
enum Mode {
    /// Answers only.
    #[default]
    Ask,
    /// Edits too.
    #[mode(id = "write", name = "Write code")]
    Code,
}

/// Which model answers.
#[derive(acp::ConfigOption, Clone, Copy, Default, Debug, PartialEq)]
#[config(id = "llm", name = "Language model", category = "model")]
enum Model {
    Fast,
    /// Careful answers.
    #[default]
    #[config(id = "deep-thought", name = "Deep thought")]
    Deep,
}

/// Skip confirmations.
#[derive(acp::ConfigOption, Clone, Copy, Debug, PartialEq)]
#[config(id = "brave_mode", name = "Brave mode", category = "_brave", default = true)]
struct Brave(bool);

impl Default for Brave {
    fn default() -> Self {
        Brave(true)
    }
}

#[derive(serde::Deserialize)]
struct StatsQuery {
    limit: u32,
}

#[derive(serde::Serialize)]
struct Stats {
    turns: u32,
}

struct Declared;

#[acp::agent(name = "declared", modes = Mode, config(Model, Brave))]
impl Declared {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    /// Switches to writing code.
    #[acp::command]
    async fn code(&self, cx: &Session) -> acp::Result<StopReason> {
        cx.set_mode(Mode::Code).await?;
        Ok(StopReason::EndTurn)
    }

    /// Repeats the text.
    #[acp::command(name = "say", hint = "what to say")]
    async fn say_it(&self, cx: &Session, text: String) -> acp::Result<StopReason> {
        cx.message(text).await?;
        Ok(StopReason::EndTurn)
    }

    /// Counts the blocks after the command.
    #[acp::command]
    async fn blocks(&self, cx: &Session, rest: Prompt) -> acp::Result<StopReason> {
        cx.message(format!("{}", rest.blocks().len())).await?;
        Ok(StopReason::EndTurn)
    }

    #[acp::ext("_declared/stats")]
    async fn stats(&self, _cx: &Client, query: StatsQuery) -> acp::Result<Stats> {
        Ok(Stats { turns: query.limit })
    }

    #[acp::ext("_declared/ping", notification)]
    async fn ping(&self, _cx: &Client, _params: serde_json::Value) -> acp::Result<()> {
        Ok(())
    }

    fn auth_methods(&self) -> Vec<AuthMethod> {
        vec![AuthMethod::Agent(AuthMethodAgent::new("token", "Token"))]
    }

    async fn authenticate(&self, _cx: &Client, _method: AuthMethodId) -> acp::Result<()> {
        Ok(())
    }

    async fn authenticated(&self, _cx: &Client) -> bool {
        true
    }

    async fn logout(&self, _cx: &Client) -> acp::Result<()> {
        Ok(())
    }

    /// Runs the tests.
    #[acp::tool(kind = "execute", requires(terminal, fs))]
    async fn test(&self, _cx: &Session) -> acp::Result<String> {
        Ok(String::new())
    }
}

fn main() {
    let agent = Declared;

    // Settings: the modes, then the options in their declared order.
    let expected = Settings::new().modes::<Mode>().option::<Model>().option::<Brave>();
    assert_eq!(format!("{:?}", agent.settings()), format!("{expected:?}"));

    let modes = Mode::spec();
    assert_eq!((modes.id, modes.name, modes.category), ("mode", "Way of working", Some("mode")));
    assert_eq!(modes.description, Some("How the agent works."));
    assert_eq!(
        modes.kind,
        ConfigKind::Select(&[
            Choice { id: "ask", name: "Ask", description: Some("Answers only.") },
            Choice { id: "write", name: "Write code", description: Some("Edits too.") },
        ])
    );
    assert_eq!(modes.default, ConfigValue::Choice("ask"));
    assert_eq!(Mode::from_value(ConfigValue::Choice("write")), Some(Mode::Code));

    let model = Model::spec();
    assert_eq!((model.id, model.name, model.category), ("llm", "Language model", Some("model")));
    assert_eq!(model.default, ConfigValue::Choice("deep-thought"));
    assert_eq!(
        model.kind,
        ConfigKind::Select(&[
            Choice { id: "fast", name: "Fast", description: None },
            Choice { id: "deep-thought", name: "Deep thought", description: Some("Careful answers.") },
        ])
    );
    assert_eq!(Model::Deep.to_value(), ConfigValue::Choice("deep-thought"));

    let brave = Brave::spec();
    assert_eq!((brave.id, brave.name, brave.category), ("brave_mode", "Brave mode", Some("_brave")));
    assert_eq!((brave.kind, brave.default), (ConfigKind::Boolean, ConfigValue::Bool(true)));
    assert_eq!(Brave::from_value(ConfigValue::Bool(false)), Some(Brave(false)));
    assert_eq!(Brave::from_value(ConfigValue::Choice("on")), None);

    // Commands: named by the method or `name = "…"`, described by the doc comment, with the
    // hint as their input.
    let commands = agent.commands();
    let names: Vec<_> = commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["code", "say", "blocks"]);
    assert_eq!(commands[0].description, "Switches to writing code.");
    assert!(commands[0].input.is_none());
    let hint = serde_json::to_value(&commands[1].input).unwrap();
    assert_eq!(hint["hint"], "what to say");
    assert!(commands[2].input.is_none());

    // Extension methods.
    assert_eq!(agent.ext_methods(), ["_declared/stats"]);
    assert_eq!(agent.ext_notifications(), ["_declared/ping"]);

    // Auth: the methods are advertised, and logout with them.
    assert_eq!(agent.auth_methods().len(), 1);
    assert!(agent.capabilities().auth.logout.is_some());

    // The tool and the capabilities it requires.
    let tools = agent.tools();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "test");
    assert_eq!(
        tools[0].requires.as_ref(),
        [Requirement::Terminal, Requirement::ReadTextFile, Requirement::WriteTextFile]
    );
}
