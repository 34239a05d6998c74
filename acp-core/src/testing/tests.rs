//! Unit tests of the client's own machinery (read cursor, held requests, malformed-output
//! checks) against an agent played by hand at the other end of an in-memory pipe.

use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf, split,
};

use super::TestClient;
use super::builder::TestClientBuilder;

/// The agent's end of the pipe: the lines the client writes, and the agent's output.
struct HandAgent {
    input: Lines<BufReader<ReadHalf<DuplexStream>>>,
    output: WriteHalf<DuplexStream>,
}

impl HandAgent {
    async fn read(&mut self) -> Value {
        let line = self.input.next_line().await.unwrap().unwrap();
        serde_json::from_str(&line).unwrap()
    }

    async fn write(&mut self, raw: &str) {
        self.output.write_all(raw.as_bytes()).await.unwrap();
    }
}

async fn attached(builder: TestClientBuilder) -> (TestClient, HandAgent) {
    let (client_io, agent_io) = tokio::io::duplex(1 << 16);
    let (client_read, client_write) = split(client_io);
    let (agent_read, agent_write) = split(agent_io);
    let client = builder
        .skip_initialize()
        .attach(client_read, client_write)
        .await
        .unwrap();
    let agent = HandAgent {
        input: BufReader::new(agent_read).lines(),
        output: agent_write,
    };
    (client, agent)
}

#[tokio::test(start_paused = true)]
async fn an_error_answer_with_a_null_id_is_legitimate_but_a_crlf_line_is_not() {
    let (client, mut agent) = attached(TestClient::builder()).await;
    let parse_error = json!({"jsonrpc": "2.0", "id": null,
        "error": {"code": -32700, "message": "Parse error"}});
    agent.write(&format!("{parse_error}\n")).await;
    assert_eq!(client.next_frame().await.unwrap().message, parse_error);
    assert!(client.problems().is_empty(), "{:?}", client.problems());

    agent
        .write("{\"jsonrpc\": \"2.0\", \"method\": \"x\"}\r\n")
        .await;
    let failed = client.next_frame().await.unwrap_err().to_string();
    assert!(failed.contains("\\r\\n instead of a bare \\n"), "{failed}");
}

#[tokio::test(start_paused = true)]
async fn the_cursor_skips_answers_to_own_requests_but_not_to_sent_ones() {
    let (client, mut agent) = attached(TestClient::builder()).await;
    let (answer, ()) = tokio::join!(client.request("ping", json!({})), async {
        let ping = agent.read().await;
        agent
            .write("{\"jsonrpc\": \"2.0\", \"method\": \"note\"}\n")
            .await;
        let answer = json!({"jsonrpc": "2.0", "id": ping["id"], "result": {"pong": 1}});
        agent.write(&format!("{answer}\n")).await;
    });
    assert_eq!(answer.unwrap(), json!({"pong": 1}));
    assert_eq!(client.next_frame().await.unwrap().method(), Some("note"));
    assert!(client.take_unread().is_empty(), "the answer was taken");

    let id = client.send_request("ping", json!({}));
    let ping = agent.read().await;
    assert_eq!(ping["id"], id);
    agent
        .write(&format!(
            "{}\n",
            json!({"jsonrpc": "2.0", "id": id, "result": {}})
        ))
        .await;
    assert!(client.next_frame().await.unwrap().is_response_to(&id));
    // Nothing else comes: on the paused clock the deadline passes at once.
    let waited = client.next_frame().await.unwrap_err().to_string();
    assert!(waited.contains("the agent's next frame"), "{waited}");
}

#[tokio::test(start_paused = true)]
async fn held_requests_are_handed_over_in_order_and_answered_by_hand() {
    let builder = TestClient::builder().hold("fs/read_text_file");
    let (client, mut agent) = attached(builder).await;
    for id in [7, 8] {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "fs/read_text_file",
            "params": {"path": "/a"}});
        agent.write(&format!("{request}\n")).await;
    }
    let first = client.next_request("fs/read_text_file").await.unwrap();
    let second = client.next_request("fs/read_text_file").await.unwrap();
    assert_eq!(
        (first.id(), first.params()),
        (&json!(7), &json!({"path": "/a"}))
    );
    second.respond_error(-32002, "Resource not found");
    first.respond(json!({"content": "alpha"}));
    assert_eq!(
        agent.read().await,
        json!({"jsonrpc": "2.0", "id": 8, "error": {"code": -32002, "message": "Resource not found"}})
    );
    assert_eq!(
        agent.read().await,
        json!({"jsonrpc": "2.0", "id": 7, "result": {"content": "alpha"}})
    );
    let refused = client.next_request("session/request_permission").await;
    assert!(refused.unwrap_err().to_string().contains("hold"));
}

