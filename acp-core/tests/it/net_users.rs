//! Users of the network service (feature `http`): a client only ever sees its own user's
//! connections and sessions. Two users, by their bearer tokens (`HttpConfig::bearer_tokens`)
//! or by the host's check (`HttpConfig::users`), on one store: another user's session is
//! not listed, and loading, resuming or deleting it is answered exactly as for an id nobody
//! was given; its owner finds it on a new connection.

use crate::net_support;

use acp_core::net::HttpConfig;
use acp_core::schema::SessionId;
use acp_core::store::{MemoryStore, SessionStore};
use acp_core::{Agent, Prompt, Result, Server, Session};
use net_support::*;
use serde_json::{Value, json};

const ALICE: &str = "Bearer alice-token-0123456789abcdef";
const BOB: &str = "Bearer bob-token-0123456789abcdef";

/// An id nobody was given.
const MADE_UP: &str = "sess_00000000000000000000000000000000";

/// Echoes the prompt's text (as `net_support::Echo`), its sessions recorded.
struct Recorded;

impl Agent for Recorded {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> Result<acp_core::schema::StopReason> {
        cx.message(format!("echo: {}", prompt.text())).await?;
        Ok(acp_core::schema::StopReason::EndTurn)
    }
}

/// Serves `Recorded` with `config` on a free loopback port, recording into a memory store:
/// its `/acp` URL and the store.
async fn start_recorded(config: HttpConfig) -> (String, MemoryStore) {
    let store = MemoryStore::new();
    (serve_on(config, store.clone()).await, store)
}

/// Serves `Recorded` with `config` on a free loopback port, recording into `store` (a
/// replica, when another server shares it): its `/acp` URL.
async fn serve_on(config: HttpConfig, store: MemoryStore) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = Server::new(Recorded).store(store);
    tokio::spawn(server.serve_http_on(listener, config));
    format!("http://{addr}/acp")
}

fn two_users() -> HttpConfig {
    HttpConfig::bearer_tokens([
        ("alice", ALICE.trim_start_matches("Bearer ")),
        ("bob", BOB.trim_start_matches("Bearer ")),
    ])
    .roots(["/"])
}

/// The ids a `session/list` answer lists.
fn listed(answer: &Value) -> Vec<String> {
    let sessions = answer["result"]["sessions"].as_array();
    let sessions = sessions.unwrap_or_else(|| panic!("a list: {answer}"));
    sessions
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap().to_owned())
        .collect()
}

/// An answer's error with `id` written as `ID`: what it says besides the id.
fn shape(answer: &Value, id: &str) -> String {
    assert!(answer.get("error").is_some(), "an error: {answer}");
    answer["error"].to_string().replace(id, "ID")
}

fn reopen(id: &str) -> Value {
    json!({"sessionId": id, "cwd": "/tmp", "mcpServers": []})
}

#[tokio::test]
async fn another_users_session_is_unknown_to_a_client_and_its_owner_finds_it() {
    let (url, store) = start_recorded(two_users()).await;
    let mut alice = WsClient::connect_with(&url, &[("authorization", ALICE)]).await;
    let theirs = alice.open_session().await;
    let (answer, _) = alice.prompt(&theirs, "the secret plan").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");

    let mut bob = WsClient::connect_with(&url, &[("authorization", BOB)]).await;
    let his = bob.open_session().await;
    let (list, _) = bob.request("session/list", json!({})).await;
    assert_eq!(listed(&list), [his.as_str()], "bob lists his own only");
    for method in ["session/load", "session/resume"] {
        let (answer, before) = bob.request(method, reopen(&theirs)).await;
        assert_eq!(answer["error"]["code"], -32002, "{method}: {answer}");
        assert!(before.is_empty(), "{method} replays nothing: {before:?}");
        let (unknown, _) = bob.request(method, reopen(MADE_UP)).await;
        assert_eq!(
            shape(&answer, &theirs),
            shape(&unknown, MADE_UP),
            "{method}: as for an id nobody was given"
        );
    }
    let (deleted, _) = bob
        .request("session/delete", json!({"sessionId": theirs}))
        .await;
    let (unknown, _) = bob
        .request("session/delete", json!({"sessionId": MADE_UP}))
        .await;
    assert!(deleted.get("result").is_some(), "{deleted}");
    assert_eq!(deleted["result"], unknown["result"]);
    let kept = store.session(&SessionId::new(theirs.as_str())).await;
    assert_eq!(kept.unwrap().unwrap().owner.as_deref(), Some("alice"));

    // Alice, on a new connection: her session is listed and loads whole.
    drop(alice);
    let mut alice = WsClient::connect_with(&url, &[("authorization", ALICE)]).await;
    let (init, _) = alice
        .request("initialize", json!({"protocolVersion": 1}))
        .await;
    assert!(init.get("result").is_some(), "{init}");
    let (list, _) = alice.request("session/list", json!({})).await;
    assert_eq!(listed(&list), [theirs.as_str()]);
    let (loaded, replayed) = alice.request("session/load", reopen(&theirs)).await;
    assert!(loaded.get("result").is_some(), "{loaded}");
    let texts: Vec<&str> = replayed
        .iter()
        .filter_map(|m| m["params"]["update"]["content"]["text"].as_str())
        .collect();
    assert_eq!(texts, ["the secret plan", "echo: the secret plan"]);
}

