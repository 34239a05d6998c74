//! The echo example agent driven over real pipes by `acp::testing::TestClient`
//! (`TestClient::spawn`, on the real-time clock): JSON-RPC error handling, request ordering
//! rules, cancellation and shutdown. Each test names the behaviour it guarantees.
//!
//! Raw input goes out with `send_raw`/`send`; `next_frame` reads the agent's frames in order,
//! once each (the answers to the client's own `request`s excepted), so "the very next frame
//! is X" is asserted as is. Every test ends with `finish()`, which also requires a clean exit
//! (status 0) on stdin EOF and that stdout carried nothing but LF-terminated JSON-RPC 2.0
//! lines (the client fails on anything else; answers with `id: null` are legitimate).

use crate::support;

use std::process::Command;
use std::time::{Duration, Instant};

use acp::testing::{Frame, MemoryFs, TestClient, TestClientBuilder};
use serde_json::{Value, json};

fn echo_command() -> Command {
    let mut cmd = Command::new(support::echo_binary());
    cmd.env("RUST_BACKTRACE", "1");
    cmd
}

async fn connect(builder: TestClientBuilder) -> TestClient {
    builder
        .spawn(echo_command())
        .await
        .unwrap_or_else(|e| panic!("starting the echo agent: {e}"))
}

/// The echo agent, not initialized yet.
async fn spawn() -> TestClient {
    connect(TestClient::builder().skip_initialize()).await
}

/// The echo agent after `initialize` (with fs capabilities advertised).
async fn initialized() -> TestClient {
    connect(TestClient::builder().fs(MemoryFs::new())).await
}

/// The echo agent after `initialize`, with one session; returns the client and the session id.
async fn with_session() -> (TestClient, String) {
    let c = initialized().await;
    let sid = new_session(&c).await;
    (c, sid)
}

async fn new_session(c: &TestClient) -> String {
    match c.new_session().await {
        Ok(session) => session.id().0.to_string(),
        Err(e) => panic!("session/new failed: {e}\n{}", c.describe()),
    }
}

/// Prove the connection still works: a fresh `session/new` gets a result.
async fn assert_still_usable(c: &TestClient) {
    new_session(c).await;
}

/// Close stdin, require a clean exit (status 0) and stdout with only JSON-RPC 2.0 lines.
async fn finish(c: TestClient) {
    let context = c.describe();
    if let Err(e) = c.close().await {
        panic!("{e}\n{context}");
    }
}

/// The agent's next frame (in order, each once).
async fn next_frame(c: &TestClient) -> Frame {
    c.next_frame()
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", c.describe()))
}

/// The response (result or error) to request `id`.
async fn expect_response(c: &TestClient, id: &Value) -> Value {
    c.wait_for_response(id)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", c.describe()))
}

/// Start `session/prompt` with a single text block; returns the request id.
fn start_prompt(c: &TestClient, session_id: &str, text: &str) -> Value {
    c.send_request(
        "session/prompt",
        json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}),
    )
}

