//! What survives the agent's process: a built agent killed with SIGKILL in the middle of a
//! stream replays, after a restart on the same store, everything its client had received; the
//! model example keeps its conversation (a `Persist` value) across a kill and restart, a
//! cancelled turn's part of it included.

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use acp::schema::SessionId;
use acp::store::{MemoryStore, SessionStore};
use acp::testing::{MemoryFs, TestClient};
use serde_json::{Value, json};

// The example, loaded once for the crate by `examples`.
use crate::examples::model;

/// Guards a test against hangs; generous, never a performance assertion.
async fn within<T>(fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), fut)
        .await
        .expect("the test hung")
}

/// A client of the agent `binary`, its sessions stored under `data`.
async fn spawn(binary: &std::path::Path, data: &std::path::Path) -> TestClient {
    let mut command = Command::new(binary);
    command.env("ACP_DATA_DIR", data);
    TestClient::builder()
        .fs(MemoryFs::new().with("/workspace/notes.txt", "milk"))
        .spawn(command)
        .await
        .unwrap()
}

/// The built echo agent streams 200,000 chunks; the client reads a few thousand, then the
/// agent gets SIGKILL, and the client reads what is left in the pipe to its end. Restarted on
/// the same store, the agent replays the session: the user's message first, then every
/// update the client received, in order — nothing it saw is missing. (The store may hold a
/// little more than was written when the kill came: the batch committed but not yet written,
/// which continues the same stream.)
#[tokio::test]
async fn echo_killed_mid_stream_replays_everything_its_client_received() {
    let data = tempfile::tempdir().unwrap();
    let echo = support::echo_binary();
    let mut agent = Command::new(&echo)
        .env("ACP_DATA_DIR", data.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = agent.stdin.take().unwrap();
    let mut output = BufReader::new(agent.stdout.take().unwrap());
    let mut send = |message: Value| {
        writeln!(input, "{message}").unwrap();
        input.flush().unwrap();
    };
    // A frame cut short by the kill (no newline) is not one the client received.
    let mut read = || -> Option<Value> {
        let mut line = String::new();
        output.read_line(&mut line).unwrap();
        line.ends_with('\n')
            .then(|| serde_json::from_str(&line).unwrap())
    };
    send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
    assert!(read().unwrap()["result"].is_object());
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
        "params": {"cwd": "/workspace", "mcpServers": []}}));
    let id = read().unwrap()["result"]["sessionId"].clone();
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {
        "sessionId": id, "prompt": [{"type": "text", "text": "stream 200000"}]}}),
    );

    let mut seen = Vec::new();
    while seen.len() < 3000 {
        let frame = read().expect("the stream ended early");
        assert_eq!(frame["method"], "session/update", "{frame}");
        seen.push(frame["params"]["update"].clone());
    }
    agent.kill().unwrap(); // SIGKILL
    while let Some(frame) = read() {
        assert_eq!(frame["method"], "session/update", "{frame}");
        seen.push(frame["params"]["update"].clone());
    }
    agent.wait().unwrap();
    assert!(seen.len() < 200_000, "the kill came after the whole stream");

    within(async {
        let client = spawn(&echo, data.path()).await;
        let id: SessionId = serde_json::from_value(id).unwrap();
        let loaded = client.load_session(&id).await.unwrap();
        let replayed: Vec<Value> = loaded.replayed.iter().map(|u| json!(u)).collect();
        assert_eq!(replayed[0]["sessionUpdate"], "user_message_chunk");
        assert_eq!(replayed[0]["content"]["text"], "stream 200000");
        let agent_said = &replayed[1..];
        assert!(
            agent_said.len() >= seen.len(),
            "{} updates replayed, {} received",
            agent_said.len(),
            seen.len()
        );
        assert_eq!(agent_said[..seen.len()], seen[..], "the replay differs");
        // Anything more goes on with the same stream, chunk after chunk.
        for (i, update) in agent_said.iter().enumerate() {
            let text = update["content"]["text"].as_str().unwrap_or_default();
            assert!(text.contains(&format!("{i}")), "chunk {i}: {update}");
        }
        client.close().await.unwrap();
    })
    .await;
}

/// A raw client of a built agent over its pipes: what it wrote and read, as JSON lines.
struct Pipes {
    agent: std::process::Child,
    input: std::process::ChildStdin,
    output: BufReader<std::process::ChildStdout>,
}

