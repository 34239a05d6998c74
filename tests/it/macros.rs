//! What `#[acp::agent]` generates, checked at run time: `initialize` info and capabilities that
//! follow the attribute and the methods that exist (`#[cfg]` included), the routing of the
//! optional session methods, recognised methods returning any error type (`anyhow`), generic
//! agents, and tool definitions whose JSON Schemas (from `#[derive(acp::JsonSchema)]`) are valid
//! and match the parameters. Each test names the behaviour it guarantees.

use std::collections::BTreeMap;
use std::path::PathBuf;

use acp::schema::{AuthMethod, AuthMethodAgent, AuthMethodId};
use acp::testing::TestClient;
use acp::{Agent, Prompt, Session, SessionSetup, StopReason, ToolKind};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Info and capabilities

struct Plain;

#[acp::agent]
impl Plain {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }
}

#[test]
fn info_defaults_to_the_package_name_and_version_and_nothing_optional_is_advertised() {
    let info = Plain.info();
    assert_eq!(info.name, env!("CARGO_PKG_NAME"));
    assert_eq!(info.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(info.title, None);
    let caps = Plain.capabilities();
    assert!(!caps.load_session);
    assert!(!caps.prompt_capabilities.image);
    assert!(!caps.prompt_capabilities.audio);
    assert!(!caps.prompt_capabilities.embedded_context);
    assert!(Plain.auth_methods().is_empty());
    assert!(Plain.tools().is_empty());
}

/// Answers everything it can.
#[derive(Default)]
struct Full;

/// The modes of [`Full`].
#[derive(acp::Modes, Clone, Copy, Default, Debug, PartialEq)]
enum FullMode {
    #[default]
    Ask,
    Code,
}

const NAME: &str = "full-agent";

#[acp::agent(name = NAME, title = format!("Full {}", 1), version = "9.9.9", prompt(image, embedded_context), modes = FullMode)]
impl Full {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let mode = cx.mode::<FullMode>()?;
        cx.message(format!("{} [{mode:?}]", prompt.text())).await?;
        Ok(StopReason::EndTurn)
    }

    async fn load_session(&self, cx: &Session) -> acp::Result<SessionSetup> {
        cx.message("replayed").await?;
        Ok(SessionSetup::default())
    }

    fn auth_methods(&self) -> Vec<AuthMethod> {
        vec![AuthMethod::Agent(AuthMethodAgent::new("token", "Token"))]
    }

    async fn authenticate(&self, _cx: &acp::Client, method: AuthMethodId) -> acp::Result<()> {
        if method.0.as_ref() == "token" {
            Ok(())
        } else {
            Err(acp::Error::msg("no such method"))
        }
    }

    /// A helper that is neither a session method nor a tool: left alone.
    #[allow(dead_code)]
    fn helper(&self) -> usize {
        1
    }
}

#[test]
fn info_and_capabilities_follow_the_attribute_and_the_methods_that_exist() {
    let agent = Full;
    let info = agent.info();
    assert_eq!(info.name, "full-agent");
    assert_eq!(info.title.as_deref(), Some("Full 1"));
    assert_eq!(info.version, "9.9.9");
    let caps = agent.capabilities();
    assert!(
        caps.load_session,
        "load_session exists, so loadSession is advertised"
    );
    assert!(caps.prompt_capabilities.image);
    assert!(!caps.prompt_capabilities.audio);
    assert!(caps.prompt_capabilities.embedded_context);
    assert_eq!(agent.auth_methods().len(), 1);
    assert_eq!(agent.helper(), 1);
}

/// Sends `requests` one by one through the test client and returns every frame received up to
/// each answer.
async fn exchange(agent: impl Agent, requests: &[(&str, Value)]) -> Vec<Value> {
    let c = TestClient::builder()
        .skip_initialize()
        .connect(agent)
        .await
        .unwrap();
    let mut frames = Vec::new();
    let mut session = Value::Null;
    for (method, params) in requests {
        let mut params = params.clone();
        if let Some(obj) = params.as_object_mut()
            && obj.contains_key("sessionId")
        {
            obj.insert("sessionId".into(), session.clone());
        }
        let id = c.send_request(method, params);
        // Everything the agent sends, up to and including this request's answer.
        loop {
            let frame = c.next_frame().await.unwrap().message;
            if let Some(id) = frame.pointer("/result/sessionId") {
                session = id.clone();
            }
            let done = frame["id"] == id && frame.get("method").is_none();
            frames.push(frame);
            if done {
                break;
            }
        }
    }
    // End of input for the agent: it must stop cleanly.
    c.close().await.unwrap();
    frames
}

