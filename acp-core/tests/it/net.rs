//! The network service (feature `http`) with real clients: a turn over WebSocket and over
//! Streamable HTTP, and every refusal — each with its status, and the server still serving a
//! good client afterwards.

use crate::net_support;

use std::time::Duration;

use acp_core::net::HttpConfig;
use net_support::*;
use serde_json::{Value, json};

#[tokio::test]
async fn a_turn_over_websocket_with_the_connection_id_in_the_upgrade() {
    let url = start(HttpConfig::bearer(TOKEN)).await;
    let (_, headers) = ws_connect(&url, &[("authorization", &bearer())])
        .await
        .unwrap();
    let id = headers["acp-connection-id"].to_str().unwrap();
    assert_eq!(id.len(), 32, "128 bits in hex: {id}");
    still_serves(&url).await;
}

#[cfg(feature = "v2")]
#[tokio::test]
async fn v2_is_negotiated_per_connection_over_websocket() {
    let url = start(HttpConfig::bearer(TOKEN)).await;
    let mut v2 = WsClient::connect(&url).await;
    let params =
        json!({"protocolVersion": 2, "info": {"name": "t", "version": "1"}, "capabilities": {}});
    let (init, _) = v2.request("initialize", params).await;
    assert_eq!(init["result"]["protocolVersion"], 2, "{init}");
    let mut v1 = WsClient::connect(&url).await;
    let (init, _) = v1
        .request("initialize", json!({"protocolVersion": 1}))
        .await;
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
}

#[tokio::test]
async fn no_token_or_a_wrong_one_is_401_before_anything_else() {
    let url = start(HttpConfig::bearer(TOKEN)).await;
    for auth in [None, Some("Bearer wrong"), Some("Basic dGVzdA==")] {
        let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("authorization", *a)).collect();
        // `initialize` itself is refused.
        let response = post(&url, &headers, initialize(1)).await;
        assert_eq!(response.status(), 401, "{auth:?}");
        assert!(
            response.headers()["www-authenticate"]
                .to_str()
                .unwrap()
                .starts_with("Bearer"),
        );
        // So is the WebSocket upgrade.
        let (status, headers) = ws_connect(&url, &headers).await.err().unwrap();
        assert_eq!(status, 401, "{auth:?}");
        assert!(headers.contains_key("www-authenticate"));
    }
    still_serves(&url).await;
}

#[tokio::test]
async fn a_connection_id_is_no_substitute_for_the_token() {
    let url = start(HttpConfig::bearer(TOKEN)).await;
    let connection = http_connect(&url).await;
    let response = post(
        &url,
        &[("acp-connection-id", &connection)],
        json!({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}}),
    )
    .await;
    assert_eq!(response.status(), 401);
    still_serves(&url).await;
}

#[tokio::test]
async fn a_foreign_origin_is_403_and_a_trusted_one_passes() {
    let url = start(HttpConfig::bearer(TOKEN).allow_origin("https://editor.example")).await;
    let evil = [
        ("authorization", bearer()),
        ("origin", "http://evil.example".into()),
    ];
    let evil: Vec<(&str, &str)> = evil.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(post(&url, &evil, initialize(1)).await.status(), 403);
    assert_eq!(ws_connect(&url, &evil).await.err().unwrap().0, 403);
    // The origin is checked before the credentials: no token, foreign origin is 403 too.
    let response = post(&url, &[("origin", "http://evil.example")], initialize(1)).await;
    assert_eq!(response.status(), 403);
    let good = bearer();
    let trusted = [
        ("authorization", good.as_str()),
        ("origin", "https://editor.example"),
    ];
    assert_eq!(post(&url, &trusted, initialize(1)).await.status(), 200);
    assert!(ws_connect(&url, &trusted).await.is_ok());
    still_serves(&url).await;
}

#[tokio::test]
async fn an_oversized_body_is_413() {
    let url = start(HttpConfig::bearer(TOKEN).max_body_bytes(16 * 1024)).await;
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1, "pad": "x".repeat(32 * 1024)}});
    let response = post(&url, &[("authorization", &bearer())], big.clone()).await;
    assert_eq!(response.status(), 413);
    // Over WebSocket, the message is refused and the socket closed.
    let mut client = WsClient::connect(&url).await;
    client.send(big).await;
    use futures_util::StreamExt;
    let end = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match client.ws.next().await {
                None | Some(Err(_)) => return,
                Some(Ok(m)) if m.is_close() => return,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(end.is_ok(), "the socket is closed");
    still_serves(&url).await;
}