impl Pipes {
    fn spawn(binary: &std::path::Path, data: &std::path::Path) -> Pipes {
        let mut agent = Command::new(binary)
            .env("ACP_DATA_DIR", data)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let input = agent.stdin.take().unwrap();
        let output = BufReader::new(agent.stdout.take().unwrap());
        Pipes {
            agent,
            input,
            output,
        }
    }

    fn send(&mut self, message: Value) {
        writeln!(self.input, "{message}").unwrap();
        self.input.flush().unwrap();
    }

    /// The next whole frame; `None` at the end of the output (a frame cut short by a kill,
    /// with no newline, is not one the client received).
    fn read(&mut self) -> Option<Value> {
        let mut line = String::new();
        self.output.read_line(&mut line).unwrap();
        line.ends_with('\n')
            .then(|| serde_json::from_str(&line).unwrap())
    }

    /// `initialize`, then `n` sessions; their ids.
    fn sessions(&mut self, n: usize) -> Vec<String> {
        self.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
        assert!(self.read().unwrap()["result"].is_object());
        for i in 0..n {
            self.send(
                json!({"jsonrpc": "2.0", "id": 1 + i, "method": "session/new",
                "params": {"cwd": "/workspace", "mcpServers": []}}),
            );
        }
        let mut ids = vec![String::new(); n];
        for _ in 0..n {
            let answer = self.read().unwrap();
            let i = answer["id"].as_u64().unwrap() as usize - 1;
            ids[i] = answer["result"]["sessionId"].as_str().unwrap().to_owned();
        }
        ids
    }

    /// Prompts every session at once (request ids from `first_id`).
    fn prompt_all(&mut self, ids: &[String], text: &str, first_id: usize) {
        for (i, id) in ids.iter().enumerate() {
            self.send(
                json!({"jsonrpc": "2.0", "id": first_id + i, "method": "session/prompt",
                "params": {"sessionId": id, "prompt": [{"type": "text", "text": text}]}}),
            );
        }
    }
}

/// The message chunk `update` says (`chunk N\n` from the echo agent's `stream`).
fn chunk_text(update: &Value) -> String {
    assert_eq!(update["sessionUpdate"], "agent_message_chunk", "{update}");
    update["content"]["text"].as_str().unwrap().to_owned()
}

/// Notes the chunk `frame` carries in its session's list; `false` for the answer of a turn
/// that finished.
fn see(
    seen: &mut [Vec<String>],
    index: &std::collections::HashMap<String, usize>,
    frame: &Value,
) -> bool {
    if frame["method"] != "session/update" {
        assert_eq!(frame["result"]["stopReason"], "end_turn", "{frame}");
        return false;
    }
    let i = index[frame["params"]["sessionId"].as_str().unwrap()];
    seen[i].push(chunk_text(&frame["params"]["update"]));
    true
}

/// 200 sessions of the built echo agent stream at once (100 chunks each), recorded in the default store: every
/// turn finishes, each session's chunks in order. Then all 200 stream again and the agent gets
/// SIGKILL mid-stream; restarted on the same store, each session's replay holds everything the
/// client had received of it, in order (the store may hold a little more: a batch committed
/// but not yet written when the kill came, which continues the same stream).
#[tokio::test]
async fn two_hundred_sessions_streaming_at_once_are_recorded_before_the_client_reads_them() {
    const SESSIONS: usize = 200;
    let data = tempfile::tempdir().unwrap();
    let echo = support::echo_binary();
    let mut pipes = Pipes::spawn(&echo, data.path());
    let ids = pipes.sessions(SESSIONS);
    let index: std::collections::HashMap<String, usize> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.clone(), i))
        .collect();

    // All finish, in order.
    pipes.prompt_all(&ids, "stream 100", 1000);
    let mut next = vec![0usize; SESSIONS];
    let mut answered = 0;
    while answered < SESSIONS {
        let frame = pipes.read().expect("the agent's output ended");
        if frame["method"] == "session/update" {
            let i = index[frame["params"]["sessionId"].as_str().unwrap()];
            assert_eq!(
                chunk_text(&frame["params"]["update"]),
                format!("chunk {}\n", next[i])
            );
            next[i] += 1;
        } else {
            assert_eq!(frame["result"]["stopReason"], "end_turn", "{frame}");
            let i = frame["id"].as_u64().unwrap() as usize - 1000;
            assert_eq!(next[i], 100, "session {i} answered before its last chunk");
            answered += 1;
        }
    }

    // Again, killed mid-stream.
    pipes.prompt_all(&ids, "stream 1000", 2000);
    let mut seen: Vec<Vec<String>> = vec![Vec::new(); SESSIONS];
    let mut count = 0;
    while count < 20_000 {
        let frame = pipes.read().expect("the stream ended early");
        count += usize::from(see(&mut seen, &index, &frame));
    }
    pipes.agent.kill().unwrap(); // SIGKILL
    while let Some(frame) = pipes.read() {
        see(&mut seen, &index, &frame);
    }
    pipes.agent.wait().unwrap();
    let total: usize = seen.iter().map(Vec::len).sum();
    assert!(
        total < SESSIONS * 1000,
        "the kill came after the whole stream"
    );

    // 200 replays through the test client, which checks every update against the schema: a
    // longer hang guard than the others.
    let replays = async {
        let client = spawn(&echo, data.path()).await;
        for (i, id) in ids.iter().enumerate() {
            let loaded = client.load_session(&id.clone().into()).await.unwrap();
            let replayed: Vec<Value> = loaded.replayed.iter().map(|u| json!(u)).collect();
            // The first turn: its prompt, its 100 chunks; then the second prompt.
            assert_eq!(replayed[0]["content"]["text"], "stream 100");
            assert_eq!(replayed[101]["content"]["text"], "stream 1000");
            let second: Vec<String> = replayed[102..].iter().map(chunk_text).collect();
            assert!(
                second.len() >= seen[i].len() && second[..seen[i].len()] == seen[i][..],
                "session {i}: the client received {} chunks, the store replayed {}",
                seen[i].len(),
                second.len()
            );
            for (n, text) in second.iter().enumerate() {
                assert_eq!(*text, format!("chunk {n}\n"), "session {i}");
            }
        }
        client.close().await.unwrap();
    };
    tokio::time::timeout(Duration::from_secs(300), replays)
        .await
        .expect("the replays hung");
}

