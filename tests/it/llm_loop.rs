//! The model loop (`acp::llm::Model::run`) seen from the editor, driven by a scripted
//! provider (`acp::llm::scripted::Scripted`) that records every request: text and reasoning
//! stream as chunks; a tool call is shown as soon as the model names it, then runs with the
//! usual lifecycle, and its result (or error) is in the next request; `max_turn_requests`;
//! cancelling mid-stream drops the provider's stream and keeps the partial text; the
//! conversation survives a restart.

use std::path::PathBuf;
use std::sync::Arc;

use acp::llm::scripted::{Reply, Scripted};
use acp::llm::{Message, Model, Part, Role};
use acp::schema::{SessionUpdate, ToolCallStatus::*};
use acp::store::MemoryStore;
use acp::testing::{MemoryFs, PermissionPolicy, TestClient};
use acp::{Prompt, Session, StopReason};
use serde_json::json;

struct Looper {
    model: Model,
}

#[acp::agent(name = "looper")]
impl Looper {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        self.model.run(cx, &prompt).await
    }

    /// Reads a text file.
    #[acp::tool(kind = "read", title = "Read {path}")]
    async fn read_file(&self, cx: &Session, path: PathBuf) -> acp::Result<String> {
        cx.fs().read_text_file(&path).await
    }

    /// Writes a text file.
    #[acp::tool(kind = "edit", title = "Write {path}", permission)]
    async fn write_file(
        &self,
        cx: &Session,
        path: PathBuf,
        content: String,
    ) -> acp::Result<String> {
        cx.fs().write_text_file(&path, content).await?;
        Ok("written".into())
    }

    /// Always fails.
    #[acp::tool]
    async fn broken(&self, _cx: &Session) -> acp::Result<String> {
        Err(acp::Error::msg("the disk is on fire"))
    }
}

fn looper(provider: &Scripted) -> Looper {
    Looper {
        model: Model::new(provider.clone(), "scripted")
            .system("Be brief.")
            .context_window(1000),
    }
}

async fn client(provider: &Scripted) -> TestClient {
    TestClient::builder()
        .fs(MemoryFs::new().with("/workspace/notes.txt", "milk"))
        .permissions(PermissionPolicy::AllowOnce)
        // The turn's tokens in the answer (unstable in v1: only when asked for).
        .end_turn_usage(true)
        .connect(looper(provider))
        .await
        .unwrap()
}

fn tool_result(message: &Message) -> (&str, &str, bool) {
    assert_eq!(message.role, Role::User, "{message:?}");
    match &message.content[..] {
        [
            Part::ToolResult {
                id,
                content,
                is_error,
            },
        ] => (id, content, *is_error),
        other => panic!("not one tool result: {other:?}"),
    }
}

#[tokio::test]
async fn text_streams_as_chunks_reasoning_as_thoughts_then_usage() {
    let provider = Scripted::new().reply(
        Reply::new()
            .reasoning("Let me ")
            .reasoning("think.")
            .text("Hel")
            .text("lo")
            .usage(10, 5),
    );
    let client = client(&provider).await;
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("hi").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    let chunks = turn
        .updates()
        .iter()
        .filter(|u| matches!(u, SessionUpdate::AgentMessageChunk(_)))
        .count();
    assert_eq!(chunks, 2, "one chunk per piece, not buffered");
    assert_eq!(turn.text(), "Hello");
    assert_eq!(turn.thoughts(), "Let me think.");
    let usage = turn.updates().iter().find_map(|u| match u {
        SessionUpdate::UsageUpdate(u) => Some((u.used, u.size)),
        _ => None,
    });
    assert_eq!(usage, Some((15, 1000)));
    // The call's tokens are the turn's, told with its end.
    assert_eq!(
        turn.answer().unwrap()["usage"],
        json!({"totalTokens": 15, "inputTokens": 10, "outputTokens": 5})
    );

    let request = &provider.requests()[0];
    assert_eq!(request.model, "scripted");
    assert_eq!(request.system.as_deref(), Some("Be brief."));
    assert_eq!(request.messages, [Message::user("hi")]);
    let names: Vec<_> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["read_file", "write_file", "broken"]);
    assert_eq!(
        request.tools[0].parameters["properties"]["path"]["type"],
        "string"
    );
}

