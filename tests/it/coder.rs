//! The `coder` example under `acp::testing`, its model a scripted provider: a task that reads,
//! edits and runs a command with permissions; ask mode refusing an edit before the user is
//! asked; the model picked with the `model` config option; the plan tool; a restart
//! mid-conversation, the session loaded by another process with the model's history.
//!
//! And the built binary as an editor starts it, with no environment of its own: it answers
//! `initialize` and offers its sign-in, refuses `session/new` with `-32000` naming what to do;
//! the terminal sign-in (`coder --sign-in`, its answers fed to its stdin) saves a `0600` file,
//! after which a new agent process on the same config directory authenticates, opens a
//! session and answers a turn from an OpenAI-compatible model server on loopback, with the key
//! that was typed; `logout` deletes the file.

use crate::support;

use acp::StopReason;
use acp::llm::scripted::{Reply, Scripted};
use acp::llm::{Model, Part};
use acp::schema::ToolCallStatus::*;
use acp::testing::{MemoryFs, PermissionPolicy, TerminalStub, TestClient};
use serde_json::json;

#[path = "../../examples/coder.rs"]
#[allow(dead_code)]
// The example, inside the tests named for it (`coder::coder`).
#[allow(clippy::module_inception)]
mod coder;

const LIB: &str = "/workspace/src/lib.rs";

async fn client(provider: &Scripted) -> TestClient {
    let coder = coder::Coder::new(Model::new(provider.clone(), "main-model"), "small-model");
    TestClient::builder()
        .fs(MemoryFs::new().with(LIB, "pub fn two() -> u32 { 1 + 1 }\n"))
        .terminal(TerminalStub::new().command(
            "sh -c cargo test",
            TerminalStub::new().output("test result: ok. 1 passed"),
        ))
        .permissions(PermissionPolicy::AllowOnce)
        .connect(coder)
        .await
        .unwrap()
}