#[cfg(feature = "v2")]
#[tokio::test]
async fn over_v2_too_another_users_session_is_unknown() {
    let (url, _store) = start_recorded(two_users()).await;
    let mut alice = WsClient::connect_with(&url, &[("authorization", ALICE)]).await;
    let theirs = alice.open_session().await;
    let mut bob = WsClient::connect_with(&url, &[("authorization", BOB)]).await;
    let params =
        json!({"protocolVersion": 2, "info": {"name": "t", "version": "1"}, "capabilities": {}});
    let (init, _) = bob.request("initialize", params).await;
    assert_eq!(init["result"]["protocolVersion"], 2, "{init}");
    let (list, _) = bob.request("session/list", json!({})).await;
    assert!(listed(&list).is_empty(), "{list}");
    let resume = |id: &str| json!({"sessionId": id, "cwd": "/tmp", "mcpServers": [], "replayFrom": {"type": "start"}});
    let (answer, before) = bob.request("session/resume", resume(&theirs)).await;
    assert_eq!(answer["error"]["code"], -32002, "{answer}");
    assert!(before.is_empty(), "nothing replayed: {before:?}");
    let (unknown, _) = bob.request("session/resume", resume(MADE_UP)).await;
    assert_eq!(shape(&answer, &theirs), shape(&unknown, MADE_UP));
}

#[tokio::test]
async fn every_replica_lists_a_users_sessions_and_only_theirs() {
    let store = MemoryStore::new();
    let a = serve_on(two_users(), store.clone()).await;
    let b = serve_on(two_users(), store).await;
    let mut alice = WsClient::connect_with(&a, &[("authorization", ALICE)]).await;
    let hers = alice.open_session().await;
    let mut bob = WsClient::connect_with(&a, &[("authorization", BOB)]).await;
    let his = bob.open_session().await;
    for (auth, own) in [(ALICE, &hers), (BOB, &his)] {
        let mut elsewhere = WsClient::connect_with(&b, &[("authorization", auth)]).await;
        let (init, _) = elsewhere
            .request("initialize", json!({"protocolVersion": 1}))
            .await;
        assert!(init.get("result").is_some(), "{init}");
        let (list, _) = elsewhere.request("session/list", json!({})).await;
        assert_eq!(listed(&list), [own.as_str()], "{auth}");
    }
}