#[tokio::test]
async fn a_tool_call_is_shown_when_named_asks_permission_runs_and_its_result_goes_back() {
    let provider = Scripted::new()
        .reply(Reply::new().text("Writing.").tool_call(
            "c1",
            "write_file",
            json!({"path": "notes.txt", "content": "eggs"}),
        ))
        .reply(Reply::new().text("Done."));
    let client = client(&provider).await;
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("write eggs").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert_eq!(turn.text(), "Writing.Done.");
    let calls = turn.tool_calls();
    assert_eq!(calls.len(), 1, "one call, shown once: {calls:?}");
    assert_eq!(calls[0].title, "Write notes.txt");
    assert_eq!(calls[0].kind, acp::schema::ToolKind::Edit);
    assert_eq!(calls[0].statuses, [Pending, InProgress, Completed]);
    // Shown (titled by the tool, before its arguments are known), then asked about.
    let first = turn.updates().iter().find_map(|u| match u {
        SessionUpdate::ToolCall(c) => Some((c.title.clone(), c.name.clone())),
        _ => None,
    });
    // The name the model called it by, beside the title the user reads.
    let (title, name) = first.expect("a tool call");
    assert_eq!(
        (title.as_str(), name.as_deref()),
        ("Write …", Some("write_file"))
    );
    assert_eq!(turn.permission_requests().len(), 1);
    assert_eq!(
        turn.permission_requests()[0]["toolCall"]["toolCallId"],
        calls[0].id.as_str(),
        "the permission asked about the call shown"
    );
    assert_eq!(
        client.fs().read("/workspace/notes.txt").as_deref(),
        Some("eggs")
    );

    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    let sent = &requests[1].messages;
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(
        sent[1].content[1],
        Part::ToolCall {
            id: "c1".into(),
            name: "write_file".into(),
            arguments: json!({"path": "notes.txt", "content": "eggs"}),
        }
    );
    assert_eq!(tool_result(&sent[2]), ("c1", "written", false));
}

#[tokio::test]
async fn a_tool_call_appears_while_the_model_is_still_writing_its_arguments() {
    let provider = Scripted::new().reply(
        Reply::new()
            .event(acp::llm::Event::ToolCallStart {
                index: 0,
                id: "c1".into(),
                name: "read_file".into(),
            })
            .event(acp::llm::Event::ToolCallArguments {
                index: 0,
                delta: "{\"pa".into(),
            })
            .hold(),
    );
    let client = client(&provider).await;
    let session = client.new_session().await.unwrap();
    let id = session.start_prompt("read");
    let shown = session
        .wait_for_update("the tool call", |u| matches!(u, SessionUpdate::ToolCall(_)))
        .await
        .unwrap();
    let SessionUpdate::ToolCall(shown) = shown else {
        unreachable!()
    };
    assert_eq!(shown.title, "Read …");
    assert_eq!(shown.status, Pending);
    session.cancel();
    let turn = session.finish(&id).await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::Cancelled));
    assert_eq!(turn.tool_calls()[0].status(), Some(Failed));
    assert_eq!(provider.dropped(), 1);
}

#[tokio::test]
async fn tool_errors_reach_the_model_as_text() {
    let provider = Scripted::new()
        .reply(
            Reply::new()
                .tool_call("c1", "broken", json!({}))
                .tool_call("c2", "nope", json!({}))
                .tool_call_raw("c3", "read_file", "{not json"),
        )
        .reply(Reply::new().text("Sorry."));
    let client = client(&provider).await;
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("go").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    let calls = turn.tool_calls();
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert!(
        calls.iter().all(|c| c.status() == Some(Failed)),
        "{calls:?}"
    );
    assert_eq!(calls[1].title, "nope");

    let requests = provider.requests();
    let results = &requests[1].messages.last().unwrap().content;
    let texts: Vec<_> = results
        .iter()
        .map(|p| match p {
            Part::ToolResult {
                content, is_error, ..
            } => {
                assert!(is_error, "{p:?}");
                content.as_str()
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(texts[0].contains("the disk is on fire"), "{texts:?}");
    assert!(texts[1].contains("no tool named `nope`"), "{texts:?}");
    assert!(texts[2].contains("not a JSON object"), "{texts:?}");
}

#[tokio::test]
async fn the_turn_stops_after_max_turn_requests() {
    let provider = Scripted::from_fn(|_| {
        Reply::new().tool_call("c", "read_file", json!({"path": "notes.txt"}))
    });
    let agent = Looper {
        model: Model::new(provider.clone(), "scripted").max_turn_requests(3),
    };
    let client = TestClient::builder()
        .fs(MemoryFs::new().with("/workspace/notes.txt", "milk"))
        .connect(agent)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("spin").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::MaxTurnRequests));
    assert_eq!(provider.requests().len(), 3);
    assert_eq!(turn.tool_calls().len(), 3);
}

#[tokio::test]
async fn cancel_mid_stream_drops_the_stream_and_keeps_the_partial_text() {
    let provider = Scripted::new()
        .reply(Reply::new().text("partial ").hold())
        .reply(Reply::new().text("ok"));
    let client = client(&provider).await;
    let session = client.new_session().await.unwrap();
    let id = session.start_prompt("wait");
    session
        .wait_for_update("the first chunk", |u| {
            matches!(u, SessionUpdate::AgentMessageChunk(_))
        })
        .await
        .unwrap();
    assert_eq!(provider.dropped(), 0);
    session.cancel();
    let turn = session.finish(&id).await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::Cancelled));
    assert_eq!(provider.dropped(), 1, "the provider's stream was dropped");

    session.prompt("again").await.unwrap();
    assert_eq!(
        provider.requests()[1].messages,
        [
            Message::user("wait"),
            Message::assistant("partial "),
            Message::user("again")
        ]
    );
}