#[tokio::test]
async fn too_many_connections_is_503_with_retry_after_until_one_ends() {
    let url = start(HttpConfig::bearer(TOKEN).max_connections(1)).await;
    let mut first = WsClient::connect(&url).await;
    let session = first.open_session().await;
    let (status, headers) = ws_connect(&url, &[("authorization", &bearer())])
        .await
        .err()
        .unwrap();
    assert_eq!(status, 503);
    assert!(headers.contains_key("retry-after"));
    let response = post(&url, &[("authorization", &bearer())], initialize(1)).await;
    assert_eq!(response.status(), 503);
    assert!(response.headers().contains_key("retry-after"));
    // The first connection still works, and once it ends a new one gets in.
    let (answer, _) = first.prompt(&session, "hi").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    drop(first);
    let mut waited = Duration::ZERO;
    while ws_connect(&url, &[("authorization", &bearer())])
        .await
        .is_err()
    {
        assert!(waited < Duration::from_secs(5), "the place is freed");
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += Duration::from_millis(50);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    still_serves(&url).await;
}

#[tokio::test]
async fn an_empty_token_is_refused_when_building_the_service() {
    let e = acp_core::Server::new(Echo)
        .no_store()
        .router(HttpConfig::bearer(""))
        .unwrap_err();
    assert!(e.to_string().contains("empty bearer token"), "{e}");
}

#[tokio::test]
async fn a_host_check_decides_who_gets_in() {
    let config = HttpConfig::check(|parts| {
        parts
            .headers
            .get("x-user")
            .is_some_and(|v| v == "alice" || v == "bob")
    });
    let url = start(config).await;
    let response = post(&url, &[], initialize(1)).await;
    assert_eq!(response.status(), 401);
    let response = post(&url, &[("x-user", "alice")], initialize(1)).await;
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn a_turn_over_streamable_http() {
    let url = start(HttpConfig::bearer(TOKEN)).await;
    let auth = bearer();
    let connection = http_connect(&url).await;
    let mut stream = Sse::open(&url, &connection, None).await;
    let headers = [
        ("authorization", auth.as_str()),
        ("acp-connection-id", connection.as_str()),
    ];
    let new = json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": "/tmp", "mcpServers": []}});
    let response = post(&url, &headers, new).await;
    assert_eq!(response.status(), 202);
    assert_eq!(response.text().await.unwrap(), "");
    let answer = stream.recv().await;
    assert_eq!(
        answer["id"], 2,
        "session/new is answered on the connection stream"
    );
    let session = answer["result"]["sessionId"].as_str().unwrap().to_owned();
    let mut session_stream = Sse::open(&url, &connection, Some(&session)).await;
    let in_session = [
        ("authorization", auth.as_str()),
        ("acp-connection-id", connection.as_str()),
        ("acp-session-id", session.as_str()),
    ];
    let prompt = json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}});
    assert_eq!(post(&url, &in_session, prompt).await.status(), 202);
    let update = session_stream.recv().await;
    assert_eq!(update["method"], "session/update");
    assert_eq!(update["params"]["update"]["content"]["text"], "echo: hi");
    let answer = session_stream.recv().await;
    assert_eq!(answer["id"], 3);
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    // DELETE ends the connection: its id is unknown afterwards.
    let response = http()
        .delete(&url)
        .header("authorization", &auth)
        .header("acp-connection-id", &connection)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    let list = json!({"jsonrpc": "2.0", "id": 4, "method": "session/list", "params": {}});
    assert_eq!(post(&url, &headers, list).await.status(), 404);
}

#[tokio::test]
async fn the_rfds_refusals_over_streamable_http() {
    let url = start(HttpConfig::bearer(TOKEN)).await;
    let auth = bearer();
    let connection = http_connect(&url).await;
    let with = [
        ("authorization", auth.as_str()),
        ("acp-connection-id", connection.as_str()),
    ];
    // Not JSON: 415; a batch: 501; no connection id: 400; a session method without its
    // session header: 400; GET without accepting SSE: 406; DELETE without an id: 400.
    let response = http()
        .post(&url)
        .header("authorization", &auth)
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 415);
    assert_eq!(
        post(&url, &with, json!([initialize(1)])).await.status(),
        501
    );
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}});
    assert_eq!(
        post(&url, &[("authorization", &auth)], list).await.status(),
        400
    );
    let prompt = json!({"jsonrpc": "2.0", "id": 1, "method": "session/prompt",
        "params": {"sessionId": "s", "prompt": []}});
    assert_eq!(post(&url, &with, prompt).await.status(), 400);
    let response = http()
        .get(&url)
        .header("authorization", &auth)
        .header("acp-connection-id", &connection)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 406);
    let response = http()
        .delete(&url)
        .header("authorization", &auth)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    // A second reader of the same stream: 409.
    let _reader = Sse::open(&url, &connection, None).await;
    let response = http()
        .get(&url)
        .header("authorization", &auth)
        .header("accept", "text/event-stream")
        .header("acp-connection-id", &connection)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 409);
    still_serves(&url).await;
}

