//! The echo example agent driven over raw stdio pipes: JSON-RPC error handling, request
//! ordering rules, cancellation and shutdown. Each test names the behaviour it guarantees.
//! Every test ends with `finish()`, which also requires a clean exit (status 0) on stdin EOF
//! and that stdout carried nothing but JSON-RPC 2.0 lines.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::RawAgent;

fn error_code(v: &Value) -> Option<i64> {
    v.pointer("/error/code").and_then(Value::as_i64)
}

fn error_message(v: &Value) -> String {
    v.pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Send one raw line and return the next frame, which must be an error response.
fn send_bad_line(agent: &mut RawAgent, line: &str) -> Value {
    agent.discard_backlog();
    agent.send_line(line);
    let v = agent.next_frame();
    assert!(
        v.get("error").is_some() && v.get("method").is_none(),
        "expected an error response to {line:?}, got {v}\n{}",
        agent.context()
    );
    v
}

fn assert_error(agent: &RawAgent, v: &Value, code: i64, id: &Value, input: &str) {
    assert_eq!(
        error_code(v),
        Some(code),
        "error code for {input:?}: got {v}\n{}",
        agent.context()
    );
    assert_eq!(
        &v["id"],
        id,
        "error response id for {input:?}: got {v}\n{}",
        agent.context()
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

#[test]
fn non_json_line_gets_parse_error_with_null_id_and_connection_survives() {
    let mut agent = RawAgent::initialized();
    for line in [
        "this is not json",
        r#"{"jsonrpc": "2.0", "id": 1, "method": "session/new""#,
        "{'single': 'quotes'}",
        r#"{"jsonrpc":"2.0","id":2,"method":"initialize",}"#,
    ] {
        let v = send_bad_line(&mut agent, line);
        assert_error(&agent, &v, -32700, &Value::Null, line);
        agent.assert_still_usable();
    }
    agent.finish();
}

#[test]
fn parse_error_before_initialize_still_allows_initialize() {
    let mut agent = RawAgent::spawn();
    let v = send_bad_line(&mut agent, "garbage{");
    assert_error(&agent, &v, -32700, &Value::Null, "garbage{");
    let res = agent.request("initialize", json!({"protocolVersion": 1}));
    assert!(
        res.get("result").is_some(),
        "initialize after a parse error: {res}"
    );
    agent.finish();
}

#[test]
fn missing_or_wrong_jsonrpc_version_is_invalid_request_with_id_echoed() {
    let mut agent = RawAgent::initialized();
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
        let v = send_bad_line(&mut agent, line);
        assert_error(&agent, &v, -32600, &id, line);
        agent.assert_still_usable();
    }
    agent.finish();
}

#[test]
fn non_string_method_is_invalid_request_with_id_echoed() {
    let mut agent = RawAgent::initialized();
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
        let v = send_bad_line(&mut agent, line);
        assert_error(&agent, &v, -32600, &id, line);
        agent.assert_still_usable();
    }
    agent.finish();
}

#[test]
fn batch_array_is_one_invalid_request_with_null_id_and_is_not_executed() {
    let mut agent = RawAgent::spawn();
    let batch = r#"[{"jsonrpc": "2.0", "id": 61, "method": "initialize", "params": {"protocolVersion": 1}}]"#;
    let v = send_bad_line(&mut agent, batch);
    assert_error(&agent, &v, -32600, &Value::Null, batch);
    // The batch's initialize must not have run: nothing else arrives before the next answer.
    let v = send_bad_line(&mut agent, "[]");
    assert_error(&agent, &v, -32600, &Value::Null, "[]");
    let res = agent.request("initialize", json!({"protocolVersion": 1}));
    assert!(
        res.get("result").is_some(),
        "initialize after a batch: {res}\n{}",
        agent.context()
    );
    agent.assert_still_usable();
    agent.finish();
}

#[test]
fn json_scalar_is_invalid_request_with_null_id() {
    let mut agent = RawAgent::initialized();
    for line in ["42", r#""session/new""#, "null", "true"] {
        let v = send_bad_line(&mut agent, line);
        assert_error(&agent, &v, -32600, &Value::Null, line);
        agent.assert_still_usable();
    }
    agent.finish();
}

#[test]
fn object_or_array_id_is_invalid_request_with_null_id() {
    let mut agent = RawAgent::initialized();
    for line in [
        r#"{"jsonrpc": "2.0", "id": {"n": 1}, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}"#,
        r#"{"jsonrpc": "2.0", "id": [1], "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}"#,
    ] {
        let v = send_bad_line(&mut agent, line);
        assert_error(&agent, &v, -32600, &Value::Null, line);
        agent.assert_still_usable();
    }
    agent.finish();
}

#[test]
fn response_ids_are_echoed_exactly() {
    let mut agent = RawAgent::spawn();
    // The Python SDK numbers its requests from 0.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}});
    agent.send(&init);
    let v = agent.expect_response(&json!(0));
    assert!(v.get("result").is_some(), "initialize with id 0: {v}");
    for id in [
        json!("abc-1"),
        json!(""),
        json!(-7),
        json!(9_007_199_254_740_991_i64),
    ] {
        agent.send(&json!({"jsonrpc": "2.0", "id": id, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}));
        let v = agent.next_frame();
        assert_eq!(
            v["id"],
            id,
            "response id must echo {id} exactly: {v}\n{}",
            agent.context()
        );
        assert!(v.get("result").is_some(), "session/new with id {id}: {v}");
    }
    agent.finish();
}

// ---------------------------------------------------------------------------
// Unknown methods and notifications

#[test]
fn unknown_method_is_method_not_found() {
    let mut agent = RawAgent::initialized();
    for method in ["session/does_not_exist", "fs/read_text_file", "nonsense"] {
        let res = agent.request(method, json!({}));
        assert_eq!(
            error_code(&res),
            Some(-32601),
            "{method}: {res}\n{}",
            agent.context()
        );
        agent.assert_still_usable();
    }
    agent.finish();
}

#[test]
fn unknown_extension_request_is_method_not_found() {
    let mut agent = RawAgent::initialized();
    for method in ["_acme/do_thing", "_zed/unknown"] {
        let res = agent.request(method, json!({"x": 1}));
        assert_eq!(
            error_code(&res),
            Some(-32601),
            "{method}: {res}\n{}",
            agent.context()
        );
    }
    agent.assert_still_usable();
    agent.finish();
}

#[test]
fn unknown_notifications_are_ignored() {
    let mut agent = RawAgent::initialized();
    agent.notify("session/does_not_exist", json!({"a": 1}));
    agent.notify("_acme/ping", json!({}));
    agent.send_line(r#"{"jsonrpc": "2.0", "method": "_acme/no_params"}"#);
    let id = agent.start_request("session/new", json!({"cwd": "/tmp", "mcpServers": []}));
    agent.assert_next_frame_is_response_to(&id, "unknown notifications must not be answered");
    agent.finish();
}

#[test]
fn notifications_are_never_answered_even_when_invalid() {
    let mut agent = RawAgent::initialized();
    // Bad params, unknown session, and a request method sent as a notification.
    agent.notify("session/cancel", json!({}));
    agent.notify("session/cancel", json!({"sessionId": 17}));
    agent.notify("session/cancel", json!({"sessionId": "no-such-session"}));
    agent.notify("session/new", json!({"cwd": "/tmp", "mcpServers": []}));
    agent.notify("initialize", json!({"protocolVersion": "x"}));
    let id = agent.start_request("session/new", json!({"cwd": "/tmp", "mcpServers": []}));
    agent.assert_next_frame_is_response_to(&id, "notifications must never be answered");
    agent.finish();
}

// ---------------------------------------------------------------------------
// Invalid params

/// Send each `(method, params, field)` case; every answer must be -32602 with `field` in its
/// message. All cases run before asserting, so one failure shows every offending case.
fn check_invalid_params_cases(agent: &mut RawAgent, cases: &[(&str, Value, &str)]) {
    let mut problems = Vec::new();
    for (method, params, field) in cases {
        let res = agent.request(method, params.clone());
        if error_code(&res) != Some(-32602) {
            problems.push(format!(
                "{method} {params}: expected error -32602, got {res}"
            ));
        } else if !error_message(&res).replace(method, "").contains(field) {
            // (the method name is removed first: `session/prompt` must not count as naming `prompt`)
            problems.push(format!(
                "{method} {params}: the -32602 message should name `{field}`, got {:?}",
                error_message(&res)
            ));
        }
        agent.assert_still_usable();
    }
    assert!(
        problems.is_empty(),
        "invalid params handling:\n  {}\n{}",
        problems.join("\n  "),
        agent.context()
    );
}

#[test]
fn missing_params_field_is_invalid_params_naming_the_field() {
    let (mut agent, sid) = RawAgent::with_session();
    check_invalid_params_cases(
        &mut agent,
        &[
            ("session/new", json!({"mcpServers": []}), "cwd"),
            ("session/prompt", json!({"sessionId": sid}), "prompt"),
            (
                "session/prompt",
                json!({"prompt": [{"type": "text", "text": "hi"}]}),
                "sessionId",
            ),
        ],
    );
    agent.finish();
}

#[test]
fn wrongly_typed_params_field_is_invalid_params_naming_the_field() {
    let (mut agent, sid) = RawAgent::with_session();
    check_invalid_params_cases(
        &mut agent,
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
    );
    agent.finish();
}

#[test]
fn initialize_with_bad_protocol_version_is_invalid_params_naming_it() {
    let mut agent = RawAgent::spawn();
    let res = agent.request("initialize", json!({"protocolVersion": "one"}));
    assert_eq!(error_code(&res), Some(-32602), "{res}\n{}", agent.context());
    assert!(
        error_message(&res).contains("protocolVersion"),
        "the -32602 message should name protocolVersion: {res}"
    );
    let res = agent.request("initialize", json!({"protocolVersion": 1}));
    assert!(
        res.get("result").is_some(),
        "initialize after a bad one: {res}"
    );
    agent.finish();
}

#[test]
fn array_params_are_invalid_params() {
    let mut agent = RawAgent::initialized();
    let res = agent.request("session/new", json!(["/tmp", []]));
    assert_eq!(error_code(&res), Some(-32602), "{res}\n{}", agent.context());
    agent.assert_still_usable();
    agent.finish();
}

#[test]
fn prompt_for_unknown_session_is_an_error_and_connection_survives() {
    let mut agent = RawAgent::initialized();
    let res = agent.request(
        "session/prompt",
        json!({"sessionId": "no-such-session", "prompt": [{"type": "text", "text": "hi"}]}),
    );
    assert!(
        res.get("error").is_some(),
        "prompt for an unknown session must fail: {res}\n{}",
        agent.context()
    );
    agent.assert_still_usable();
    agent.finish();
}

// ---------------------------------------------------------------------------
// Initialization order

#[test]
fn requests_before_initialize_are_rejected_mentioning_initialize() {
    let mut agent = RawAgent::spawn();
    for (method, params) in [
        ("session/new", json!({"cwd": "/tmp", "mcpServers": []})),
        (
            "session/prompt",
            json!({"sessionId": "x", "prompt": [{"type": "text", "text": "hi"}]}),
        ),
    ] {
        let res = agent.request(method, params);
        let code = error_code(&res);
        assert!(
            matches!(code, Some(-32600) | Some(-32099..=-32000)),
            "{method} before initialize should fail with -32600 or a -320xx server error: {res}\n{}",
            agent.context()
        );
        assert!(
            error_message(&res).to_lowercase().contains("initialize"),
            "the error for {method} before initialize should mention initialize: {res}"
        );
    }
    let res = agent.request("initialize", json!({"protocolVersion": 1}));
    assert!(
        res.get("result").is_some(),
        "initialize after rejected requests: {res}"
    );
    agent.assert_still_usable();
    agent.finish();
}

#[test]
fn session_new_pipelined_right_after_initialize_succeeds() {
    let mut agent = RawAgent::spawn();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}});
    let new = json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}});
    // Both frames in a single write, before any answer could have been read.
    agent.send_raw(format!("{init}\n{new}\n").as_bytes());
    let r1 = agent.expect_response(&json!(1));
    let r2 = agent.expect_response(&json!(2));
    assert_eq!(
        r1.pointer("/result/protocolVersion"),
        Some(&json!(1)),
        "initialize: {r1}"
    );
    assert!(
        r2.pointer("/result/sessionId")
            .is_some_and(Value::is_string),
        "pipelined session/new must succeed: {r2}\n{}",
        agent.context()
    );
    agent.finish();
}