#[tokio::test]
async fn a_provider_error_ends_the_turn_with_it() {
    let provider = Scripted::new()
        .reply(Reply::new().refuse("the API key was refused (401)"))
        .reply(Reply::new().text("half").fail("the stream was cut"));
    let client = client(&provider).await;
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("one").await.unwrap();
    let error = turn.answer().unwrap_err().to_string();
    assert!(error.contains("401"), "{error}");
    let turn = session.prompt("two").await.unwrap();
    let error = turn.answer().unwrap_err().to_string();
    assert!(error.contains("the stream was cut"), "{error}");
    assert_eq!(turn.text(), "half");
}

#[tokio::test]
async fn the_conversation_comes_back_after_a_restart() {
    let store = Arc::new(MemoryStore::default());
    let first_provider = Scripted::new().reply(Reply::new().text("Hi."));
    let first = TestClient::builder()
        .serve(acp::Server::new(looper(&first_provider)).shared_store(store.clone()))
        .await
        .unwrap();
    let session = first.new_session().await.unwrap();
    session.prompt("hello").await.unwrap();
    let id = session.id().clone();
    first.close().await.unwrap();

    let second_provider = Scripted::new().reply(Reply::new().text("Again."));
    let second = TestClient::builder()
        .serve(acp::Server::new(looper(&second_provider)).shared_store(store.clone()))
        .await
        .unwrap();
    let session = second.resume_session(&id).await.unwrap();
    session.prompt("more").await.unwrap();
    assert_eq!(
        second_provider.requests()[0].messages,
        [
            Message::user("hello"),
            Message::assistant("Hi."),
            Message::user("more")
        ]
    );
    second.close().await.unwrap();
}

/// A model whose whole answer has already arrived: `n` text deltas (`"{i:07} "`), a piece
/// of reasoning, then one more text delta.
struct Burst(usize);

impl acp::llm::Provider for Burst {
    fn stream<'a>(
        &'a self,
        _request: acp::llm::Request<'a>,
    ) -> std::pin::Pin<Box<dyn Future<Output = acp::Result<acp::llm::EventStream>> + Send + 'a>>
    {
        use acp::llm::{Event, Stop};
        let mut events: Vec<acp::Result<Event>> = (0..self.0)
            .map(|i| Ok(Event::Text(format!("{i:07} "))))
            .collect();
        events.push(Ok(Event::Reasoning("hm".into())));
        events.push(Ok(Event::Text("end".into())));
        events.push(Ok(Event::Stop(Stop::EndTurn)));
        let stream = futures_util::stream::iter(events);
        Box::pin(async move { Ok(Box::pin(stream) as acp::llm::EventStream) })
    }
}

