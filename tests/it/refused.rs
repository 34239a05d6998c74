//! A request the editor refuses: editors refuse requests they advertised (acpx answers
//! `terminal/create` with an error unless the user approved terminal commands). The author
//! gets `acp::Error::Refused` to match, naming the method and what the editor said; the
//! `shell` example turns it into a message and a normal end of turn.

use acp::schema::ToolCallStatus;
use acp::testing::{TerminalStub, TestClient};
use acp::{Prompt, Session, StopReason};

// The example, loaded once for the crate by `examples`.
use crate::examples::shell;

#[tokio::test]
async fn shell_tells_the_user_when_the_editor_refuses_the_terminal() {
    let client = TestClient::builder()
        .terminal(TerminalStub::new().refuse())
        .connect(shell::Shell)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("git status").await.unwrap();
    assert_eq!(
        turn.stop_reason(),
        Some(StopReason::EndTurn),
        "{:?}",
        turn.answer()
    );
    let text = turn.text();
    assert!(text.starts_with("The editor would not run it"), "{text}");
    // What the editor said reaches the user (acpx puts it in `data.details`).
    assert!(
        text.contains("Permission denied for terminal/create"),
        "{text}"
    );
    assert_eq!(client.requests_from_agent("terminal/create").len(), 1);
    assert!(client.terminals_created().is_empty());
    assert_eq!(turn.tool_calls()[0].status(), Some(ToolCallStatus::Failed));
}

/// Runs `git push` in the editor's terminal: falls back on a refusal when the prompt is
/// "match", propagates every error with `?` otherwise.
#[derive(Default)]
struct Pusher;

#[acp::agent(name = "pusher")]
impl Pusher {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let created = cx.terminal().create("git", ["push"]).await;
        if prompt.text() != "match" {
            created?;
            return Ok(StopReason::EndTurn);
        }
        match created {
            Ok(_) => cx.message("created").await?,
            Err(acp::Error::Refused {
                method,
                code,
                message,
                data,
            }) => {
                let data = data.map_or_else(String::new, |d| d.to_string());
                cx.message(format!("{method}|{code}|{message}|{data}"))
                    .await?
            }
            Err(e) => return Err(e),
        }
        Ok(StopReason::EndTurn)
    }
}

#[tokio::test]
async fn a_refused_request_is_an_error_the_author_matches_with_what_the_editor_said() {
    let client = TestClient::builder()
        .terminal(TerminalStub::new())
        .hold("terminal/create")
        .connect(Pusher)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let (turn, ()) = tokio::join!(session.prompt("match"), async {
        let held = client.next_request("terminal/create").await.unwrap();
        assert_eq!(held.params()["command"], "git");
        held.respond_error(-32000, "terminals are disabled in this workspace");
    });
    let turn = turn.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert_eq!(
        turn.text(),
        "terminal/create|-32000|terminals are disabled in this workspace|"
    );

    // The stub's refusal is acpx's, details included.
    let client = TestClient::builder()
        .terminal(TerminalStub::new().refuse())
        .connect(Pusher)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("match").await.unwrap();
    assert_eq!(
        turn.text(),
        r#"terminal/create|-32603|Internal error|{"details":"Permission denied for terminal/create"}"#
    );
}

#[tokio::test]
async fn a_refusal_left_unmatched_fails_the_turn_naming_it_with_our_own_code() {
    let client = TestClient::builder()
        .terminal(TerminalStub::new())
        .hold("terminal/create")
        .connect(Pusher)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    let (turn, ()) = tokio::join!(session.prompt("propagate"), async {
        let held = client.next_request("terminal/create").await.unwrap();
        held.respond_error(-32601, "Method not found");
    });
    let turn = turn.unwrap();
    // The editor's -32601 must not make `session/prompt` look like a missing method.
    assert_eq!(turn.error_code(), Some(-32603));
    let message = turn.answer().unwrap_err().to_string();
    assert!(
        message.contains("the client refused `terminal/create`: Method not found")
            && message.contains("-32601"),
        "{message}"
    );
}
