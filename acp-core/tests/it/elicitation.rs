//! Elicitation (`elicitation/create`, `elicitation/complete`): the form a type becomes, what
//! the user's answers become, the capability gates, types that cannot be forms, cancellation,
//! URL mode, and the tool-call scope. All in process, on a paused clock, with the test client
//! holding the agent's `elicitation/create` requests and answering them by hand.

use std::collections::HashMap;
use std::fmt::Debug;
use std::marker::PhantomData;
use std::time::Duration;

use acp_core::schema::{
    ClientCapabilities, ElicitationCapabilities, ElicitationUrlCapabilities, StopReason,
};
use acp_core::testing::{TestClient, TestClientBuilder, TestSession, Turn};
use acp_core::{Agent, Elicited, Prompt, Result, Session, in_tool_call};
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

const CREATE: &str = "elicitation/create";

/// Tells what came back from an elicitation: `accepted {value:?}`, `declined`, `cancelled`,
/// or `error {e:?}`; a cancelled turn ends with the error itself.
async fn report<T: Debug>(cx: &Session, answer: Result<Elicited<T>>) -> Result<StopReason> {
    let text = match answer {
        Ok(Elicited::Accepted(value)) => format!("accepted {value:?}"),
        Ok(Elicited::Declined) => "declined".into(),
        Ok(Elicited::Cancelled) => "cancelled".into(),
        Err(e) if e.is_cancelled() => return Err(e),
        Err(e) => format!("error {e:?}"),
    };
    cx.message(text).await?;
    Ok(StopReason::EndTurn)
}

/// Asks for a `T` with the prompt's text as the message, and reports the answer.
struct Asks<T>(PhantomData<fn() -> T>);

fn asks<T>() -> Asks<T> {
    Asks(PhantomData)
}

impl<T: JsonSchema + DeserializeOwned + Debug + Send + 'static> Agent for Asks<T> {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> Result<StopReason> {
        let answer = cx.elicit::<T>(prompt.text()).await;
        report(cx, answer).await
    }
}

/// Asks for a `Note` from inside a tool call.
struct InTool;

impl Agent for InTool {
    async fn prompt(&self, cx: &Session, _prompt: Prompt) -> Result<StopReason> {
        let call = cx.tool_call("Ask the user").start().await?;
        let answer = in_tool_call(&call, cx.elicit::<Note>("Anything to add?")).await;
        call.complete(Vec::new()).await?;
        report(cx, answer).await
    }
}

/// Asks the user to open two URLs in turn, completes each accepted one, and reports both.
struct Urls;

impl Agent for Urls {
    async fn prompt(&self, cx: &Session, _prompt: Prompt) -> Result<StopReason> {
        let mut seen = Vec::new();
        for url in ["https://example.com/a", "https://example.com/b"] {
            match cx.elicit_url(url, format!("Open {url}")).await {
                Ok(Elicited::Accepted(id)) => {
                    cx.complete_elicitation(&id).await?;
                    seen.push(format!("accepted {id}"));
                }
                Ok(other) => seen.push(format!("{other:?}")),
                Err(e) if e.is_cancelled() => return Err(e),
                Err(e) => seen.push(format!("error {e:?}")),
            }
        }
        cx.message(seen.join("\n")).await?;
        Ok(StopReason::EndTurn)
    }
}

/// Tells the client that an elicitation it never saw completed.
struct Completes;

impl Agent for Completes {
    async fn prompt(&self, cx: &Session, _prompt: Prompt) -> Result<StopReason> {
        let done = cx.complete_elicitation(&"elicit_unknown".into()).await;
        cx.message(format!("{done:?}")).await?;
        Ok(StopReason::EndTurn)
    }
}