#[tokio::test]
async fn deltas_already_waiting_go_out_joined_in_order_at_most_64_kib_a_chunk() {
    struct Fast(Model);
    #[acp::agent(name = "fast")]
    impl Fast {
        async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
            self.0.run(cx, &prompt).await
        }
    }
    let n = 20_000;
    let client = TestClient::builder()
        .connect(Fast(Model::new(Burst(n), "burst")))
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("go").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    let expected: String = (0..n).map(|i| format!("{i:07} ")).collect::<String>() + "end";
    assert_eq!(turn.text(), expected, "every delta, in order");
    assert_eq!(turn.thoughts(), "hm");
    let chunks: Vec<usize> = turn
        .updates()
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::AgentMessageChunk(c) => match &c.content {
                acp::schema::ContentBlock::Text(t) => Some(t.text.len()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    // 160,000 bytes of deltas: three joined chunks of at most 64 KiB, then "end" alone
    // (after the reasoning, which is not joined to text).
    assert!(chunks.len() >= 4 && chunks.len() < 10, "{chunks:?}");
    assert!(chunks.iter().all(|&len| len <= 64 * 1024 + 8), "{chunks:?}");
    assert_eq!(chunks.last(), Some(&3), "{chunks:?}");
    let kinds: Vec<&str> = turn
        .updates()
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::AgentMessageChunk(_) => Some("text"),
            SessionUpdate::AgentThoughtChunk(_) => Some("thought"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds[kinds.len() - 2..], ["thought", "text"], "{kinds:?}");
}

#[tokio::test]
async fn the_session_is_the_cache_key_caching_can_be_turned_off_and_cache_tokens_reach_the_turn() {
    let usage = acp::llm::Usage {
        input_tokens: 100,
        output_tokens: 5,
        cached_input_tokens: Some(60),
        cache_write_tokens: Some(30),
        reasoning_tokens: None,
    };
    let provider = Scripted::new()
        .reply(
            Reply::new()
                .text("Cached.")
                .event(acp::llm::Event::Usage(usage)),
        )
        .reply(Reply::new().text("Uncached."));
    let client = client(&provider).await;
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("hi").await.unwrap();
    assert_eq!(
        turn.answer().unwrap()["usage"],
        json!({"totalTokens": 105, "inputTokens": 100, "outputTokens": 5,
               "cachedReadTokens": 60, "cachedWriteTokens": 30})
    );
    let request = &provider.requests()[0];
    assert_eq!(request.cache_key.as_deref(), Some(session.id().0.as_ref()));
    assert!(request.prompt_caching);

    let agent = Looper {
        model: Model::new(provider.clone(), "scripted").prompt_caching(false),
    };
    let client = TestClient::builder().connect(agent).await.unwrap();
    let session = client.new_session().await.unwrap();
    session.prompt("hi").await.unwrap();
    assert!(!provider.requests()[1].prompt_caching);
}

/// A loopback server answering each `POST` with the next recorded stream (of
/// `acp-core/tests/llm_recordings/`), keeping each request's path and JSON body.
async fn replay(
    recordings: &[&str],
) -> (
    String,
    Arc<std::sync::Mutex<Vec<(String, serde_json::Value)>>>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/acp-core/tests/llm_recordings");
    let mut streams: std::collections::VecDeque<String> = recordings
        .iter()
        .map(|name| std::fs::read_to_string(format!("{dir}/{name}")).unwrap())
        .collect();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let kept: Arc<std::sync::Mutex<Vec<_>>> = Arc::default();
    let requests = kept.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let Some(stream) = streams.pop_front() else {
                return;
            };
            let mut bytes = Vec::new();
            let mut buf = [0u8; 8192];
            let (path, body) = loop {
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
                    let path = head.split(' ').nth(1).unwrap_or_default().to_owned();
                    let body = serde_json::from_slice(&bytes[end + 4..end + 4 + length]).unwrap();
                    break (path, body);
                }
            };
            kept.lock().unwrap().push((path, body));
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n{stream}",
                stream.len()
            );
            socket.write_all(answer.as_bytes()).await.unwrap();
            socket.shutdown().await.unwrap();
        }
    });
    (url, requests)
}

#[tokio::test]
async fn a_responses_api_turn_reasoning_summary_two_function_calls_their_outputs_and_cached_tokens()
{
    let (url, requests) =
        replay(&["openai_responses_tools.sse", "openai_responses_answer.sse"]).await;
    let provider = acp::llm::OpenAiResponses::new(url, Some("sk-test".into()))
        .unwrap()
        .with_reasoning(true);
    let agent = Looper {
        model: Model::new(provider, "gpt-5-mini").system("Be brief."),
    };
    let client = TestClient::builder()
        .fs(MemoryFs::new().with("/workspace/notes.txt", "milk"))
        .end_turn_usage(true)
        .connect(agent)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("What do my notes say?").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert_eq!(turn.thoughts(), "Read the notes, then try the broken tool.");
    assert_eq!(turn.text(), "Reading.The notes say milk.");
    let calls = turn.tool_calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0].title, "Read notes.txt");
    assert_eq!(calls[0].status(), Some(Completed));
    assert_eq!(calls[1].status(), Some(Failed));
    // Both calls' tokens, the cache's reads among them.
    assert_eq!(
        turn.answer().unwrap()["usage"],
        json!({"totalTokens": 3100 + 90 + 3250 + 8, "inputTokens": 3100 + 3250,
               "outputTokens": 98, "thoughtTokens": 40, "cachedReadTokens": 2944 + 3072})
    );

    let requests = requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    let session_id = session.id().0.to_string();
    for (path, body) in &requests {
        assert_eq!(path, "/v1/responses");
        assert_eq!(body["instructions"], "Be brief.");
        assert_eq!(body["store"], false);
        assert_eq!(body["prompt_cache_key"], session_id.as_str());
        let tools: Vec<_> = body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["type"].as_str().unwrap(), t["name"].as_str().unwrap()))
            .collect();
        assert_eq!(
            tools,
            [
                ("function", "read_file"),
                ("function", "write_file"),
                ("function", "broken")
            ]
        );
    }
    // The whole conversation again, in order: the encrypted reasoning, the text, the calls,
    // then each output naming its call.
    assert_eq!(
        requests[1].1["input"],
        json!([
            {"type": "message", "role": "user", "content": "What do my notes say?"},
            {"type": "reasoning", "id": "rs_68c1f1b0", "encrypted_content": "gAAAAABoENCRYPTED-2==",
             "summary": [{"type": "summary_text", "text": "Read the notes, then try the broken tool."}]},
            {"type": "message", "role": "assistant", "content": "Reading."},
            {"type": "function_call", "call_id": "call_N0tes1", "name": "read_file",
             "arguments": "{\"path\":\"notes.txt\"}"},
            {"type": "function_call", "call_id": "call_Br0ken2", "name": "broken", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_N0tes1", "output": "milk"},
            {"type": "function_call_output", "call_id": "call_Br0ken2",
             "output": "Error: the disk is on fire"},
        ])
    );
}

