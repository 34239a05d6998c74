//! A network user reaches only what the operator granted: the example agents served with
//! `--listen`, driven over real sockets by a user with a valid token of their own (`bob`, or
//! the one user of a single `$ACP_TOKEN`), who tries to reach the host beyond the grant:
//!
//! - a stdio MCP server naming a command (`/bin/sh -c 'env > F'`): not started unless the
//!   operator allows that command (`$ACP_MCP_COMMANDS`), and an allowed one sees none of the
//!   service's secrets;
//! - a session whose `cwd` (or additional directory) is outside the user's directories
//!   (`/proc/self`, another user's, a link out of the grant): `-32602`, no session;
//! - a symbolic link inside the session's directory leading out of it: refused on read and
//!   on write by the local backend (v2), nothing written outside;
//! - a command the model runs (`coder`'s `run`, locally): no secret in its environment;
//! - `providers/set` (`coder`, feature `llm-providers`): not offered nor answered unless the
//!   operator allows it (`$ACP_ALLOW_PROVIDERS`);
//! - prompts queued behind a running turn (v2): bounded, the rest refused;
//! - the store's files: readable by their owner only.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp::testing::{PermissionPolicy, TestClient};
use serde_json::{Value, json};

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef00";
const ONE: &str = "the-one-token-0123456789abcd";
/// A provider key the service has, which nothing a user starts may see.
const KEY: &str = "sk-operators-secret-key-42";

/// How the service names its users.
#[derive(Clone, Copy, Debug)]
enum Users {
    /// `$ACP_TOKENS=alice:…,bob:…`: the test acts as bob.
    Two,
    /// `$ACP_TOKEN`: one user.
    One,
}

impl Users {
    fn token(self) -> &'static str {
        match self {
            Users::Two => BOB,
            Users::One => ONE,
        }
    }
}

/// An example agent listening on a free loopback port; killed when dropped.
struct Listening {
    child: tokio::process::Child,
    url: String,
    data: tempfile::TempDir,
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// Starts `example` with `--listen`, the users' tokens and `env`, and waits until it
/// accepts connections.
async fn listen(example: &str, users: Users, env: &[(&str, &str)]) -> Listening {
    let data = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut cmd = tokio::process::Command::new(support::example_binary(example));
    cmd.args(["--listen", &addr])
        .env_remove("ACP_TOKEN")
        .env_remove("ACP_TOKENS")
        .env_remove("ACP_ROOTS")
        .env("ACP_DATA_DIR", data.path())
        .env("OPENAI_API_KEY", KEY)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    match users {
        Users::Two => cmd.env("ACP_TOKENS", format!("alice:{ALICE},bob:{BOB}")),
        Users::One => cmd.env("ACP_TOKEN", ONE),
    };
    for (name, value) in env {
        cmd.env(name, value);
    }
    let child = cmd.spawn().unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(&addr).await.is_err() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{example} did not listen on {addr}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Listening {
        child,
        url: format!("http://{addr}/acp"),
        data,
    }
}

/// A directory with its links resolved (the agent resolves what it is granted).
fn real(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir).unwrap()
}

/// A client of `users`' test user, on protocol `version`, sessions in `cwd`.
async fn client(agent: &Listening, users: Users, version: u16, cwd: &Path) -> TestClient {
    TestClient::builder()
        .protocol(version)
        .cwd(cwd)
        .permissions(PermissionPolicy::AllowOnce)
        .websocket(&agent.url, users.token())
        .await
        .unwrap()
}

/// The `-32602` an error answer must be, naming the field.
fn invalid_params(result: acp::Result<Value>, field: &str) {
    match result {
        Err(acp::Error::Rpc { code, message, .. }) => {
            assert_eq!(code, -32602, "{message}");
            assert!(message.contains(field), "{message}");
        }
        other => panic!("expected -32602, got {other:?}"),
    }
}

/// Waits (bounded) until `path` exists.
async fn appears(path: &Path) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !path.exists() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Written by a shell redirection: give it its last bytes.
    tokio::time::sleep(Duration::from_millis(100)).await;
}

