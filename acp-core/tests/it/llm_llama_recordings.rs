//! Streams a real llama.cpp `llama-server` sent (build 11434, Gemma 3 270M, with the tool-use
//! template `llama/gemma3-tools.jinja`; `llama/README.md` tells how they were recorded and
//! `llama/record.sh` records them again), replayed by the loopback server: the tool calls a
//! real OpenAI-compatible and Anthropic-compatible server writes, read by our decoders. (The
//! live server, with the loop and a cancel, is `tests/llm_llama.rs` at the workspace root.)

use crate::llm_support;

use acp_core::llm::{Anthropic, Event, Message, OpenAi, Provider, Request, Stop};
use llm_support::{Reply, Server, collect, text};

fn request<'a>(messages: &'a [Message]) -> Request<'a> {
    Request {
        model: "gemma3",
        system: None,
        messages,
        tools: &[],
        max_tokens: None,
        cache_key: None,
        prompt_caching: false,
        temperature: None,
    }
}

/// The tool calls among `events`: (name, the arguments' pieces joined).
fn calls(events: &[Event]) -> Vec<(String, String)> {
    let mut calls: Vec<(String, String)> = Vec::new();
    for event in events {
        match event {
            Event::ToolCallStart { index, name, .. } => {
                assert_eq!(*index, calls.len(), "calls are numbered in order");
                calls.push((name.clone(), String::new()));
            }
            Event::ToolCallArguments { index, delta } => calls[*index].1.push_str(delta),
            _ => {}
        }
    }
    calls
}

async fn replay(provider: &dyn Provider, recording: &str) -> Vec<Event> {
    let messages = [Message::user("Read src/main.rs")];
    let stream = provider.stream(request(&messages)).await.unwrap();
    let (events, error) = collect(stream).await;
    assert!(error.is_none(), "{recording}: {error:?}");
    events
}

#[tokio::test]
async fn a_chat_completions_tool_call_from_llama_server_is_one_call_with_json_arguments() {
    let server = Server::start(vec![Reply::recording("llama/openai-tool-call.sse")]).await;
    let provider = OpenAi::new(format!("{}/v1", server.url), None).unwrap();
    let events = replay(&provider, "openai-tool-call").await;
    let calls = calls(&events);
    assert_eq!(calls.len(), 1, "{events:?}");
    assert_eq!(calls[0].0, "read_file");
    let arguments: serde_json::Value = serde_json::from_str(&calls[0].1).unwrap();
    assert!(arguments["path"].is_string(), "{arguments}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Usage(u) if u.output_tokens > 0)),
        "{events:?}"
    );
    assert_eq!(events.last(), Some(&Event::Stop(Stop::ToolUse)));
}

#[tokio::test]
async fn a_messages_tool_use_from_llama_server_is_one_call_with_json_arguments() {
    let server = Server::start(vec![Reply::recording("llama/anthropic-tool-use.sse")]).await;
    let provider = Anthropic::new(server.url.clone(), None).unwrap();
    let events = replay(&provider, "anthropic-tool-use").await;
    let calls = calls(&events);
    assert_eq!(calls.len(), 1, "{events:?}");
    let arguments: serde_json::Value = serde_json::from_str(&calls[0].1).unwrap();
    assert!(arguments.is_object(), "{arguments}");
    assert_eq!(events.last(), Some(&Event::Stop(Stop::ToolUse)));
}

#[tokio::test]
async fn text_then_tool_calls_cut_by_max_tokens_read_as_they_came() {
    let recording = "llama/openai-text-then-tool-calls.sse";
    let server = Server::start(vec![Reply::recording(recording)]).await;
    let provider = OpenAi::new(format!("{}/v1", server.url), None).unwrap();
    let events = replay(&provider, recording).await;
    assert!(!text(&events).is_empty(), "{events:?}");
    assert_eq!(calls(&events).len(), 2, "{events:?}");
    assert_eq!(events.last(), Some(&Event::Stop(Stop::MaxTokens)));
}