#[tokio::test]
async fn the_optional_session_methods_are_routed_to_the_authors_methods() {
    let init = json!({ "protocolVersion": 1, "clientCapabilities": {} });
    let frames = exchange(
        Full,
        &[
            ("initialize", init),
            ("authenticate", json!({ "methodId": "token" })),
            ("session/new", json!({ "cwd": "/tmp", "mcpServers": [] })),
            (
                "session/set_mode",
                json!({ "sessionId": "", "modeId": "code" }),
            ),
            (
                "session/prompt",
                json!({ "sessionId": "", "prompt": [{ "type": "text", "text": "hi" }] }),
            ),
            (
                "session/load",
                json!({ "sessionId": "old", "cwd": "/tmp", "mcpServers": [] }),
            ),
        ],
    )
    .await;
    assert_eq!(
        frames[0]["result"]["agentCapabilities"]["loadSession"],
        true
    );
    assert_eq!(frames[0]["result"]["authMethods"][0]["id"], "token");
    assert_eq!(frames[1]["result"], json!({}));
    assert_eq!(frames[2]["result"]["modes"]["currentModeId"], "ask");
    // The runtime applied the mode and told the config options UI.
    assert_eq!(
        frames[3]["params"]["update"]["sessionUpdate"],
        "config_option_update"
    );
    assert_eq!(frames[4]["result"], json!({}));
    assert_eq!(
        frames[5]["params"]["update"]["content"]["text"], "hi [Code]",
        "set_mode reached the session: {frames:#?}"
    );
    assert_eq!(frames[6]["result"]["stopReason"], "end_turn");
    assert_eq!(frames[7]["params"]["update"]["content"]["text"], "replayed");
    assert_eq!(frames[8]["result"]["modes"]["currentModeId"], "ask");
}

#[tokio::test]
async fn an_agent_without_load_session_does_not_route_it() {
    let init = json!({ "protocolVersion": 1, "clientCapabilities": {} });
    let frames = exchange(
        Plain,
        &[
            ("initialize", init),
            (
                "session/load",
                json!({ "sessionId": "old", "cwd": "/tmp", "mcpServers": [] }),
            ),
            ("authenticate", json!({ "methodId": "token" })),
        ],
    )
    .await;
    assert_eq!(
        frames[0]["result"]["agentCapabilities"]["loadSession"],
        false
    );
    assert_eq!(frames[1]["error"]["code"], -32601);
    assert_eq!(frames[2]["error"]["code"], -32601);
}

/// Its `load_session` is compiled out.
struct CfgLoad;

#[acp::agent]
impl CfgLoad {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    #[cfg(any())]
    async fn load_session(&self, _cx: &Session) -> acp::Result<SessionSetup> {
        Ok(SessionSetup::default())
    }
}

#[test]
fn a_recognised_method_compiled_out_is_not_advertised() {
    assert!(!CfgLoad.capabilities().load_session);
}

// ---------------------------------------------------------------------------------------------
// Recognised methods returning any error type

/// Its `prompt` returns `anyhow::Result`, so `?` works on any error.
struct Anyhow;

#[acp::agent(name = "anyhow")]
impl Anyhow {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> anyhow::Result<StopReason> {
        match prompt.text().as_str() {
            "wait" => {
                cx.message("waiting").await?;
                cx.cancelled().await;
                cx.check_cancelled()?;
                Ok(StopReason::EndTurn)
            }
            "cancelled" => Err(acp::Error::Cancelled)?,
            "invalid" => Err(acp::Error::InvalidParams("no such thing".into()))?,
            "context" => {
                let result: Result<u32, _> = "x".parse();
                Ok(anyhow::Context::context(result, "reading the count")
                    .map(|_| StopReason::EndTurn)?)
            }
            number => {
                let n: u32 = number.parse()?;
                cx.message(format!("{n}")).await?;
                Ok(StopReason::EndTurn)
            }
        }
    }
}

/// An error type that is neither `acp::Error` nor a `std::error::Error`.
struct Oops(String);

impl From<acp::Error> for Oops {
    fn from(e: acp::Error) -> Self {
        Oops(e.to_string())
    }
}

impl std::fmt::Display for Oops {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "oops: {}", self.0)
    }
}

struct OwnError;