#[tokio::test]
async fn users_named_by_the_host_keep_to_their_connections_and_sessions_over_streamable_http() {
    // The host names the user from a header its proxy sets; no `Authorization` at all, so
    // only the user tells two clients' connections apart.
    let config = HttpConfig::users(|parts| {
        let user = parts.headers.get("x-user")?.to_str().ok()?;
        Some(user.to_owned())
    })
    .roots(["/"]);
    let (url, _store) = start_recorded(config).await;
    let as_alice = [("x-user", "alice")];
    let alices = http_connect_with(&url, &as_alice).await;
    let mut stream = Sse::open_with(&url, &alices, None, &as_alice).await;
    let on_alices = [("x-user", "alice"), ("acp-connection-id", alices.as_str())];
    let new = json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
        "params": {"cwd": "/tmp", "mcpServers": []}});
    assert_eq!(post(&url, &on_alices, new).await.status(), 202);
    let created = stream.recv().await;
    let theirs = created["result"]["sessionId"].as_str().unwrap().to_owned();

    // Bob cannot use Alice's connection, though his request carries the same credentials
    // header (none) as hers.
    let on_alices_as_bob = [("x-user", "bob"), ("acp-connection-id", alices.as_str())];
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}});
    let response = post(&url, &on_alices_as_bob, list.clone()).await;
    assert_eq!(response.status(), 404);

    // On his own, he does not see her session.
    let as_bob = [("x-user", "bob")];
    let bobs = http_connect_with(&url, &as_bob).await;
    let mut his_stream = Sse::open_with(&url, &bobs, None, &as_bob).await;
    let on_bobs = [("x-user", "bob"), ("acp-connection-id", bobs.as_str())];
    assert_eq!(post(&url, &on_bobs, list.clone()).await.status(), 202);
    assert!(listed(&his_stream.recv().await).is_empty());
    let load = |id: u64, session: &str| json!({"jsonrpc": "2.0", "id": id, "method": "session/load", "params": reopen(session)});
    let in_theirs = [
        ("x-user", "bob"),
        ("acp-connection-id", bobs.as_str()),
        ("acp-session-id", theirs.as_str()),
    ];
    assert_eq!(post(&url, &in_theirs, load(3, &theirs)).await.status(), 202);
    let answer = his_stream.recv().await;
    assert_eq!(answer["error"]["code"], -32002, "{answer}");
    let in_made_up = [
        ("x-user", "bob"),
        ("acp-connection-id", bobs.as_str()),
        ("acp-session-id", MADE_UP),
    ];
    assert_eq!(
        post(&url, &in_made_up, load(4, MADE_UP)).await.status(),
        202
    );
    let unknown = his_stream.recv().await;
    assert_eq!(shape(&answer, &theirs), shape(&unknown, MADE_UP));
    // Nor can he open her session's stream: 404, as for a made-up id; she can.
    for session in [theirs.as_str(), MADE_UP] {
        let refused = Sse::get_with(&url, &bobs, Some(session), None, &as_bob).await;
        assert_eq!(refused.status(), 404, "{session}");
    }
    let ok = Sse::get_with(&url, &alices, Some(&theirs), None, &as_alice).await;
    assert_eq!(ok.status(), 200);

    // Alice lists it.
    assert_eq!(post(&url, &on_alices, list).await.status(), 202);
    assert_eq!(listed(&stream.recv().await), [theirs]);
}

#[tokio::test]
async fn one_token_is_one_user_who_sees_every_session() {
    let (url, store) = start_recorded(HttpConfig::bearer(TOKEN).roots(["/"])).await;
    // A session recorded with no user (as over stdio) and one of a named user.
    let owned = acp_core::store::StoredSession::new("sess_owned", "/tmp").owned_by("carol");
    store.save_session(&owned).await.unwrap();
    let mut client = WsClient::connect(&url).await;
    let own = client.open_session().await;
    let (list, _) = client.request("session/list", json!({})).await;
    let mut ids = listed(&list);
    ids.sort();
    let mut expected = vec![own.clone(), "sess_owned".to_owned()];
    expected.sort();
    assert_eq!(ids, expected);
    let stored = store.session(&SessionId::new(own.as_str())).await.unwrap();
    assert_eq!(stored.unwrap().owner, None, "no user, no owner");
}

/// `initialize` over Streamable HTTP with these headers: the connection's id.
async fn http_connect_with(url: &str, headers: &[(&str, &str)]) -> String {
    let response = post(url, headers, initialize(0)).await;
    assert_eq!(response.status(), 200);
    response.headers()["acp-connection-id"]
        .to_str()
        .unwrap()
        .to_owned()
}

/// Keeps its own history (no store): loads any session it is asked to, telling which user
/// asked.
struct OwnHistory;

impl Agent for OwnHistory {
    fn capabilities(&self) -> acp_core::schema::AgentCapabilities {
        acp_core::schema::AgentCapabilities::new().load_session(true)
    }

    async fn load_session(&self, cx: &Session) -> Result<acp_core::SessionSetup> {
        let user = cx.client().user().unwrap_or("nobody").to_owned();
        let _ = cx.detached().message(format!("loaded for {user}")).await;
        Ok(acp_core::SessionSetup::default())
    }

    async fn prompt(&self, cx: &Session, _: Prompt) -> Result<acp_core::schema::StopReason> {
        let user = cx.client().user().unwrap_or("nobody").to_owned();
        cx.message(format!("serving {user}")).await?;
        Ok(acp_core::schema::StopReason::EndTurn)
    }
}

