//! The editor's endpoint (`providers/*`, the unstable "Configurable LLM Providers" RFD): an
//! agent whose model runs on an `llm::Endpoint` given to `Server::llm_providers`, driven by
//! the scripted client, with two loopback model servers replaying recorded streams (the
//! agent's own, OpenAI-compatible; the editor's gateway, Anthropic-compatible): the
//! capability, the listing, a turn rerouted through the gateway with the editor's headers,
//! and every refusal the RFD names.

use crate::llm_support;

use acp_core::llm::{Endpoint, Message, Model, OpenAi, Provider, Request};
use acp_core::schema::StopReason;
use acp_core::testing::TestClient;
use acp_core::{Agent, Error, Prompt, Result, Server, Session};
use llm_support::{Reply, Server as ModelServer};
use serde_json::{Value, json};

struct Agentic(Model);

impl Agent for Agentic {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> Result<StopReason> {
        self.0.run(cx, &prompt).await
    }
}

fn code(result: Result<Value>) -> i32 {
    match result {
        Err(Error::Rpc { code, .. }) => code,
        other => panic!("not an error answer: {other:?}"),
    }
}

#[tokio::test]
async fn the_editor_lists_reroutes_through_its_gateway_with_its_headers_and_is_refused_what_the_rfd_refuses()
 {
    let own = ModelServer::start(vec![Reply::recording("openai_text.sse")]).await;
    let gateway = ModelServer::start(vec![Reply::recording("anthropic_text.sse")]).await;
    let own_url = format!("{}/v1", own.url);
    let main = Endpoint::new(
        "main",
        OpenAi::new(&own_url, Some("sk-own-1".into())).unwrap(),
    );
    let spare = Endpoint::new("spare", OpenAi::new(&own_url, None).unwrap()).optional();
    let agent = Agentic(Model::new(main.clone(), "model-a"));
    let client = TestClient::builder()
        .serve(
            Server::new(agent)
                .no_store()
                .llm_providers([main.clone(), spare.clone()]),
        )
        .await
        .unwrap();
    assert_eq!(
        client.initialize_response()["agentCapabilities"]["providers"],
        json!({})
    );

    // Where each endpoint sends requests now; never its headers or key.
    let listed = client.request("providers/list", json!({})).await.unwrap();
    assert_eq!(
        listed,
        json!({"providers": [
            {"providerId": "main", "supported": ["openai", "anthropic"], "required": true,
             "current": {"apiType": "openai", "baseUrl": own_url}},
            {"providerId": "spare", "supported": ["openai", "anthropic"], "required": false,
             "current": {"apiType": "openai", "baseUrl": own_url}},
        ]})
    );

    // A turn on the agent's own endpoint.
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("hi").await.unwrap();
    assert_eq!(turn.text(), "Le café était déjà servi — 🦀 prêt.");
    assert_eq!(own.requests().len(), 1);

    // The editor sends the model's requests through its gateway, with its headers.
    let set = json!({
        "providerId": "main", "apiType": "anthropic", "baseUrl": gateway.url,
        "headers": {"x-api-key": "gw-secret-9", "X-Request-Source": "my-ide"},
    });
    assert_eq!(
        client.request("providers/set", set).await.unwrap(),
        json!({})
    );
    let turn = session.prompt("again").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert_eq!(turn.text(), "Bonjour à vous.");
    assert_eq!(
        own.requests().len(),
        1,
        "nothing more went to the agent's own server"
    );
    let sent = &gateway.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("gw-secret-9"));
    assert_eq!(sent.header("x-request-source"), Some("my-ide"));
    assert_eq!(
        sent.header("authorization"),
        None,
        "the agent's own key stays home"
    );
    assert_eq!(sent.body["model"], "model-a");
    let listed = client.request("providers/list", json!({})).await.unwrap();
    assert_eq!(
        listed["providers"][0]["current"],
        json!({"apiType": "anthropic", "baseUrl": gateway.url})
    );
    assert!(
        !listed.to_string().contains("gw-secret-9"),
        "headers are never listed: {listed}"
    );

    // Refused with invalid params, changing nothing: an API type it cannot speak, an
    // unknown id, a base URL that is not one, disabling a required endpoint.
    let refused = [
        (
            "providers/set",
            json!({"providerId": "main", "apiType": "bedrock", "baseUrl": "https://x"}),
        ),
        (
            "providers/set",
            json!({"providerId": "nope", "apiType": "openai", "baseUrl": "https://x"}),
        ),
        (
            "providers/set",
            json!({"providerId": "main", "apiType": "openai", "baseUrl": "not a url"}),
        ),
        ("providers/set", json!({"providerId": "main"})),
        ("providers/disable", json!({"providerId": "main"})),
    ];
    for (method, params) in refused {
        let result = client.request(method, params.clone()).await;
        assert_eq!(code(result), -32602, "{method} {params}");
    }
    let listed = client.request("providers/list", json!({})).await.unwrap();
    assert_eq!(listed["providers"][0]["current"]["apiType"], "anthropic");

    // Disabling: an unknown id is done; an optional endpoint is listed without a route,
    // and its calls fail saying so.
    assert_eq!(
        client
            .request("providers/disable", json!({"providerId": "nope"}))
            .await
            .unwrap(),
        json!({})
    );
    client
        .request("providers/disable", json!({"providerId": "spare"}))
        .await
        .unwrap();
    let listed = client.request("providers/list", json!({})).await.unwrap();
    assert_eq!(listed["providers"][1]["providerId"], "spare");
    assert!(
        listed["providers"][1]["current"].is_null(),
        "disabled: {listed}"
    );
    let messages = [Message::user("hi")];
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
    let error = match spare.stream(request).await {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a disabled endpoint was called"),
    };
    assert!(
        error.contains("disabled the LLM provider `spare`"),
        "{error}"
    );
    assert_eq!(own.requests().len(), 1);
}

#[tokio::test]
async fn without_endpoints_nothing_is_advertised_and_the_methods_are_not_found() {
    let own = ModelServer::start(vec![]).await;
    let main = Endpoint::new("main", OpenAi::new(&own.url, None).unwrap());
    let client = TestClient::builder()
        .serve(Server::new(Agentic(Model::new(main, "m"))).no_store())
        .await
        .unwrap();
    assert!(
        client.initialize_response()["agentCapabilities"]
            .get("providers")
            .is_none()
    );
    for method in ["providers/list", "providers/set", "providers/disable"] {
        let result = client.request(method, json!({"providerId": "main"})).await;
        assert_eq!(code(result), -32601, "{method}");
    }
}

#[cfg(feature = "v2")]
#[tokio::test]
async fn over_v2_the_capability_and_the_methods_are_the_same() {
    let own = ModelServer::start(vec![]).await;
    let url = format!("{}/v1", own.url);
    let main = Endpoint::new("main", OpenAi::new(&url, None).unwrap());
    let client = TestClient::builder()
        .protocol(2)
        .serve(
            Server::new(Agentic(Model::new(main.clone(), "m")))
                .no_store()
                .llm_providers([main]),
        )
        .await
        .unwrap();
    assert_eq!(
        client.initialize_response()["capabilities"]["providers"],
        json!({})
    );
    let listed = client.request("providers/list", json!({})).await.unwrap();
    assert_eq!(
        listed["providers"][0]["current"],
        json!({"apiType": "openai", "baseUrl": url})
    );
}
