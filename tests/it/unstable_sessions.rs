//! The schema crate's Unstable session methods (features `unstable-session-*` and
//! `unstable-prompt-suggestions`), in process on a memory store: `session/fork` copies the
//! history and diverges, `session/status` of an idle, a running and an unknown session,
//! `session/set_title` in `session/list`, `session/archive` / `unarchive` and the list's
//! filter, `session/options`, and `Session::suggest` only for a client that shows
//! suggestions. Answers are read into the schema crate's types.

use std::sync::Arc;

use acp::schema::{self, AGENT_METHOD_NAMES as M, SessionId};
use acp::store::{MemoryStore, SessionStore};
use acp::testing::TestClient;
use acp::{Agent, Prompt, Result, Session};
use serde_json::{Value, json};

/// Echoes the prompt; `wait` runs until cancelled; `suggest` offers one suggestion and says
/// whether it was sent.
struct Unstable;

impl Agent for Unstable {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> Result<schema::StopReason> {
        match prompt.text().as_str() {
            "wait" => {
                cx.cancelled().await;
                Ok(schema::StopReason::Cancelled)
            }
            "suggest" => {
                let next = schema::PromptSuggestion::new(vec!["Run the tests".into()]);
                let sent = cx.suggest(vec![next]).await?;
                cx.message(format!("sent: {sent}")).await?;
                Ok(schema::StopReason::EndTurn)
            }
            text => {
                cx.message(format!("echo: {text}")).await?;
                Ok(schema::StopReason::EndTurn)
            }
        }
    }
}

fn store() -> Arc<dyn SessionStore> {
    Arc::new(MemoryStore::new())
}

async fn connect(store: &Arc<dyn SessionStore>) -> TestClient {
    TestClient::builder()
        .cwd("/w")
        .serve(acp::Server::new(Unstable).shared_store(store.clone()))
        .await
        .unwrap()
}

/// A typed answer, read strictly into the schema crate's type.
fn typed<T: serde::de::DeserializeOwned>(answer: Value) -> T {
    serde_json::from_value(answer.clone()).unwrap_or_else(|e| panic!("{e}: {answer}"))
}

fn code(e: acp::Error) -> i32 {
    e.to_rpc().code.into()
}

#[tokio::test]
async fn initialize_advertises_each_compiled_in_method_with_a_store() {
    let store = store();
    let client = connect(&store).await;
    let init: schema::InitializeResponse = typed(client.initialize_response().clone());
    let s = init.agent_capabilities.session_capabilities;
    assert!(s.fork.is_some() && s.status.is_some() && s.title.is_some());
    assert!(s.archive.is_some() && s.options.is_some() && s.list.is_some());
    // Without a store only what needs none.
    let bare = TestClient::builder()
        .serve(acp::Server::new(Unstable).no_store())
        .await
        .unwrap();
    let init: schema::InitializeResponse = typed(bare.initialize_response().clone());
    let s = init.agent_capabilities.session_capabilities;
    assert!(s.fork.is_none() && s.title.is_none() && s.archive.is_none());
    assert!(s.status.is_some() && s.options.is_some());
}

#[tokio::test]
async fn a_fork_replays_its_parents_history_and_then_diverges() {
    let store = store();
    let client = connect(&store).await;
    let parent = client.new_session().await.unwrap();
    parent.prompt("first").await.unwrap();
    store
        .put_state(parent.id(), "notes", &json!(["kept"]))
        .await
        .unwrap();
    let child = parent.fork().await.unwrap();
    let answer: schema::ForkSessionResponse = typed(child.new_session_response().clone());
    assert_ne!(&answer.session_id, parent.id(), "a new session");
    assert_eq!(&answer.session_id, child.id());
    assert_eq!(
        store.state(child.id()).await.unwrap()["notes"],
        json!(["kept"]),
        "the agent's persisted values come along"
    );
    child.prompt("second").await.unwrap();
    parent.prompt("other").await.unwrap();

    let later = connect(&store).await;
    let forked = later.load_session(child.id()).await.unwrap();
    assert_eq!(forked.text(), "echo: firstecho: second");
    let original = later.load_session(parent.id()).await.unwrap();
    assert_eq!(original.text(), "echo: firstecho: other");

    // A cursor the agent never announced is refused, not taken for the whole session.
    let refused = later
        .request(
            M.session_fork,
            json!({"sessionId": parent.id(), "cwd": "/w", "cursorId": "c1"}),
        )
        .await
        .unwrap_err();
    assert_eq!(code(refused), -32602);
    let unknown = later
        .fork_session(&SessionId::new("sess_nobody"))
        .await
        .unwrap_err();
    assert_eq!(code(unknown), -32002);
}

