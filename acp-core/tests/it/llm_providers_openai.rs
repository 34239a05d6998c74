//! `OpenAi` against a loopback server replaying recorded Chat Completions streams: what is
//! sent (the whole request body), and every event shape read back.

use crate::llm_support;

use acp_core::llm::{Event, Message, OpenAi, Part, Provider, Request, Role, Stop, ToolSpec, Usage};
use llm_support::{Reply, Server, collect, text};
use serde_json::json;

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "read".into(),
        description: "Reads a file.".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }]
}

/// A conversation with every kind of part: text, reasoning, two tool calls, their results.
fn conversation() -> Vec<Message> {
    vec![
        Message::user("Where is main?"),
        Message {
            role: Role::Assistant,
            content: vec![
                Part::Reasoning {
                    text: "Look first.".into(),
                    signature: None,
                },
                Part::Text {
                    text: "Let me look.".into(),
                },
                Part::ToolCall {
                    id: "call_1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "src/main.rs"}),
                },
                Part::ToolCall {
                    id: "call_2".into(),
                    name: "read".into(),
                    arguments: json!({"path": "nope.rs"}),
                },
            ],
        },
        Message {
            role: Role::User,
            content: vec![
                Part::ToolResult {
                    id: "call_1".into(),
                    content: "fn main() {}".into(),
                    is_error: false,
                },
                Part::ToolResult {
                    id: "call_2".into(),
                    content: "no such file".into(),
                    is_error: true,
                },
            ],
        },
    ]
}