/// The last request's tool results, as (text, is_error).
fn results(provider: &Scripted) -> Vec<(String, bool)> {
    let requests = provider.requests();
    let last = requests.last().unwrap().messages.last().unwrap();
    last.content
        .iter()
        .filter_map(|p| match p {
            Part::ToolResult {
                content, is_error, ..
            } => Some((content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn reads_edits_and_runs_the_tests_with_permission() {
    let provider = Scripted::new()
        .reply(Reply::new().tool_call("1", "read", json!({"path": "src/lib.rs"})))
        .reply(Reply::new().text("Simplifying.").tool_call(
            "2",
            "edit",
            json!({"path": "src/lib.rs", "old": "1 + 1", "new": "2"}),
        ))
        .reply(Reply::new().tool_call("3", "run", json!({"command": "cargo test"})))
        .reply(Reply::new().text(" Tests pass."));
    let client = client(&provider).await;
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("simplify two()").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert_eq!(turn.text(), "Simplifying. Tests pass.");

    let calls = turn.tool_calls();
    let titles: Vec<_> = calls.iter().map(|c| c.title.as_str()).collect();
    assert_eq!(
        titles,
        ["Read src/lib.rs", "Edit src/lib.rs", "Run cargo test"]
    );
    assert!(
        calls.iter().all(|c| c.status() == Some(Completed)),
        "{calls:#?}"
    );
    assert_eq!(calls[1].statuses, [Pending, InProgress, Completed]);
    // Edits and commands are asked about; reading is not.
    let asked: Vec<_> = turn
        .permission_requests()
        .iter()
        .map(|p| p["toolCall"]["toolCallId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(asked, [calls[1].id.clone(), calls[2].id.clone()]);

    let diff = calls[1].diffs()[0];
    assert_eq!(
        diff.old_text.as_deref(),
        Some("pub fn two() -> u32 { 1 + 1 }\n")
    );
    assert_eq!(diff.new_text, "pub fn two() -> u32 { 2 }\n");
    assert_eq!(
        client.fs().read(LIB).as_deref(),
        Some("pub fn two() -> u32 { 2 }\n")
    );
    assert_eq!(
        client.terminals_created(),
        [(
            "sh".to_owned(),
            vec!["-c".to_owned(), "cargo test".to_owned()]
        )]
    );

    // What the model read, and the command's output, went back to it.
    let requests = provider.requests();
    assert_eq!(requests.len(), 4);
    let read = &requests[1].messages.last().unwrap().content[0];
    assert!(
        matches!(read, Part::ToolResult { content, .. } if content.contains("1 + 1")),
        "{read:?}"
    );
    let ran = results(&provider);
    assert!(ran[0].0.contains("test result: ok"), "{ran:?}");
    assert!(ran[0].0.contains("exit code 0"), "{ran:?}");
}

#[tokio::test]
async fn ask_mode_refuses_an_edit_before_the_user_is_asked() {
    let provider = Scripted::new()
        .reply(Reply::new().tool_call(
            "1",
            "write",
            json!({"path": "src/lib.rs", "content": "gone"}),
        ))
        .reply(Reply::new().text("I can't edit in ask mode."));
    let client = client(&provider).await;
    let session = client.new_session().await.unwrap();
    session.set_mode("ask").await.unwrap();
    let turn = session.prompt("delete everything").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    let calls = turn.tool_calls();
    assert_eq!(calls[0].status(), Some(Failed));
    assert!(calls[0].text().contains("ask mode"), "{}", calls[0].text());
    assert!(turn.permission_requests().is_empty());
    assert_eq!(
        client.fs().read(LIB).as_deref(),
        Some("pub fn two() -> u32 { 1 + 1 }\n")
    );
    let refused = results(&provider);
    assert!(
        refused[0].1 && refused[0].0.contains("ask mode"),
        "{refused:?}"
    );
}

#[tokio::test]
async fn the_model_is_a_config_option_the_editor_switches() {
    let provider = Scripted::from_fn(|_| Reply::new().text("ok"));
    let client = client(&provider).await;
    let session = client.new_session().await.unwrap();
    let options = &session.new_session_response()["configOptions"];
    let model = options
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "model")
        .expect("a model option");
    assert_eq!(model["category"], "model");
    session.prompt("one").await.unwrap();
    session.set_config_option("model", "small").await.unwrap();
    session.prompt("two").await.unwrap();
    let models: Vec<_> = provider.requests().into_iter().map(|r| r.model).collect();
    assert_eq!(models, ["main-model", "small-model"]);
}

#[tokio::test]
async fn the_plan_tool_shows_the_plan() {
    let provider = Scripted::new()
        .reply(Reply::new().tool_call(
            "1",
            "plan",
            json!({"steps": [
                {"step": "Read the code", "status": "completed"},
                {"step": "Fix the bug", "status": "in_progress"}
            ]}),
        ))
        .reply(Reply::new().text("On it."));
    let client = client(&provider).await;
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("fix it").await.unwrap();
    let plans = turn.plans();
    assert_eq!(plans.len(), 1);
    let steps: Vec<_> = plans[0]
        .entries
        .iter()
        .map(|e| e.content.as_str())
        .collect();
    assert_eq!(steps, ["Read the code", "Fix the bug"]);
}

#[tokio::test]
async fn a_restart_mid_conversation_loads_the_session_with_the_models_history() {
    let store = std::sync::Arc::new(acp::store::MemoryStore::default());
    let fs = MemoryFs::new().with(LIB, "pub fn two() -> u32 { 1 + 1 }\n");
    let serve = |provider: &Scripted| {
        let coder = coder::Coder::new(Model::new(provider.clone(), "main-model"), "small-model");
        let server = acp::Server::new(coder).shared_store(store.clone());
        TestClient::builder().fs(fs.clone()).serve(server)
    };
    let first_provider = Scripted::new()
        .reply(Reply::new().tool_call("1", "read", json!({"path": "src/lib.rs"})))
        .reply(Reply::new().text("It returns 2."));
    let first = serve(&first_provider).await.unwrap();
    let session = first.new_session().await.unwrap();
    let turn = session.prompt("what does two() return?").await.unwrap();
    assert_eq!(turn.text(), "It returns 2.");
    let id = session.id().clone();
    first.close().await.unwrap();

    // Another process of the agent, on the same store: the editor loads the session.
    let second_provider = Scripted::new().reply(Reply::new().text("Nothing else."));
    let second = serve(&second_provider).await.unwrap();
    let loaded = second.load_session(&id).await.unwrap();
    assert!(
        loaded
            .replayed
            .iter()
            .any(|u| matches!(u, acp::schema::SessionUpdate::AgentMessageChunk(_))),
        "the first turn is replayed to the editor"
    );
    let turn = loaded.session.prompt("anything else?").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    let sent = &second_provider.requests()[0].messages;
    let first_sent = &first_provider.requests()[1].messages;
    assert_eq!(
        sent[..first_sent.len()],
        first_sent[..],
        "the prompt, the read call and its result, as the first process sent them"
    );
    assert_eq!(
        sent[first_sent.len()..],
        [
            acp::llm::Message::assistant("It returns 2."),
            acp::llm::Message::user("anything else?")
        ]
    );
    assert!(
        matches!(&first_sent[2].content[0], Part::ToolResult { content, .. } if content.contains("1 + 1")),
        "{first_sent:?}"
    );
    second.close().await.unwrap();
}

/// A command running the built `coder` as an editor does: no environment but `PATH`, and a
/// home (`HOME`, `XDG_CONFIG_HOME`) and data directory inside `root`.
fn bare_coder(root: &std::path::Path) -> std::process::Command {
    let mut command = std::process::Command::new(support::example_binary("coder"));
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", root.join("home"))
        .env("XDG_CONFIG_HOME", root.join("config"))
        .env("ACP_DATA_DIR", root.join("data"));
    command
}

/// Where `coder --sign-in` saves, under [`bare_coder`]'s environment.
fn sign_in_file(root: &std::path::Path) -> std::path::PathBuf {
    let config = if cfg!(target_os = "macos") {
        root.join("home/Library/Application Support")
    } else {
        root.join("config")
    };
    config.join("acp-coder/sign-in.json")
}

/// The code and message of a JSON-RPC error answer.
fn rpc_error(result: acp::Result<serde_json::Value>) -> (i32, String) {
    match result {
        Err(acp::Error::Rpc { code, message, .. }) => (code, message),
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

/// Says what to do: sign in, or configure the environment.
fn names_what_to_do(message: &str) {
    for words in [
        "coder --sign-in",
        "ACP_MODEL",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
    ] {
        assert!(message.contains(words), "{words:?} in {message:?}");
    }
}

#[tokio::test]
async fn with_no_environment_it_initializes_and_asks_to_sign_in() {
    let root = tempfile::tempdir().unwrap();
    let builder = TestClient::builder().cwd(root.path()).terminal_auth();
    let client = builder.spawn(bare_coder(root.path())).await.unwrap();
    let methods = client.initialize_response()["authMethods"].clone();
    let terminal = methods
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["type"] == "terminal")
        .unwrap_or_else(|| panic!("a terminal sign-in in {methods}"));
    assert_eq!(terminal["id"], "sign-in");
    assert_eq!(terminal["args"], json!(["--sign-in"]));
    let saved = methods
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "saved-sign-in")
        .unwrap_or_else(|| panic!("the saved sign-in in {methods}"));
    assert!(saved.get("type").is_none(), "of type agent: {saved}");
    let launch = &saved["_meta"]["terminal-auth"];
    assert_eq!(launch["args"], json!(["--sign-in"]), "{saved}");
    assert!(
        launch["command"].as_str().unwrap().contains("coder"),
        "{saved}"
    );
    assert_eq!(
        client.initialize_response()["agentCapabilities"]["auth"]["logout"],
        json!({})
    );

    let cwd = root.path().to_str().unwrap();
    let refused = client
        .request("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    let (code, message) = rpc_error(refused);
    assert_eq!(code, -32000, "{message}");
    names_what_to_do(&message);
    let refused = client
        .request("authenticate", json!({"methodId": "saved-sign-in"}))
        .await;
    let (code, message) = rpc_error(refused);
    assert_eq!(code, -32000, "{message}");
    names_what_to_do(&message);
    client.close().await.unwrap();

    // An editor without terminal sign-in is offered the saved one only.
    let client = TestClient::builder()
        .cwd(root.path())
        .spawn(bare_coder(root.path()))
        .await
        .unwrap();
    let ids: Vec<_> = client.initialize_response()["authMethods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].clone())
        .collect();
    assert_eq!(ids, [json!("saved-sign-in")]);
    client.close().await.unwrap();
}

/// An OpenAI-compatible server on loopback: answers every Chat Completions request with
/// `reply`, streamed, and keeps each request's head and body.
struct ModelServer {
    url: String,
    requests: std::sync::Arc<std::sync::Mutex<Vec<(String, serde_json::Value)>>>,
}

impl ModelServer {
    async fn start(reply: &'static str) -> ModelServer {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let requests: std::sync::Arc<std::sync::Mutex<Vec<_>>> = std::sync::Arc::default();
        let kept = std::sync::Arc::clone(&requests);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let kept = std::sync::Arc::clone(&kept);
                tokio::spawn(async move {
                    let mut bytes = Vec::new();
                    let mut buf = [0u8; 4096];
                    let (head, body) = loop {
                        let n = socket.read(&mut buf).await.unwrap();
                        assert!(n > 0, "the request ended early");
                        bytes.extend_from_slice(&buf[..n]);
                        let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
                            continue;
                        };
                        let head = String::from_utf8_lossy(&bytes[..end]).to_lowercase();
                        let length: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .map_or(0, |v| v.trim().parse().unwrap());
                        if bytes.len() >= end + 4 + length {
                            let body =
                                serde_json::from_slice(&bytes[end + 4..end + 4 + length]).unwrap();
                            break (head, body);
                        }
                    };
                    kept.lock().unwrap().push((head, body));
                    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
                        let chunk = json!({"id": "1", "object": "chat.completion.chunk",
                            "created": 0, "model": "m",
                            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
                        format!("data: {chunk}\n\n")
                    };
                    let events = chunk(json!({"role": "assistant", "content": reply}), json!(null))
                        + &chunk(json!({}), json!("stop"))
                        + "data: [DONE]\n\n";
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                         content-length: {}\r\nconnection: close\r\n\r\n{events}",
                        events.len()
                    );
                    socket.write_all(answer.as_bytes()).await.unwrap();
                    socket.shutdown().await.unwrap();
                });
            }
        });
        ModelServer { url, requests }
    }
}

#[cfg(unix)]
#[tokio::test]
async fn the_terminal_sign_in_then_a_turn() {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;

    let root = tempfile::tempdir().unwrap();
    let server = ModelServer::start("Signed in and answering.").await;

    // The terminal the editor opens: `coder --sign-in`, answered line by line (the provider,
    // the base URL, the model, the key).
    let mut sign_in = bare_coder(root.path());
    sign_in
        .arg("--sign-in")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = sign_in.spawn().unwrap();
    let answers = format!("1\n{}\nscripted-model\nsk-typed-key\n", server.url);
    child
        .stdin
        .take()
        .unwrap()
        .write_all(answers.as_bytes())
        .unwrap();
    let done = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{}: {said}", done.status);
    assert!(done.stdout.is_empty(), "stdout is for ACP only");
    assert!(said.contains("Model"), "{said}");
    assert!(
        !said.contains("sk-typed-key"),
        "the key is never shown: {said}"
    );

    let file = sign_in_file(root.path());
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600, "{}", file.display());
    assert_eq!(mode(file.parent().unwrap()), 0o700);
    let saved: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(
        saved,
        json!({"provider": "openai", "base_url": server.url, "model": "scripted-model",
               "api_key": "sk-typed-key"})
    );
    let others: Vec<_> = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(others, [std::ffi::OsString::from("sign-in.json")]);

    // The editor starts the agent again, with no provider in its environment.
    let client = TestClient::builder()
        .cwd(root.path())
        .terminal_auth()
        .spawn(bare_coder(root.path()))
        .await
        .unwrap();
    client
        .request("authenticate", json!({"methodId": "saved-sign-in"}))
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("hello").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert_eq!(turn.text(), "Signed in and answering.");
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 1);
    let (head, body) = &requests[0];
    assert!(head.starts_with("post /v1/chat/completions"), "{head}");
    assert!(
        head.contains("authorization: bearer sk-typed-key"),
        "{head}"
    );
    assert_eq!(body["model"], "scripted-model");
    assert!(!client.stderr().contains("sk-typed-key"), "never logged");

    // `logout` deletes the sign-in: sessions are refused again.
    client.request("logout", json!({})).await.unwrap();
    assert!(!file.exists());
    let cwd = root.path().to_str().unwrap();
    let (code, message) = rpc_error(
        client
            .request("session/new", json!({"cwd": cwd, "mcpServers": []}))
            .await,
    );
    assert_eq!(code, -32000, "{message}");
    names_what_to_do(&message);
    client.close().await.unwrap();
}