async fn client_named_mcp_commands_start_only_when_allowed(users: Users) {
    let dir = tempfile::tempdir().unwrap();
    let root = real(dir.path());
    let roots = root.display().to_string();
    let agent = listen(
        "echo",
        users,
        &[("ACP_ROOTS", &roots), ("ACP_MCP_COMMANDS", "sh")],
    )
    .await;
    let client = client(&agent, users, 1, &root).await;
    let server = |command: &str, file: &str| json!({"name": file, "command": command, "args": ["-c", format!("env > {file}")], "env": []});
    // Both start (or not) at once when the session opens: `sh` is allowed, `/bin/sh` is not
    // (commands match exactly as the client spells them).
    client
        .request(
            "session/new",
            json!({"cwd": root, "mcpServers": [server("/bin/sh", "refused.txt"), server("sh", "allowed.txt")]}),
        )
        .await
        .unwrap();
    appears(&root.join("allowed.txt")).await;
    assert!(
        !root.join("refused.txt").exists(),
        "a command the operator did not allow was run"
    );
    let env = std::fs::read_to_string(root.join("allowed.txt")).unwrap();
    for secret in [ALICE, BOB, ONE, KEY, "ACP_TOKEN"] {
        assert!(!env.contains(secret), "a child saw `{secret}`:\n{env}");
    }
    assert!(env.contains("PATH="), "{env}");
}

#[tokio::test]
async fn client_named_mcp_commands_start_only_when_allowed_and_see_no_secret_two_users() {
    client_named_mcp_commands_start_only_when_allowed(Users::Two).await;
}

#[tokio::test]
async fn client_named_mcp_commands_start_only_when_allowed_and_see_no_secret_one_token() {
    client_named_mcp_commands_start_only_when_allowed(Users::One).await;
}

#[tokio::test]
async fn without_an_allow_list_no_client_named_mcp_server_starts() {
    let dir = tempfile::tempdir().unwrap();
    let root = real(dir.path());
    let roots = root.display().to_string();
    let agent = listen("echo", Users::Two, &[("ACP_ROOTS", &roots)]).await;
    let client = client(&agent, Users::Two, 1, &root).await;
    let marker = root.join("ran.txt");
    let script = format!("touch {}", marker.display());
    client
        .request(
            "session/new",
            json!({"cwd": root, "mcpServers": [
                {"name": "sh", "command": "sh", "args": ["-c", script], "env": []},
                {"name": "web", "type": "http", "url": "http://127.0.0.1:1/mcp", "headers": []},
            ]}),
        )
        .await
        .unwrap();
    // The turn after it sees the servers' state (`mcp` is no command of echo's: a turn that
    // answers proves the session is served while nothing was started).
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!marker.exists(), "a client-named command was run");
}

async fn directories_outside_the_grant_are_refused(users: Users) {
    let (mine, theirs) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mine, theirs) = (real(mine.path()), real(theirs.path()));
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(real(outside.path()), mine.join("link")).unwrap();
    let roots = match users {
        Users::Two => format!("alice={},bob={}", theirs.display(), mine.display()),
        Users::One => mine.display().to_string(),
    };
    let agent = listen("echo", users, &[("ACP_ROOTS", &roots)]).await;
    for version in [1, 2] {
        let client = client(&agent, users, version, &mine).await;
        let new = |cwd: &Path, more: &[&Path]| {
            client.request(
                "session/new",
                json!({"cwd": cwd, "additionalDirectories": more, "mcpServers": []}),
            )
        };
        invalid_params(new(Path::new("/proc/self"), &[]).await, "cwd");
        invalid_params(new(&mine.join("link"), &[]).await, "cwd");
        invalid_params(new(&mine.join("link/deeper/new"), &[]).await, "cwd");
        invalid_params(
            new(&mine, &[Path::new("/etc")]).await,
            "additionalDirectories",
        );
        if matches!(users, Users::Two) {
            invalid_params(new(&theirs, &[]).await, "cwd");
        }
        // Inside: served, a directory that does not exist yet too.
        new(&mine, &[]).await.unwrap();
        new(&mine.join("not/yet"), &[]).await.unwrap();
    }
}

#[tokio::test]
async fn directories_outside_the_grant_are_invalid_params_two_users() {
    directories_outside_the_grant_are_refused(Users::Two).await;
}

#[tokio::test]
async fn directories_outside_the_grant_are_invalid_params_one_token() {
    directories_outside_the_grant_are_refused(Users::One).await;
}