#[tokio::test]
async fn each_signature_stays_with_its_own_reasoning() {
    // Two reasoning items, the second without a summary (OpenAI Responses' encrypted
    // reasoning): two signed parts, the first keeping its signature.
    let provider = Scripted::new()
        .reply(
            Reply::new()
                .reasoning("First.")
                .event(acp::llm::Event::ReasoningSignature("s1".into()))
                .event(acp::llm::Event::ReasoningSignature("s2".into()))
                .text("Done."),
        )
        .reply(Reply::new().text("Again."));
    let client = client(&provider).await;
    let session = client.new_session().await.unwrap();
    session.prompt("one").await.unwrap();
    session.prompt("two").await.unwrap();
    let sent = &provider.requests()[1].messages[1];
    assert_eq!(
        sent.content,
        [
            Part::Reasoning {
                text: "First.".into(),
                signature: Some("s1".into())
            },
            Part::Reasoning {
                text: String::new(),
                signature: Some("s2".into())
            },
            Part::Text {
                text: "Done.".into()
            },
        ]
    );
}

/// An agent whose `slow` tool sleeps (asking permission first), recording how many bodies
/// started and naming the tool call its body ran in.
struct Slow {
    model: Model,
    started: Arc<std::sync::atomic::AtomicUsize>,
}

#[acp::agent(name = "slow")]
impl Slow {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        self.model.run(cx, &prompt).await
    }

    /// Sleeps `ms` milliseconds, then answers `label`.
    #[acp::tool(kind = "other", title = "Slow {label}", permission)]
    async fn slow(&self, cx: &Session, label: String, ms: u64) -> acp::Result<String> {
        self.started
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        let id = cx.current_tool_call().map(|id| id.to_string());
        Ok(format!("{label} in {}", id.unwrap_or_default()))
    }
}

fn three_slow_calls() -> Reply {
    // The first made is the slowest: they finish in the reverse of the order made.
    Reply::new()
        .tool_call("c1", "slow", json!({"label": "a", "ms": 300}))
        .tool_call("c2", "slow", json!({"label": "b", "ms": 200}))
        .tool_call("c3", "slow", json!({"label": "c", "ms": 100}))
}