/// The built model example: two turns, SIGKILL (the client dropped), a new process on the
/// same store loads the session, and the model still has the conversation.
#[tokio::test]
async fn the_model_keeps_its_conversation_across_a_kill_and_restart() {
    let data = tempfile::tempdir().unwrap();
    let model = support::example_binary("model");
    let id = within(async {
        let client = spawn(&model, data.path()).await;
        let session = client.new_session().await.unwrap();
        assert_eq!(
            session.prompt("hello").await.unwrap().text(),
            "You said: hello"
        );
        let turn = session.prompt("read notes.txt").await.unwrap();
        assert_eq!(turn.text(), "Done. The tool returned:\nmilk");
        session.id().clone()
        // Dropped: the agent is killed (SIGKILL), not closed.
    })
    .await;

    within(async {
        let client = spawn(&model, data.path()).await;
        let loaded = client.load_session(&id).await.unwrap();
        let turn = loaded.session.prompt("history").await.unwrap();
        assert_eq!(turn.text(), "You said before: hello | read notes.txt");
        client.close().await.unwrap();
    })
    .await;
}

/// A model whose `wait` never answers (its stream stays open until the turn is cancelled);
/// the rest is scripted.
fn waiting() -> acp::llm::scripted::Scripted {
    acp::llm::scripted::Scripted::from_fn(|request| {
        if request.messages.last() == Some(&acp::llm::Message::user("wait")) {
            return acp::llm::scripted::Reply::new().hold();
        }
        model::reply(request)
    })
}

/// A turn cancelled while the model is thinking (and dropped by the runtime after its grace)
/// still saves what it added to the conversation.
#[tokio::test(start_paused = true)]
async fn a_cancelled_turn_still_saves_the_conversation() {
    within(async {
        let store = Arc::new(MemoryStore::default());
        let serve =
            || acp::Server::new(model::ModelAgent::new(waiting())).shared_store(store.clone());
        let first = TestClient::builder().serve(serve()).await.unwrap();
        let session = first.new_session().await.unwrap();
        session.prompt("hello").await.unwrap();
        // The model never answers `wait`: the turn is still running when the cancel comes
        // (the runtime drops it after its grace).
        let turn = session.start_prompt("wait");
        session.cancel();
        let answer = first.wait_for_response(&turn).await.unwrap();
        assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
        let id = session.id().clone();
        first.close().await.unwrap();

        let second = TestClient::builder().serve(serve()).await.unwrap();
        let loaded = second.load_session(&id).await.unwrap();
        let turn = loaded.session.prompt("history").await.unwrap();
        assert_eq!(turn.text(), "You said before: hello | wait");
        second.close().await.unwrap();
    })
    .await;
}

