//! The connection's framing and limits: a line over the limit (skipped, answered, the
//! connection going on), the limit configured, a long line under it, a last line without its
//! newline; the requests in flight, beyond which nothing more is read.

use super::*;

#[tokio::test(start_paused = true)]
async fn an_oversized_line_is_rejected_and_the_connection_goes_on() {
    within(async {
        let c = client(Probe::default()).await;
        // One line just over the 64 MiB limit.
        c.send(json!("x".repeat(64 * 1024 * 1024 + 16)));
        let s = c.new_session().await.unwrap();
        let rejected = c
            .transcript()
            .into_iter()
            .find(|f| f.direction == Direction::FromAgent && f.message["error"]["code"] == -32700)
            .expect("the long line was answered");
        assert!(
            rejected.message["error"]["message"]
                .as_str()
                .unwrap()
                .contains("longer than"),
            "{}",
            rejected.message
        );
        assert_eq!(s.prompt("after").await.unwrap().text(), "after");
        // The whole line was skipped: one error for it, nothing parsed from its remains.
        let errors = c
            .transcript()
            .iter()
            .filter(|f| f.direction == Direction::FromAgent && f.message.get("error").is_some())
            .count();
        assert_eq!(errors, 1, "one error for one oversized line");
    })
    .await;
}

/// A client for an agent served by `server` (its limits set by the test) over an in-memory
/// pipe.
async fn attached<A: Agent>(
    server: acp_core::Server<A>,
    builder: acp_core::testing::TestClientBuilder,
) -> (TestClient, tokio::task::JoinHandle<Result<()>>) {
    let (client_io, agent_io) = tokio::io::duplex(1 << 16);
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    let (client_read, client_write) = tokio::io::split(client_io);
    let served = tokio::spawn(server.serve(agent_read, agent_write));
    let client = builder.attach(client_read, client_write).await.unwrap();
    (client, served)
}

#[tokio::test(start_paused = true)]
async fn the_line_limit_is_configurable() {
    within(async {
        let server = acp_core::Server::new(Probe::default()).max_line_bytes(1024);
        let (c, served) = attached(server, TestClient::builder()).await;
        c.send(json!("x".repeat(2000)));
        let s = c.new_session().await.unwrap();
        let rejected = c
            .transcript()
            .into_iter()
            .find(|f| f.direction == Direction::FromAgent && f.message["error"]["code"] == -32700)
            .expect("the long line was answered");
        let message = rejected.message["error"]["message"].as_str().unwrap();
        assert!(message.contains("1024 bytes"), "{message}");
        assert_eq!(s.prompt("after").await.unwrap().text(), "after");
        c.close().await.unwrap();
        served.await.unwrap().unwrap();
    })
    .await;
}

/// An agent whose `session/new` for the cwd `/slow` waits until the test opens the gate.
struct Gated {
    gate: Arc<tokio::sync::Notify>,
}

impl Agent for Gated {
    async fn new_session(&self, cx: &Session) -> Result<SessionSetup> {
        if cx.cwd() == std::path::Path::new("/slow") {
            self.gate.notified().await;
        }
        Ok(SessionSetup::default())
    }

    async fn prompt(&self, cx: &Session, prompt: Prompt) -> Result<StopReason> {
        cx.message(prompt.text()).await?;
        Ok(StopReason::EndTurn)
    }
}

/// With at most 2 requests in flight, two handlers that do not finish leave the next request
/// unread until one of them does.
#[tokio::test(start_paused = true)]
async fn beyond_the_requests_in_flight_nothing_more_is_read() {
    within(async {
        let gate = Arc::new(tokio::sync::Notify::new());
        let server = acp_core::Server::new(Gated { gate: gate.clone() }).max_in_flight(2);
        let (c, served) = attached(server, TestClient::builder()).await;
        let slow = json!({"cwd": "/slow", "mcpServers": []});
        let (a, b) = (
            c.send_request("session/new", slow.clone()),
            c.send_request("session/new", slow),
        );
        let third = c.send_request("session/new", json!({"cwd": "/fast", "mcpServers": []}));
        // Long enough (on the paused clock) for the third to be answered if it were read.
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(
            !c.transcript().iter().any(|f| f.is_response_to(&third)),
            "a third request was read while two were in flight"
        );
        gate.notify_one();
        for id in [&a, &b, &third] {
            if id == &b {
                gate.notify_one();
            }
            assert!(
                c.wait_for_response(id)
                    .await
                    .unwrap()
                    .get("result")
                    .is_some()
            );
        }
        c.close().await.unwrap();
        served.await.unwrap().unwrap();
    })
    .await;
}

/// Running turns (bounded by sessions) and handlers waiting on the client do not count as
/// in flight: with a bound of 1, a turn waiting on the user and a turn waiting for its cancel
/// leave the client free to open sessions and to cancel.
#[tokio::test(start_paused = true)]
async fn turns_and_handlers_waiting_on_the_client_do_not_count_as_in_flight() {
    within(async {
        let server = acp_core::Server::new(Probe::default()).max_in_flight(1);
        let builder = TestClient::builder().hold("session/request_permission");
        let (c, served) = attached(server, builder).await;
        let (s1, s2) = (
            c.new_session().await.unwrap(),
            c.new_session().await.unwrap(),
        );
        let asking = s1.start_prompt("ask");
        let held = c.next_request("session/request_permission").await.unwrap();
        let sleeping = s2.start_prompt("sleep");
        s2.wait_for_update("sleeping", |u| {
            matches!(u, SessionUpdate::AgentMessageChunk(_))
        })
        .await
        .unwrap();
        let s3 = c.new_session().await.unwrap();
        assert_eq!(s3.prompt("third").await.unwrap().text(), "third");
        s2.cancel();
        let answer = c.wait_for_response(&sleeping).await.unwrap();
        assert_eq!(answer["result"]["stopReason"], "cancelled");
        held.select("yes");
        let answer = c.wait_for_response(&asking).await.unwrap();
        assert_eq!(answer["result"]["stopReason"], "end_turn");
        c.close().await.unwrap();
        served.await.unwrap().unwrap();
    })
    .await;
}

/// Counts the drops of the per-session value of `session/close`'s test.

#[tokio::test(start_paused = true)]
async fn a_long_line_under_the_limit_is_a_message_like_any_other() {
    let c = client(Probe::default()).await;
    let s = c.new_session().await.unwrap();
    // 2 MiB of text in one prompt: far under the 64 MiB limit.
    let text = "y".repeat(2 * 1024 * 1024);
    let turn = s.prompt(&text).await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert_eq!(turn.text().len(), text.len());
}

#[tokio::test(start_paused = true)]
async fn a_last_message_without_its_newline_is_still_handled() {
    let c = client(Probe::default()).await;
    // The client's last line ends at end of file instead of a newline.
    c.send_raw(r#"{"jsonrpc":"2.0","id":"last","method":"session/new","params":{"cwd":"/w","mcpServers":[]}}"#);
    c.close_input();
    let answer = c.wait_for_response(&json!("last")).await.unwrap();
    assert!(answer["result"]["sessionId"].is_string(), "{answer}");
    c.close().await.unwrap();
}
