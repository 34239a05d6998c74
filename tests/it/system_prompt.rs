//! The editor's system prompt (`systemPrompt` of `session/new`, `load`, `resume`): advertised
//! only by an agent that takes it (`#[acp::agent(system_prompt)]`), refused with `-32602`
//! before any session opens when the agent cannot apply it, given to the author
//! (`cx.system_prompt()`), applied by `acp::llm`'s `Model::run` to what the model is sent,
//! and kept with the stored session when a load does not repeat it; on both versions.

use std::sync::Arc;

use acp::llm::Model;
use acp::llm::scripted::{Reply, Scripted};
use acp::schema::{AGENT_METHOD_NAMES, ErrorCode, StopReason};
use acp::store::MemoryStore;
use acp::testing::TestClient;
use acp::{Prompt, Session};
use serde_json::{Value, json};

/// Takes no system prompt.
struct Plain;

#[acp::agent(name = "plain")]
impl Plain {
    async fn prompt(&self, cx: &Session, _: Prompt) -> acp::Result<StopReason> {
        cx.message("hi").await?;
        Ok(StopReason::EndTurn)
    }
}

/// Takes one in `append` mode, and runs a model with instructions of its own.
struct Appends {
    model: Model,
}

#[acp::agent(name = "appends", system_prompt)]
impl Appends {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        self.model.run(cx, &prompt).await
    }
}

/// Takes `append` and `override`, and says what it was given.
struct Overrides;

#[acp::agent(name = "overrides", system_prompt(override))]
impl Overrides {
    async fn prompt(&self, cx: &Session, _: Prompt) -> acp::Result<StopReason> {
        let given = cx.system_prompt().map(|p| serde_json::to_value(p).unwrap());
        cx.message(json!(given).to_string()).await?;
        Ok(StopReason::EndTurn)
    }
}

fn appends(provider: &Scripted) -> Appends {
    Appends {
        model: Model::new(provider.clone(), "scripted").system("Be brief."),
    }
}

/// `session/new` in `/workspace` with `systemPrompt`.
fn new_with(system_prompt: Value) -> Value {
    json!({"cwd": "/workspace", "mcpServers": [], "systemPrompt": system_prompt})
}

fn text_prompt(mode: &str, text: &str) -> Value {
    json!({"mode": mode, "content": [{"type": "text", "text": text}]})
}

/// Where `initialize` advertises the system prompt, on `protocol`.
fn advertised(client: &TestClient, protocol: u16) -> Value {
    let answer = client.initialize_response();
    match protocol {
        1 => answer["agentCapabilities"]["sessionCapabilities"]["systemPrompt"].clone(),
        _ => answer["capabilities"]["session"]["systemPrompt"].clone(),
    }
}

fn assert_invalid(result: acp::Result<Value>, says: &str) {
    match result {
        Err(acp::Error::Rpc { code, message, .. }) => {
            assert_eq!(code, i32::from(ErrorCode::InvalidParams), "{message}");
            assert!(message.contains(says), "{message}");
        }
        other => panic!("expected -32602 saying {says:?}, got {other:?}"),
    }
}

async fn an_agent_that_does_not_take_one_refuses_it_and_opens_nothing(protocol: u16) {
    let store = Arc::new(MemoryStore::default());
    let client = TestClient::builder()
        .protocol(protocol)
        .serve(acp::Server::new(Plain).shared_store(store.clone()))
        .await
        .unwrap();
    assert_eq!(advertised(&client, protocol), Value::Null);
    let refused = client
        .request(
            AGENT_METHOD_NAMES.session_new,
            new_with(text_prompt("append", "Use tabs.")),
        )
        .await;
    assert_invalid(
        refused,
        "does not advertise `sessionCapabilities.systemPrompt`",
    );
    assert!(client.all_sessions(None).await.unwrap().is_empty());
}

async fn append_reaches_the_model_after_the_agents_own_instructions(protocol: u16) {
    let provider = Scripted::new().reply(Reply::new().text("ok"));
    let client = TestClient::builder()
        .protocol(protocol)
        .connect(appends(&provider))
        .await
        .unwrap();
    assert_eq!(advertised(&client, protocol), json!({}));
    let answer = client
        .request(
            AGENT_METHOD_NAMES.session_new,
            new_with(json!({"mode": "append", "content": [
                {"type": "text", "text": "Use tabs."},
                {"type": "text", "text": "Answer in French."}
            ]})),
        )
        .await
        .unwrap();
    let id = answer["sessionId"].as_str().unwrap().to_owned();
    let session = client.session(&id.into());
    let turn = session.prompt("hello").await.unwrap();
    assert_eq!(turn.text(), "ok");
    let requests = provider.requests();
    assert_eq!(
        requests[0].system.as_deref(),
        Some("Be brief.\n\nUse tabs.\n\nAnswer in French.")
    );
    assert_eq!(requests[0].last_user_text(), "hello");
}

async fn modes_and_content_the_agent_cannot_apply_are_refused(protocol: u16) {
    let provider = Scripted::new();
    let client = TestClient::builder()
        .protocol(protocol)
        .connect(appends(&provider))
        .await
        .unwrap();
    for (prompt, says) in [
        (text_prompt("override", "x"), "mode.override"),
        (text_prompt("_strict", "x"), "\"_strict\""),
        (json!({"mode": "append", "content": []}), "no content"),
        (
            json!({"mode": "append", "content": [{"type": "image", "data": "AA", "mimeType": "image/png"}]}),
            "`image` block",
        ),
    ] {
        let refused = client
            .request(AGENT_METHOD_NAMES.session_new, new_with(prompt))
            .await;
        assert_invalid(refused, says);
    }
}

async fn override_is_taken_where_advertised_and_a_load_without_one_keeps_it(protocol: u16) {
    let store = Arc::new(MemoryStore::default());
    let serve = || acp::Server::new(Overrides).shared_store(store.clone());
    let first = TestClient::builder()
        .protocol(protocol)
        .serve(serve())
        .await
        .unwrap();
    assert_eq!(
        advertised(&first, protocol),
        json!({"mode": {"override": {}}})
    );
    let answer = first
        .request(
            AGENT_METHOD_NAMES.session_new,
            new_with(text_prompt("override", "You are a reviewer.")),
        )
        .await
        .unwrap();
    let id: acp::schema::SessionId = serde_json::from_value(answer["sessionId"].clone()).unwrap();
    let given = first.session(&id).prompt("who?").await.unwrap().text();
    let expected = text_prompt("override", "You are a reviewer.").to_string();
    assert_eq!(given, expected);
    first.close().await.unwrap();

    let second = TestClient::builder()
        .protocol(protocol)
        .serve(serve())
        .await
        .unwrap();
    let loaded = second.load_session(&id).await.unwrap();
    assert_eq!(
        loaded.session.prompt("again?").await.unwrap().text(),
        expected
    );
}

acp::testing::on_both_versions!(
    an_agent_that_does_not_take_one_refuses_it_and_opens_nothing,
    append_reaches_the_model_after_the_agents_own_instructions,
    modes_and_content_the_agent_cannot_apply_are_refused,
    override_is_taken_where_advertised_and_a_load_without_one_keeps_it,
);