async fn slow_client(model: Model, started: Arc<std::sync::atomic::AtomicUsize>) -> TestClient {
    TestClient::builder()
        .permissions(PermissionPolicy::AllowOnce)
        .connect(Slow { model, started })
        .await
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn the_calls_of_one_answer_run_together_and_their_results_go_back_in_call_order() {
    let provider = Scripted::new()
        .reply(three_slow_calls())
        .reply(Reply::new().text("Done."));
    let client = slow_client(Model::new(provider.clone(), "scripted"), Arc::default()).await;
    let session = client.new_session().await.unwrap();
    let started = tokio::time::Instant::now();
    let turn = session.prompt("go").await.unwrap();
    let took = started.elapsed();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    // One after the other they would take 600 ms.
    assert!(
        took >= std::time::Duration::from_millis(300)
            && took < std::time::Duration::from_millis(400),
        "took {took:?}"
    );
    // Each call asked its own permission, and its body ran in its own call.
    let calls = turn.tool_calls();
    assert_eq!(calls.len(), 3, "{calls:?}");
    let asked: Vec<&str> = turn
        .permission_requests()
        .iter()
        .map(|r| r["toolCall"]["toolCallId"].as_str().unwrap())
        .collect();
    let mut ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    let mut sorted = asked.clone();
    sorted.sort_unstable();
    ids.sort_unstable();
    assert_eq!(sorted, ids, "one permission request per call");
    let call_of = |label: &str| {
        calls
            .iter()
            .find(|c| c.title == format!("Slow {label}"))
            .unwrap_or_else(|| panic!("no call titled Slow {label}: {calls:?}"))
    };
    for label in ["a", "b", "c"] {
        let call = call_of(label);
        assert_eq!(call.statuses, [Pending, InProgress, Completed], "{label}");
        assert_eq!(call.text(), format!("{label} in {}", call.id));
    }

    // In the order the model made the calls, not the order they finished.
    let requests = provider.requests();
    let results: Vec<(String, String)> = requests[1]
        .messages
        .last()
        .unwrap()
        .content
        .iter()
        .map(|p| match p {
            Part::ToolResult {
                id,
                content,
                is_error: false,
            } => (id.clone(), content.clone()),
            other => panic!("{other:?}"),
        })
        .collect();
    let expected: Vec<(String, String)> = [("c1", "a"), ("c2", "b"), ("c3", "c")]
        .iter()
        .map(|(id, label)| (id.to_string(), format!("{label} in {}", call_of(label).id)))
        .collect();
    assert_eq!(results, expected);
}

#[tokio::test(start_paused = true)]
async fn parallel_tool_calls_of_one_runs_them_one_after_the_other() {
    let provider = Scripted::new()
        .reply(three_slow_calls())
        .reply(Reply::new().text("Done."));
    let model = Model::new(provider.clone(), "scripted").parallel_tool_calls(1);
    let client = slow_client(model, Arc::default()).await;
    let session = client.new_session().await.unwrap();
    let started = tokio::time::Instant::now();
    session.prompt("go").await.unwrap();
    assert!(started.elapsed() >= std::time::Duration::from_millis(600));
}

#[tokio::test]
async fn a_cancel_stops_every_call_running_and_the_turn_ends_cancelled() {
    let provider = Scripted::new().reply(
        Reply::new()
            .tool_call("c1", "slow", json!({"label": "a", "ms": 60_000}))
            .tool_call("c2", "slow", json!({"label": "b", "ms": 60_000}))
            .tool_call("c3", "slow", json!({"label": "c", "ms": 60_000})),
    );
    let started = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let client = slow_client(Model::new(provider.clone(), "scripted"), started.clone()).await;
    let session = client.new_session().await.unwrap();
    let id = session.start_prompt("go");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while started.load(std::sync::atomic::Ordering::SeqCst) < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "the three calls never ran together: {} started",
            started.load(std::sync::atomic::Ordering::SeqCst)
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    session.cancel();
    let turn = tokio::time::timeout(std::time::Duration::from_secs(10), session.finish(&id))
        .await
        .expect("the turn ends at once")
        .unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::Cancelled));
    let calls = turn.tool_calls();
    assert_eq!(calls.len(), 3);
    assert!(
        calls.iter().all(|c| c.status() == Some(Failed)),
        "{calls:?}"
    );
    assert_eq!(
        provider.requests().len(),
        1,
        "the model is not called again"
    );
}

/// How the gated agent works.
#[derive(acp::Modes, Clone, Copy, Default, Debug, PartialEq)]
enum GateMode {
    /// Answers only.
    #[default]
    Ask,
    /// Commits too.
    Code,
}

/// An agent whose `commit` is refused by its check in ask mode.
struct Gated {
    model: Model,
}

#[acp::agent(name = "gated-loop", modes = GateMode)]
impl Gated {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        self.model.run(cx, &prompt).await
    }

    /// Commits.
    #[acp::tool(kind = "execute", check = Self::may_commit)]
    async fn commit(&self, _cx: &Session) -> acp::Result<String> {
        Ok("committed".into())
    }

    /// Reads.
    #[acp::tool(kind = "read")]
    async fn look(&self, _cx: &Session) -> acp::Result<String> {
        Ok("looked".into())
    }

    fn may_commit(&self, cx: &Session) -> acp::Result<()> {
        match cx.mode::<GateMode>()? {
            GateMode::Code => Ok(()),
            GateMode::Ask => Err(acp::Error::msg("not in ask mode")),
        }
    }
}

#[tokio::test]
async fn a_tool_its_check_refuses_in_the_current_mode_is_not_offered() {
    let provider = Scripted::from_fn(|_| Reply::new().text("ok"));
    let client = TestClient::builder()
        .connect(Gated {
            model: Model::new(provider.clone(), "scripted"),
        })
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    session.prompt("one").await.unwrap();
    session.set_mode("code").await.unwrap();
    session.prompt("two").await.unwrap();
    let offered: Vec<Vec<String>> = provider
        .requests()
        .iter()
        .map(|r| r.tools.iter().map(|t| t.name.clone()).collect())
        .collect();
    assert_eq!(offered, [vec!["look"], vec!["commit", "look"]]);
}

/// An agent whose `/summary` asks the model for one without tools, streamed; `quiet` asks
/// for one and says it itself.
struct Summer {
    model: Model,
}

