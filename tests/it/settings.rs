//! Modes, config options and slash commands declared on types and methods, answered by the
//! runtime: advertised exactly when declared, validated (`-32602` naming the valid values),
//! kept in step (modes ↔ the `mode` option), changed by the agent with the client told, and
//! kept with the session's history; and tools gated on the mode by a check that refuses them
//! before the user is asked. In process, through `acp::testing`.

use std::sync::Arc;

use acp::schema::SessionUpdate;
use acp::store::MemoryStore;
use acp::testing::TestClient;
use acp::{Prompt, Server, Session, StopReason};
use serde_json::{Value, json};

/// How the agent works.
#[derive(acp::Modes, Clone, Copy, Default, Debug, PartialEq)]
enum Mode {
    /// Answers only.
    #[default]
    Ask,
    /// Edits too.
    #[mode(name = "Write code")]
    Code,
}

/// Which model answers.
#[derive(acp::ConfigOption, Clone, Copy, Default, Debug, PartialEq)]
#[config(category = "model")]
enum Model {
    #[default]
    Fast,
    Deep,
}

/// Skip confirmations.
#[derive(acp::ConfigOption, Clone, Copy, Default, Debug, PartialEq)]
#[config(id = "brave_mode", name = "Brave mode")]
struct Brave(bool);

struct Declared;

#[acp::agent(name = "declared", modes = Mode, config(Model, Brave))]
impl Declared {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let said = format!(
            "{:?} {:?} {} {}",
            cx.mode::<Mode>()?,
            cx.config::<Model>()?,
            cx.config::<Brave>()?.0,
            prompt.text()
        );
        cx.message(said).await?;
        Ok(StopReason::EndTurn)
    }

    /// Switch to code mode.
    #[acp::command]
    async fn code(&self, cx: &Session) -> acp::Result<StopReason> {
        cx.set_mode(Mode::Code).await?;
        cx.set_config(Model::Deep).await?;
        Ok(StopReason::EndTurn)
    }

    /// Repeat the text.
    #[acp::command(name = "say", hint = "what to say")]
    async fn say_it(&self, cx: &Session, text: String) -> acp::Result<StopReason> {
        cx.message(format!("said: {text}")).await?;
        Ok(StopReason::EndTurn)
    }

    /// Count the blocks after the command.
    #[acp::command]
    async fn blocks(&self, cx: &Session, rest: Prompt) -> acp::Result<StopReason> {
        cx.message(format!("{} blocks", rest.blocks().len()))
            .await?;
        Ok(StopReason::EndTurn)
    }

    /// Only `say` from now on.
    #[acp::command]
    async fn narrow(&self, cx: &Session) -> acp::Result<StopReason> {
        let keep: Vec<_> = cx
            .commands()
            .into_iter()
            .filter(|c| c.name == "say")
            .collect();
        cx.set_commands(keep).await?;
        Ok(StopReason::EndTurn)
    }
}