/// A saved value that no longer reads as its type (the type changed) starts from its default,
/// and the session still loads.
#[tokio::test]
async fn a_saved_value_of_another_shape_starts_from_the_default() {
    within(async {
        let store = Arc::new(MemoryStore::default());
        let serve = || {
            acp::Server::new(model::ModelAgent::new(model::scripted())).shared_store(store.clone())
        };
        let first = TestClient::builder().serve(serve()).await.unwrap();
        let session = first.new_session().await.unwrap();
        session.prompt("hello").await.unwrap();
        let id = session.id().clone();
        first.close().await.unwrap();
        let saved = store.state(&id).await.unwrap();
        assert!(saved["acp.llm.conversation"].is_array(), "{saved:?}");
        store
            .put_state(&id, "acp.llm.conversation", &json!({"not": "a list"}))
            .await
            .unwrap();

        let second = TestClient::builder().serve(serve()).await.unwrap();
        let loaded = second.load_session(&id).await.unwrap();
        let turn = loaded.session.prompt("history").await.unwrap();
        assert_eq!(turn.text(), "You said before: ");
        second.close().await.unwrap();
    })
    .await;
}

/// The `session/update`s of `frames` the agent wrote, as `(session, update)`, but those a load
/// is not meant to replay: the commands (told anew by each opening), notices (live events, not
/// history) and the user's own prompt (which the live client sent, and a load replays).
fn history_of(frames: &[acp::testing::Frame]) -> Vec<(String, Value)> {
    frames
        .iter()
        .filter(|f| f.direction == acp::testing::Direction::FromAgent)
        .filter(|f| f.method() == Some(acp::schema::CLIENT_METHOD_NAMES.session_update))
        .map(|f| {
            let params = &f.message["params"];
            (
                params["sessionId"].as_str().unwrap().to_owned(),
                params["update"].clone(),
            )
        })
        .filter(|(_, u)| {
            !matches!(
                u["sessionUpdate"].as_str(),
                Some("available_commands_update" | "notice" | "user_message_chunk")
            )
        })
        .collect()
}

/// The tour agent, its sessions stored under `data`, for a client that shows subagents, plans,
/// compactions and notices; signed in.
async fn capable_tour(tour: &std::path::Path, data: &std::path::Path) -> TestClient {
    let mut command = Command::new(tour);
    command.env("ACP_DATA_DIR", data);
    let client = TestClient::builder()
        .subagents()
        .plan()
        .compaction()
        .notices()
        .spawn(command)
        .await
        .unwrap();
    client
        .request(
            acp::schema::AGENT_METHOD_NAMES.authenticate,
            json!({"methodId": "api-key"}),
        )
        .await
        .unwrap();
    client
}

/// A session with a Markdown plan, a subagent, a compaction and a notice, its agent killed
/// with SIGKILL: a new process loads it with the frames the client was sent, each session's in
/// the order it was sent (the subagent's own after its announcement), and without the notice.
#[tokio::test]
async fn a_session_with_a_subagent_a_compaction_and_a_plan_loads_after_a_kill() {
    // Built first: the build is not the test's to time.
    let tour = support::example_binary("tour");
    within(async {
        let data = tempfile::tempdir().unwrap();
        let first = capable_tour(&tour, data.path()).await;
        let session = first.new_session().await.unwrap();
        for prompt in ["/plan", "/delegate count the stops", "/compact", "/notice"] {
            let turn = session.prompt(prompt).await.unwrap();
            assert_eq!(turn.stop_reason(), Some(acp::schema::StopReason::EndTurn));
        }
        let live = history_of(&first.transcript());
        let kinds: Vec<&str> = live
            .iter()
            .map(|(_, u)| u["sessionUpdate"].as_str().unwrap())
            .collect();
        for kind in [
            "plan_update",
            "subagent_update",
            "compaction_update",
            "tool_call",
        ] {
            assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
        }
        assert!(
            first
                .transcript()
                .iter()
                .any(|f| f.message["params"]["update"]["sessionUpdate"] == "notice"),
            "the notice was sent live"
        );
        let id = session.id().clone();
        // Dropping the client kills the agent (SIGKILL): no orderly shutdown.
        drop(session);
        drop(first);

        let second = capable_tour(&tour, data.path()).await;
        second.load_session(&id).await.unwrap();
        let replayed = history_of(&second.transcript());
        // Each session's frames, in the order they were sent; the subagent's own all follow
        // its announcement (a load replays one session's records after another's).
        let of = |frames: &[(String, Value)], id: &str| -> Vec<Value> {
            frames
                .iter()
                .filter(|(s, _)| s == id)
                .map(|(_, u)| u.clone())
                .collect()
        };
        let parent = id.to_string();
        let child = live
            .iter()
            .find_map(|(_, u)| u["sessionId"].as_str().map(str::to_owned))
            .expect("the subagent's id");
        assert_eq!(of(&replayed, &parent), of(&live, &parent));
        assert_eq!(of(&replayed, &child), of(&live, &child));
        assert!(!of(&live, &child).is_empty());
        assert_eq!(replayed.len(), live.len(), "nothing else replayed");
        let announced = replayed
            .iter()
            .position(|(_, u)| u["sessionUpdate"] == "subagent_update")
            .unwrap();
        let first_of_child = replayed.iter().position(|(s, _)| *s == child).unwrap();
        assert!(announced < first_of_child);
    })
    .await;
}

