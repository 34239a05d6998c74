//! The rest of a session's surface, through the runtime, in process: authentication
//! (methods offered by client capability, the auth-required gate, logout), extension methods
//! both ways, `_meta` on requests and answers, prompt content the agent did not advertise,
//! title / usage / message ids, handles kept outside a turn, tools that need a client
//! capability, and the terminal a tool embeds kept beside what it returns.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use acp::schema::{
    self, AuthMethod, AuthMethodAgent, AuthMethodId, AuthMethodTerminal, Cost, SessionUpdate,
    ToolCallContent, UsageUpdate,
};
use acp::testing::{MemoryFs, TerminalStub, TestClient};
use acp::{Client, Prompt, Session, StopReason};
use serde_json::{Value, json};

/// What the `_surface/stats` extension takes and answers.
#[derive(serde::Deserialize)]
struct StatsRequest {
    words: Vec<String>,
}

#[derive(serde::Serialize)]
struct Stats {
    count: usize,
    longest: String,
}

#[derive(Default)]
struct Surface {
    logged_in: AtomicBool,
    pinged: Mutex<Vec<Value>>,
}

#[acp::agent(name = "surface", prompt(image))]
impl Surface {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let text = prompt.text();
        match text.lines().next().unwrap_or_default() {
            "title" => cx.title("A title").await?,
            "usage" => {
                cx.usage(UsageUpdate::new(53_000, 200_000).cost(Cost::new(0.045, "USD")))
                    .await?
            }
            "two messages" => {
                cx.message("first").await?;
                cx.message(" still first").await?;
                cx.new_message();
                cx.message("second").await?;
                cx.thought("thinking").await?;
                cx.message("third").await?;
            }
            "later" => {
                // A title computed after the turn, through a handle kept for it.
                let later = cx.detached();
                tokio::spawn(async move {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    let _ = later.title("Computed later").await;
                });
            }
            "meta" => {
                let seen = cx.request_meta().cloned().unwrap_or_default();
                cx.message(format!("meta {}", Value::Object(seen))).await?;
                let mut answer = serde_json::Map::new();
                answer.insert("surface/echo".into(), json!(true));
                cx.set_answer_meta(answer);
            }
            "ask the client" => {
                let client = cx.client();
                let answer: Value = client
                    .ext_request("_editor/buffers", &json!({"language": "rust"}))
                    .await?;
                client
                    .ext_notify("_surface/progress", &json!({"done": true}))
                    .await?;
                cx.message(format!("buffers {answer}")).await?;
            }
            "pings" => {
                let pinged = self.pinged.lock().unwrap().clone();
                cx.message(format!("pinged {}", Value::Array(pinged)))
                    .await?;
            }
            "tools" => {
                let names: Vec<_> = cx.tools().await.into_iter().map(|t| t.name).collect();
                cx.message(names.join(",")).await?;
            }
            line if line == "run" || line.starts_with("run ") => {
                let command = line.strip_prefix("run ").unwrap_or("ls");
                match cx.call_tool("run", json!({ "command": command })).await {
                    Ok(output) => cx.message(output.to_text()).await?,
                    Err(e) => cx.message(format!("error: {e}")).await?,
                }
            }
            _ => {
                cx.message(format!("{} blocks: {text}", prompt.blocks().len()))
                    .await?
            }
        }
        Ok(StopReason::EndTurn)
    }

    fn auth_methods(&self) -> Vec<AuthMethod> {
        vec![
            AuthMethod::Agent(AuthMethodAgent::new("key", "API key")),
            AuthMethod::Terminal(
                AuthMethodTerminal::new("login", "Log in").args(vec!["--login".into()]),
            ),
        ]
    }

    async fn authenticate(&self, cx: &Client, method: AuthMethodId) -> acp::Result<()> {
        assert_eq!(&*method.0, "key");
        if cx.request_meta().is_some_and(|m| m.contains_key("fail")) {
            return Err(acp::Error::msg("bad key"));
        }
        self.logged_in.store(true, Ordering::SeqCst);
        Ok(())
    }

    async fn authenticated(&self, cx: &Client) -> bool {
        cx.has_authenticated() || self.logged_in.load(Ordering::SeqCst)
    }

    async fn logout(&self, _cx: &Client) -> acp::Result<()> {
        self.logged_in.store(false, Ordering::SeqCst);
        Ok(())
    }

    /// Counts words.
    #[acp::ext("_surface/stats")]
    async fn stats(&self, cx: &Client, req: StatsRequest) -> acp::Result<Stats> {
        assert!(cx.info().is_none());
        let longest = req
            .words
            .iter()
            .max_by_key(|w| w.len())
            .cloned()
            .unwrap_or_default();
        Ok(Stats {
            count: req.words.len(),
            longest,
        })
    }

    #[acp::ext("_surface/ping", notification)]
    async fn ping(&self, _cx: &Client, params: Value) -> acp::Result<()> {
        self.pinged.lock().unwrap().push(params);
        Ok(())
    }

    /// Runs a command in the editor's terminal; fails unless it exits 0.
    #[acp::tool(kind = "execute", requires(terminal))]
    async fn run(&self, cx: &Session, command: String) -> acp::Result<String> {
        let term = cx.terminal().create(command, Vec::<String>::new()).await?;
        let status = term.wait_for_exit().await?;
        if status.exit_code != Some(0) {
            return Err(acp::Error::msg(format!("exit code {:?}", status.exit_code)));
        }
        Ok(term.output().await?.output)
    }

    /// Reads a file.
    #[acp::tool(kind = "read", requires(fs_read))]
    async fn read(&self, cx: &Session, path: std::path::PathBuf) -> acp::Result<String> {
        cx.fs().read_text_file(&path).await
    }
}