/// Wait for an agent_message_chunk with exactly `text` for `session_id`.
async fn expect_chunk(c: &TestClient, session_id: &str, text: &str) {
    let found = c
        .wait_for(&format!("agent_message_chunk {text:?}"), |f| {
            let v = &f.message;
            v["method"] == "session/update"
                && v["params"]["sessionId"] == session_id
                && v["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
                && v["params"]["update"]["content"]["text"] == text
        })
        .await;
    if let Err(e) = found {
        panic!("{e}\n{}", c.describe());
    }
}

/// Assert that the very next frame is the response to `id` (nothing was sent in between).
async fn assert_next_frame_is_response_to(c: &TestClient, id: &Value, why: &str) {
    let f = next_frame(c).await;
    assert!(
        f.is_response_to(id),
        "{why}: expected the response to id {id} next, got {}\n{}",
        f.message,
        c.describe()
    );
}

/// The code of an error answer.
fn error_code(res: &acp::Result<Value>) -> Option<i32> {
    match res {
        Err(acp::Error::Rpc { code, .. }) => Some(*code),
        _ => None,
    }
}

/// The message of an error answer (empty for anything else).
fn error_message(res: &acp::Result<Value>) -> String {
    match res {
        Err(acp::Error::Rpc { message, .. }) => message.clone(),
        _ => String::new(),
    }
}

/// Send one raw line and return the next frame, which must be an error response.
async fn send_bad_line(c: &TestClient, line: &str) -> Value {
    c.send_raw(format!("{line}\n"));
    let v = next_frame(c).await.message;
    assert!(
        v.get("error").is_some() && v.get("method").is_none(),
        "expected an error response to {line:?}, got {v}\n{}",
        c.describe()
    );
    v
}

fn assert_error(c: &TestClient, v: &Value, code: i64, id: &Value, input: &str) {
    assert_eq!(
        v.pointer("/error/code").and_then(Value::as_i64),
        Some(code),
        "error code for {input:?}: got {v}\n{}",
        c.describe()
    );
    assert_eq!(
        &v["id"],
        id,
        "error response id for {input:?}: got {v}\n{}",
        c.describe()
    );
    assert_eq!(
        v["jsonrpc"], "2.0",
        "error response to {input:?} lacks jsonrpc 2.0: {v}"
    );
    assert!(
        v.pointer("/error/message").is_some_and(Value::is_string),
        "error response to {input:?} has no message string: {v}"
    );
}

// ---------------------------------------------------------------------------
// Malformed input

#[tokio::test]
async fn non_json_line_gets_parse_error_with_null_id_and_connection_survives() {
    let c = initialized().await;
    for line in [
        "this is not json",
        r#"{"jsonrpc": "2.0", "id": 1, "method": "session/new""#,
        "{'single': 'quotes'}",
        r#"{"jsonrpc":"2.0","id":2,"method":"initialize",}"#,
    ] {
        let v = send_bad_line(&c, line).await;
        assert_error(&c, &v, -32700, &Value::Null, line);
        assert_still_usable(&c).await;
    }
    finish(c).await;
}

#[tokio::test]
async fn parse_error_before_initialize_still_allows_initialize() {
    let c = spawn().await;
    let v = send_bad_line(&c, "garbage{").await;
    assert_error(&c, &v, -32700, &Value::Null, "garbage{");
    let res = c.request("initialize", json!({"protocolVersion": 1})).await;
    assert!(res.is_ok(), "initialize after a parse error: {res:?}");
    finish(c).await;
}

#[tokio::test]
async fn missing_or_wrong_jsonrpc_version_is_invalid_request_with_id_echoed() {
    let c = initialized().await;
    let cases = [
        (
            r#"{"id": 41, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}"#,
            json!(41),
        ),
        (
            r#"{"jsonrpc": "1.0", "id": "req-42", "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}"#,
            json!("req-42"),
        ),
        (
            r#"{"jsonrpc": 2.0, "id": 43, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}"#,
            json!(43),
        ),
    ];
    for (line, id) in cases {
        let v = send_bad_line(&c, line).await;
        assert_error(&c, &v, -32600, &id, line);
        assert_still_usable(&c).await;
    }
    finish(c).await;
}

#[tokio::test]
async fn non_string_method_is_invalid_request_with_id_echoed() {
    let c = initialized().await;
    for (line, id) in [
        (r#"{"jsonrpc": "2.0", "id": 51, "method": 42}"#, json!(51)),
        (
            r#"{"jsonrpc": "2.0", "id": "m", "method": null}"#,
            json!("m"),
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 53, "method": ["session/new"]}"#,
            json!(53),
        ),
    ] {
        let v = send_bad_line(&c, line).await;
        assert_error(&c, &v, -32600, &id, line);
        assert_still_usable(&c).await;
    }
    finish(c).await;
}

#[tokio::test]
async fn batch_array_is_one_invalid_request_with_null_id_and_is_not_executed() {
    let c = spawn().await;
    let batch = r#"[{"jsonrpc": "2.0", "id": 61, "method": "initialize", "params": {"protocolVersion": 1}}]"#;
    let v = send_bad_line(&c, batch).await;
    assert_error(&c, &v, -32600, &Value::Null, batch);
    // The batch's initialize must not have run: nothing else arrives before the next answer.
    let v = send_bad_line(&c, "[]").await;
    assert_error(&c, &v, -32600, &Value::Null, "[]");
    let res = c.request("initialize", json!({"protocolVersion": 1})).await;
    assert!(
        res.is_ok(),
        "initialize after a batch: {res:?}\n{}",
        c.describe()
    );
    assert_still_usable(&c).await;
    finish(c).await;
}

#[tokio::test]
async fn json_scalar_is_invalid_request_with_null_id() {
    let c = initialized().await;
    for line in ["42", r#""session/new""#, "null", "true"] {
        let v = send_bad_line(&c, line).await;
        assert_error(&c, &v, -32600, &Value::Null, line);
        assert_still_usable(&c).await;
    }
    finish(c).await;
}

#[tokio::test]
async fn object_or_array_id_is_invalid_request_with_null_id() {
    let c = initialized().await;
    for line in [
        r#"{"jsonrpc": "2.0", "id": {"n": 1}, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}"#,
        r#"{"jsonrpc": "2.0", "id": [1], "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}"#,
    ] {
        let v = send_bad_line(&c, line).await;
        assert_error(&c, &v, -32600, &Value::Null, line);
        assert_still_usable(&c).await;
    }
    finish(c).await;
}

#[tokio::test]
async fn response_ids_are_echoed_exactly() {
    let c = spawn().await;
    // The Python SDK numbers its requests from 0.
    c.send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}),
    );
    let v = next_frame(&c).await.message;
    assert!(
        v["id"] == json!(0) && v.get("result").is_some(),
        "initialize with id 0: {v}"
    );
    for id in [
        json!("abc-1"),
        json!(""),
        json!(-7),
        json!(9_007_199_254_740_991_i64),
    ] {
        c.send(json!({"jsonrpc": "2.0", "id": id, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}));
        let v = next_frame(&c).await.message;
        assert_eq!(
            v["id"],
            id,
            "response id must echo {id} exactly: {v}\n{}",
            c.describe()
        );
        assert!(v.get("result").is_some(), "session/new with id {id}: {v}");
    }
    finish(c).await;
}