/// A model agent whose every answer is "ok".
struct Okay {
    model: acp::llm::Model,
}

impl acp::Agent for Okay {
    async fn prompt(
        &self,
        cx: &acp::Session,
        prompt: acp::Prompt,
    ) -> acp::Result<acp::schema::StopReason> {
        if prompt.text() == "forget" {
            // Keeps the last 10 messages: a rewrite, not an append.
            let conversation = cx.persisted::<acp::llm::Conversation>();
            let mut conversation = conversation.lock();
            let messages = conversation.messages_mut();
            let keep = messages.len().saturating_sub(10);
            messages.drain(..keep);
            return Ok(acp::schema::StopReason::EndTurn);
        }
        self.model.run(cx, &prompt).await
    }
}

/// The conversation is stored as it grows: over a 100-turn session, each turn writes the
/// store the messages it added (the same size every turn), never the conversation so far; a
/// reload gives the model the whole conversation back; one changed otherwise than by growing
/// (trimmed) is stored whole once, and read back as it is.
#[tokio::test]
async fn a_long_conversation_costs_each_turn_the_same_store_writes() {
    use acp::llm::scripted::{Reply, Scripted};
    let store = Arc::new(MemoryStore::default());
    let provider = Scripted::from_fn(|_| Reply::new().text("ok"));
    let serve = || {
        let model = acp::llm::Model::new(provider.clone(), "scripted");
        acp::Server::new(Okay { model }).shared_store(store.clone())
    };
    let client = TestClient::builder().serve(serve()).await.unwrap();
    let session = client.new_session().await.unwrap();
    let id = session.id().clone();
    let key = "acp.llm.conversation";
    // The bytes each turn wrote: the value it added under the conversation's keys.
    let mut written = Vec::new();
    let mut before = store.state(&id).await.unwrap();
    for turn in 0..100 {
        session.prompt(&format!("turn {turn:03}")).await.unwrap();
        let after = store.state(&id).await.unwrap();
        let changed: usize = after
            .iter()
            .filter(|(k, v)| k.starts_with(key) && before.get(*k) != Some(*v))
            .map(|(_, v)| v.to_string().len())
            .sum();
        written.push(changed);
        before = after;
    }
    // The first turn stores the conversation whole (two messages); every later one the same
    // two messages' worth, whatever came before.
    assert!(written[1..].iter().all(|w| *w == written[1]), "{written:?}");
    assert!(written[99] < 200, "{written:?}");
    client.close().await.unwrap();

    let again = TestClient::builder().serve(serve()).await.unwrap();
    let loaded = again.load_session(&id).await.unwrap();
    loaded.session.prompt("turn 100").await.unwrap();
    let last = provider.requests().pop().unwrap();
    assert_eq!(
        last.messages.len(),
        201,
        "every turn's question and answer, and this one"
    );
    assert_eq!(last.messages[0].text(), "turn 000");
    assert_eq!(last.last_user_text(), "turn 100");

    loaded.session.prompt("forget").await.unwrap();
    loaded.session.prompt("turn 101").await.unwrap();
    again.close().await.unwrap();
    let third = TestClient::builder().serve(serve()).await.unwrap();
    let loaded = third.load_session(&id).await.unwrap();
    loaded.session.prompt("turn 102").await.unwrap();
    let last = provider.requests().pop().unwrap();
    let texts: Vec<String> = last.messages.iter().map(|m| m.text()).collect();
    assert_eq!(texts.len(), 10 + 2 + 1, "{texts:?}");
    assert_eq!(texts[0], "turn 096");
    assert_eq!(texts[10..], ["turn 101", "ok", "turn 102"]);
}
