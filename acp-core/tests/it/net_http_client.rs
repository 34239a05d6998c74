//! The scripted client over Streamable HTTP (`TestClientBuilder::http`) against a real agent
//! served on a loopback port: streamed updates, a permission request answered by the client's
//! policy, a cancel mid-turn, two sessions on one connection, `session/load`'s replay on a
//! second connection, refusals named by their status, and DELETE when the client closes.

use crate::net_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_core::net::HttpConfig;
use acp_core::schema::{
    PermissionOption, PermissionOptionKind, SessionUpdate, StopReason, ToolCallStatus,
};
use acp_core::store::{MemoryStore, SessionStore};
use acp_core::testing::{PermissionPolicy, TestClient};
use acp_core::{Agent, Prompt, Result, Server, Session};
use net_support::TOKEN;
use serde_json::{Value, json};

/// Streams the prompt back a word per update; "wait" waits to be cancelled; "tool" asks
/// permission for a tool call and runs it only if allowed.
struct Worker;

impl Agent for Worker {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> Result<StopReason> {
        match prompt.text().as_str() {
            "wait" => {
                cx.message("waiting").await?;
                cx.cancelled().await;
                Ok(StopReason::Cancelled)
            }
            "tool" => {
                let call = cx.tool_call("Delete the build").start().await?;
                let options = vec![
                    PermissionOption::new("yes", "Yes", PermissionOptionKind::AllowOnce),
                    PermissionOption::new("no", "No", PermissionOptionKind::RejectOnce),
                ];
                if &*call.request_permission(options).await?.0 == "yes" {
                    call.in_progress().await?;
                    call.complete(vec![]).await?;
                    cx.message("deleted").await?;
                } else {
                    call.fail("not allowed").await?;
                    cx.message("kept").await?;
                }
                Ok(StopReason::EndTurn)
            }
            text => {
                for word in text.split(' ') {
                    cx.message(format!("{word} ")).await?;
                }
                Ok(StopReason::EndTurn)
            }
        }
    }
}

/// Serves `server` with `config` on a free loopback port; its `/acp` URL.
async fn serve(server: Server<Worker>, config: HttpConfig) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(server.serve_http_on(listener, config));
    format!("http://{addr}/acp")
}

async fn start() -> String {
    serve(
        Server::new(Worker).no_store(),
        HttpConfig::bearer(TOKEN).roots(["/"]),
    )
    .await
}

#[tokio::test]
async fn a_turn_streams_its_updates_over_streamable_http() {
    let url = start().await;
    let client = TestClient::builder().http(&url, TOKEN).await.unwrap();
    assert_eq!(client.initialize_response()["protocolVersion"], 1);
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("one two three").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert_eq!(turn.updates().len(), 3, "{}", client.describe());
    assert_eq!(turn.text(), "one two three ");
    // A second turn on the same streams.
    let turn = session.prompt("again").await.unwrap();
    assert_eq!(turn.text(), "again ");
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_permission_request_is_answered_by_the_clients_policy() {
    let url = start().await;
    for (policy, status, text) in [
        (
            PermissionPolicy::AllowOnce,
            ToolCallStatus::Completed,
            "deleted",
        ),
        (PermissionPolicy::RejectOnce, ToolCallStatus::Failed, "kept"),
    ] {
        let client = TestClient::builder()
            .permissions(policy)
            .http(&url, TOKEN)
            .await
            .unwrap();
        let session = client.new_session().await.unwrap();
        let turn = session.prompt("tool").await.unwrap();
        assert_eq!(turn.permission_requests().len(), 1, "{}", client.describe());
        assert_eq!(turn.tool_calls()[0].status(), Some(status));
        assert_eq!(turn.text(), text);
        assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    }
}

#[tokio::test]
async fn a_cancel_mid_turn_ends_it_cancelled() {
    let url = start().await;
    let client = TestClient::builder().http(&url, TOKEN).await.unwrap();
    let session = client.new_session().await.unwrap();
    let prompt = session.start_prompt("wait");
    session
        .wait_for_update("the turn to start", |u| {
            matches!(u, SessionUpdate::AgentMessageChunk(_))
        })
        .await
        .unwrap();
    session.cancel();
    let turn = session.finish(&prompt).await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::Cancelled));
}

#[tokio::test]
async fn two_sessions_on_one_connection_each_get_their_own_updates() {
    let url = start().await;
    let client = TestClient::builder().http(&url, TOKEN).await.unwrap();
    let first = client.new_session().await.unwrap();
    let second = client.new_session().await.unwrap();
    assert_ne!(first.id(), second.id());
    // Both turns run at once.
    let a = first.start_prompt("alpha beta");
    let b = second.start_prompt("gamma delta epsilon");
    let second_turn = second.finish(&b).await.unwrap();
    let first_turn = first.finish(&a).await.unwrap();
    assert_eq!(first_turn.text(), "alpha beta ");
    assert_eq!(second_turn.text(), "gamma delta epsilon ");
    assert_eq!(first_turn.updates().len(), 2);
    assert_eq!(second_turn.updates().len(), 3);
}