fn code(e: &acp::Error) -> i32 {
    match e {
        acp::Error::Rpc { code, .. } => *code,
        other => panic!("not a JSON-RPC error: {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn terminal_auth_methods_are_offered_only_to_clients_that_can_run_them() {
    let client = TestClient::builder()
        .connect(Surface::default())
        .await
        .unwrap();
    let methods = &client.initialize_response()["authMethods"];
    assert_eq!(methods.as_array().unwrap().len(), 1, "{methods}");
    assert_eq!(methods[0]["id"], "key");
    assert_eq!(
        client.initialize_response()["agentCapabilities"]["auth"]["logout"],
        json!({})
    );
    let err = client
        .request("authenticate", json!({"methodId": "login"}))
        .await
        .unwrap_err();
    assert_eq!(code(&err), -32602, "a method not offered to this client");

    let client = TestClient::builder()
        .terminal_auth()
        .connect(Surface::default())
        .await
        .unwrap();
    let methods = &client.initialize_response()["authMethods"];
    assert_eq!(methods[1]["type"], "terminal");
    assert_eq!(methods[1]["args"], json!(["--login"]));
    // The client runs terminal methods itself: `authenticate` with one is invalid.
    let err = client
        .request("authenticate", json!({"methodId": "login"}))
        .await
        .unwrap_err();
    assert_eq!(code(&err), -32602);
    assert!(err.to_string().contains("terminal"), "{err}");
    let err = client
        .request("authenticate", json!({"methodId": "nope"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`key`, `login`"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn sessions_wait_for_authentication_and_logout_ends_it() {
    let client = TestClient::builder()
        .connect(Surface::default())
        .await
        .unwrap();
    let err = client.new_session().await.unwrap_err();
    assert_eq!(
        code(&err),
        -32000,
        "auth required before authenticate: {err}"
    );

    let err = client
        .request(
            "authenticate",
            json!({"methodId": "key", "_meta": {"fail": true}}),
        )
        .await
        .unwrap_err();
    assert_eq!(code(&err), -32603, "{err}");
    assert_eq!(code(&client.new_session().await.unwrap_err()), -32000);

    let answer = client
        .request("authenticate", json!({"methodId": "key"}))
        .await
        .unwrap();
    assert_eq!(answer, json!({}));
    let session = client.new_session().await.unwrap();
    assert_eq!(session.prompt("hi").await.unwrap().text(), "1 blocks: hi");

    assert_eq!(
        client.request("logout", json!({})).await.unwrap(),
        json!({})
    );
    assert_eq!(code(&client.new_session().await.unwrap_err()), -32000);
}

/// An agent with no authentication at all.
struct Open;

#[acp::agent(name = "open")]
impl Open {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }
}

#[tokio::test(start_paused = true)]
async fn without_auth_methods_nothing_is_gated_and_the_auth_methods_are_not_found() {
    let client = TestClient::builder().connect(Open).await.unwrap();
    assert_eq!(client.initialize_response()["authMethods"], json!([]));
    assert!(
        client.initialize_response()["agentCapabilities"]["auth"]
            .get("logout")
            .is_none()
    );
    client.new_session().await.unwrap();
    for method in ["authenticate", "logout", "_surface/stats"] {
        let err = client
            .request(method, json!({"methodId": "key"}))
            .await
            .unwrap_err();
        assert_eq!(code(&err), -32601, "{method}");
    }
}

async fn logged_in(builder: acp::testing::TestClientBuilder) -> TestClient {
    let client = builder.connect(Surface::default()).await.unwrap();
    client
        .request("authenticate", json!({"methodId": "key"}))
        .await
        .unwrap();
    client
}

#[tokio::test(start_paused = true)]
async fn extension_requests_and_notifications_reach_their_methods_typed() {
    let client = logged_in(TestClient::builder()).await;
    let answer = client
        .request("_surface/stats", json!({"words": ["a", "abc", "ab"]}))
        .await
        .unwrap();
    assert_eq!(answer, json!({"count": 3, "longest": "abc"}));
    let err = client
        .request("_surface/stats", json!({"words": "no"}))
        .await
        .unwrap_err();
    assert_eq!(code(&err), -32602);
    assert!(err.to_string().contains("words"), "names the field: {err}");
    let err = client
        .request("_surface/unknown", json!({}))
        .await
        .unwrap_err();
    assert_eq!(code(&err), -32601);
    // Notifications: the declared one is handled, any other ignored (the connection goes on).
    client.notify("_surface/ping", json!({"n": 1}));
    client.notify("_surface/other", json!({"n": 2}));
    let session = client.new_session().await.unwrap();
    assert_eq!(
        session.prompt("pings").await.unwrap().text(),
        r#"pinged [{"n":1}]"#
    );
}

#[tokio::test(start_paused = true)]
async fn the_agent_sends_its_own_extension_requests_and_notifications() {
    let client = logged_in(TestClient::builder().hold("_editor/buffers")).await;
    let session = client.new_session().await.unwrap();
    let prompt = session.start_prompt("ask the client");
    let held = client.next_request("_editor/buffers").await.unwrap();
    assert_eq!(held.params(), &json!({"language": "rust"}));
    held.respond(json!({"buffers": 2}));
    let answer = client.wait_for_response(&prompt).await.unwrap();
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    let notified = client
        .wait_for("_surface/progress", |f| {
            f.method() == Some("_surface/progress")
        })
        .await
        .unwrap();
    assert_eq!(notified.message["params"], json!({"done": true}));
    let said = client
        .transcript()
        .iter()
        .filter_map(|f| f.session_update())
        .filter_map(|n| match n.update {
            SessionUpdate::AgentMessageChunk(c) => match c.content {
                acp::ContentBlock::Text(t) => Some(t.text),
                _ => None,
            },
            _ => None,
        })
        .collect::<Vec<_>>();
    assert_eq!(said, [r#"buffers {"buffers":2}"#]);
}

#[tokio::test(start_paused = true)]
async fn meta_is_read_on_requests_and_set_on_answers() {
    let client = logged_in(TestClient::builder()).await;
    let session = client.new_session().await.unwrap();
    let answer = client
        .request(
            "session/prompt",
            json!({
                "sessionId": session.id(),
                "prompt": [{"type": "text", "text": "meta"}],
                "_meta": {"traceparent": "00-abc-01"}
            }),
        )
        .await
        .unwrap();
    assert_eq!(answer["_meta"], json!({"surface/echo": true}));
    assert_eq!(answer["stopReason"], "end_turn");
    let turn = session.prompt("x").await.unwrap();
    assert!(turn.answer().unwrap().get("_meta").is_none());
}

#[tokio::test(start_paused = true)]
async fn prompt_content_the_agent_does_not_accept_is_refused_naming_the_block() {
    let client = logged_in(TestClient::builder()).await;
    let session = client.new_session().await.unwrap();
    let image = json!({"type": "image", "data": "AAAA", "mimeType": "image/png"});
    let audio = json!({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"});
    let link = json!({"type": "resource_link", "name": "main.rs", "uri": "file:///w/main.rs"});
    let turn = session
        .prompt_blocks(json!([{"type": "text", "text": "look"}, image, link]))
        .await
        .unwrap();
    assert_eq!(turn.text(), "3 blocks: look\n[@main.rs](file:///w/main.rs)");
    let turn = session
        .prompt_blocks(json!([{"type": "text", "text": "listen"}, audio]))
        .await
        .unwrap();
    assert_eq!(turn.error_code(), Some(-32602));
    let message = turn.answer().unwrap_err().to_string();
    assert!(
        message.contains("`prompt[1]` is audio") && message.contains("promptCapabilities.audio"),
        "{message}"
    );
}

#[tokio::test(start_paused = true)]
async fn titles_usage_and_message_ids_reach_the_client() {
    let client = logged_in(TestClient::builder()).await;
    let session = client.new_session().await.unwrap();
    session.prompt("title").await.unwrap();
    session.prompt("usage").await.unwrap();
    let view = session.view();
    assert_eq!(view.title.as_deref(), Some("A title"));
    let usage = view.usage.unwrap();
    assert_eq!((usage.used, usage.size), (53_000, 200_000));
    assert_eq!(usage.cost.unwrap().currency, "USD");

    let turn = session.prompt("two messages").await.unwrap();
    let ids: Vec<_> = turn
        .updates()
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::AgentMessageChunk(c) | SessionUpdate::AgentThoughtChunk(c) => {
                c.message_id.as_ref().map(|m| m.0.to_string())
            }
            _ => None,
        })
        .collect();
    assert_eq!(ids.len(), 5);
    assert_eq!(ids[0], ids[1], "one message in two chunks");
    assert_ne!(ids[1], ids[2], "new_message starts another");
    assert_ne!(ids[2], ids[3], "a thought is a message of its own");
    assert_ne!(ids[3], ids[4], "a message after a thought is new");
    let unique: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), 4);
}

#[tokio::test(start_paused = true)]
async fn a_detached_handle_sends_after_the_turn_and_fails_once_the_session_is_closed() {
    let client = logged_in(TestClient::builder()).await;
    let session = client.new_session().await.unwrap();
    session.prompt("later").await.unwrap();
    let view = session
        .wait_for_view("the later title", |v| v.title.is_some())
        .await
        .unwrap();
    assert_eq!(view.title.as_deref(), Some("Computed later"));

    // Closed first: the late title is refused, nothing is sent.
    let other = client.new_session().await.unwrap();
    let before = client.transcript().len();
    other.prompt("later").await.unwrap();
    other.close().await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let sent_after: Vec<_> = client.transcript()[before..]
        .iter()
        .filter(|f| {
            f.session_update()
                .is_some_and(|n| n.session_id == *other.id())
        })
        .filter(|f| f.message["params"]["update"]["sessionUpdate"] == "session_info_update")
        .cloned()
        .collect();
    assert!(sent_after.is_empty(), "{sent_after:?}");
}

#[tokio::test(start_paused = true)]
async fn tools_that_need_a_capability_the_client_lacks_are_hidden_and_fail_before_anything_is_sent()
{
    let client = logged_in(TestClient::builder()).await;
    let session = client.new_session().await.unwrap();
    assert_eq!(session.prompt("tools").await.unwrap().text(), "");
    let turn = session.prompt("run").await.unwrap();
    assert_eq!(
        turn.text(),
        "error: the client does not support `terminal` (it did not advertise that capability)"
    );
    assert!(turn.tool_calls().is_empty(), "no tool call shown");
    assert!(turn.permission_requests().is_empty());

    let client = logged_in(
        TestClient::builder()
            .fs(MemoryFs::new())
            .terminal(TerminalStub::new().command("ls", TerminalStub::new().output("a b"))),
    )
    .await;
    let session = client.new_session().await.unwrap();
    assert_eq!(session.prompt("tools").await.unwrap().text(), "run,read");
    let turn = session.prompt("run").await.unwrap();
    assert_eq!(turn.text(), "a b");
    assert_eq!(turn.tool_calls().len(), 1);
}

#[tokio::test]
async fn with_the_local_fallback_tools_that_need_what_the_client_lacks_are_offered_and_run_locally()
{
    let server = acp::Server::new(Surface::default()).local_fallback(true);
    let client = TestClient::builder()
        .cwd(std::env::temp_dir())
        .serve(server)
        .await
        .unwrap();
    client
        .request("authenticate", json!({"methodId": "key"}))
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    assert_eq!(session.prompt("tools").await.unwrap().text(), "run,read");
    let turn = session.prompt("run echo ran locally").await.unwrap();
    assert_eq!(turn.text(), "ran locally\n");
    assert_eq!(turn.tool_calls().len(), 1);
    assert!(client.terminals_created().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_returns_a_value_keeps_the_terminal_it_embedded_and_shows_the_value_after_it() {
    let stub = TerminalStub::new()
        .command("ls", TerminalStub::new().output("a b"))
        .command("false", TerminalStub::new().output("oops").exit_code(1));
    let client = logged_in(TestClient::builder().terminal(stub)).await;
    let session = client.new_session().await.unwrap();

    let turn = session.prompt("run ls").await.unwrap();
    assert_eq!(turn.text(), "a b");
    let calls = turn.tool_calls();
    let [call] = &calls[..] else {
        panic!("{calls:?}")
    };
    assert_eq!(call.status(), Some(schema::ToolCallStatus::Completed));
    // The editor keeps showing the terminal, and the returned text after it.
    let [
        ToolCallContent::Terminal(terminal),
        ToolCallContent::Content(text),
    ] = &call.content[..]
    else {
        panic!("{:?}", call.content)
    };
    assert_eq!(text.content, schema::ContentBlock::from("a b"));
    assert_eq!(client.terminals_created().len(), 1);

    // A tool that fails after running a command keeps it too, the error after it.
    let turn = session.prompt("run false").await.unwrap();
    assert_eq!(turn.text(), "error: exit code Some(1)");
    let calls = turn.tool_calls();
    let [call] = &calls[..] else {
        panic!("{calls:?}")
    };
    assert_eq!(call.status(), Some(schema::ToolCallStatus::Failed));
    let [
        ToolCallContent::Terminal(failed),
        ToolCallContent::Content(_),
    ] = &call.content[..]
    else {
        panic!("{:?}", call.content)
    };
    assert_ne!(failed.terminal_id, terminal.terminal_id);
    assert_eq!(call.text(), "exit code Some(1)");
}