#[acp::agent(name = "own-error")]
impl OwnError {
    async fn prompt(&self, _cx: &Session, prompt: Prompt) -> Result<StopReason, Oops> {
        Err(Oops(prompt.text()))
    }
}

fn rpc_message(turn: &acp::testing::Turn) -> String {
    match turn.answer() {
        Err(acp::Error::Rpc { message, .. }) => message.clone(),
        other => panic!("expected an error answer, got {other:?}"),
    }
}

#[tokio::test]
async fn a_prompt_returning_anyhow_answers_an_errors_message_as_internal_error() {
    let client = TestClient::builder().connect(Anyhow).await.unwrap();
    let session = client.new_session().await.unwrap();

    let turn = session.prompt("42").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert_eq!(turn.text(), "42");

    let turn = session.prompt("forty-two").await.unwrap();
    assert_eq!(turn.error_code(), Some(-32603), "{turn:?}");
    assert_eq!(rpc_message(&turn), "invalid digit found in string");

    // The causes are kept, as `anyhow` shows them with `{:#}`.
    let turn = session.prompt("context").await.unwrap();
    assert_eq!(
        rpc_message(&turn),
        "reading the count: invalid digit found in string"
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn an_acp_error_inside_anyhow_comes_back_unchanged() {
    let client = TestClient::builder().connect(Anyhow).await.unwrap();
    let session = client.new_session().await.unwrap();

    // `?` on `Error::Cancelled` after the client's cancel: the turn ends cancelled.
    session.cancel_when(|u| {
        matches!(u, acp::schema::SessionUpdate::AgentMessageChunk(c)
            if matches!(&c.content, acp::ContentBlock::Text(t) if t.text == "waiting"))
    });
    let turn = session.prompt("wait").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::Cancelled), "{turn:?}");

    // Without any cancel from the client: still `cancelled`, so the variant survived anyhow.
    let turn = session.prompt("cancelled").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::Cancelled), "{turn:?}");

    // And its JSON-RPC code: `InvalidParams` is -32602, not -32603.
    let turn = session.prompt("invalid").await.unwrap();
    assert_eq!(turn.error_code(), Some(-32602), "{turn:?}");
    assert_eq!(rpc_message(&turn), "no such thing");
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_prompt_with_its_own_error_type_answers_its_message() {
    let client = TestClient::builder().connect(OwnError).await.unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("broken").await.unwrap();
    assert_eq!(turn.error_code(), Some(-32603), "{turn:?}");
    assert_eq!(rpc_message(&turn), "oops: broken");
    client.close().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Generic agents

struct Greeter<T> {
    greeting: T,
}

#[acp::agent(name = "greeter")]
impl<T> Greeter<T>
where
    T: std::fmt::Display + Send + Sync + 'static,
{
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let greeting = self.greet(cx, prompt.text()).await?;
        cx.message(greeting).await?;
        Ok(StopReason::EndTurn)
    }

    /// Greets someone.
    #[acp::tool(kind = "other", title = "Greet {name}")]
    async fn greet(&self, _cx: &Session, name: String) -> acp::Result<String> {
        Ok(format!("{}, {name}!", self.greeting))
    }
}

#[tokio::test]
async fn a_generic_agent_gets_the_agent_impl_and_its_tools() {
    let agent = Greeter { greeting: "Hello" };
    assert_eq!(agent.tools().len(), 1);
    let init = json!({ "protocolVersion": 1, "clientCapabilities": {} });
    let frames = exchange(
        agent,
        &[
            ("initialize", init),
            ("session/new", json!({ "cwd": "/tmp", "mcpServers": [] })),
            (
                "session/prompt",
                json!({ "sessionId": "", "prompt": [{ "type": "text", "text": "Ann" }] }),
            ),
        ],
    )
    .await;
    let updates: Vec<_> = frames
        .iter()
        .filter_map(|f| f.pointer("/params/update"))
        .collect();
    assert_eq!(updates[0]["title"], "Greet Ann");
    assert_eq!(updates[2]["status"], "completed");
    assert_eq!(updates[3]["content"]["text"], "Hello, Ann!");
}

// ---------------------------------------------------------------------------------------------
// Tool definitions and their JSON Schemas

#[derive(serde::Serialize, serde::Deserialize, acp::JsonSchema)]
enum Mode {
    Fast,
    Thorough,
}

