//! Zed's `_meta` conventions, in process: a command the agent runs itself (the local backend
//! of a v1 client without terminals) shown in its tool call through `_meta.terminal_info` /
//! `terminal_output` / `terminal_exit` to a client that asked with
//! `clientCapabilities._meta.terminal_output`, as text to any other; and `terminal` sign-in
//! methods carrying `_meta["terminal-auth"]` (the command line) to a client that reads it.

use std::collections::HashMap;

use acp::schema::{
    self, AuthMethod, AuthMethodAgent, AuthMethodId, AuthMethodTerminal, SessionUpdate,
    ToolCallContent,
};
use acp::testing::{Direction, TestClient, TestClientBuilder};
use acp::{Client, Prompt, Session, StopReason};
use serde_json::json;

/// Runs the command it is given (`run <line>`) through its `run` tool.
struct Runner;

#[acp::agent(name = "runner")]
impl Runner {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let text = prompt.text();
        let line = text.strip_prefix("run ").unwrap_or(&text).to_owned();
        match cx.call_tool("run", json!({ "command": line })).await {
            Ok(output) => cx.message(output.to_text()).await?,
            Err(e) => cx.message(format!("error: {e}")).await?,
        }
        Ok(StopReason::EndTurn)
    }

    fn auth_methods(&self) -> Vec<AuthMethod> {
        let env = HashMap::from([("RUNNER_LOGIN".to_owned(), "1".to_owned())]);
        vec![
            AuthMethod::Agent(AuthMethodAgent::new("key", "API key")),
            AuthMethod::Terminal(
                AuthMethodTerminal::new("login", "Log in")
                    .args(vec!["--login".into()])
                    .env(env),
            ),
        ]
    }

    async fn authenticate(&self, _cx: &Client, _method: AuthMethodId) -> acp::Result<()> {
        Ok(())
    }

    /// Runs a command line; returns its exit code.
    #[acp::tool(kind = "execute", requires(terminal))]
    async fn run(&self, cx: &Session, command: String) -> acp::Result<String> {
        let term = cx.terminal().create(command, Vec::<String>::new()).await?;
        let status = term.wait_for_exit().await?;
        Ok(format!("exit {:?}", status.exit_code))
    }
}

/// Prints in three writes, a character split across the last two, then exits 3.
const COMMAND: &str =
    r"printf 'first\n'; sleep 0.2; printf 'second-\303'; sleep 0.2; printf '\274\n'; exit 3";
/// What it prints.
const OUTPUT: &str = "first\nsecond-ü\n";

async fn connect(builder: TestClientBuilder) -> TestClient {
    let server = acp::Server::new(Runner).local_fallback(true);
    builder
        .cwd(std::env::temp_dir())
        .serve(server)
        .await
        .unwrap()
}

/// Every `session/update` the agent sent, read with the schema crate's types (any frame they
/// cannot read fails the test).
fn updates(client: &TestClient) -> Vec<SessionUpdate> {
    client
        .transcript()
        .into_iter()
        .filter(|f| f.direction == Direction::FromAgent)
        .filter(|f| f.message["method"] == "session/update")
        .map(|f| {
            serde_json::from_value::<schema::SessionNotification>(f.message["params"].clone())
                .unwrap_or_else(|e| panic!("not a SessionNotification ({e}): {}", f.message))
                .update
        })
        .collect()
}

/// The `_meta` of a tool call or tool call update.
fn meta_of(update: &SessionUpdate) -> Option<&schema::Meta> {
    match update {
        SessionUpdate::ToolCall(c) => c.meta.as_ref(),
        SessionUpdate::ToolCallUpdate(u) => u.meta.as_ref(),
        _ => None,
    }
}

fn call_id(update: &SessionUpdate) -> Option<String> {
    match update {
        SessionUpdate::ToolCall(c) => Some(c.tool_call_id.to_string()),
        SessionUpdate::ToolCallUpdate(u) => Some(u.tool_call_id.to_string()),
        _ => None,
    }
}