#[acp::agent(name = "summer")]
impl Summer {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let ask = [Message::user(format!("Summarise: {}", prompt.text()))];
        if prompt.text().starts_with("quiet") {
            let summary = self.model.complete(cx, &ask).await?;
            cx.message(format!("[{summary}]")).await?;
        } else {
            self.model.complete_streamed(cx, &ask).await?;
        }
        Ok(StopReason::EndTurn)
    }

    /// Not offered to a one-shot call.
    #[acp::tool]
    async fn look(&self, _cx: &Session) -> acp::Result<String> {
        Ok("looked".into())
    }
}

#[tokio::test]
async fn complete_calls_the_model_without_tools_and_returns_its_text() {
    let provider = Scripted::new()
        .reply(
            Reply::new()
                .reasoning("hm")
                .text("Short")
                .text(" summary.")
                .usage(7, 3),
        )
        .reply(Reply::new().text("Streamed").text(" one.").usage(1, 2));
    let client = TestClient::builder()
        .end_turn_usage(true)
        .connect(Summer {
            model: Model::new(provider.clone(), "scripted")
                .system("Summarise.")
                .max_tokens(100)
                .temperature(0.5),
        })
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("quiet talk").await.unwrap();
    assert_eq!(turn.text(), "[Short summary.]", "only what the agent said");
    assert_eq!(turn.thoughts(), "");
    assert_eq!(
        turn.answer().unwrap()["usage"],
        json!({"totalTokens": 10, "inputTokens": 7, "outputTokens": 3})
    );
    let turn = session.prompt("loud talk").await.unwrap();
    assert_eq!(turn.text(), "Streamed one.");
    let chunks = turn
        .updates()
        .iter()
        .filter(|u| matches!(u, SessionUpdate::AgentMessageChunk(_)))
        .count();
    assert_eq!(chunks, 2, "streamed as it came");

    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert!(request.tools.is_empty(), "{:?}", request.tools);
        assert_eq!(request.system.as_deref(), Some("Summarise."));
        assert_eq!(request.max_tokens, Some(100));
        assert_eq!(request.temperature, Some(0.5));
    }
    assert_eq!(
        requests[0].messages,
        [Message::user("Summarise: quiet talk")]
    );
}

/// An agent whose `edit` tool returns a diff of a whole file.
struct Editor {
    model: Model,
}

#[acp::agent(name = "editor")]
impl Editor {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        self.model.run(cx, &prompt).await
    }

    /// Edits a file: changes its second line.
    #[acp::tool(kind = "edit")]
    async fn edit(&self, cx: &Session) -> acp::Result<acp::Diff> {
        let old: String = (1..=200).map(|i| format!("line {i}\n")).collect();
        let new = old.replacen("line 2\n", "line two\nline 2b\n", 1);
        Ok(acp::Diff::new(cx.cwd().join("big.txt"), new).old_text(old))
    }
}

#[tokio::test]
async fn a_diff_reaches_the_model_as_a_summary_and_the_editor_whole() {
    let provider = Scripted::new()
        .reply(Reply::new().tool_call("c1", "edit", json!({})))
        .reply(Reply::new().text("Edited."));
    let client = TestClient::builder()
        .connect(Editor {
            model: Model::new(provider.clone(), "scripted"),
        })
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("edit").await.unwrap();
    let calls = turn.tool_calls();
    let diffs = calls[0].diffs();
    assert_eq!(diffs.len(), 1, "the editor is shown the diff");
    assert!(diffs[0].new_text.contains("line two\nline 2b\n"));
    assert!(diffs[0].old_text.as_deref().unwrap().contains("line 2\n"));
    let requests = provider.requests();
    let (id, content, is_error) = tool_result(requests[1].messages.last().unwrap());
    assert_eq!((id, is_error), ("c1", false));
    assert_eq!(content, "edited /workspace/big.txt: +2 \u{2212}1 lines");
}

/// A loopback HTTP server answering each connection with the next of its canned responses
/// (raw HTTP/1.1, the connection closed after it), recording when each request came.
struct Loopback {
    url: String,
    at: Arc<std::sync::Mutex<Vec<std::time::Instant>>>,
}