#[tokio::test]
async fn status_tells_an_idle_a_running_and_an_unknown_session_apart() {
    let store = store();
    let client = connect(&store).await;
    let session = client.new_session().await.unwrap();
    let idle: schema::SessionStatusResponse =
        typed(client.session_status(session.id()).await.unwrap());
    assert_eq!(idle.status, schema::SessionStatus::Open);
    let running = session.start_prompt("wait");
    let status: schema::SessionStatusResponse =
        typed(client.session_status(session.id()).await.unwrap());
    assert_eq!(status.status, schema::SessionStatus::Open);
    session.cancel();
    session.finish(&running).await.unwrap();

    // Another client (the agent restarted on the store): saved, and nothing loaded.
    let other = connect(&store).await;
    let saved: schema::SessionStatusResponse =
        typed(other.session_status(session.id()).await.unwrap());
    assert_eq!(saved.status, schema::SessionStatus::Saved);
    assert!(other.take_unread().is_empty(), "status sends nothing");
    let unknown = other
        .session_status(&SessionId::new("sess_nobody"))
        .await
        .unwrap_err();
    assert_eq!(code(unknown), -32002);
}

#[tokio::test]
async fn a_title_set_by_the_client_is_listed_and_told_to_it() {
    let store = store();
    let client = connect(&store).await;
    let session = client.new_session().await.unwrap();
    let answer: schema::SetSessionTitleResponse = typed(
        client
            .set_session_title(session.id(), "  Fix the parser \n")
            .await
            .unwrap(),
    );
    assert_eq!(answer.title, "Fix the parser", "normalized");
    let told = client
        .take_unread()
        .iter()
        .filter_map(|f| f.session_update())
        .any(|n| {
            matches!(&n.update, schema::SessionUpdate::SessionInfoUpdate(_))
                && serde_json::to_value(&n.update).unwrap()["title"] == "Fix the parser"
        });
    assert!(told, "session_info_update for the open session");
    let list: schema::ListSessionsResponse = typed(client.list_sessions(None, None).await.unwrap());
    assert_eq!(list.sessions[0].title.as_deref(), Some("Fix the parser"));
    // A session not open on the connection is retitled in the store alone.
    let other = connect(&store).await;
    other
        .set_session_title(session.id(), "Renamed")
        .await
        .unwrap();
    let list: schema::ListSessionsResponse = typed(other.list_sessions(None, None).await.unwrap());
    assert_eq!(list.sessions[0].title.as_deref(), Some("Renamed"));
    let empty = client
        .set_session_title(session.id(), "   ")
        .await
        .unwrap_err();
    assert_eq!(code(empty), -32602);
}

#[tokio::test]
async fn archive_hides_a_session_from_the_list_and_unarchive_brings_it_back() {
    let store = store();
    let client = connect(&store).await;
    let kept = client.new_session().await.unwrap();
    let hidden = client.new_session().await.unwrap();
    let ids = |list: Value| -> Vec<(SessionId, Option<bool>)> {
        let list: schema::ListSessionsResponse = typed(list);
        list.sessions
            .into_iter()
            .map(|s| (s.session_id, s.archived))
            .collect()
    };
    let archived: schema::ArchiveSessionResponse =
        typed(client.archive_session(hidden.id()).await.unwrap());
    let _ = archived;
    client.archive_session(hidden.id()).await.unwrap();
    assert_eq!(
        ids(client.list_sessions(None, None).await.unwrap()),
        [(kept.id().clone(), Some(false))]
    );
    assert_eq!(
        ids(client.list_sessions_archived("only").await.unwrap()),
        [(hidden.id().clone(), Some(true))]
    );
    assert_eq!(
        ids(client.list_sessions_archived("include").await.unwrap()).len(),
        2
    );
    let bad = client.list_sessions_archived("sideways").await.unwrap_err();
    assert_eq!(code(bad), -32602);
    // Archiving closed it here, as `session/close` does: stored, in memory nowhere.
    let status: schema::SessionStatusResponse =
        typed(client.session_status(hidden.id()).await.unwrap());
    assert_eq!(status.status, schema::SessionStatus::Saved);
    let _: schema::UnarchiveSessionResponse =
        typed(client.unarchive_session(hidden.id()).await.unwrap());
    assert_eq!(
        ids(client.list_sessions(None, None).await.unwrap()).len(),
        2
    );
    let unknown = client
        .archive_session(&SessionId::new("sess_nobody"))
        .await
        .unwrap_err();
    assert_eq!(code(unknown), -32002);
}