#[tokio::test]
async fn session_load_on_a_second_connection_sees_the_replay() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::default());
    let url = serve(
        Server::new(Worker).shared_store(store),
        HttpConfig::bearer(TOKEN).roots(["/"]),
    )
    .await;
    let words: Vec<String> = (0..50).map(|i| format!("w{i}")).collect();
    let text = words.join(" ");
    let first = TestClient::builder().http(&url, TOKEN).await.unwrap();
    let session = first.new_session().await.unwrap();
    let id = session.id().clone();
    session.prompt(&text).await.unwrap();
    drop(session);
    first.close().await.unwrap();

    let second = TestClient::builder().http(&url, TOKEN).await.unwrap();
    let loaded = second.load_session(&id).await.unwrap();
    assert_eq!(loaded.text(), format!("{text} "), "{}", second.describe());
    // The loaded session goes on over the same connection.
    let turn = loaded.session.prompt("more").await.unwrap();
    assert_eq!(turn.text(), "more ");
}

/// One request the server received: its method, connection and session headers, and body.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    connection: Option<String>,
    session: Option<String>,
    body: Value,
}

/// Serves `Worker` behind a layer that records every request, in order.
async fn serve_recorded() -> (String, Arc<Mutex<Vec<Seen>>>) {
    use acp_core::net::axum::{self, body::Body, extract::Request, middleware::Next};
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let record = move |request: Request, next: Next| {
        let log = log.clone();
        async move {
            let (parts, body) = request.into_parts();
            let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap();
            let header = |name: &str| {
                let value = parts.headers.get(name)?;
                Some(value.to_str().unwrap().to_owned())
            };
            log.lock().unwrap().push(Seen {
                method: parts.method.to_string(),
                connection: header("acp-connection-id"),
                session: header("acp-session-id"),
                body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            });
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
    };
    let router = Server::new(Worker)
        .no_store()
        .router(HttpConfig::bearer(TOKEN).roots(["/"]))
        .unwrap()
        .layer(axum::middleware::from_fn(record));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    (format!("http://{addr}/acp"), seen)
}

#[tokio::test]
async fn every_request_names_its_connection_and_session_as_the_rfd_says() {
    let (url, seen) = serve_recorded().await;
    let client = TestClient::builder().http(&url, TOKEN).await.unwrap();
    let session = client.new_session().await.unwrap();
    let id = session.id().to_string();
    let turn = session.prompt("tool").await.unwrap();
    assert_eq!(turn.text(), "deleted");
    drop(session);
    client.close().await.unwrap();
    let seen = seen.lock().unwrap().clone();
    let posts: Vec<&Seen> = seen.iter().filter(|s| s.method == "POST").collect();
    // `initialize` opens the connection: no id yet; everything after names it.
    assert_eq!(posts[0].body["method"], "initialize");
    assert_eq!(posts[0].connection, None);
    let connection = seen[1].connection.clone().expect("the stream names it");
    assert_eq!((seen[1].method.as_str(), &seen[1].session), ("GET", &None));
    assert!(
        seen[1..]
            .iter()
            .all(|s| s.connection.as_ref() == Some(&connection)),
        "{seen:#?}"
    );
    // The session's stream is opened before the prompt is POSTed.
    let stream = seen
        .iter()
        .position(|s| s.method == "GET" && s.session.as_ref() == Some(&id));
    let prompt = seen
        .iter()
        .position(|s| s.body["method"] == "session/prompt");
    assert!(stream.unwrap() < prompt.unwrap(), "{seen:#?}");
    // `session/new` names no session; the prompt, and the answer to the agent's permission
    // request (which named the session), name it.
    let new = posts
        .iter()
        .find(|s| s.body["method"] == "session/new")
        .unwrap();
    assert_eq!(new.session, None);
    assert_eq!(seen[prompt.unwrap()].session.as_ref(), Some(&id));
    let answer = posts
        .iter()
        .find(|s| s.body["result"]["outcome"].is_object());
    assert_eq!(answer.unwrap().session.as_ref(), Some(&id), "{seen:#?}");
    // Closing the client ends the connection.
    assert_eq!(seen.last().unwrap().method, "DELETE", "{seen:#?}");
}

#[tokio::test]
async fn a_wrong_token_is_an_error_naming_401() {
    let url = start().await;
    let refused = TestClient::builder().http(&url, "wrong").await.unwrap_err();
    assert!(refused.to_string().contains("401"), "{refused}");
}

#[tokio::test]
async fn a_refused_request_is_answered_with_an_error_naming_the_status() {
    let url = start().await;
    let client = TestClient::builder().http(&url, TOKEN).await.unwrap();
    // Not a session id the bridge can name in `Acp-Session-Id`: the server refuses the POST.
    let refused = client
        .request("session/prompt", json!({"sessionId": 7, "prompt": []}))
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("400"), "{refused}");
    // The connection still works.
    let session = client.new_session().await.unwrap();
    assert_eq!(session.prompt("ok").await.unwrap().text(), "ok ");
}

#[tokio::test]
async fn closing_the_client_ends_its_connection() {
    let url = serve(
        Server::new(Worker).no_store(),
        HttpConfig::bearer(TOKEN).roots(["/"]).max_connections(1),
    )
    .await;
    let client = TestClient::builder().http(&url, TOKEN).await.unwrap();
    let full = TestClient::builder().http(&url, TOKEN).await.unwrap_err();
    assert!(full.to_string().contains("503"), "{full}");
    client.close().await.unwrap();
    // DELETE frees the place (the server lets it go once the connection's runtime ends).
    let mut waited = Duration::ZERO;
    loop {
        match TestClient::builder().http(&url, TOKEN).await {
            Ok(_) => break,
            Err(e) => {
                assert!(waited < Duration::from_secs(5), "still refused: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                waited += Duration::from_millis(50);
            }
        }
    }
}