// ---------------------------------------------------------------------------
// Unknown methods and notifications

#[tokio::test]
async fn unknown_method_is_method_not_found() {
    let c = initialized().await;
    for method in ["session/does_not_exist", "fs/read_text_file", "nonsense"] {
        let res = c.request(method, json!({})).await;
        assert_eq!(
            error_code(&res),
            Some(-32601),
            "{method}: {res:?}\n{}",
            c.describe()
        );
        assert_still_usable(&c).await;
    }
    finish(c).await;
}

#[tokio::test]
async fn unknown_extension_request_is_method_not_found() {
    let c = initialized().await;
    for method in ["_acme/do_thing", "_zed/unknown"] {
        let res = c.request(method, json!({"x": 1})).await;
        assert_eq!(
            error_code(&res),
            Some(-32601),
            "{method}: {res:?}\n{}",
            c.describe()
        );
    }
    assert_still_usable(&c).await;
    finish(c).await;
}

#[tokio::test]
async fn unknown_notifications_are_ignored() {
    let c = initialized().await;
    c.notify("session/does_not_exist", json!({"a": 1}));
    c.notify("_acme/ping", json!({}));
    c.send_raw(&b"{\"jsonrpc\": \"2.0\", \"method\": \"_acme/no_params\"}\n"[..]);
    let id = c.send_request("session/new", json!({"cwd": "/tmp", "mcpServers": []}));
    assert_next_frame_is_response_to(&c, &id, "unknown notifications must not be answered").await;
    finish(c).await;
}