fn ids(options: &Value) -> Vec<String> {
    options
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn modes_and_options_are_offered_with_their_defaults_booleans_only_to_clients_that_take_them()
{
    let client = TestClient::builder().connect(Declared).await.unwrap();
    let session = client.new_session().await.unwrap();
    let answer = session.new_session_response();
    assert_eq!(answer["modes"]["currentModeId"], "ask");
    assert_eq!(answer["modes"]["availableModes"][1]["name"], "Write code");
    assert_eq!(
        answer["modes"]["availableModes"][0]["description"],
        "Answers only."
    );
    // The mode first (category mode), then the options in their declared order; no boolean
    // for a client that did not advertise boolean options.
    assert_eq!(ids(&answer["configOptions"]), ["mode", "model"]);
    assert_eq!(answer["configOptions"][0]["category"], "mode");
    assert_eq!(answer["configOptions"][1]["category"], "model");
    assert_eq!(answer["configOptions"][1]["currentValue"], "fast");
    assert_eq!(
        answer["configOptions"][1]["description"],
        "Which model answers."
    );
    let err = session
        .set_config_option("brave_mode", true)
        .await
        .unwrap_err();
    assert!(
        matches!(err, acp::Error::Rpc { code: -32602, .. }),
        "{err:?}"
    );

    let client = TestClient::builder()
        .boolean_config_options()
        .connect(Declared)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let answer = session.new_session_response();
    assert_eq!(
        ids(&answer["configOptions"]),
        ["mode", "model", "brave_mode"]
    );
    assert_eq!(answer["configOptions"][2]["type"], "boolean");
    assert_eq!(answer["configOptions"][2]["currentValue"], false);
    let options = session.set_config_option("brave_mode", true).await.unwrap();
    assert_eq!(options["configOptions"][2]["currentValue"], true);
    let turn = session.prompt("hi").await.unwrap();
    assert_eq!(turn.text(), "Ask Fast true hi");
}

#[tokio::test(start_paused = true)]
async fn the_client_sets_mode_and_options_validated_and_kept_in_step() {
    let client = TestClient::builder().connect(Declared).await.unwrap();
    let session = client.new_session().await.unwrap();

    let err = session.set_mode("yolo").await.unwrap_err().to_string();
    assert!(
        err.contains("unknown mode `yolo`") && err.contains("`ask`, `code`"),
        "{err}"
    );
    let err = session
        .set_config_option("model", "huge")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`huge` is not a value") && err.contains("`fast`, `deep`"),
        "{err}"
    );
    let err = session
        .set_config_option("colour", "red")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown config option `colour`"), "{err}");
    let err = session
        .set_config_option("model", true)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a boolean"), "{err}");

    // The legacy mode picker: the config options UI is told.
    session.set_mode("code").await.unwrap();
    assert_eq!(session.view().config("mode"), Some(json!("code")));
    // The config options UI: the answer is the whole list, the mode picker is told.
    let answer = session.set_config_option("mode", "ask").await.unwrap();
    assert_eq!(ids(&answer["configOptions"]), ["mode", "model"]);
    assert_eq!(answer["configOptions"][0]["currentValue"], "ask");
    let view = session.view();
    assert_eq!(view.mode.as_deref(), Some("ask"));
    session.set_config_option("model", "deep").await.unwrap();
    assert_eq!(
        session.prompt("x").await.unwrap().text(),
        "Ask Deep false x"
    );
}