#[tokio::test]
async fn by_default_each_user_has_a_directory_of_their_own_and_nothing_else() {
    let agent = listen("echo", Users::Two, &[]).await;
    let own = agent.data.path().join("echo/users/user-bob");
    let client = client(&agent, Users::Two, 2, Path::new("/tmp")).await;
    invalid_params(
        client
            .request("session/new", json!({"cwd": "/tmp", "mcpServers": []}))
            .await,
        "cwd",
    );
    let alices = agent.data.path().join("echo/users/user-alice");
    invalid_params(
        client
            .request("session/new", json!({"cwd": alices, "mcpServers": []}))
            .await,
        "cwd",
    );
    assert!(own.is_dir(), "bob's directory was made for him");
    client
        .request("session/new", json!({"cwd": own, "mcpServers": []}))
        .await
        .unwrap();
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&own).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{mode:o}");
}

async fn links_out_of_the_session_are_refused_on_read_and_write(users: Users) {
    let dir = tempfile::tempdir().unwrap();
    let root = real(dir.path());
    let outside = tempfile::tempdir().unwrap();
    let outside = real(outside.path());
    std::fs::write(outside.join("secret.txt"), "the operator's secret").unwrap();
    let project = root.join("project");
    std::fs::create_dir(&project).unwrap();
    std::os::unix::fs::symlink(&outside, project.join("home")).unwrap();
    std::os::unix::fs::symlink(outside.join("new.txt"), project.join("dangling")).unwrap();
    std::os::unix::fs::symlink(project.join("notes.txt"), project.join("inside")).unwrap();
    let roots = root.display().to_string();
    let agent = listen("echo", users, &[("ACP_ROOTS", &roots)]).await;
    // v2: files are the agent's own (the local backend).
    let client = client(&agent, users, 2, &project).await;
    let session = client.new_session().await.unwrap();
    let said = |turn: acp::Result<acp::testing::Turn>| match turn {
        Ok(turn) => format!("{} {:?}", turn.text(), turn.answer()),
        Err(e) => e.to_string(),
    };
    let read = said(session.prompt("read home/secret.txt").await);
    assert!(!read.contains("the operator's secret"), "{read}");
    assert!(read.contains("outside"), "{read}");
    let wrote = said(session.prompt("write home/planted.txt gotcha").await);
    assert!(wrote.contains("outside"), "{wrote}");
    assert!(!outside.join("planted.txt").exists());
    let wrote = said(session.prompt("write dangling gotcha").await);
    assert!(wrote.contains("outside"), "{wrote}");
    assert!(!outside.join("new.txt").exists());
    let wrote = said(session.prompt("write home/sub/dir/x.txt gotcha").await);
    assert!(wrote.contains("outside"), "{wrote}");
    assert!(!outside.join("sub").exists());
    // A link that stays inside is followed.
    let wrote = said(session.prompt("write inside kept").await);
    assert!(wrote.contains("wrote inside"), "{wrote}");
    assert_eq!(
        std::fs::read_to_string(project.join("notes.txt")).unwrap(),
        "kept"
    );
}

#[tokio::test]
async fn links_out_of_the_session_are_refused_on_read_and_write_two_users() {
    links_out_of_the_session_are_refused_on_read_and_write(Users::Two).await;
}

#[tokio::test]
async fn links_out_of_the_session_are_refused_on_read_and_write_one_token() {
    links_out_of_the_session_are_refused_on_read_and_write(Users::One).await;
}

/// Sends `texts` as prompts to session `id` behind a turn that waits for a permission
/// nobody gives, and returns which of them were refused (their indexes) once `refusals`
/// refusals came: a v2 prompt is answered only when its turn starts, so every answer before
/// that is a refusal.
async fn refused_behind_a_waiting_turn(
    client: &TestClient,
    id: &str,
    texts: Vec<String>,
    refusals: usize,
) -> Vec<usize> {
    let prompt = |text: &str| json!({"sessionId": id, "prompt": [{"type": "text", "text": text}]});
    client.send_request("session/prompt", prompt("permission"));
    let ids: Vec<Value> = texts
        .iter()
        .map(|text| client.send_request("session/prompt", prompt(text)))
        .collect();
    let mut refused = Vec::new();
    while refused.len() < refusals {
        let frame = tokio::time::timeout(Duration::from_secs(15), client.next_frame())
            .await
            .expect("the refusals came")
            .unwrap();
        let Some(index) = ids.iter().position(|id| frame.is_response_to(id)) else {
            continue;
        };
        let error = &frame.message["error"];
        assert_eq!(error["code"], -32600, "{}", frame.message);
        let message = error["message"].as_str().unwrap();
        assert!(message.contains("too many prompts waiting"), "{message}");
        refused.push(index);
    }
    refused
}

