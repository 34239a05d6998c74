//! `OpenAiResponses` against a loopback server replaying Responses API streams (written in
//! the shapes of OpenAI's own SDK types): what is sent (the whole request body: input items
//! in order, instructions, tools, `store: false`, the cache key), and every event shape read
//! back, errors included.

use crate::llm_support;

use std::time::Duration;

use acp_core::llm::{
    Event, Message, OpenAiResponses, Part, Provider, Request, Retry, Role, Stop, ToolSpec, Usage,
};
use llm_support::{Reply, Server, collect, text};
use serde_json::json;

/// The encrypted reasoning item of an earlier answer, as the provider signs it.
const SIGNED: &str = r#"{"type":"reasoning","id":"rs_0a1","encrypted_content":"gAAAAABoOLD=="}"#;

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "read".into(),
        description: "Reads a file.".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }]
}

/// Every kind of part: text, this API's encrypted reasoning, another provider's reasoning
/// and unsigned reasoning (neither sent), two tool calls, then text and their results.
fn conversation() -> Vec<Message> {
    vec![
        Message::user("Where is main?"),
        Message {
            role: Role::Assistant,
            content: vec![
                Part::Reasoning {
                    text: "Look first.".into(),
                    signature: Some(SIGNED.into()),
                },
                Part::Reasoning {
                    text: "Claude's.".into(),
                    signature: Some("c2lnbg==".into()),
                },
                Part::Reasoning {
                    text: "unsigned".into(),
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
                // Sent after the outputs: they answer the previous message.
                Part::Text {
                    text: "And?".into(),
                },
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
async fn the_request_body_and_a_stream_of_reasoning_summary_then_text_then_usage() {
    let server = Server::start(vec![Reply::recording("openai_responses_text.sse")]).await;
    let model = OpenAiResponses::new(format!("{}/v1", server.url), Some("sk-test-123".into()))
        .unwrap()
        .with_reasoning(true);
    let messages = conversation();
    let tools = tools();
    let request = Request {
        model: "gpt-5-mini",
        system: Some("You are terse."),
        messages: &messages,
        tools: &tools,
        max_tokens: Some(512),
        cache_key: Some("sess_7f3a"),
        prompt_caching: true,
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
    // The summary's two parts, a paragraph each.
    assert_eq!(
        reasoning,
        "**Reading the question**\n\nThe user wants a greeting in French."
    );
    assert_eq!(text(&events), "Bonjour — le caféest prêt 🦀.");
    let signature = events.iter().find_map(|e| match e {
        Event::ReasoningSignature(s) => Some(s.clone()),
        _ => None,
    });
    let signature: serde_json::Value = serde_json::from_str(&signature.unwrap()).unwrap();
    assert_eq!(
        signature,
        json!({"type": "reasoning", "id": "rs_68c1f0a3", "encrypted_content": "gAAAAABoENCRYPTED-1=="})
    );
    assert_eq!(
        events[events.len() - 2..],
        [
            Event::Usage(Usage {
                input_tokens: 2210,
                output_tokens: 120,
                cached_input_tokens: Some(2048),
                cache_write_tokens: None,
                reasoning_tokens: Some(64),
            }),
            Event::Stop(Stop::EndTurn),
        ]
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/responses")
    );
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test-123"));
    assert_eq!(
        sent.body,
        json!({
            "model": "gpt-5-mini",
            "instructions": "You are terse.",
            "input": [
                {"type": "message", "role": "user", "content": "Where is main?"},
                {"type": "reasoning", "id": "rs_0a1", "encrypted_content": "gAAAAABoOLD==",
                 "summary": [{"type": "summary_text", "text": "Look first."}]},
                {"type": "message", "role": "assistant", "content": "Let me look."},
                {"type": "function_call", "call_id": "call_1", "name": "read",
                 "arguments": "{\"path\":\"src/main.rs\"}"},
                {"type": "function_call", "call_id": "call_2", "name": "read",
                 "arguments": "{\"path\":\"nope.rs\"}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "fn main() {}"},
                {"type": "function_call_output", "call_id": "call_2", "output": "Error: no such file"},
                {"type": "message", "role": "user", "content": "And?"},
            ],
            "tools": [{
                "type": "function",
                "name": "read",
                "description": "Reads a file.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                "strict": false,
            }],
            "max_output_tokens": 512,
            "stream": true,
            "store": false,
            "prompt_cache_key": "sess_7f3a",
            "reasoning": {"summary": "auto"},
            "include": ["reasoning.encrypted_content"],
        })
    );
}

#[tokio::test]
async fn two_function_calls_one_streamed_one_whole_and_no_key_or_reasoning_when_off() {
    let server = Server::start(vec![Reply::recording("openai_responses_tools.sse")]).await;
    let model = OpenAiResponses::new(format!("{}/v1/", server.url), None).unwrap();
    let messages = [Message::user("Read the notes.")];
    let request = Request {
        model: "m",
        system: None,
        messages: &messages,
        tools: &[],
        max_tokens: None,
        cache_key: Some("sess_7f3a"),
        prompt_caching: false,
        temperature: None,
    };
    let (events, error) = collect(model.stream(request).await.unwrap()).await;
    assert!(error.is_none(), "{error:?}");
    let args = |index, delta: &str| Event::ToolCallArguments {
        index,
        delta: delta.into(),
    };
    // The encrypted reasoning item, as a JSON object (its keys in any order).
    let signature = match &events[1] {
        Event::ReasoningSignature(signature) => signature.clone(),
        other => panic!("not the signature: {other:?}"),
    };
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&signature).unwrap(),
        json!({"type": "reasoning", "id": "rs_68c1f1b0", "encrypted_content": "gAAAAABoENCRYPTED-2=="})
    );
    assert_eq!(
        events,
        [
            Event::Reasoning("Read the notes, then try the broken tool.".into()),
            Event::ReasoningSignature(signature.clone()),
            Event::Text("Reading.".into()),
            Event::ToolCallStart {
                index: 0,
                id: "call_N0tes1".into(),
                name: "read_file".into()
            },
            args(0, "{\"pa"),
            args(0, "th\": \"notes.txt\"}"),
            Event::ToolCallStart {
                index: 1,
                id: "call_Br0ken2".into(),
                name: "broken".into()
            },
            args(1, "{}"),
            Event::Usage(Usage {
                input_tokens: 3100,
                output_tokens: 90,
                cached_input_tokens: Some(2944),
                cache_write_tokens: None,
                reasoning_tokens: Some(40),
            }),
            Event::Stop(Stop::ToolUse),
        ]
    );
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/responses");
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.body,
        json!({
            "model": "m",
            "input": [{"type": "message", "role": "user", "content": "Read the notes."}],
            "stream": true,
            "store": false,
        })
    );
}

fn request<'a>(messages: &'a [Message]) -> Request<'a> {
    Request {
        model: "m",
        system: None,
        messages,
        tools: &[],
        max_tokens: None,
        cache_key: None,
        prompt_caching: true,
        temperature: None,
    }
}

#[tokio::test]
async fn an_incomplete_response_stops_at_max_tokens() {
    let server = Server::start(vec![Reply::recording("openai_responses_incomplete.sse")]).await;
    let model = OpenAiResponses::new(server.url.clone(), None).unwrap();
    let messages = [Message::user("A story.")];
    let (events, error) = collect(model.stream(request(&messages)).await.unwrap()).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text(&events), "Once upon a");
    assert_eq!(events.last(), Some(&Event::Stop(Stop::MaxTokens)));
}

#[tokio::test]
async fn a_failed_response_after_output_ends_the_stream_with_its_message() {
    // A second reply is there for a retry that must not happen.
    let server = Server::start(vec![
        Reply::recording("openai_responses_failed.sse"),
        Reply::recording("openai_responses_text.sse"),
    ])
    .await;
    let model = OpenAiResponses::new(server.url.clone(), Some("sk-test-123".into()))
        .unwrap()
        .with_retry(fast_retry());
    let messages = [Message::user("Hi")];
    let (events, error) = collect(model.stream(request(&messages)).await.unwrap()).await;
    assert_eq!(text(&events), "Half an ans");
    assert_eq!(
        error.expect("the failure ends the stream").to_string(),
        "OpenAI reported an error (server_error): The server had an error while processing \
         your request."
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(server.requests().len(), 1);
}

fn fast_retry() -> Retry {
    Retry {
        max_retries: 3,
        initial_backoff: Duration::from_millis(50),
        max_wait: Duration::from_secs(2),
    }
}

#[tokio::test]
async fn a_rate_limit_error_event_before_any_output_is_retried() {
    let server = Server::start(vec![
        Reply::recording("openai_responses_error.sse"),
        Reply::recording("openai_responses_incomplete.sse"),
    ])
    .await;
    let model = OpenAiResponses::new(server.url.clone(), None)
        .unwrap()
        .with_retry(fast_retry());
    let messages = [Message::user("Hi")];
    let (events, error) = collect(model.stream(request(&messages)).await.unwrap()).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text(&events), "Once upon a");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_malformed_or_cut_stream_is_an_error_not_a_panic() {
    let cases: [(&str, &str); 4] = [
        ("data: {not json\n\n", "OpenAI sent a malformed event"),
        (
            "data: [1, 2]\n\n",
            "OpenAI sent a malformed event (not a JSON object)",
        ),
        (
            "data: {\"delta\": \"x\"}\n\n",
            "OpenAI sent a malformed event (no `type`)",
        ),
        (
            // Arguments of a call never started, an item without its fields, then the end.
            "data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":7,\"delta\":\"{\"}\n\n\
             data: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"reasoning\"}}\n\n\
             data: {\"type\":\"response.output_item.added\",\"item\":{\"type\":\"function_call\"}}\n\n",
            "the model's stream ended before it finished",
        ),
    ];
    for (stream, expected) in cases {
        let server = Server::start(vec![Reply::Sse {
            pieces: vec![stream.as_bytes().to_vec()],
            end: llm_support::End::Finish,
        }])
        .await;
        let model = OpenAiResponses::new(server.url.clone(), None)
            .unwrap()
            .with_retry(Retry {
                max_retries: 0,
                ..Retry::default()
            });
        let messages = [Message::user("Hi")];
        let error = match model.stream(request(&messages)).await {
            Err(error) => error.to_string(),
            Ok(events) => {
                let (_, error) = collect(events).await;
                error.expect("an error").to_string()
            }
        };
        assert!(error.contains(expected), "{error:?} for {stream:?}");
    }
}