#[tokio::test(start_paused = true)]
async fn the_agent_changes_mode_and_options_and_the_client_is_told() {
    let client = TestClient::builder().connect(Declared).await.unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.run_command("code", "").await.unwrap();
    let kinds: Vec<_> = turn
        .updates()
        .iter()
        .map(|u| match u {
            SessionUpdate::CurrentModeUpdate(m) => format!("mode {}", m.current_mode_id),
            SessionUpdate::ConfigOptionUpdate(c) => format!("options {}", c.config_options.len()),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(kinds, ["mode code", "options 2", "options 2"]);
    let view = session.view();
    assert_eq!(view.mode.as_deref(), Some("code"));
    assert_eq!(view.config("model"), Some(json!("deep")));
    assert_eq!(
        session.prompt("y").await.unwrap().text(),
        "Code Deep false y"
    );
}

#[tokio::test(start_paused = true)]
async fn a_reloaded_session_comes_back_with_its_mode_and_options() {
    let store = Arc::new(MemoryStore::default());
    let first = TestClient::builder()
        .serve(Server::new(Declared).shared_store(store.clone()))
        .await
        .unwrap();
    let session = first.new_session().await.unwrap();
    let id = session.id().clone();
    session.set_mode("code").await.unwrap();
    session.set_config_option("model", "deep").await.unwrap();
    drop(session);
    first.close().await.unwrap();

    let second = TestClient::builder()
        .serve(Server::new(Declared).shared_store(store))
        .await
        .unwrap();
    let loaded = second.load_session(&id).await.unwrap();
    let answer = loaded.session.new_session_response();
    assert_eq!(answer["modes"]["currentModeId"], "code");
    assert_eq!(answer["configOptions"][1]["currentValue"], "deep");
    assert_eq!(
        loaded.session.prompt("z").await.unwrap().text(),
        "Code Deep false z"
    );
    // Resumed, too.
    drop(loaded);
    let resumed = second.resume_session(&id).await.unwrap();
    assert_eq!(
        resumed.new_session_response()["modes"]["currentModeId"],
        "code"
    );
}

#[tokio::test(start_paused = true)]
async fn slash_commands_are_advertised_after_the_answer_and_dispatched_by_name() {
    let client = TestClient::builder().connect(Declared).await.unwrap();
    let session = client.new_session().await.unwrap();
    // Advertised right after the session's answer, each with its doc comment and hint.
    let view = session
        .wait_for_view("the commands", |v| !v.commands.is_empty())
        .await
        .unwrap();
    assert_eq!(view.command_names(), ["code", "say", "blocks", "narrow"]);
    let say = &view.commands[1];
    assert_eq!(say.description, "Repeat the text.");
    assert_eq!(
        serde_json::to_value(&say.input).unwrap(),
        json!({"hint": "what to say"})
    );
    let transcript = client.transcript();
    let answer = transcript
        .iter()
        .position(|f| f.message["result"]["sessionId"].is_string())
        .unwrap();
    let advertised = transcript
        .iter()
        .position(|f| f.message["params"]["update"]["sessionUpdate"] == "available_commands_update")
        .unwrap();
    assert!(answer < advertised, "the client knows the session first");

    assert_eq!(
        session.prompt("  /say hello there").await.unwrap().text(),
        "said: hello there"
    );
    let blocks = json!([
        {"type": "text", "text": "/blocks"},
        {"type": "resource_link", "name": "a", "uri": "file:///a"},
        {"type": "resource_link", "name": "b", "uri": "file:///b"}
    ]);
    assert_eq!(
        session.prompt_blocks(blocks).await.unwrap().text(),
        "2 blocks"
    );
    // Not a command of this agent: an ordinary prompt.
    assert_eq!(
        session.prompt("/nope x").await.unwrap().text(),
        "Ask Fast false /nope x"
    );
    // Commands can change: one taken off the list reaches `prompt` as text.
    session.run_command("narrow", "").await.unwrap();
    assert_eq!(session.view().command_names(), ["say"]);
    assert_eq!(
        session.prompt("/code").await.unwrap().text(),
        "Ask Fast false /code"
    );
    assert_eq!(
        session.run_command("say", "still").await.unwrap().text(),
        "said: still"
    );
}

struct Undeclared;

#[acp::agent(name = "undeclared")]
impl Undeclared {
    /// `mode`, `model`, `set model`: reads or sets a setting it does not declare, saying the
    /// error; `mode?`: the same, passed on with `?`. Anything else is echoed.
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let said = match prompt.text().as_str() {
            "mode" => cx.mode::<Mode>().map(|m| format!("{m:?}")),
            "model" => cx.config::<Model>().map(|m| format!("{m:?}")),
            "set model" => cx.set_config(Model::Deep).await.map(|()| "set".into()),
            "mode?" => Ok(format!("{:?}", cx.mode::<Mode>()?)),
            text => Ok(text.to_owned()),
        };
        match said {
            Ok(said) => cx.message(said).await?,
            Err(e) => cx.message(format!("error: {e}")).await?,
        }
        Ok(StopReason::EndTurn)
    }
}

#[tokio::test(start_paused = true)]
async fn without_declarations_nothing_is_offered_and_the_methods_are_not_found() {
    let client = TestClient::builder().connect(Undeclared).await.unwrap();
    let session = client.new_session().await.unwrap();
    let answer = session.new_session_response();
    assert!(answer.get("modes").is_none(), "{answer}");
    assert!(answer.get("configOptions").is_none(), "{answer}");
    let err = session.set_mode("ask").await.unwrap_err();
    assert!(
        matches!(err, acp::Error::Rpc { code: -32601, .. }),
        "{err:?}"
    );
    let err = session
        .set_config_option("model", "fast")
        .await
        .unwrap_err();
    assert!(
        matches!(err, acp::Error::Rpc { code: -32601, .. }),
        "{err:?}"
    );
    // No commands advertised; `/x` is text.
    assert_eq!(session.prompt("/x").await.unwrap().text(), "/x");
    assert!(session.view().commands.is_empty());
}

/// An agent whose `commit` and `push` are refused in ask mode, before the user is asked.
struct Gated;

#[acp::agent(name = "gated", modes = Mode)]
impl Gated {
    /// `commit <message>` (a typed call), `call <tool> <message>` (a call by name).
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let text = prompt.text();
        let outcome = match text.split_once(' ') {
            Some(("commit", message)) => self.commit(cx, message.to_owned()).await,
            Some(("call", rest)) => {
                let (tool, message) = rest.split_once(' ').unwrap_or((rest, ""));
                let output = cx.call_tool(tool, json!({ "message": message })).await;
                output.map(|o| o.to_text())
            }
            _ => Err(acp::Error::msg(
                "say `commit <message>` or `call <tool> <message>`",
            )),
        };
        match outcome {
            Ok(text) => cx.message(text).await?,
            Err(e) => cx.message(format!("refused: {e}")).await?,
        }
        Ok(StopReason::EndTurn)
    }

    /// Commits the staged changes.
    #[acp::tool(kind = "execute", title = "Commit", permission, check = Self::may_commit)]
    async fn commit(&self, _cx: &Session, message: String) -> acp::Result<String> {
        Ok(format!("committed: {message}"))
    }

    /// Pushes the branch.
    #[acp::tool(kind = "execute", title = "Push", permission, check = Self::may_push)]
    async fn push(&self, _cx: &Session, message: String) -> acp::Result<String> {
        Ok(format!("pushed: {message}"))
    }

    /// Commits only in code mode.
    fn may_commit(&self, cx: &Session) -> acp::Result<()> {
        match cx.mode::<Mode>()? {
            Mode::Code => Ok(()),
            Mode::Ask => Err(acp::Error::msg(
                "not in ask mode: switch to code mode to commit",
            )),
        }
    }

    /// The same, as an `async fn`.
    async fn may_push(&self, cx: &Session) -> acp::Result<()> {
        tokio::task::yield_now().await;
        self.may_commit(cx)
    }
}