// ---------------------------------------------------------------------------
// Prompt turns, cancellation, shutdown

#[test]
fn second_prompt_while_turn_running_is_rejected() {
    let (mut agent, sid) = RawAgent::with_session();
    let first = agent.start_prompt(&sid, "sleep");
    agent.expect_chunk(&sid, "sleeping");
    let second = agent.start_prompt(&sid, "stream 1");
    let res = agent.expect_response(&second);
    assert!(
        res.get("error").is_some(),
        "a second prompt on a busy session must get an error: {res}\n{}",
        agent.context()
    );
    agent.notify("session/cancel", json!({"sessionId": sid}));
    let res = agent.expect_response(&first);
    assert_eq!(
        res.pointer("/result/stopReason"),
        Some(&json!("cancelled")),
        "{res}"
    );
    // The session takes a new turn afterwards.
    let id = agent.start_prompt(&sid, "stream 1");
    let res = agent.expect_response(&id);
    assert_eq!(
        res.pointer("/result/stopReason"),
        Some(&json!("end_turn")),
        "{res}\n{}",
        agent.context()
    );
    agent.finish();
}

#[test]
fn cancel_answers_cancelled_and_no_update_follows_the_answer() {
    let (mut agent, sid) = RawAgent::with_session();
    let other = agent.new_session();
    let id = agent.start_prompt(&sid, "sleep");
    agent.expect_chunk(&sid, "sleeping");
    agent.notify("session/cancel", json!({"sessionId": sid}));
    let res = agent.expect_response(&id);
    assert_eq!(
        res.pointer("/result/stopReason"),
        Some(&json!("cancelled")),
        "{res}\n{}",
        agent.context()
    );
    // Let a misbehaving agent leak, then run a full turn on another session as a barrier.
    std::thread::sleep(Duration::from_millis(300));
    let barrier = agent.start_prompt(&other, "stream 3");
    agent.expect_response(&barrier);
    let log = agent.stdout_log.lock().unwrap().clone();
    let answer_pos = log
        .iter()
        .position(|l| {
            serde_json::from_str::<Value>(l)
                .is_ok_and(|v| v["id"] == id && support::is_response(&v))
        })
        .expect("cancelled answer in the log");
    let late: Vec<&String> = log[answer_pos + 1..]
        .iter()
        .filter(|l| {
            serde_json::from_str::<Value>(l).is_ok_and(|v| {
                v["method"] == "session/update" && v["params"]["sessionId"] == sid.as_str()
            })
        })
        .collect();
    assert!(
        late.is_empty(),
        "session/update after the cancelled answer: {late:?}\n{}",
        agent.context()
    );
    agent.finish();
}