async fn queue_client(agent: &Listening, users: Users, root: &Path) -> TestClient {
    TestClient::builder()
        .protocol(2)
        .cwd(root)
        .hold("session/request_permission")
        .websocket(&agent.url, users.token())
        .await
        .unwrap()
}

#[tokio::test]
async fn prompts_queued_behind_a_turn_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let root = real(dir.path());
    let roots = root.display().to_string();
    let agent = listen("echo", Users::Two, &[("ACP_ROOTS", &roots)]).await;
    let client = queue_client(&agent, Users::Two, &root).await;
    let session = client.new_session().await.unwrap();
    let texts = (0..40).map(|i| format!("hello {i}")).collect();
    let refused = refused_behind_a_waiting_turn(&client, &session.id().0, texts, 24).await;
    // The first 16 wait; every one after them is refused.
    assert_eq!(refused, (16..40).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_big_prompt_queue_is_bounded_by_its_bytes_too() {
    let dir = tempfile::tempdir().unwrap();
    let root = real(dir.path());
    let roots = root.display().to_string();
    let agent = listen("echo", Users::One, &[("ACP_ROOTS", &roots)]).await;
    let client = queue_client(&agent, Users::One, &root).await;
    let session = client.new_session().await.unwrap();
    // 3 MiB each (under the 4 MiB message limit): two fit in 8 MiB, the third does not.
    let big = "x".repeat(3 * 1024 * 1024);
    let texts = vec![big.clone(), big.clone(), big];
    let refused = refused_behind_a_waiting_turn(&client, &session.id().0, texts, 1).await;
    assert_eq!(refused, [2]);
}

#[tokio::test]
async fn the_store_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let root = real(dir.path());
    let roots = root.display().to_string();
    let agent = listen("echo", Users::One, &[("ACP_ROOTS", &roots)]).await;
    let client = client(&agent, Users::One, 1, &root).await;
    let session = client.new_session().await.unwrap();
    session.prompt("hello").await.unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let store = agent.data.path().join("echo");
    assert_eq!(mode(&store), 0o700);
    let mut files = 0;
    for entry in std::fs::read_dir(&store).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            files += 1;
            assert_eq!(mode(&path), 0o600, "{}", path.display());
        }
    }
    assert!(files >= 1);
}