#[tokio::test]
async fn options_are_the_settings_a_session_would_start_with() {
    let store = store();
    let client = connect(&store).await;
    let options: schema::SessionOptionsResponse =
        typed(client.session_options(None).await.unwrap());
    assert_eq!(options.modes, None, "the agent declares no modes");
    assert!(options.config_options.unwrap_or_default().is_empty());
    assert!(client.take_unread().is_empty(), "nothing sent");
    assert!(
        client.all_sessions(None).await.unwrap().is_empty(),
        "no session opened"
    );
    let unknown = client
        .session_options(Some(&SessionId::new("sess_nobody")))
        .await
        .unwrap_err();
    assert_eq!(code(unknown), -32002);
}

/// The client's `session.promptSuggestions`, on protocol `version`.
async fn suggestions(shown: bool, version: u16) -> (bool, Vec<Value>) {
    let store = store();
    let mut builder = TestClient::builder().cwd("/w").protocol(version);
    if shown && version == 1 {
        builder = builder.client_capabilities(typed(json!({"session": {"promptSuggestions": {}}})));
    }
    let server = acp::Server::new(Unstable).shared_store(store.clone());
    let client = if version == 2 {
        let client = builder.skip_initialize().serve(server).await.unwrap();
        let mut init = crate::support::v2::v2_initialize();
        if shown {
            init["capabilities"] = json!({"session": {"promptSuggestions": {}}});
        }
        client.request(M.initialize, init).await.unwrap();
        client
    } else {
        builder.serve(server).await.unwrap()
    };
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("suggest").await.unwrap();
    let frames: Vec<Value> = client
        .transcript()
        .iter()
        .map(|f| f.message.clone())
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "prompt_suggestions_update")
        .collect();
    for frame in &frames {
        let _: schema::PromptSuggestionsUpdate = typed(frame["params"]["update"].clone());
    }
    // Not part of the history: a reload does not replay it.
    let later = TestClient::builder()
        .cwd("/w")
        .serve(acp::Server::new(Unstable).shared_store(store.clone()))
        .await
        .unwrap();
    let loaded = later.load_session(session.id()).await.unwrap();
    assert!(
        !loaded
            .replayed
            .iter()
            .any(|u| matches!(u, schema::SessionUpdate::PromptSuggestionsUpdate(_))),
        "not replayed"
    );
    (turn.text().contains("sent: true"), frames)
}

#[tokio::test]
async fn suggestions_go_only_to_a_client_that_shows_them_on_both_versions() {
    for version in [1, 2] {
        let (sent, frames) = suggestions(true, version).await;
        assert!(sent, "v{version}: sent");
        assert_eq!(frames.len(), 1, "v{version}: {frames:?}");
        let (sent, frames) = suggestions(false, version).await;
        assert!(!sent, "v{version}: not sent");
        assert!(frames.is_empty(), "v{version}: {frames:?}");
    }
}

/// `configOptions` on `session/new` (advertised with `session/options`): applied in order as
/// `session/set_config_option` would, quietly (the answer carries them), an unknown option or
/// a value the option does not allow ignored, an option given twice refused with `-32602`.
async fn initial_config_values_are_applied_quietly(protocol: u16) {
    let client = TestClient::builder()
        .protocol(protocol)
        .connect(crate::examples::modes::Modes)
        .await
        .unwrap();
    let entry = |id: &str, value: &str| match protocol {
        1 => json!({"configId": id, "value": value}),
        _ => json!({"configId": id, "type": "id", "value": value}),
    };
    let new = |entries: Vec<Value>| json!({"cwd": "/workspace", "mcpServers": [], "configOptions": entries});
    let answer = client
        .request(
            M.session_new,
            new(vec![
                entry("nope", "x"),
                entry("mode", "code"),
                entry("tone", "no-such-tone"),
            ]),
        )
        .await
        .unwrap();
    let current: Vec<(String, Value)> = answer["configOptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let id = o.get("configId").or_else(|| o.get("id")).unwrap();
            (id.as_str().unwrap().to_owned(), o["currentValue"].clone())
        })
        .collect();
    assert_eq!(
        current,
        [
            ("mode".to_owned(), json!("code")),
            ("tone".to_owned(), json!("plain"))
        ],
        "{answer}"
    );
    let updates: Vec<_> = client
        .transcript()
        .iter()
        .filter_map(|f| {
            f.message["params"]["update"]["sessionUpdate"]
                .as_str()
                .map(str::to_owned)
        })
        .filter(|k| k == "config_option_update" || k == "current_mode_update")
        .collect();
    assert!(updates.is_empty(), "{updates:?}");
    let twice = client
        .request(
            M.session_new,
            new(vec![entry("mode", "code"), entry("mode", "ask")]),
        )
        .await
        .unwrap_err();
    assert_eq!(code(twice), -32602);
}

acp::testing::on_both_versions!(initial_config_values_are_applied_quietly);