/// A search query.
#[derive(serde::Serialize, serde::Deserialize, acp::JsonSchema)]
struct Query {
    /// Words to look for.
    words: Vec<String>,
    /// Nested, to force a `$defs` entry.
    mode: Mode,
}

struct Toolbox;

#[acp::agent(name = "toolbox")]
impl Toolbox {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    /// Takes nothing.
    #[acp::tool]
    async fn nothing(&self, _cx: &Session) -> acp::Result<()> {
        Ok(())
    }

    /// Takes many things.
    ///
    /// Longer explanation.
    ///
    /// # Arguments
    /// - `path`: the file.
    /// * `count` - how many.
    /// - `label`: optional label.
    #[acp::tool(
        kind = "search",
        title = "Search {path} for {query} ({count})",
        name = "many-things",
        permission
    )]
    #[allow(clippy::too_many_arguments)]
    async fn many(
        &self,
        _cx: &Session,
        path: PathBuf,
        count: u32,
        ratio: f64,
        flag: bool,
        label: Option<String>,
        tags: Vec<String>,
        extra: BTreeMap<String, i64>,
        query: Query,
    ) -> acp::Result<String> {
        let _ = (path, count, ratio, flag, label, tags, extra, query);
        Ok(String::new())
    }
}

#[test]
fn tools_lists_every_tool_with_a_valid_schema_matching_its_parameters() {
    let tools = Toolbox.tools();
    assert_eq!(tools.len(), 2);

    let nothing = &tools[0];
    assert_eq!(nothing.name, "nothing");
    assert_eq!(nothing.description, "Takes nothing.");
    assert_eq!(nothing.kind, ToolKind::Other);
    assert_eq!(nothing.title, "nothing");
    assert!(!nothing.permission);
    assert_eq!(
        nothing.input_schema,
        json!({ "type": "object", "properties": {}, "additionalProperties": false })
    );

    let many = &tools[1];
    assert_eq!(many.name, "many-things");
    assert_eq!(
        many.description,
        "Takes many things.\n\nLonger explanation."
    );
    assert_eq!(many.kind, ToolKind::Search);
    assert_eq!(many.title, "Search {path} for {query} ({count})");
    assert!(many.permission);
    let schema = &many.input_schema;
    let props = schema["properties"].as_object().unwrap();
    let names: Vec<_> = props.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "path", "count", "ratio", "flag", "label", "tags", "extra", "query"
        ],
        "one property per parameter, in order"
    );
    assert_eq!(
        props["path"],
        json!({ "type": "string", "description": "the file." })
    );
    assert_eq!(props["count"]["description"], "how many.");
    assert_eq!(props["count"]["type"], "integer");
    assert_eq!(props["flag"], json!({ "type": "boolean" }));
    assert_eq!(props["label"]["description"], "optional label.");
    assert_eq!(
        schema["required"],
        json!(["path", "count", "ratio", "flag", "tags", "extra", "query"]),
        "every parameter but the Option is required"
    );
    assert_eq!(props["query"], json!({ "$ref": "#/$defs/Query" }));
    assert!(schema["$defs"]["Mode"].is_object());

    for tool in &tools {
        assert!(
            jsonschema::meta::is_valid(&tool.input_schema),
            "the schema of `{}` is not a valid JSON Schema: {:#}",
            tool.name,
            tool.input_schema
        );
    }
    let validator = jsonschema::validator_for(schema).expect("the schema compiles");
    let good = json!({
        "path": "a.rs", "count": 3, "ratio": 0.5, "flag": true, "tags": [], "extra": { "a": 1 },
        "query": { "words": ["x"], "mode": "Fast" },
    });
    assert!(
        validator.is_valid(&good),
        "{:?}",
        validator
            .iter_errors(&good)
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
    );
    let mut with_label = good.clone();
    with_label["label"] = json!("l");
    assert!(validator.is_valid(&with_label));
    let mut bad = good.clone();
    bad["count"] = json!("three");
    assert!(!validator.is_valid(&bad));
    let mut unknown = good.clone();
    unknown["nope"] = json!(1);
    assert!(!validator.is_valid(&unknown));
    assert!(!validator.is_valid(&json!({ "path": "a.rs" })));

    // Serialized for a model: name, description, input_schema.
    let for_model = serde_json::to_value(&tools[0]).unwrap();
    assert_eq!(
        for_model,
        json!({
            "name": "nothing",
            "description": "Takes nothing.",
            "input_schema": { "type": "object", "properties": {}, "additionalProperties": false },
        })
    );
}