/// Who to greet.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Greeting {
    /// Your name.
    name: String,
    /// How many times.
    #[schemars(range(min = 1, max = 10))]
    times: u8,
    loud: bool,
    mood: Mood,
    /// A nickname, if any.
    nickname: Option<String>,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mood {
    Happy,
    Grumpy,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Note {
    #[allow(dead_code)]
    note: Option<String>,
}

/// The `elicitation/complete` notifications the agent sent.
fn completions(c: &TestClient) -> Vec<Value> {
    let frames = c.transcript().into_iter();
    let completes = frames.filter(|f| f.method() == Some("elicitation/complete"));
    completes.map(|f| f.message).collect()
}

async fn within<T>(fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), fut)
        .await
        .expect("the test hung")
}

/// A client advertising form (and URL, when `url`) elicitation, holding `elicitation/create`.
fn holding(url: bool) -> TestClientBuilder {
    TestClient::builder().elicitation(url).hold(CREATE)
}

/// Prompts "Fill this in", answers the agent's one elicitation with `answer`, and returns the
/// elicitation's params and the turn.
async fn answered(c: &TestClient, s: &TestSession<'_>, answer: Value) -> (Value, Turn) {
    let (turn, params) = tokio::join!(s.prompt("Fill this in"), async {
        let held = c.next_request(CREATE).await.unwrap();
        let params = held.params().clone();
        held.respond(answer);
        params
    });
    (params, turn.unwrap())
}

/// The form the agent asks for a `T` with (answered `cancel`, whose content is ignored).
async fn form_of<T: JsonSchema + DeserializeOwned + Debug + Send + 'static>() -> Value {
    let c = holding(false).connect(asks::<T>()).await.unwrap();
    let s = c.new_session().await.unwrap();
    let cancel = json!({"action": "cancel", "content": {"unknown": 1}});
    let (params, turn) = answered(&c, &s, cancel).await;
    assert_eq!(turn.text(), "cancelled");
    c.close().await.unwrap();
    params["requestedSchema"].clone()
}

#[tokio::test(start_paused = true)]
async fn a_struct_becomes_a_flat_form_scoped_to_the_session() {
    within(async {
        let c = holding(false).connect(asks::<Greeting>()).await.unwrap();
        let s = c.new_session().await.unwrap();
        let (params, turn) = answered(&c, &s, json!({"action": "decline"})).await;
        assert_eq!(
            params,
            json!({
                "sessionId": s.id(),
                "mode": "form",
                "message": "Fill this in",
                "requestedSchema": {
                    "type": "object",
                    "description": "Who to greet.",
                    "properties": {
                        "name": {"type": "string", "description": "Your name."},
                        "times": {
                            "type": "integer",
                            "description": "How many times.",
                            "minimum": 1,
                            "maximum": 10
                        },
                        "loud": {"type": "boolean"},
                        "mood": {"type": "string", "enum": ["happy", "grumpy"]},
                        "nickname": {"type": "string", "description": "A nickname, if any."}
                    },
                    "required": ["name", "times", "loud", "mood"]
                }
            })
        );
        assert_eq!(turn.text(), "declined");
        c.close().await.unwrap();
    })
    .await;
}

/// A new account.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "Sign up")]
#[allow(dead_code)]
struct SignUp {
    #[schemars(email)]
    email: String,
    #[schemars(url)]
    homepage: Option<String>,
    #[schemars(extend("format" = "date"))]
    born: String,
    #[schemars(extend("format" = "date-time"))]
    at: String,
    /// Not a format a form knows: a plain string.
    #[schemars(extend("format" = "uuid"))]
    token: String,
    #[schemars(length(min = 2, max = 20), regex(pattern = "^[a-z]+$"))]
    handle: String,
    #[schemars(range(min = 0.0, max = 5.0))]
    rating: f64,
    #[serde(default = "three")]
    seats: u32,
    plan: Plan,
    fallback: Option<Plan>,
    colors: Vec<Color>,
    #[schemars(length(min = 1, max = 2))]
    plans: Vec<Plan>,
    #[serde(default)]
    newsletter: bool,
    initial: char,
}

fn three() -> u32 {
    3
}