#[test]
fn cancel_for_an_idle_session_is_ignored() {
    let (mut agent, sid) = RawAgent::with_session();
    agent.notify("session/cancel", json!({"sessionId": sid}));
    let id = agent.start_prompt(&sid, "stream 2");
    let res = agent.expect_response(&id);
    assert_eq!(
        res.pointer("/result/stopReason"),
        Some(&json!("end_turn")),
        "{res}\n{}",
        agent.context()
    );
    agent.finish();
}

/// The documented limit is 1 s; 3 s are allowed so a loaded 2-core CI box stays green.
#[test]
fn stdin_eof_mid_turn_exits_zero_within_documented_1s_allowing_3s() {
    let (mut agent, sid) = RawAgent::with_session();
    let _prompt = agent.start_prompt(&sid, "sleep");
    agent.expect_chunk(&sid, "sleeping");
    let closed_at = Instant::now();
    agent.close_stdin();
    let status = agent.wait_exit(Duration::from_secs(3));
    let elapsed = closed_at.elapsed();
    assert!(
        status.is_some(),
        "agent still running {elapsed:?} after stdin EOF during a turn (documented: exits within 1 s)\n{}",
        agent.context()
    );
    let status = status.unwrap();
    assert!(
        status.success(),
        "exit status after stdin EOF: {status}\n{}",
        agent.context()
    );
    let lines = agent.drained_stdout();
    support::assert_only_jsonrpc_lines(&lines, &agent.context());
}

#[test]
fn stdin_eof_when_idle_exits_zero() {
    let agent = RawAgent::initialized();
    agent.finish();
}

#[test]
fn stdout_carries_only_jsonrpc_frames_across_a_mixed_session() {
    let (mut agent, sid) = RawAgent::with_session();
    for text in [
        "hello there  world",
        "stream 5",
        "read /nonexistent/but/no/client/handler",
    ] {
        let id = agent.start_prompt(&sid, text);
        // The read asks the client (us) for the file: answer with an error.
        if text.starts_with("read ") {
            let req = agent.expect_frame("fs/read_text_file request", |v| {
                v["method"] == "fs/read_text_file"
            });
            agent.send(&json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32002, "message": "Resource not found"}}));
        }
        agent.expect_response(&id);
    }
    let _ = send_bad_line(&mut agent, "not json");
    agent.finish();
}