#[tokio::test]
async fn text_in_many_chunks_with_split_utf8_then_usage_then_stop() {
    let server = Server::start(vec![Reply::recording("openai_text.sse")]).await;
    let model = OpenAi::new(format!("{}/v1", server.url), Some("sk-test-123".into())).unwrap();
    let messages = conversation();
    let tools = tools();
    let request = Request {
        model: "gpt-4.1-mini",
        system: Some("You are terse."),
        messages: &messages,
        tools: &tools,
        max_tokens: Some(512),
        cache_key: None,
        prompt_caching: false,
        temperature: None,
    };
    let (events, error) = collect(model.stream(request).await.unwrap()).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text(&events), "Le café était déjà servi — 🦀 prêt.");
    assert!(
        events
            .iter()
            .filter(|e| matches!(e, Event::Text(_)))
            .count()
            >= 9
    );
    // The usage-only chunk (empty `choices`) after `finish_reason`; the stop last of all.
    assert_eq!(
        events[events.len() - 2..],
        [
            Event::Usage(Usage {
                input_tokens: 42,
                output_tokens: 9,
                cached_input_tokens: Some(12),
                cache_write_tokens: None,
                reasoning_tokens: Some(0)
            }),
            Event::Stop(Stop::EndTurn),
        ]
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test-123"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(
        sent.body,
        json!({
            "model": "gpt-4.1-mini",
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Where is main?"},
                {"role": "assistant", "content": "Let me look.", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"src/main.rs\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"nope.rs\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "fn main() {}"},
                {"role": "tool", "tool_call_id": "call_2", "content": "Error: no such file"},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "tools": [{"type": "function", "function": {
                "name": "read",
                "description": "Reads a file.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            }}],
            "max_tokens": 512,
        })
    );
}

#[tokio::test]
async fn two_parallel_tool_calls_with_interleaved_arguments() {
    let server = Server::start(vec![Reply::recording("openai_tools.sse")]).await;
    // No key: a local server; no `Authorization` is sent.
    let model = OpenAi::new(format!("{}/v1/", server.url), None).unwrap();
    let messages = [Message::user("Find main.")];
    let request = Request {
        model: "m",
        system: None,
        messages: &messages,
        tools: &[],
        max_tokens: None,
        cache_key: None,
        prompt_caching: false,
        temperature: None,
    };
    let (events, error) = collect(model.stream(request).await.unwrap()).await;
    assert!(error.is_none(), "{error:?}");
    let args = |index, delta: &str| Event::ToolCallArguments {
        index,
        delta: delta.into(),
    };
    assert_eq!(
        events,
        [
            Event::ToolCallStart {
                index: 0,
                id: "call_Ra7kQ1".into(),
                name: "read".into()
            },
            Event::ToolCallStart {
                index: 1,
                id: "call_Gp3xZ9".into(),
                name: "grep".into()
            },
            args(0, "{\"pa"),
            args(1, "{\"pattern\""),
            args(0, "th\": \"src/main.rs\"}"),
            args(1, ": \"fn main\"}"),
            Event::Usage(Usage {
                input_tokens: 310,
                output_tokens: 48,
                cached_input_tokens: Some(0),
                cache_write_tokens: None,
                reasoning_tokens: Some(20)
            }),
            Event::Stop(Stop::ToolUse),
        ]
    );
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.body,
        json!({
            "model": "m",
            "messages": [{"role": "user", "content": "Find main."}],
            "stream": true,
            "stream_options": {"include_usage": true},
        })
    );
}

#[tokio::test]
async fn reasoning_content_of_llama_cpp_and_reasoning_of_openrouter() {
    let server = Server::start(vec![
        Reply::recording("llamacpp_reasoning.sse"),
        Reply::recording("openrouter_reasoning.sse"),
    ])
    .await;
    let model = OpenAi::new(format!("{}/v1", server.url), None).unwrap();
    let messages = [Message::user("Hello")];
    let request = Request {
        model: "gemma",
        system: None,
        messages: &messages,
        tools: &[],
        max_tokens: None,
        cache_key: None,
        prompt_caching: false,
        temperature: None,
    };

    let (events, error) = collect(model.stream(request).await.unwrap()).await;
    assert!(error.is_none(), "{error:?}");
    let reasoning: String = events
        .iter()
        .filter_map(|e| match e {
            Event::Reasoning(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, "The user greets me; answer briefly.");
    assert_eq!(text(&events), "Hi!");
    assert_eq!(
        events[events.len() - 2..],
        [
            Event::Usage(Usage {
                input_tokens: 17,
                output_tokens: 11,
                cached_input_tokens: None,
                cache_write_tokens: None,
                reasoning_tokens: None
            }),
            Event::Stop(Stop::EndTurn),
        ]
    );

    let (events, error) = collect(model.stream(request).await.unwrap()).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(
        events,
        [
            Event::Reasoning("Two plus two".into()),
            Event::Reasoning(" is four.".into()),
            Event::Text("4".into()),
            Event::Usage(Usage {
                input_tokens: 9,
                output_tokens: 30,
                cached_input_tokens: None,
                cache_write_tokens: None,
                reasoning_tokens: Some(28)
            }),
            Event::Stop(Stop::EndTurn),
        ]
    );
}

#[tokio::test]
async fn the_sessions_prompt_cache_key_is_sent_unless_caching_is_off() {
    let server = Server::start(vec![
        Reply::recording("openai_tools.sse"),
        Reply::recording("openai_tools.sse"),
    ])
    .await;
    let model = OpenAi::new(format!("{}/v1", server.url), None).unwrap();
    let messages = [Message::user("Find main.")];
    let mut request = Request {
        model: "m",
        system: None,
        messages: &messages,
        tools: &[],
        max_tokens: None,
        cache_key: Some("sess_7f3a"),
        prompt_caching: true,
        temperature: None,
    };
    let (_, error) = collect(model.stream(request).await.unwrap()).await;
    assert!(error.is_none(), "{error:?}");
    request.prompt_caching = false;
    let (_, error) = collect(model.stream(request).await.unwrap()).await;
    assert!(error.is_none(), "{error:?}");
    let requests = server.requests();
    assert_eq!(requests[0].body["prompt_cache_key"], "sess_7f3a");
    assert_eq!(requests[1].body.get("prompt_cache_key"), None);
}
