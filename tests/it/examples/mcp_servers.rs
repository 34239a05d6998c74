//! The `mcp` example against a real MCP server, the official
//! `@modelcontextprotocol/server-everything` (over stdio; `npm ci` in tests/mcp on first use):
//! `tools` lists the server's tools beside the agent's own, `call NAME JSON` runs one through
//! the tool-call lifecycle and shows its result, `status` reports the servers. (tests/it/mcp.rs
//! covers the runtime's MCP client at length, over every transport.)

use std::path::PathBuf;
use std::time::Duration;

use acp::schema::ToolCallStatus::{Completed, InProgress, Pending};
use acp::schema::{McpServer, McpServerStdio, ToolCallContent};
use acp::testing::TestClient;

use super::mcp::McpAgent;
use super::support::everything;

/// The client, in an existing directory (the servers start in the session's cwd).
async fn client() -> TestClient {
    let cwd = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    TestClient::builder()
        .cwd(cwd)
        .deadline(Duration::from_secs(30))
        .connect(McpAgent)
        .await
        .unwrap()
}

/// A tag for the servers of one test (in their env).
fn tag(test: &str) -> String {
    format!("examples-{test}-{}", std::process::id())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_lists_the_servers_tools_after_its_own() {
    let client = client().await;
    let session = client
        .new_session_with_mcp(vec![everything("everything", &tag("tools"))])
        .await
        .unwrap();
    let tools = session.prompt("tools").await.unwrap().text();
    let names: Vec<&str> = tools.lines().collect();
    assert_eq!(names[0], "say", "the agent's own tool first: {names:?}");
    for expected in ["echo", "get-sum", "get-env", "get-tiny-image"] {
        assert!(names.contains(&expected), "{expected} in {names:?}");
    }
    drop(session);
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_calls_a_server_tool_by_name_and_shows_its_result() {
    let client = client().await;
    let tag = tag("call");
    let session = client
        .new_session_with_mcp(vec![everything("everything", &tag)])
        .await
        .unwrap();
    let turn = session
        .prompt(r#"call echo {"message": "hello mcp"}"#)
        .await
        .unwrap();
    assert_eq!(turn.text(), "Echo: hello mcp");
    let calls = turn.tool_calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].title, "Echo Tool");
    assert_eq!(calls[0].statuses, [Pending, InProgress, Completed]);
    assert_eq!(
        calls[0].raw_input,
        Some(serde_json::json!({"message": "hello mcp"}))
    );
    assert!(
        matches!(&calls[0].content[..], [ToolCallContent::Content(_)]),
        "{:?}",
        calls[0].content
    );
    // The server's answer is what the user sees: here, its env as the runtime passed it.
    let env = session.prompt("call get-env {}").await.unwrap().text();
    assert!(env.contains(&tag), "{env}");
    let sum = session
        .prompt(r#"call get-sum {"a": 20, "b": 22}"#)
        .await
        .unwrap();
    assert!(sum.text().contains("42"), "{}", sum.text());

    // What a model would get back to retry with, shown to the user here.
    let bad = session.prompt("call echo {oops").await.unwrap();
    assert!(
        bad.text().starts_with("error: the arguments are not JSON"),
        "{}",
        bad.text()
    );
    assert!(bad.tool_calls().is_empty());
    let unknown = session.prompt("call no-such-tool {}").await.unwrap();
    assert!(
        unknown.text().starts_with("error: ") && unknown.text().contains("no-such-tool"),
        "{}",
        unknown.text()
    );
    drop(session);
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_reports_each_server_connected_or_why_not() {
    let client = client().await;
    let broken = McpServer::Stdio(McpServerStdio::new(
        "broken",
        "/nonexistent/acp-test-mcp-server",
    ));
    let session = client
        .new_session_with_mcp(vec![everything("everything", &tag("status")), broken])
        .await
        .unwrap();
    let status = session.prompt("status").await.unwrap().text();
    let lines: Vec<&str> = status.lines().collect();
    assert_eq!(lines.len(), 2, "{status}");
    assert!(
        lines[0].starts_with("everything: connected (") && lines[0].ends_with(" tools)"),
        "{status}"
    );
    assert!(
        lines[1].starts_with("broken: failed: could not start"),
        "{status}"
    );
    drop(session);
    client.close().await.unwrap();
}
