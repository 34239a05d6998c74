//! `Anthropic` against a loopback server replaying recorded Messages streams: what is sent
//! (headers, the whole request body), and every event shape read back.

use crate::llm_support;

use std::time::Duration;

use acp_core::llm::{
    Anthropic, Event, Message, Part, Provider, Request, Retry, Role, Stop, ToolSpec, Usage,
};
use llm_support::{Reply, Server, collect, text};
use serde_json::json;

fn fast_retry() -> Retry {
    Retry {
        max_retries: 3,
        initial_backoff: Duration::from_millis(50),
        max_wait: Duration::from_secs(2),
    }
}

#[tokio::test]
async fn thinking_text_and_two_tool_calls_with_pings() {
    let server = Server::start(vec![Reply::recording("anthropic_tools.sse")]).await;
    let model = Anthropic::new(server.url.clone(), Some("sk-ant-test-456".into())).unwrap();
    let messages = vec![
        Message::user("Where is main?"),
        Message {
            role: Role::Assistant,
            content: vec![
                Part::Reasoning {
                    text: "Look first.".into(),
                    signature: Some("c2lnbg==".into()),
                },
                // Reasoning from another provider (no signature) is left out; so is empty text.
                Part::Reasoning {
                    text: "unsigned".into(),
                    signature: None,
                },
                Part::Text {
                    text: String::new(),
                },
                Part::Text {
                    text: "Let me look.".into(),
                },
                Part::ToolCall {
                    id: "toolu_1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "src/main.rs"}),
                },
            ],
        },
        Message {
            role: Role::User,
            content: vec![
                Part::ToolResult {
                    id: "toolu_1".into(),
                    content: "no such file".into(),
                    is_error: true,
                },
                Part::Text {
                    text: "Try again.".into(),
                },
            ],
        },
    ];
    let tools = vec![ToolSpec {
        name: "read".into(),
        description: "Reads a file.".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }];
    let request = Request {
        model: "claude-sonnet-4-5",
        system: Some("You are terse."),
        messages: &messages,
        tools: &tools,
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
    let input = Usage {
        input_tokens: 472 + 2048,
        output_tokens: 2,
        cached_input_tokens: Some(2048),
        cache_write_tokens: Some(0),
        reasoning_tokens: None,
    };
    assert_eq!(
        events,
        [
            Event::Usage(input),
            Event::Reasoning("I should read the file".into()),
            Event::Reasoning(" and grep for main.".into()),
            Event::ReasoningSignature("EqQBCkYIBxgCKkBr3Yd0S1g==".into()),
            Event::Text("Je regarde ".into()),
            Event::Text("ça — 🦀.".into()),
            // Content blocks 2 and 3 are this answer's tool calls 0 and 1.
            Event::ToolCallStart {
                index: 0,
                id: "toolu_01A09q90qw90lq917835lq9".into(),
                name: "read".into()
            },
            args(0, "{\"path\": \"sr"),
            args(0, "c/main.rs\"}"),
            Event::ToolCallStart {
                index: 1,
                id: "toolu_01B7hG2kL3mN4pQ5rS6tU7v".into(),
                name: "grep".into()
            },
            args(1, "{\"pattern\":"),
            args(1, " \"fn main\"}"),
            Event::Usage(Usage {
                output_tokens: 89,
                ..input
            }),
            Event::Stop(Stop::ToolUse),
        ]
    );

    let sent = &server.requests()[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test-456"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "stream": true,
            "system": "You are terse.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Where is main?"}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Look first.", "signature": "c2lnbg=="},
                    {"type": "text", "text": "Let me look."},
                    {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "src/main.rs"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "no such file", "is_error": true},
                    {"type": "text", "text": "Try again."},
                ]},
            ],
            "tools": [{"name": "read", "description": "Reads a file.", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}],
        })
    );
}