#[tokio::test]
async fn notifications_are_never_answered_even_when_invalid() {
    let c = initialized().await;
    // Bad params, unknown session, and a request method sent as a notification.
    c.notify("session/cancel", json!({}));
    c.notify("session/cancel", json!({"sessionId": 17}));
    c.notify("session/cancel", json!({"sessionId": "no-such-session"}));
    c.notify("session/new", json!({"cwd": "/tmp", "mcpServers": []}));
    c.notify("initialize", json!({"protocolVersion": "x"}));
    let id = c.send_request("session/new", json!({"cwd": "/tmp", "mcpServers": []}));
    assert_next_frame_is_response_to(&c, &id, "notifications must never be answered").await;
    finish(c).await;
}

// ---------------------------------------------------------------------------
// Invalid params

/// Send each `(method, params, field)` case; every answer must be -32602 with `field` in its
/// message. All cases run before asserting, so one failure shows every offending case.
async fn check_invalid_params_cases(c: &TestClient, cases: &[(&str, Value, &str)]) {
    let mut problems = Vec::new();
    for (method, params, field) in cases {
        let res = c.request(method, params.clone()).await;
        if error_code(&res) != Some(-32602) {
            problems.push(format!(
                "{method} {params}: expected error -32602, got {res:?}"
            ));
        } else if !error_message(&res).replace(method, "").contains(field) {
            // (the method name is removed first: `session/prompt` must not count as naming `prompt`)
            problems.push(format!(
                "{method} {params}: the -32602 message should name `{field}`, got {:?}",
                error_message(&res)
            ));
        }
        assert_still_usable(c).await;
    }
    assert!(
        problems.is_empty(),
        "invalid params handling:\n  {}\n{}",
        problems.join("\n  "),
        c.describe()
    );
}

#[tokio::test]
async fn missing_params_field_is_invalid_params_naming_the_field() {
    let (c, sid) = with_session().await;
    check_invalid_params_cases(
        &c,
        &[
            ("session/new", json!({"mcpServers": []}), "cwd"),
            ("session/prompt", json!({"sessionId": sid}), "prompt"),
            (
                "session/prompt",
                json!({"prompt": [{"type": "text", "text": "hi"}]}),
                "sessionId",
            ),
        ],
    )
    .await;
    finish(c).await;
}

#[tokio::test]
async fn wrongly_typed_params_field_is_invalid_params_naming_the_field() {
    let (c, sid) = with_session().await;
    check_invalid_params_cases(
        &c,
        &[
            ("session/new", json!({"cwd": 5, "mcpServers": []}), "cwd"),
            (
                "session/new",
                json!({"cwd": "/tmp", "mcpServers": "none"}),
                "mcpServers",
            ),
            (
                "session/prompt",
                json!({"sessionId": sid, "prompt": "not a list"}),
                "prompt",
            ),
            (
                "session/prompt",
                json!({"sessionId": 7, "prompt": []}),
                "sessionId",
            ),
        ],
    )
    .await;
    finish(c).await;
}

#[tokio::test]
async fn initialize_with_bad_protocol_version_is_invalid_params_naming_it() {
    let c = spawn().await;
    let res = c
        .request("initialize", json!({"protocolVersion": "one"}))
        .await;
    assert_eq!(error_code(&res), Some(-32602), "{res:?}\n{}", c.describe());
    assert!(
        error_message(&res).contains("protocolVersion"),
        "the -32602 message should name protocolVersion: {res:?}"
    );
    let res = c.request("initialize", json!({"protocolVersion": 1})).await;
    assert!(res.is_ok(), "initialize after a bad one: {res:?}");
    finish(c).await;
}

#[tokio::test]
async fn array_params_are_invalid_params() {
    let c = initialized().await;
    let res = c.request("session/new", json!(["/tmp", []])).await;
    assert_eq!(error_code(&res), Some(-32602), "{res:?}\n{}", c.describe());
    assert_still_usable(&c).await;
    finish(c).await;
}