#[tokio::test(start_paused = true)]
async fn a_tool_check_refuses_typed_and_by_name_calls_before_permission_is_asked() {
    let client = TestClient::builder().connect(Gated).await.unwrap();
    let session = client.new_session().await.unwrap();
    let refused = "refused: not in ask mode: switch to code mode to commit";
    for (prompt, title) in [
        ("commit fix", "Commit"),
        ("call commit fix", "Commit"),
        ("call push fix", "Push"),
    ] {
        let turn = session.prompt(prompt).await.unwrap();
        assert_eq!(turn.text(), refused, "{prompt}");
        assert!(turn.permission_requests().is_empty(), "{prompt}: asked");
        let calls = turn.tool_calls();
        let [call] = &calls[..] else {
            panic!("{prompt}: {calls:?}")
        };
        // Shown, then failed with the check's message: never asked, never in progress.
        assert_eq!(call.title, title);
        assert_eq!(
            call.statuses,
            [
                acp::schema::ToolCallStatus::Pending,
                acp::schema::ToolCallStatus::Failed
            ],
            "{prompt}"
        );
        assert_eq!(
            call.text(),
            "not in ask mode: switch to code mode to commit"
        );
    }

    // Allowed by the check: the user is asked, then the tool runs.
    session.set_mode("code").await.unwrap();
    for (prompt, answer) in [
        ("commit fix", "committed: fix"),
        ("call commit fix", "committed: fix"),
        ("call push fix", "pushed: fix"),
    ] {
        let turn = session.prompt(prompt).await.unwrap();
        assert_eq!(turn.text(), answer, "{prompt}");
        assert_eq!(turn.permission_requests().len(), 1, "{prompt}");
        let calls = turn.tool_calls();
        assert_eq!(
            calls[0].status(),
            Some(acp::schema::ToolCallStatus::Completed),
            "{prompt}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn reading_a_setting_the_agent_does_not_declare_is_an_error_saying_how_to_declare_it() {
    let client = TestClient::builder().connect(Undeclared).await.unwrap();
    let session = client.new_session().await.unwrap();
    assert_eq!(
        session.prompt("mode").await.unwrap().text(),
        "error: `it::settings::Mode` is not one of this agent's settings, so the session has no \
         value for it: declare it with `#[acp::agent(modes = Mode)]`"
    );
    assert_eq!(
        session.prompt("model").await.unwrap().text(),
        "error: `it::settings::Model` is not one of this agent's settings, so the session has no \
         value for it: declare it with `#[acp::agent(config(Model))]`"
    );
    let said = session.prompt("set model").await.unwrap().text();
    assert!(said.ends_with("`#[acp::agent(config(Model))]`"), "{said}");
    // Passed on with `?`, it fails the turn with the same message.
    let turn = session.prompt("mode?").await.unwrap();
    assert_eq!(turn.error_code(), Some(-32603));
    let err = turn.answer().unwrap_err().to_string();
    assert!(
        err.contains("declare it with `#[acp::agent(modes = Mode)]`"),
        "{err}"
    );

    // A declared agent reads the same types.
    let client = TestClient::builder().connect(Declared).await.unwrap();
    let session = client.new_session().await.unwrap();
    assert_eq!(
        session.prompt("hi").await.unwrap().text(),
        "Ask Fast false hi"
    );
}