#[tokio::test]
async fn text_with_split_utf8_and_max_tokens() {
    let server = Server::start(vec![Reply::recording("anthropic_text.sse")]).await;
    let model = Anthropic::new(format!("{}/", server.url), None).unwrap();
    let messages = [Message::user("Salut")];
    let request = Request {
        model: "claude-haiku-4-5",
        system: None,
        messages: &messages,
        tools: &[],
        max_tokens: Some(100),
        cache_key: None,
        prompt_caching: false,
        temperature: None,
    };
    let (events, error) = collect(model.stream(request).await.unwrap()).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text(&events), "Bonjour à vous.");
    assert_eq!(events.last(), Some(&Event::Stop(Stop::EndTurn)));
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), None);
    assert_eq!(
        sent.body,
        json!({
            "model": "claude-haiku-4-5",
            "max_tokens": 100,
            "stream": true,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Salut"}]}],
        })
    );
}

#[tokio::test]
async fn an_overloaded_error_event_before_any_output_is_retried() {
    let server = Server::start(vec![
        Reply::recording("anthropic_overloaded.sse"),
        Reply::recording("anthropic_text.sse"),
    ])
    .await;
    let model = Anthropic::new(server.url.clone(), Some("sk-ant-api03-test".into()))
        .unwrap()
        .with_retry(fast_retry());
    let messages = [Message::user("Salut")];
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
    assert_eq!(text(&events), "Bonjour à vous.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body, requests[1].body);
}

#[tokio::test]
async fn an_error_event_after_output_ends_the_stream_with_its_message() {
    // A second reply is there for a retry that must not happen.
    let server = Server::start(vec![
        Reply::recording("anthropic_error.sse"),
        Reply::recording("anthropic_text.sse"),
    ])
    .await;
    let model = Anthropic::new(server.url.clone(), Some("sk-ant-api03-test".into()))
        .unwrap()
        .with_retry(fast_retry());
    let messages = [Message::user("Salut")];
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
    assert_eq!(text(&events), "Half an ans");
    let error = error.expect("the error event ends the stream").to_string();
    assert_eq!(
        error,
        "Anthropic reported an error (api_error): Internal server error"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(server.requests().len(), 1);
}

/// A conversation ending with tool results, two tools, a system prompt.
fn cached_conversation() -> (Vec<Message>, Vec<ToolSpec>) {
    let messages = vec![
        Message::user("Read both."),
        Message {
            role: Role::Assistant,
            content: vec![
                Part::Text {
                    text: "Reading.".into(),
                },
                Part::ToolCall {
                    id: "toolu_1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a.rs"}),
                },
            ],
        },
        Message {
            role: Role::User,
            content: vec![
                Part::ToolResult {
                    id: "toolu_1".into(),
                    content: "fn a() {}".into(),
                    is_error: false,
                },
                Part::Text {
                    text: "And now?".into(),
                },
            ],
        },
    ];
    let tool = |name: &str| ToolSpec {
        name: name.into(),
        description: format!("The {name} tool."),
        parameters: json!({"type": "object"}),
    };
    (messages, vec![tool("read"), tool("grep")])
}

