//! `examples/tour.rs`, the agent that advertises every capability the runtime supports: its
//! built binary over real pipes advertises each one, and each works (authentication first,
//! then modes and options, commands, every prompt shape, elicitation, extensions).

use crate::support;

use acp::testing::TestClient;
use serde_json::{Value, json};

async fn spawn(builder: acp::testing::TestClientBuilder) -> TestClient {
    let command = std::process::Command::new(support::example_binary("tour"));
    builder.spawn(command).await.unwrap()
}

async fn signed_in(builder: acp::testing::TestClientBuilder) -> TestClient {
    let client = spawn(builder).await;
    let err = client.new_session().await.unwrap_err();
    assert!(
        matches!(err, acp::Error::Rpc { code: -32000, .. }),
        "a new session waits for authentication: {err:?}"
    );
    client
        .request("authenticate", json!({"methodId": "api-key"}))
        .await
        .unwrap();
    client
}

#[tokio::test]
async fn tour_advertises_every_capability_the_runtime_supports() {
    let client = spawn(TestClient::builder().terminal_auth()).await;
    let init = client.initialize_response().clone();
    let caps = &init["agentCapabilities"];
    assert_eq!(caps["loadSession"], true);
    assert_eq!(
        caps["promptCapabilities"],
        json!({"image": true, "audio": true, "embeddedContext": true})
    );
    assert_eq!(caps["mcpCapabilities"], json!({"http": true, "sse": true}));
    for method in ["list", "resume", "close", "delete"] {
        assert_eq!(caps["sessionCapabilities"][method], json!({}), "{method}");
    }
    assert_eq!(caps["auth"]["logout"], json!({}));
    let methods: Vec<_> = init["authMethods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(methods, ["api-key", "login"]);
    assert_eq!(init["agentInfo"]["name"], "tour");
    client.close().await.unwrap();
}

#[tokio::test]
async fn tour_works_once_signed_in_for_every_prompt_shape() {
    let client = signed_in(TestClient::builder().boolean_config_options()).await;
    let session = client.new_session().await.unwrap();
    let answer = session.new_session_response();
    assert_eq!(answer["modes"]["currentModeId"], "ask");
    let ids: Vec<_> = answer["configOptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, ["mode", "model", "brave"]);

    let link = json!({"type": "resource_link", "uri": "file:///w/a.rs", "name": "a.rs"});
    let image = json!({"type": "image", "data": "AAAA", "mimeType": "image/png"});
    let audio = json!({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"});
    let resource =
        json!({"type": "resource", "resource": {"uri": "file:///w/b.rs", "text": "fn b() {}"}});
    for blocks in [
        json!([{"type": "text", "text": "hi"}]),
        json!([{"type": "text", "text": "hi"}, link]),
        json!([link]),
        json!([{"type": "text", "text": "look"}, image, audio, resource]),
    ] {
        let turn = session.prompt_blocks(blocks.clone()).await.unwrap();
        assert_eq!(
            turn.stop_reason(),
            Some(acp::StopReason::EndTurn),
            "{blocks}: {}",
            client.describe()
        );
        assert!(turn.text().starts_with("[Ask, Fast]"), "{}", turn.text());
    }
    session.set_config_option("brave", true).await.unwrap();
    session.run_command("code", "").await.unwrap();
    assert!(
        session
            .prompt("again")
            .await
            .unwrap()
            .text()
            .starts_with("[Code, Fast, brave]")
    );
    session.run_command("title", "My tour").await.unwrap();
    session.run_command("usage", "").await.unwrap();
    let view = session.view();
    assert_eq!(view.title.as_deref(), Some("My tour"));
    assert!(view.usage.is_some());
    assert_eq!(
        view.command_names(),
        [
            "help",
            "title",
            "usage",
            "instructions",
            "plan",
            "notice",
            "compact",
            "delegate",
            "suggest",
            "code",
            "ask"
        ]
    );
    client.close().await.unwrap();
}

/// The calls of the protocol's latest wave, each in a line of the tour, to an editor that
/// shows none of them: a legacy checklist for the Markdown plan, a message instead of the
/// notice and the suggestion, nothing of the compaction, the subagent's work as text in its
/// tool call; and the editor's system prompt read back.
#[tokio::test]
async fn tour_shows_each_new_call_to_an_editor_without_the_capabilities() {
    let client = signed_in(TestClient::builder()).await;
    let answer = client
        .request(
            acp::schema::AGENT_METHOD_NAMES.session_new,
            json!({"cwd": "/workspace", "mcpServers": [], "systemPrompt": {
                "mode": "append", "content": [{"type": "text", "text": "Be concise."}]
            }}),
        )
        .await
        .unwrap();
    let session = client.session(&serde_json::from_value(answer["sessionId"].clone()).unwrap());
    let said = |turn: acp::testing::Turn| turn.text();
    assert_eq!(
        said(session.run_command("instructions", "").await.unwrap()),
        "Be concise."
    );
    let plan = session.run_command("plan", "").await.unwrap();
    assert_eq!(plan.plans()[0].entries.len(), 3);
    assert!(plan.plan_operations().is_empty());
    assert_eq!(
        said(session.run_command("notice", "").await.unwrap()),
        "(this editor shows no notices)"
    );
    assert!(
        session
            .run_command("compact", "")
            .await
            .unwrap()
            .updates()
            .is_empty()
    );
    let delegated = session
        .run_command("delegate", "count the stops")
        .await
        .unwrap();
    assert_eq!(delegated.text(), "The guide says the tour has 5 stops.");
    assert!(
        delegated.tool_calls()[0]
            .text()
            .contains("Looking into: count the stops")
    );
    assert_eq!(
        said(session.run_command("suggest", "").await.unwrap()),
        "(this editor shows no suggestions)"
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn tour_asks_for_a_form_when_the_editor_can_show_one() {
    let client = signed_in(TestClient::builder()).await;
    let session = client.new_session().await.unwrap();
    let turn = session.run_command("ask", "").await.unwrap();
    assert_eq!(turn.text(), "This editor cannot show forms.");
    client.close().await.unwrap();

    let client = signed_in(
        TestClient::builder()
            .elicitation(false)
            .hold("elicitation/create"),
    )
    .await;
    let session = client.new_session().await.unwrap();
    let id = session.start_prompt("/ask");
    let form = client.next_request("elicitation/create").await.unwrap();
    assert_eq!(form.params()["mode"], "form");
    assert_eq!(
        form.params()["requestedSchema"]["properties"]["rating"]["maximum"],
        5
    );
    form.respond(json!({"action": "accept", "content": {"rating": 4}}));
    let answer = client.wait_for_response(&id).await.unwrap();
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    let said: Vec<Value> = client
        .transcript()
        .iter()
        .filter_map(|f| f.session_update())
        .map(|n| serde_json::to_value(n.update).unwrap())
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].clone())
        .collect();
    assert_eq!(said, [json!("Thanks for the 4/5.")]);
    client.close().await.unwrap();
}

#[tokio::test]
async fn tour_answers_its_extensions_and_logs_out() {
    let client = signed_in(TestClient::builder()).await;
    client.notify("_tour/ping", json!({}));
    let stats = client
        .request("_tour/stats", json!({"words": ["a", "b"]}))
        .await
        .unwrap();
    assert_eq!(stats, json!({"count": 2}));
    let session = client.new_session().await.unwrap();
    assert!(
        session
            .run_command("help", "")
            .await
            .unwrap()
            .text()
            .ends_with("(pinged 1 times)")
    );
    client.request("logout", json!({})).await.unwrap();
    let err = client.new_session().await.unwrap_err();
    assert!(
        matches!(err, acp::Error::Rpc { code: -32000, .. }),
        "{err:?}"
    );
    client.close().await.unwrap();
}