#[tokio::test]
async fn a_client_that_asked_sees_the_local_command_through_zeds_three_metas_in_order() {
    let client = connect(TestClient::builder().terminal_output(true)).await;
    let session = client.new_session().await.unwrap();
    let turn = session.prompt(&format!("run {COMMAND}")).await.unwrap();
    assert_eq!(turn.text(), "exit Some(3)", "{}", client.describe());
    assert!(client.problems().is_empty(), "{:?}", client.problems());

    let updates = updates(&client);
    let first_call = updates
        .iter()
        .find_map(|u| match u {
            SessionUpdate::ToolCall(c) => Some(c.tool_call_id.to_string()),
            _ => None,
        })
        .expect("a tool call");
    // (position, key, value) of every terminal meta, in the order sent.
    let mut metas = Vec::new();
    for (at, update) in updates.iter().enumerate() {
        for key in ["terminal_info", "terminal_output", "terminal_exit"] {
            if let Some(value) = meta_of(update).and_then(|m| m.get(key)) {
                assert_eq!(call_id(update).as_deref(), Some(&*first_call), "{update:?}");
                metas.push((at, key, value.clone()));
            }
        }
    }
    let keys: Vec<&str> = metas.iter().map(|(_, k, _)| *k).collect();
    assert_eq!(keys.first(), Some(&"terminal_info"), "{keys:?}");
    assert_eq!(keys.last(), Some(&"terminal_exit"), "{keys:?}");
    assert_eq!(keys.iter().filter(|k| **k == "terminal_info").count(), 1);
    assert_eq!(keys.iter().filter(|k| **k == "terminal_exit").count(), 1);
    assert!(keys.len() >= 3, "{keys:?}");

    // terminal_info: on a `tool_call` (where Zed reads it) holding the terminal's content.
    let (at, _, info) = &metas[0];
    let terminal_id = info["terminal_id"]
        .as_str()
        .expect("a terminal id")
        .to_owned();
    assert_eq!(info["cwd"], json!(std::env::temp_dir()));
    let SessionUpdate::ToolCall(announced) = &updates[*at] else {
        panic!("terminal_info on {:?}", updates[*at])
    };
    assert_eq!(announced.status, schema::ToolCallStatus::InProgress);
    assert!(
        announced.content.iter().any(|c| matches!(
            c, ToolCallContent::Terminal(t) if t.terminal_id.to_string() == terminal_id
        )),
        "{announced:?}"
    );
    assert_eq!(announced.kind, schema::ToolKind::Execute);

    // terminal_output: on `tool_call_update`s, the command's real output, whole characters.
    let mut printed = String::new();
    for (at, key, value) in &metas[1..metas.len() - 1] {
        assert_eq!(*key, "terminal_output");
        assert!(matches!(updates[*at], SessionUpdate::ToolCallUpdate(_)));
        assert_eq!(value["terminal_id"], json!(terminal_id));
        printed.push_str(value["data"].as_str().expect("data is text"));
    }
    assert_eq!(printed, OUTPUT);

    // terminal_exit: the exit code, no signal.
    let (at, _, exit) = metas.last().unwrap();
    assert!(matches!(updates[*at], SessionUpdate::ToolCallUpdate(_)));
    assert_eq!(
        exit,
        &json!({"terminal_id": terminal_id, "exit_code": 3, "signal": null})
    );

    // The call ends showing the terminal and what the tool returned, no text rendering of it.
    let calls = turn.tool_calls();
    let [call] = &calls[..] else {
        panic!("{calls:?}")
    };
    assert_eq!(call.status(), Some(schema::ToolCallStatus::Completed));
    let [
        ToolCallContent::Terminal(t),
        ToolCallContent::Content(returned),
    ] = &call.content[..]
    else {
        panic!("{:?}", call.content)
    };
    assert_eq!(t.terminal_id.to_string(), terminal_id);
    assert_eq!(returned.content, schema::ContentBlock::from("exit Some(3)"));
    assert!(client.requests_from_agent("terminal/create").is_empty());
}