/// A session `s1` opened on a hand-played agent.
async fn session_on<'a>(client: &'a TestClient, agent: &mut HandAgent) -> super::TestSession<'a> {
    let (session, ()) = tokio::join!(client.new_session(), async {
        let new = agent.read().await;
        let answer = json!({"jsonrpc": "2.0", "id": new["id"], "result": {"sessionId": "s1"}});
        agent.write(&format!("{answer}\n")).await;
    });
    session.unwrap()
}

fn chunk(session: &str, text: &str) -> String {
    let update = json!({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": session,
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}},
    }});
    format!("{update}\n")
}

#[tokio::test(start_paused = true)]
async fn a_started_prompt_finishes_as_the_same_turn_an_awaited_one_gives() {
    let (client, mut agent) = attached(TestClient::builder()).await;
    let session = session_on(&client, &mut agent).await;
    let id = session.start_prompt("hi");
    let prompt = agent.read().await;
    assert_eq!(prompt["id"], id);
    agent.write(&chunk("s1", "a")).await;
    // The test follows the turn frame by frame for a while…
    let first = client.next_frame().await.unwrap();
    assert!(first.session_update().is_some());
    agent.write(&chunk("other", "not ours")).await;
    agent.write(&chunk("s1", "b")).await;
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": "end_turn"}});
    agent.write(&format!("{answer}\n")).await;
    agent.write(&chunk("s1", "after the answer")).await;
    // …then sums it up: every update of the session before the answer, read or not.
    let turn = session.finish(&id).await.unwrap();
    assert_eq!(turn.stop_reason(), Some(crate::schema::StopReason::EndTurn));
    assert_eq!(turn.text(), "ab");
    assert!(turn.frames()[0].method() == Some("session/prompt"));
    // The answer was taken; the other frames are still unread.
    let unread = client.take_unread();
    assert_eq!(unread.len(), 3, "{unread:?}");
    assert!(unread.iter().all(|f| !f.is_response_to(&id)), "{unread:?}");

    // An error answer is the turn's error, as for `prompt`.
    let id = session.start_prompt("again");
    agent.read().await;
    let failed = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "boom"}});
    agent.write(&format!("{failed}\n")).await;
    let turn = session.finish(&id).await.unwrap();
    assert_eq!(turn.error_code(), Some(-32603));
    assert_eq!(turn.text(), "");
}

/// Runs the prompt as a command line in the client's terminal and says what came of it.
struct Runs;

impl crate::Agent for Runs {
    async fn prompt(
        &self,
        cx: &crate::Session,
        prompt: crate::Prompt,
    ) -> crate::Result<crate::schema::StopReason> {
        let text = prompt.text();
        let mut words = text.split_whitespace();
        let program = words.next().unwrap_or_default().to_owned();
        let reply = match cx.terminal().create(program, words).await {
            Ok(terminal) => {
                let status = terminal.wait_for_exit().await?;
                let output = terminal.output().await?.output;
                format!("{output} ({:?})", status.exit_code)
            }
            Err(crate::Error::Refused { .. }) => "refused".to_owned(),
            Err(e) => return Err(e),
        };
        cx.message(reply).await?;
        Ok(crate::schema::StopReason::EndTurn)
    }
}

#[tokio::test]
async fn a_command_lines_stub_serves_that_line_only_and_a_programs_every_line_of_it() {
    use super::TerminalStub;
    let stub = TerminalStub::new()
        .output("default")
        .command("git", TerminalStub::new().output("any git").exit_code(1))
        .command("git  status", TerminalStub::new().output("clean"))
        .command("git push", TerminalStub::new().refuse());
    let client = TestClient::builder()
        .terminal(stub)
        .connect(Runs)
        .await
        .unwrap();
    let session = client.new_session().await.unwrap();
    for (line, expected) in [
        ("ls -la", "default (Some(0))"),
        ("git log", "any git (Some(1))"),
        ("git", "any git (Some(1))"),
        ("git status", "clean (Some(0))"),
        ("git status -s", "any git (Some(1))"),
        ("git push", "refused"),
        ("git push --force", "any git (Some(1))"),
    ] {
        let turn = session.prompt(line).await.unwrap();
        assert_eq!(turn.text(), expected, "{line}");
    }
    // A refused command line created no terminal.
    let created = client.terminals_created();
    assert_eq!(created.len(), 6, "{created:?}");
    assert!(!created.iter().any(|(p, a)| p == "git" && a == &["push"]));
}

#[tokio::test]
async fn an_agent_binary_that_does_not_start_is_named_with_the_io_errors_kind() {
    let missing = "/nonexistent/acp-test-agent";
    let e = TestClient::builder()
        .spawn(std::process::Command::new(missing))
        .await
        .unwrap_err();
    assert!(e.is_not_found(), "{e:?}");
    let shown = e.to_string();
    assert!(
        shown.starts_with(
            "I/O error (NotFound): starting the agent `/nonexistent/acp-test-agent`: "
        ),
        "{shown}"
    );
}