/// Every `cache_control` in `value`, as the JSON pointer of the object holding it.
fn breakpoints(value: &serde_json::Value, at: String, found: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            if map.contains_key("cache_control") {
                found.push(at.clone());
            }
            for (key, value) in map {
                breakpoints(value, format!("{at}/{key}"), found);
            }
        }
        serde_json::Value::Array(items) => {
            for (i, value) in items.iter().enumerate() {
                breakpoints(value, format!("{at}/{i}"), found);
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn prompt_caching_marks_the_system_prompt_the_last_tool_and_the_last_message() {
    let server = Server::start(vec![Reply::recording("anthropic_cache.sse")]).await;
    let model = Anthropic::new(server.url.clone(), None).unwrap();
    let (messages, tools) = cached_conversation();
    let request = Request {
        model: "claude-sonnet-4-5",
        system: Some("You are terse."),
        messages: &messages,
        tools: &tools,
        max_tokens: None,
        cache_key: Some("sess_1"),
        prompt_caching: true,
        temperature: None,
    };
    let (events, error) = collect(model.stream(request).await.unwrap()).await;
    assert!(error.is_none(), "{error:?}");
    // The cache's reads and writes count as input, and are told apart; a later usage
    // without them keeps them.
    let usage = |output_tokens| {
        Event::Usage(Usage {
            input_tokens: 21 + 1830 + 4096,
            output_tokens,
            cached_input_tokens: Some(4096),
            cache_write_tokens: Some(1830),
            reasoning_tokens: None,
        })
    };
    assert_eq!(
        events,
        [
            usage(1),
            Event::Text("Cached.".into()),
            usage(12),
            Event::Stop(Stop::EndTurn)
        ]
    );

    let body = &server.requests()[0].body;
    let mut found = Vec::new();
    breakpoints(body, String::new(), &mut found);
    assert_eq!(
        found,
        ["/messages/2/content/1", "/system/0", "/tools/1"],
        "{body:#}"
    );
    let ephemeral = json!({"type": "ephemeral"});
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "You are terse.", "cache_control": ephemeral}])
    );
    assert_eq!(body["tools"][1]["cache_control"], ephemeral);
    assert_eq!(body["tools"][0].get("cache_control"), None);
    assert_eq!(
        body["messages"][2]["content"][1],
        json!({"type": "text", "text": "And now?", "cache_control": ephemeral})
    );
    // The session's key is OpenAI's: Anthropic is sent none.
    assert_eq!(body.get("prompt_cache_key"), None);
}

#[tokio::test]
async fn with_prompt_caching_off_no_breakpoint_is_sent() {
    let server = Server::start(vec![Reply::recording("anthropic_cache.sse")]).await;
    let model = Anthropic::new(server.url.clone(), None).unwrap();
    let (messages, tools) = cached_conversation();
    let request = Request {
        model: "claude-sonnet-4-5",
        system: Some("You are terse."),
        messages: &messages,
        tools: &tools,
        max_tokens: None,
        cache_key: Some("sess_1"),
        prompt_caching: false,
        temperature: None,
    };
    let (_, error) = collect(model.stream(request).await.unwrap()).await;
    assert!(error.is_none(), "{error:?}");
    let body = &server.requests()[0].body;
    let mut found = Vec::new();
    breakpoints(body, String::new(), &mut found);
    assert!(found.is_empty(), "{found:?}");
    assert_eq!(body["system"], "You are terse.");
}

#[tokio::test]
async fn the_last_breakpoint_skips_a_thinking_block_and_reasoning_of_openai_is_not_sent() {
    let server = Server::start(vec![Reply::recording("anthropic_cache.sse")]).await;
    let model = Anthropic::new(server.url.clone(), None).unwrap();
    let messages = vec![
        Message::user("Go on."),
        Message {
            role: Role::Assistant,
            content: vec![
                Part::Reasoning {
                    text: "OpenAI's.".into(),
                    signature: Some(
                        r#"{"type":"reasoning","id":"rs_1","encrypted_content":"gAAA"}"#.into(),
                    ),
                },
                Part::Text {
                    text: "Partly".into(),
                },
                Part::Reasoning {
                    text: "Claude's.".into(),
                    signature: Some("c2lnbg==".into()),
                },
            ],
        },
    ];
    let request = Request {
        model: "claude-sonnet-4-5",
        system: None,
        messages: &messages,
        tools: &[],
        max_tokens: None,
        cache_key: None,
        prompt_caching: true,
        temperature: None,
    };
    let (_, error) = collect(model.stream(request).await.unwrap()).await;
    assert!(error.is_none(), "{error:?}");
    let body = &server.requests()[0].body;
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {"type": "text", "text": "Partly", "cache_control": {"type": "ephemeral"}},
            {"type": "thinking", "thinking": "Claude's.", "signature": "c2lnbg=="},
        ])
    );
}
