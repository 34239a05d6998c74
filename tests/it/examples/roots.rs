//! The `workspace` example: a session's directories — its cwd and the client's
//! `additionalDirectories` — read and written through the editor, a path outside them refused
//! before anything is sent.

use std::sync::Arc;

use acp::Server;
use acp::StopReason;
use acp::schema::ToolCallStatus::{Completed, Failed, InProgress, Pending};
use acp::store::MemoryStore;
use acp::testing::{MemoryFs, TestClient, TestClientBuilder};
use serde_json::json;

use super::workspace::Workspace;

/// Files in the cwd, in the additional root `/shared/lib`, and outside both.
fn files() -> MemoryFs {
    MemoryFs::new()
        .with("/workspace/README.md", "# app\n")
        .with("/shared/lib/README.md", "# lib\nshared code\n")
        .with("/elsewhere/secret.txt", "hunter2")
}

fn client() -> TestClientBuilder {
    TestClient::builder()
        .fs(files())
        .additional_directories(["/shared/lib"])
}

/// The paths of the agent's `fs/read_text_file` and `fs/write_text_file` requests.
fn fs_paths(client: &TestClient) -> Vec<String> {
    ["fs/read_text_file", "fs/write_text_file"]
        .into_iter()
        .flat_map(|m| client.requests_from_agent(m))
        .map(|p| p["path"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn workspace_reads_and_writes_in_every_root_and_refuses_a_path_outside_them() {
    let client = client().connect(Workspace).await.unwrap();
    // The runtime advertises the capability for every agent.
    assert_eq!(
        client.initialize_response()["agentCapabilities"]["sessionCapabilities"]["additionalDirectories"],
        json!({})
    );
    let session = client.new_session().await.unwrap();
    let roots = session.prompt("roots").await.unwrap();
    assert_eq!(roots.text(), "/workspace\n/shared/lib");

    let found = session.prompt("find README.md").await.unwrap();
    assert_eq!(
        found.text(),
        "/workspace/README.md: 1 lines\n/shared/lib/README.md: 2 lines"
    );
    let calls = found.tool_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].title, "Read /shared/lib/README.md");
    assert_eq!(calls[1].statuses, [Pending, InProgress, Completed]);

    // Relative paths are the cwd's; an absolute one may be in any root.
    let read = session
        .prompt("read ../shared/lib/README.md")
        .await
        .unwrap();
    assert_eq!(read.text(), "# lib\nshared code\n");
    let added = session
        .prompt("append /shared/lib/NOTES.md first note")
        .await
        .unwrap();
    assert_eq!(added.text(), "Added to `/shared/lib/NOTES.md`.");
    assert_eq!(added.permission_requests().len(), 1);
    assert_eq!(
        client.fs().read("/shared/lib/NOTES.md").as_deref(),
        Some("first note\n")
    );

    // Outside every root: the tool call fails with the reason, the user is told, and the
    // editor is never asked.
    let sent = fs_paths(&client).len();
    for (ask, path) in [
        ("read /elsewhere/secret.txt", "/elsewhere/secret.txt"),
        ("read ../../elsewhere/secret.txt", "/elsewhere/secret.txt"),
        ("append /elsewhere/secret.txt x", "/elsewhere/secret.txt"),
    ] {
        let refused = session.prompt(ask).await.unwrap();
        assert_eq!(refused.stop_reason(), Some(StopReason::EndTurn), "{ask}");
        assert_eq!(
            refused.text(),
            format!(
                "I can only work inside this session's directories: `{path}` is outside the \
                 session's directories (`/workspace`, `/shared/lib`). Add the folder to your \
                 workspace to let me in."
            ),
            "{ask}"
        );
        let calls = refused.tool_calls();
        assert_eq!(calls.len(), 1, "{ask}: only the read, never the write");
        assert_eq!(calls[0].status(), Some(Failed), "{ask}");
        assert!(calls[0].text().contains("outside"), "{ask}: {calls:?}");
        assert!(refused.permission_requests().is_empty(), "{ask}");
    }
    assert_eq!(fs_paths(&client).len(), sent, "{:?}", fs_paths(&client));
    assert_eq!(
        client.fs().read("/elsewhere/secret.txt").as_deref(),
        Some("hunter2")
    );
}

#[tokio::test]
async fn workspace_roots_are_the_ones_each_opening_gives() {
    let store: Arc<dyn acp::store::SessionStore> = Arc::new(MemoryStore::default());
    let first = client()
        .serve(Server::new(Workspace).shared_store(store.clone()))
        .await
        .unwrap();
    let session = first.new_session().await.unwrap();
    let id = session.id().clone();
    assert_eq!(
        session
            .prompt("read /shared/lib/README.md")
            .await
            .unwrap()
            .text(),
        "# lib\nshared code\n"
    );
    // session/list reports them.
    let listed = first.all_sessions(None).await.unwrap();
    assert_eq!(listed[0]["additionalDirectories"], json!(["/shared/lib"]));
    drop(session);
    first.close().await.unwrap();

    // Loaded without them (the spec: they are not restored), the extra root is out of bounds.
    let second = TestClient::builder()
        .fs(files())
        .serve(Server::new(Workspace).shared_store(store))
        .await
        .unwrap();
    let loaded = second.load_session(&id).await.unwrap();
    assert_eq!(
        loaded.session.prompt("roots").await.unwrap().text(),
        "/workspace"
    );
    let refused = loaded
        .session
        .prompt("read /shared/lib/README.md")
        .await
        .unwrap();
    assert!(
        refused
            .text()
            .contains("outside the session's directories (`/workspace`)"),
        "{}",
        refused.text()
    );
    assert!(second.requests_from_agent("fs/read_text_file").is_empty());
}

#[tokio::test]
async fn workspace_says_what_is_missing() {
    let client = client().connect(Workspace).await.unwrap();
    let session = client.new_session().await.unwrap();
    let found = session.prompt("find NOTES.md").await.unwrap();
    assert_eq!(
        found.text(),
        "There is no `/workspace/NOTES.md`.\nThere is no `/shared/lib/NOTES.md`."
    );
    assert_eq!(
        session.prompt("read nope.txt").await.unwrap().text(),
        "There is no `nope.txt`."
    );
    assert_eq!(
        session.prompt("what?").await.unwrap().text(),
        "Say `roots`, `find NAME`, `read PATH` or `append PATH TEXT`."
    );
}