#[tokio::test]
async fn prompt_for_unknown_session_is_an_error_and_connection_survives() {
    let c = initialized().await;
    let res = c
        .request(
            "session/prompt",
            json!({"sessionId": "no-such-session", "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await;
    assert!(
        error_code(&res).is_some(),
        "prompt for an unknown session must fail: {res:?}\n{}",
        c.describe()
    );
    assert_still_usable(&c).await;
    finish(c).await;
}

// ---------------------------------------------------------------------------
// Initialization order

#[tokio::test]
async fn requests_before_initialize_are_rejected_mentioning_initialize() {
    let c = spawn().await;
    for (method, params) in [
        ("session/new", json!({"cwd": "/tmp", "mcpServers": []})),
        (
            "session/prompt",
            json!({"sessionId": "x", "prompt": [{"type": "text", "text": "hi"}]}),
        ),
    ] {
        let res = c.request(method, params).await;
        let code = error_code(&res);
        assert!(
            matches!(code, Some(-32600) | Some(-32099..=-32000)),
            "{method} before initialize should fail with -32600 or a -320xx server error: {res:?}\n{}",
            c.describe()
        );
        assert!(
            error_message(&res).to_lowercase().contains("initialize"),
            "the error for {method} before initialize should mention initialize: {res:?}"
        );
    }
    let res = c.request("initialize", json!({"protocolVersion": 1})).await;
    assert!(res.is_ok(), "initialize after rejected requests: {res:?}");
    assert_still_usable(&c).await;
    finish(c).await;
}

#[tokio::test]
async fn unknown_methods_before_initialize_are_method_not_found() {
    let c = spawn().await;
    // Unknown at all, an extension nobody declared, one echo does not advertise: -32601 as
    // after `initialize`, naming the method; a method echo answers stays -32600.
    for method in ["foo/bar", "_vendor/unknown", "session/set_mode"] {
        let res = c.request(method, json!({})).await;
        assert_eq!(error_code(&res), Some(-32601), "{method}: {res:?}");
        assert!(error_message(&res).contains(method), "{method}: {res:?}");
    }
    let res = c.request("session/list", json!({})).await;
    assert_eq!(error_code(&res), Some(-32600), "session/list: {res:?}");
    let res = c.request("initialize", json!({"protocolVersion": 1})).await;
    assert!(res.is_ok(), "initialize after refused requests: {res:?}");
    let res = c.request("foo/bar", json!({})).await;
    assert_eq!(error_code(&res), Some(-32601), "after initialize: {res:?}");
    assert_still_usable(&c).await;
    finish(c).await;
}

#[tokio::test]
async fn session_new_pipelined_right_after_initialize_succeeds() {
    let c = spawn().await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}});
    let new = json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}});
    // Both frames in a single write, before any answer could have been read.
    c.send_raw(format!("{init}\n{new}\n"));
    let r1 = expect_response(&c, &json!(1)).await;
    let r2 = expect_response(&c, &json!(2)).await;
    assert_eq!(
        r1.pointer("/result/protocolVersion"),
        Some(&json!(1)),
        "initialize: {r1}"
    );
    assert!(
        r2.pointer("/result/sessionId")
            .is_some_and(Value::is_string),
        "pipelined session/new must succeed: {r2}\n{}",
        c.describe()
    );
    finish(c).await;
}

// ---------------------------------------------------------------------------
// Prompt turns, cancellation, shutdown

#[tokio::test]
async fn second_prompt_while_turn_running_is_rejected() {
    let (c, sid) = with_session().await;
    let first = start_prompt(&c, &sid, "sleep");
    expect_chunk(&c, &sid, "sleeping").await;
    let second = start_prompt(&c, &sid, "stream 1");
    let res = expect_response(&c, &second).await;
    assert!(
        res.get("error").is_some(),
        "a second prompt on a busy session must get an error: {res}\n{}",
        c.describe()
    );
    c.notify("session/cancel", json!({"sessionId": sid}));
    let res = expect_response(&c, &first).await;
    assert_eq!(
        res.pointer("/result/stopReason"),
        Some(&json!("cancelled")),
        "{res}"
    );
    // The session takes a new turn afterwards.
    let id = start_prompt(&c, &sid, "stream 1");
    let res = expect_response(&c, &id).await;
    assert_eq!(
        res.pointer("/result/stopReason"),
        Some(&json!("end_turn")),
        "{res}\n{}",
        c.describe()
    );
    finish(c).await;
}