#[tokio::test]
async fn without_a_store_another_users_session_is_unknown_too_and_the_agent_knows_its_user() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/acp", listener.local_addr().unwrap());
    let server = Server::new(OwnHistory).no_store();
    tokio::spawn(server.serve_http_on(listener, two_users()));

    let mut alice = WsClient::connect_with(&url, &[("authorization", ALICE)]).await;
    let theirs = alice.open_session().await;
    let (_, updates) = alice.prompt(&theirs, "hi").await;
    assert!(
        updates
            .iter()
            .any(|u| u.to_string().contains("serving alice")),
        "the agent knows its user: {updates:?}"
    );

    let mut bob = WsClient::connect_with(&url, &[("authorization", BOB)]).await;
    bob.open_session().await;
    let (answer, before) = bob.request("session/load", reopen(&theirs)).await;
    assert_eq!(answer["error"]["code"], -32002, "{answer}");
    assert!(before.is_empty(), "the agent was not asked: {before:?}");
    let (unknown, _) = bob.request("session/load", reopen(MADE_UP)).await;
    assert!(
        unknown.get("result").is_some(),
        "a session this server never opened is the agent's to load: {unknown}"
    );

    // Its owner loads it on another connection.
    let mut again = WsClient::connect_with(&url, &[("authorization", ALICE)]).await;
    again
        .request("initialize", json!({"protocolVersion": 1}))
        .await;
    let (answer, before) = again.request("session/load", reopen(&theirs)).await;
    assert!(answer.get("result").is_some(), "{answer}");
    assert!(
        before
            .iter()
            .any(|u| u.to_string().contains("loaded for alice")),
        "{before:?}"
    );
}

/// The Unstable session methods refuse another user's session exactly as `session/load`
/// does: `session/fork`, `session/status`, `session/set_title`, `session/archive` and
/// `session/unarchive` answer it as an id nobody was given (`-32002`), and change nothing.
#[cfg(all(
    feature = "unstable-session-fork",
    feature = "unstable-session-status",
    feature = "unstable-session-set-title",
    feature = "unstable-session-archive"
))]
#[tokio::test]
async fn the_unstable_session_methods_refuse_another_users_session_as_load_does() {
    use acp_core::schema::AGENT_METHOD_NAMES as M;
    let (url, store) = start_recorded(two_users()).await;
    let mut alice = WsClient::connect_with(&url, &[("authorization", ALICE)]).await;
    let theirs = alice.open_session().await;
    let (answer, _) = alice.prompt(&theirs, "the secret plan").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    // Alice sees her own: the refusal below is about the user, not the method.
    let (own, _) = alice
        .request(M.session_status, json!({"sessionId": theirs}))
        .await;
    assert_eq!(own["result"]["status"], "open", "{own}");

    let mut bob = WsClient::connect_with(&url, &[("authorization", BOB)]).await;
    bob.open_session().await;
    let (loaded, _) = bob.request(M.session_load, reopen(&theirs)).await;
    let cases = [
        (M.session_fork, reopen(&theirs), reopen(MADE_UP)),
        (
            M.session_status,
            json!({"sessionId": theirs}),
            json!({"sessionId": MADE_UP}),
        ),
        (
            M.session_set_title,
            json!({"sessionId": theirs, "title": "mine now"}),
            json!({"sessionId": MADE_UP, "title": "mine now"}),
        ),
        (
            M.session_archive,
            json!({"sessionId": theirs}),
            json!({"sessionId": MADE_UP}),
        ),
        (
            M.session_unarchive,
            json!({"sessionId": theirs}),
            json!({"sessionId": MADE_UP}),
        ),
    ];
    for (method, params, made_up) in cases {
        let (answer, before) = bob.request(method, params).await;
        assert_eq!(answer["error"]["code"], -32002, "{method}: {answer}");
        assert!(before.is_empty(), "{method} sends nothing: {before:?}");
        let (unknown, _) = bob.request(method, made_up).await;
        assert_eq!(
            shape(&answer, &theirs),
            shape(&unknown, MADE_UP),
            "{method}: as for an id nobody was given"
        );
        assert_eq!(
            shape(&answer, &theirs),
            shape(&loaded, &theirs),
            "{method}: as `session/load` refuses it"
        );
    }
    let kept = store.session(&SessionId::new(theirs.as_str())).await;
    let kept = kept.unwrap().unwrap();
    assert_eq!(kept.owner.as_deref(), Some("alice"));
    assert_eq!(kept.title, None, "not retitled");
    assert!(!kept.archived, "not archived");
    let (list, _) = bob.request(M.session_list, json!({})).await;
    assert_eq!(listed(&list).len(), 1, "no fork of hers is his: {list}");
}