#[tokio::test]
async fn a_client_that_did_not_ask_gets_the_text_rendering_and_none_of_the_metas() {
    for builder in [
        TestClient::builder(),
        TestClient::builder().terminal_output(false),
    ] {
        let client = connect(builder).await;
        let session = client.new_session().await.unwrap();
        let turn = session.prompt(&format!("run {COMMAND}")).await.unwrap();
        assert_eq!(turn.text(), "exit Some(3)", "{}", client.describe());
        assert!(client.problems().is_empty(), "{:?}", client.problems());
        for update in updates(&client) {
            let meta = meta_of(&update).cloned().unwrap_or_default();
            for key in ["terminal_info", "terminal_output", "terminal_exit"] {
                assert!(!meta.contains_key(key), "{key} in {update:?}");
            }
        }
        let calls = turn.tool_calls();
        let [call] = &calls[..] else {
            panic!("{calls:?}")
        };
        let [ToolCallContent::Content(shown), ToolCallContent::Content(_)] = &call.content[..]
        else {
            panic!("{:?}", call.content)
        };
        let schema::ContentBlock::Text(shown) = &shown.content else {
            panic!("{shown:?}")
        };
        assert!(
            shown.text.contains(&format!("$ {COMMAND}\n{OUTPUT}")),
            "{}",
            shown.text
        );
        assert!(shown.text.contains("[exit code 3]"), "{}", shown.text);
    }
}

/// The `authMethods` of the `initialize` answer, read with the schema crate's types.
fn auth_methods(client: &TestClient) -> Vec<AuthMethod> {
    let answer: schema::InitializeResponse =
        serde_json::from_value(client.initialize_response().clone()).unwrap();
    answer.auth_methods
}

fn terminal_method(methods: &[AuthMethod]) -> Option<&AuthMethodTerminal> {
    methods.iter().find_map(|m| match m {
        AuthMethod::Terminal(t) => Some(t),
        _ => None,
    })
}

#[tokio::test]
async fn terminal_sign_in_carries_zeds_terminal_auth_meta_to_a_client_that_reads_it() {
    // Zed's `_meta["terminal-auth"]` alone: the terminal method is offered, with its command
    // line: the agent's own program and arguments, the method's arguments after them.
    let client = connect(TestClient::builder().terminal_auth_meta(true)).await;
    let methods = auth_methods(&client);
    let login = terminal_method(&methods).expect("the terminal method is offered");
    let line = &login.meta.as_ref().expect("a _meta")["terminal-auth"];
    assert_eq!(line["label"], "Log in");
    let program = std::env::current_exe().unwrap();
    assert_eq!(line["command"], json!(program.to_string_lossy()));
    let args: Vec<String> = serde_json::from_value(line["args"].clone()).unwrap();
    let own: Vec<String> = std::env::args().skip(1).collect();
    assert_eq!(args[..own.len()], own[..]);
    assert_eq!(args[own.len()..], ["--login".to_owned()]);
    assert_eq!(line["env"], json!({"RUNNER_LOGIN": "1"}));
    // The typed fields are still there, for clients of `auth.terminal`.
    assert_eq!(login.args, ["--login".to_owned()]);
    // The agent method carries nothing of it.
    let AuthMethod::Agent(key) = &methods[0] else {
        panic!("{methods:?}")
    };
    assert!(key.meta.is_none(), "{key:?}");

    // `auth.terminal` only: offered, without the `_meta`.
    let client = connect(TestClient::builder().terminal_auth()).await;
    let methods = auth_methods(&client);
    let login = terminal_method(&methods).expect("the terminal method is offered");
    assert!(login.meta.is_none(), "{login:?}");

    // Neither (or the key declined): not offered.
    for builder in [
        TestClient::builder(),
        TestClient::builder().terminal_auth_meta(false),
    ] {
        let client = connect(builder).await;
        let methods = auth_methods(&client);
        assert!(terminal_method(&methods).is_none(), "{methods:?}");
        assert_eq!(
            client.initialize_response()["authMethods"],
            json!([{"id": "key", "name": "API key"}])
        );
    }
}