/// The plan.
#[derive(Debug, Deserialize, JsonSchema)]
enum Plan {
    /// For one person.
    Solo,
    /// For a whole team.
    #[schemars(title = "Team plan")]
    Team,
    Enterprise,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Color {
    Red,
    Green,
}

#[tokio::test(start_paused = true)]
async fn formats_bounds_defaults_titled_enums_and_multi_selects() {
    within(async {
        // schemars lists undocumented variants (`Enterprise`) before documented ones.
        let options = json!([
            {"const": "Enterprise", "title": "Enterprise"},
            {"const": "Solo", "title": "Solo", "description": "For one person."},
            {"const": "Team", "title": "Team plan", "description": "For a whole team."}
        ]);
        let plan = json!({"type": "string", "description": "The plan.", "oneOf": options});
        assert_eq!(
            form_of::<SignUp>().await,
            json!({
                "type": "object",
                "title": "Sign up",
                "description": "A new account.",
                "properties": {
                    "email": {"type": "string", "format": "email"},
                    "homepage": {"type": "string", "format": "uri"},
                    "born": {"type": "string", "format": "date"},
                    "at": {"type": "string", "format": "date-time"},
                    "token": {
                        "type": "string",
                        "description": "Not a format a form knows: a plain string."
                    },
                    "handle": {
                        "type": "string",
                        "minLength": 2,
                        "maxLength": 20,
                        "pattern": "^[a-z]+$"
                    },
                    "rating": {"type": "number", "minimum": 0.0, "maximum": 5.0},
                    "seats": {"type": "integer", "minimum": 0, "default": 3},
                    "plan": plan,
                    "fallback": plan,
                    "colors": {
                        "type": "array",
                        "items": {"type": "string", "enum": ["red", "green"]}
                    },
                    "plans": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": 2,
                        "items": {"anyOf": options}
                    },
                    "newsletter": {"type": "boolean", "default": false},
                    "initial": {"type": "string", "minLength": 1, "maxLength": 1}
                },
                "required": [
                    "email", "born", "at", "token", "handle", "rating", "plan", "colors",
                    "plans", "initial"
                ]
            })
        );
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn accepted_content_reaches_the_agent_as_the_type() {
    within(async {
        let c = holding(false).connect(asks::<Greeting>()).await.unwrap();
        let s = c.new_session().await.unwrap();
        let content = json!({"name": "Ada", "times": 3, "loud": true, "mood": "grumpy"});
        let (_, turn) = answered(&c, &s, json!({"action": "accept", "content": content})).await;
        let expected = Greeting {
            name: "Ada".into(),
            times: 3,
            loud: true,
            mood: Mood::Grumpy,
            nickname: None,
        };
        assert_eq!(turn.text(), format!("accepted {expected:?}"));
        assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
        c.close().await.unwrap();
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn absent_or_null_content_is_an_empty_object() {
    within(async {
        let c = holding(false).connect(asks::<Note>()).await.unwrap();
        let s = c.new_session().await.unwrap();
        for answer in [
            json!({"action": "accept"}),
            json!({"action": "accept", "content": null}),
        ] {
            let (_, turn) = answered(&c, &s, answer).await;
            assert_eq!(turn.text(), "accepted Note { note: None }");
        }
        c.close().await.unwrap();
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn content_that_does_not_fit_is_a_protocol_error_naming_what_is_wrong() {
    within(async {
        let c = holding(false).connect(asks::<Greeting>()).await.unwrap();
        let s = c.new_session().await.unwrap();
        let fields = json!({"name": "Ada", "times": 3, "loud": true, "mood": "grumpy"});
        let with = |key: &str, value: Value| {
            let mut content = fields.clone();
            content[key] = value;
            json!({"action": "accept", "content": content})
        };
        let cases = [
            (
                with("times", json!("three")),
                vec!["at `times`", "invalid type"],
            ),
            (
                with("mood", json!("sad")),
                vec!["at `mood`", "unknown variant `sad`"],
            ),
            (json!({"action": "accept"}), vec!["missing field `name`"]),
            (
                json!({"action": "accept", "content": "Ada"}),
                vec!["not an object"],
            ),
            (json!({"action": "_later"}), vec!["unknown action `_later`"]),
        ];
        for (answer, wanted) in cases {
            let (_, turn) = answered(&c, &s, answer.clone()).await;
            let text = turn.text();
            assert!(text.starts_with("error Protocol("), "{answer}: {text}");
            assert!(text.contains("elicitation/create"), "{answer}: {text}");
            for part in wanted {
                assert!(text.contains(part), "{answer}: {part:?} not in {text}");
            }
        }
        c.close().await.unwrap();
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_clients_error_is_the_clients() {
    within(async {
        let c = holding(false).connect(asks::<Greeting>()).await.unwrap();
        let s = c.new_session().await.unwrap();
        let (turn, ()) = tokio::join!(s.prompt("Fill this in"), async {
            let held = c.next_request(CREATE).await.unwrap();
            held.respond_error(-32602, "no forms today");
        });
        let text = turn.unwrap().text();
        assert!(text.starts_with("error Refused {"), "{text}");
        assert!(
            text.contains("-32602") && text.contains("no forms today"),
            "{text}"
        );
        c.close().await.unwrap();
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn without_the_capability_nothing_is_sent() {
    within(async {
        let url_only = ClientCapabilities::new()
            .elicitation(ElicitationCapabilities::new().url(ElicitationUrlCapabilities::new()));
        let clients = [
            TestClient::builder(),
            TestClient::builder().client_capabilities(url_only),
            TestClient::builder().client_capabilities(
                ClientCapabilities::new().elicitation(ElicitationCapabilities::new()),
            ),
        ];
        for builder in clients {
            let c = builder.connect(asks::<Greeting>()).await.unwrap();
            let s = c.new_session().await.unwrap();
            let turn = s.prompt("Fill this in").await.unwrap();
            assert_eq!(turn.text(), r#"error Unsupported("elicitation.form")"#);
            assert_eq!(c.requests_from_agent(CREATE), Vec::<Value>::new());
            c.close().await.unwrap();
        }
        // Form mode alone: neither URL elicitations nor their completion.
        for agent in [
            TestClient::builder().elicitation(false).connect(Urls).await,
            TestClient::builder()
                .elicitation(false)
                .connect(Completes)
                .await,
        ] {
            let c = agent.unwrap();
            let s = c.new_session().await.unwrap();
            let turn = s.prompt("go").await.unwrap();
            for line in turn.text().lines() {
                assert!(line.contains(r#"Unsupported("elicitation.url")"#), "{line}");
            }
            assert_eq!(c.requests_from_agent(CREATE), Vec::<Value>::new());
            assert_eq!(completions(&c), Vec::<Value>::new());
            c.close().await.unwrap();
        }
    })
    .await;
}

/// Declares structs that cannot be forms (because of their last field).
macro_rules! unformable {
    ($($name:ident { $($(#[$attr:meta])* $field:ident: $ty:ty),* })*) => {$(
        #[derive(Debug, Deserialize, JsonSchema)]
        #[allow(dead_code)]
        struct $name { $($(#[$attr])* $field: $ty),* }
    )*};
}

unformable! {
    Nested { name: String, address: Address }
    Address { city: String }
    WithMap { labels: HashMap<String, String> }
    WithList { tags: Vec<String> }
    WithDataEnum { shape: Shape }
    WithNumberEnum { #[schemars(extend("enum" = [1, 2, 3]))] level: u8 }
    WithAnything { extra: Value }
    Recursive { next: Option<Box<Recursive>> }
    Flattened { name: String, #[serde(flatten)] rest: HashMap<String, String> }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
enum Shape {
    Point,
    Circle(f64),
}

/// Asks for a `T` that cannot be a form: refused with `InvalidParams` saying `why` and what a
/// form holds, and nothing is sent.
async fn refused<T: JsonSchema + DeserializeOwned + Debug + Send + 'static>(why: &str) {
    let c = holding(true).connect(asks::<T>()).await.unwrap();
    let s = c.new_session().await.unwrap();
    let text = s.prompt("Fill this in").await.unwrap().text();
    assert_eq!(c.requests_from_agent(CREATE), Vec::<Value>::new());
    c.close().await.unwrap();
    assert!(text.starts_with("error InvalidParams("), "{text}");
    assert!(text.contains(why), "{why:?} not in {text}");
    assert!(
        text.contains("; a form is one struct of named fields"),
        "{text}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_type_that_cannot_be_a_form_is_refused_before_anything_is_sent() {
    within(async {
        refused::<Nested>(
            "`Nested` cannot be asked for with an elicitation form: its field `address` is a \
             nested struct;",
        )
        .await;
        refused::<WithMap>("field `labels` is a map;").await;
        refused::<WithList>("field `tags` is a list of something other than an enum").await;
        refused::<WithDataEnum>("field `shape` is an enum whose variants are not all unit").await;
        refused::<WithNumberEnum>("field `level` is an enum of non-string values").await;
        refused::<WithAnything>("field `extra` is any JSON value").await;
        refused::<Recursive>("field `next` is a recursive type").await;
        refused::<Flattened>("it holds a map").await;
        refused::<String>("it is not a struct with named fields").await;
        refused::<Mood>("it is not a struct with named fields").await;
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_turn_cancelled_while_the_form_is_open_answers_cancelled() {
    within(async {
        let c = holding(false).connect(asks::<Greeting>()).await.unwrap();
        let s = c.new_session().await.unwrap();
        let id = s.start_prompt("Fill this in");
        let held = c.next_request(CREATE).await.unwrap();
        s.cancel();
        let answer = c.wait_for_response(&id).await.unwrap();
        assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
        // The user's late answer is dropped; the session goes on.
        held.respond(json!({"action": "accept", "content": {"note": "late"}}));
        let (_, turn) = answered(&c, &s, json!({"action": "decline"})).await;
        assert_eq!(turn.text(), "declined");
        c.close().await.unwrap();
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn url_mode_ids_are_distinct_and_completion_is_sent() {
    within(async {
        let c = holding(true).connect(Urls).await.unwrap();
        let s = c.new_session().await.unwrap();
        let (turn, (first, second)) = tokio::join!(s.prompt("go"), async {
            let held = c.next_request(CREATE).await.unwrap();
            let first = held.params().clone();
            held.respond(json!({"action": "accept"}));
            let held = c.next_request(CREATE).await.unwrap();
            let second = held.params().clone();
            held.respond(json!({"action": "decline"}));
            (first, second)
        });
        let turn = turn.unwrap();
        let id = |params: &Value| params["elicitationId"].as_str().unwrap().to_owned();
        let (a, b) = (id(&first), id(&second));
        assert_ne!(a, b);
        assert_eq!(
            first,
            json!({
                "sessionId": s.id(),
                "mode": "url",
                "elicitationId": a,
                "url": "https://example.com/a",
                "message": "Open https://example.com/a"
            })
        );
        assert_eq!(second["url"], "https://example.com/b");
        assert_eq!(turn.text(), format!("accepted {a}\nDeclined"));
        assert_eq!(
            completions(&c),
            vec![json!({
                "jsonrpc": "2.0",
                "method": "elicitation/complete",
                "params": {"elicitationId": a}
            })]
        );
        c.close().await.unwrap();
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn inside_a_tool_call_the_elicitation_names_it() {
    within(async {
        let c = holding(false).connect(InTool).await.unwrap();
        let s = c.new_session().await.unwrap();
        let (params, turn) = answered(&c, &s, json!({"action": "accept"})).await;
        let calls = turn.tool_calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(params["toolCallId"], calls[0].id.as_str(), "{params}");
        assert_eq!(params["sessionId"], json!(s.id()));
        assert_eq!(turn.text(), "accepted Note { note: None }");
        c.close().await.unwrap();
        // Outside a tool call there is none.
        let c = holding(false).connect(asks::<Note>()).await.unwrap();
        let s = c.new_session().await.unwrap();
        let (params, _) = answered(&c, &s, json!({"action": "cancel"})).await;
        assert!(params.get("toolCallId").is_none(), "{params}");
        c.close().await.unwrap();
    })
    .await;
}