#[tokio::test]
async fn cancel_answers_cancelled_and_no_update_follows_the_answer() {
    let (c, sid) = with_session().await;
    let other = new_session(&c).await;
    let id = start_prompt(&c, &sid, "sleep");
    expect_chunk(&c, &sid, "sleeping").await;
    c.notify("session/cancel", json!({"sessionId": sid}));
    let res = expect_response(&c, &id).await;
    assert_eq!(
        res.pointer("/result/stopReason"),
        Some(&json!("cancelled")),
        "{res}\n{}",
        c.describe()
    );
    // Let a misbehaving agent leak, then run a full turn on another session as a barrier.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let barrier = start_prompt(&c, &other, "stream 3");
    expect_response(&c, &barrier).await;
    let log = c.transcript();
    let answer_pos = log
        .iter()
        .position(|f| f.is_response_to(&id))
        .expect("cancelled answer in the log");
    let late: Vec<&Value> = log[answer_pos + 1..]
        .iter()
        .map(|f| &f.message)
        .filter(|v| v["method"] == "session/update" && v["params"]["sessionId"] == sid.as_str())
        .collect();
    assert!(
        late.is_empty(),
        "session/update after the cancelled answer: {late:?}\n{}",
        c.describe()
    );
    finish(c).await;
}

#[tokio::test]
async fn cancel_for_an_idle_session_is_ignored() {
    let (c, sid) = with_session().await;
    c.notify("session/cancel", json!({"sessionId": sid}));
    let id = start_prompt(&c, &sid, "stream 2");
    let res = expect_response(&c, &id).await;
    assert_eq!(
        res.pointer("/result/stopReason"),
        Some(&json!("end_turn")),
        "{res}\n{}",
        c.describe()
    );
    finish(c).await;
}

/// The documented limit is 1 s; 3 s are allowed so a loaded 2-core CI box stays green.
#[tokio::test]
async fn stdin_eof_mid_turn_exits_zero_within_documented_1s_allowing_3s() {
    let (c, sid) = with_session().await;
    let _prompt = start_prompt(&c, &sid, "sleep");
    expect_chunk(&c, &sid, "sleeping").await;
    let context = c.describe();
    // `close` closes stdin, then waits (now at most 3 s) for exit status 0, the end of stdout,
    // and checks that stdout carried only JSON-RPC 2.0 lines.
    c.set_deadline(Duration::from_secs(3));
    let closed_at = Instant::now();
    let closed = c.close().await;
    let elapsed = closed_at.elapsed();
    if let Err(e) = closed {
        panic!(
            "{elapsed:?} after stdin EOF during a turn (documented: exits 0 within 1 s): {e}\n{context}"
        );
    }
}

#[tokio::test]
async fn stdin_eof_when_idle_exits_zero() {
    let c = initialized().await;
    finish(c).await;
}

#[tokio::test]
async fn stdout_carries_only_jsonrpc_frames_across_a_mixed_session() {
    let c = connect(
        TestClient::builder()
            .fs(MemoryFs::new())
            .hold("fs/read_text_file"),
    )
    .await;
    let sid = new_session(&c).await;
    for text in [
        "hello there  world",
        "stream 5",
        "read missing/but/no/client/handler.txt",
    ] {
        let id = start_prompt(&c, &sid, text);
        // The read asks the client (us) for the file: answer with an error.
        if text.starts_with("read ") {
            let req = c
                .next_request("fs/read_text_file")
                .await
                .unwrap_or_else(|e| panic!("{e}\n{}", c.describe()));
            req.respond_error(-32002, "Resource not found");
        }
        expect_response(&c, &id).await;
    }
    // Skip the turns' frames: the next frame must answer the bad line.
    c.take_unread();
    let _ = send_bad_line(&c, "not json").await;
    finish(c).await;
}