#[tokio::test]
async fn another_clients_connection_id_is_unknown() {
    let config = HttpConfig::check(|parts| {
        let user = parts.headers.get("authorization");
        user.is_some_and(|v| v == "Bearer alice" || v == "Bearer bob")
    });
    let url = start(config).await;
    let response = post(&url, &[("authorization", "Bearer alice")], initialize(1)).await;
    assert_eq!(response.status(), 200);
    let alices = response.headers()["acp-connection-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}});
    // Bob, with valid credentials of his own, cannot use Alice's connection.
    for (method, status) in [("POST", 404), ("GET", 404), ("DELETE", 404)] {
        let request = http()
            .request(method.parse().unwrap(), &url)
            .header("authorization", "Bearer bob")
            .header("acp-connection-id", &alices)
            .header("accept", "text/event-stream")
            .header("content-type", "application/json")
            .body(list.to_string());
        assert_eq!(request.send().await.unwrap().status(), status, "{method}");
    }
    // An id nobody was given is unknown too.
    let made_up = "0123456789abcdef0123456789abcdef";
    let response = post(
        &url,
        &[
            ("authorization", "Bearer alice"),
            ("acp-connection-id", made_up),
        ],
        list.clone(),
    )
    .await;
    assert_eq!(response.status(), 404);
    // Alice's connection is intact.
    let response = post(
        &url,
        &[
            ("authorization", "Bearer alice"),
            ("acp-connection-id", &alices),
        ],
        list,
    )
    .await;
    assert_eq!(response.status(), 202);
}

#[tokio::test]
async fn another_connections_session_is_not_found() {
    let url = start(HttpConfig::bearer(TOKEN)).await;
    let mut alice = WsClient::connect(&url).await;
    let session = alice.open_session().await;
    let mut mallory = WsClient::connect(&url).await;
    let (init, _) = mallory
        .request("initialize", json!({"protocolVersion": 1}))
        .await;
    assert!(init.get("result").is_some());
    let (answer, updates) = mallory.prompt(&session, "steal").await;
    assert_eq!(answer["error"]["code"], -32002, "{answer}");
    assert!(updates.is_empty(), "{updates:?}");
    // Over Streamable HTTP too: the answer comes on the stream the client named.
    let connection = http_connect(&url).await;
    let mut stream = Sse::open(&url, &connection, Some(&session)).await;
    let auth = bearer();
    let in_session = [
        ("authorization", auth.as_str()),
        ("acp-connection-id", connection.as_str()),
        ("acp-session-id", session.as_str()),
    ];
    let prompt = json!({"jsonrpc": "2.0", "id": 9, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "steal"}]}});
    assert_eq!(post(&url, &in_session, prompt).await.status(), 202);
    let answer: Value = stream.recv().await;
    assert_eq!(answer["id"], 9);
    assert_eq!(answer["error"]["code"], -32002, "{answer}");
    // Alice's session is untouched.
    let (answer, _) = alice.prompt(&session, "mine").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
}

#[tokio::test]
async fn the_scripted_client_drives_an_agent_over_websocket() {
    let url = start(HttpConfig::bearer(TOKEN)).await;
    let client = acp_core::testing::TestClient::builder()
        .websocket(&url, TOKEN)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("over the network").await.unwrap();
    assert_eq!(turn.text(), "echo: over the network");
    let refused = acp_core::testing::TestClient::builder()
        .websocket(&url, "wrong")
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("401"), "{refused}");
}

#[tokio::test]
async fn ten_thousand_idle_sockets_cost_nobody_else_and_silent_ones_are_closed() {
    let url = start(HttpConfig::bearer(TOKEN).header_timeout(Duration::from_millis(300))).await;
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/acp")
        .to_owned();
    let mut idle = Vec::new();
    for _ in 0..10_000 {
        idle.push(tokio::net::TcpStream::connect(&addr).await.unwrap());
    }
    still_serves(&url).await;
    // A socket that never sends its request headers is closed by the server.
    use tokio::io::AsyncReadExt;
    let mut silent = idle.pop().unwrap();
    let mut buf = [0u8; 64];
    let closed = tokio::time::timeout(Duration::from_secs(5), silent.read(&mut buf)).await;
    assert!(
        matches!(closed, Ok(Ok(0)) | Ok(Err(_))),
        "the server closes a silent socket: {closed:?}"
    );
}