/// An OpenAI-compatible model server on loopback (Chat Completions, streamed): its first
/// answer asks to `run` `command`, every later one says "done". Returns its base URL and the
/// requests it received: their `Authorization` header, if any, and body.
async fn model_server(command: &'static str) -> (String, Requests) {
    use acp::net::axum::http::HeaderMap;
    use acp::net::axum::{Router, routing::post};
    let requests = Requests::default();
    let seen = requests.clone();
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move |headers: HeaderMap, body: String| {
            let seen = seen.clone();
            async move {
                let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                let auth = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let first = {
                    let mut seen = seen.lock().unwrap();
                    seen.push((auth, body));
                    seen.len() == 1
                };
                let chunk = |delta: Value, finish: Value| {
                    let chunk = json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
                    format!("data: {chunk}\n\n")
                };
                let mut stream = if first {
                    let call = json!({"tool_calls": [{"index": 0, "id": "call-1", "type": "function",
                        "function": {"name": "run", "arguments": json!({"command": command}).to_string()}}]});
                    chunk(call, Value::Null) + &chunk(json!({}), json!("tool_calls"))
                } else {
                    chunk(json!({"content": "done"}), Value::Null) + &chunk(json!({}), json!("stop"))
                };
                stream.push_str("data: [DONE]\n\n");
                ([("content-type", "text/event-stream")], stream)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { acp::net::axum::serve(listener, app).await });
    (url, requests)
}

/// What a [`model_server`] received: each request's `Authorization` and body.
type Requests = Arc<Mutex<Vec<(Option<String>, Value)>>>;

#[tokio::test]
async fn a_command_the_model_runs_sees_none_of_the_services_secrets() {
    let (model, bodies) = model_server("env").await;
    let dir = tempfile::tempdir().unwrap();
    let root = real(dir.path());
    let roots = root.display().to_string();
    let agent = listen(
        "coder",
        Users::Two,
        &[
            ("ACP_ROOTS", &roots),
            ("ACP_MODEL", "m"),
            ("OPENAI_BASE_URL", &model),
        ],
    )
    .await;
    // v1 without a terminal: coder runs the command on its own machine.
    let client = client(&agent, Users::Two, 1, &root).await;
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("what is in the environment?").await.unwrap();
    assert_eq!(turn.text(), "done");
    let shown: String = turn.tool_calls().iter().map(|c| c.text()).collect();
    let sent = bodies.lock().unwrap()[1].1.to_string();
    assert!(sent.contains("PATH="), "the command ran: {sent}");
    for secret in [ALICE, BOB, KEY, "ACP_TOKENS"] {
        assert!(
            !shown.contains(secret),
            "the editor was shown `{secret}`:\n{shown}"
        );
        assert!(
            !sent.contains(secret),
            "the model was sent `{secret}`:\n{sent}"
        );
    }
}

async fn providers_capability(agent: &Listening, users: Users) -> (Value, acp::Result<Value>) {
    let client = TestClient::builder()
        .websocket(&agent.url, users.token())
        .await
        .unwrap();
    let capabilities = client.initialize_response()["agentCapabilities"].clone();
    let set = set_provider(&client, "http://127.0.0.1:9/v1").await;
    (capabilities, set)
}

/// `providers/set` of the endpoint `main` to an OpenAI-compatible server at `url`.
async fn set_provider(client: &TestClient, url: &str) -> acp::Result<Value> {
    client
        .request(
            "providers/set",
            json!({"providerId": "main", "apiType": "openai", "baseUrl": url, "headers": {}}),
        )
        .await
}

#[tokio::test]
async fn the_operators_key_never_goes_to_a_url_the_client_chose() {
    let (operators, operators_seen) = model_server("true").await;
    let (clients, clients_seen) = model_server("true").await;
    let dir = tempfile::tempdir().unwrap();
    let root = real(dir.path());
    let roots = root.display().to_string();
    let env = [
        ("ACP_MODEL", "m"),
        ("OPENAI_BASE_URL", operators.as_str()),
        ("ACP_ALLOW_PROVIDERS", "1"),
        ("ACP_ROOTS", roots.as_str()),
    ];
    let agent = listen("coder", Users::One, &env).await;
    let client = client(&agent, Users::One, 1, &root).await;
    let session = client.new_session().await.unwrap();
    // The client's server gets the turn, and no key.
    set_provider(&client, &clients).await.unwrap();
    session.prompt("hello").await.unwrap();
    let seen = clients_seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "the client's server was asked");
    for (auth, _) in &seen {
        assert!(
            !auth.as_deref().unwrap_or_default().contains(KEY),
            "the operator's key went to the client's URL"
        );
    }
    // Pointed back at the operator's own server, the key goes with it again.
    set_provider(&client, &operators).await.unwrap();
    session.prompt("hello again").await.unwrap();
    let seen = operators_seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .any(|(auth, _)| auth.as_deref() == Some(&format!("Bearer {KEY}"))),
        "{seen:?}"
    );
}

#[tokio::test]
async fn a_network_client_cannot_repoint_the_model_unless_the_operator_allows_it() {
    let (model, _) = model_server("true").await;
    let model_env = [("ACP_MODEL", "m"), ("OPENAI_BASE_URL", model.as_str())];
    for users in [Users::Two, Users::One] {
        let agent = listen("coder", users, &model_env).await;
        let (capabilities, set) = providers_capability(&agent, users).await;
        assert!(capabilities.get("providers").is_none(), "{capabilities}");
        match set {
            Err(acp::Error::Rpc { code, .. }) => assert_eq!(code, -32601),
            other => panic!("providers/set from a network client: {other:?}"),
        }
    }
    let mut allowed = model_env.to_vec();
    allowed.push(("ACP_ALLOW_PROVIDERS", "1"));
    let agent = listen("coder", Users::One, &allowed).await;
    let (capabilities, set) = providers_capability(&agent, Users::One).await;
    assert!(capabilities.get("providers").is_some(), "{capabilities}");
    set.unwrap();
}