impl Loopback {
    async fn start(responses: Vec<String>) -> Loopback {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let at = Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = at.clone();
        tokio::spawn(async move {
            for response in responses {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                // The request: its head, then as many bytes as its content-length says.
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    let n = socket.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    request.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&request).to_string();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length = text[..end]
                            .lines()
                            .find_map(|l| {
                                let (name, value) = l.split_once(':')?;
                                name.eq_ignore_ascii_case("content-length")
                                    .then(|| value.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        if request.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                record.lock().unwrap().push(std::time::Instant::now());
                let _ = socket.write_all(response.as_bytes()).await;
                let _ = socket.shutdown().await;
            }
        });
        Loopback { url, at }
    }

    fn requests(&self) -> Vec<std::time::Instant> {
        self.at.lock().unwrap().clone()
    }
}

fn rate_limited(retry_after: &str) -> String {
    let body = r#"{"error":{"message":"Rate limit reached","type":"requests"}}"#;
    format!(
        "HTTP/1.1 429 Too Many Requests\r\nretry-after: {retry_after}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// An OpenAI event stream saying `text`; `finished`: with its end, else cut after the text.
fn answer(text: &str, finished: bool) -> String {
    let mut out = String::from(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
    );
    out.push_str(&format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
    ));
    if finished {
        out.push_str(&format!(
            "data: {}\n\ndata: [DONE]\n\n",
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        ));
    }
    out
}

fn http_model(server: &Loopback) -> Model {
    let retry = acp::llm::Retry {
        max_retries: 3,
        initial_backoff: std::time::Duration::from_millis(50),
        max_wait: std::time::Duration::from_secs(5),
    };
    let provider = acp::llm::OpenAi::new(server.url.clone(), None)
        .unwrap()
        .with_retry(retry);
    Model::new(provider, "m")
}

#[tokio::test]
async fn a_rate_limit_is_retried_after_retry_after_and_the_editor_is_told_if_it_takes_notices() {
    for takes_notices in [true, false] {
        let server = Loopback::start(vec![rate_limited("1"), answer("Hello", true)]).await;
        let mut builder = TestClient::builder();
        if takes_notices {
            builder = builder.notices();
        }
        let client = builder
            .connect(Looper {
                model: http_model(&server),
            })
            .await
            .unwrap();
        let session = client.new_session().await.unwrap();
        let turn = session.prompt("hi").await.unwrap();
        assert_eq!(
            turn.stop_reason(),
            Some(StopReason::EndTurn),
            "{takes_notices}"
        );
        assert_eq!(turn.text(), "Hello");
        let at = server.requests();
        assert_eq!(at.len(), 2, "retried once");
        let waited = at[1] - at[0];
        assert!(
            waited >= std::time::Duration::from_secs(1)
                && waited < std::time::Duration::from_secs(3),
            "retry-after honoured: {waited:?}"
        );
        let notices: Vec<&str> = turn.notices().iter().map(|n| n.title.as_str()).collect();
        if takes_notices {
            assert_eq!(notices, ["Rate limited: retrying in 1 s"]);
            let description = turn.notices()[0].description.clone().unwrap_or_default();
            assert!(description.contains("429"), "{description}");
        } else {
            assert!(notices.is_empty(), "{notices:?}");
        }
    }
}

#[tokio::test]
async fn nothing_is_retried_once_the_model_has_said_something() {
    let server = Loopback::start(vec![answer("Hal", false), answer("Hello", true)]).await;
    let client = TestClient::builder()
        .notices()
        .connect(Looper {
            model: http_model(&server),
        })
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("hi").await.unwrap();
    let error = turn.answer().unwrap_err().to_string();
    assert!(error.contains("ended before it finished"), "{error}");
    assert_eq!(turn.text(), "Hal");
    assert_eq!(server.requests().len(), 1, "not retried");
    assert!(turn.notices().is_empty());
}

#[tokio::test]
async fn an_attempt_silent_past_the_first_event_timeout_is_retried() {
    use tokio::io::AsyncWriteExt;
    // The first connection is accepted and never answered; the second answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        let mut silent = Vec::new();
        while let Ok((mut socket, _)) = listener.accept().await {
            let n = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if n == 0 {
                silent.push(socket);
                continue;
            }
            let mut buf = [0u8; 65536];
            let _ = tokio::io::AsyncReadExt::read(&mut socket, &mut buf).await;
            let _ = socket.write_all(answer("Late", true).as_bytes()).await;
            let _ = socket.shutdown().await;
        }
    });
    let retry = acp::llm::Retry {
        max_retries: 2,
        initial_backoff: std::time::Duration::from_millis(10),
        max_wait: std::time::Duration::from_secs(1),
    };
    let provider = acp::llm::OpenAi::new(url, None).unwrap().with_retry(retry);
    let model =
        Model::new(provider, "m").first_event_timeout(std::time::Duration::from_millis(300));
    let client = TestClient::builder()
        .notices()
        .connect(Looper { model })
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = tokio::time::timeout(std::time::Duration::from_secs(20), session.prompt("hi"))
        .await
        .expect("the silent attempt was given up")
        .unwrap();
    assert_eq!(turn.text(), "Late");
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
    let notices: Vec<&str> = turn.notices().iter().map(|n| n.title.as_str()).collect();
    assert_eq!(notices, ["The model is unavailable: retrying in 1 s"]);
}
