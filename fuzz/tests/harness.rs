//! The harness finds what it claims to: each failure class the checks name, planted in a run
//! or an output, is reported.

use std::time::Duration;

use acp_fuzz::check::{check_output, violations};
use acp_fuzz::{ByteScript, Execution, Script, Step, execute};

fn run(input: &str) -> Execution {
    execute(ByteScript::new(input.as_bytes()))
}

fn with_output(mut execution: Execution, output: &str) -> Execution {
    execution.output = output.as_bytes().to_vec();
    execution
}

const INIT: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#;
const ANSWER: &str = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;

#[test]
fn a_clean_session_passes() {
    let execution = run(&format!("{INIT}\n"));
    assert_eq!(violations(&execution), Ok(()));
}

#[test]
fn malformed_output_frames_are_reported() {
    let cases = [
        (ANSWER.to_owned(), "does not end with"),
        (format!("{ANSWER}\n\n"), "empty line"),
        ("{\"jsonrpc\":\"2.0\",\n".to_owned(), "not valid JSON"),
        ("[1]\n".to_owned(), "not a JSON object"),
        ("{\"id\":1,\"result\":1}\n".to_owned(), "jsonrpc"),
        ("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1,\"error\":{\"code\":1,\"message\":\"m\"}}\n".to_owned(), "both"),
        ("{\"jsonrpc\":\"2.0\",\"id\":1}\n".to_owned(), "neither"),
        ("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"x\",\"message\":\"m\"}}\n".to_owned(), "error"),
        ("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"fs/read_text_file\",\"params\":{}}\n".to_owned(), "not an integer"),
        ("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"m\",\"params\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"m\",\"params\":{}}\n".to_owned(), "reuses"),
        ("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":3}\n".to_owned(), "params"),
    ];
    for (output, why) in cases {
        let err = check_output(output.as_bytes()).expect_err(&output);
        assert!(err.contains(why), "{output:?}: {err}");
    }
}

#[test]
fn answers_that_do_not_match_the_input_are_reported() {
    let base = run(&format!("{INIT}\n"));
    let twice = with_output(run(&format!("{INIT}\n")), &format!("{ANSWER}\n{ANSWER}\n"));
    assert!(
        violations(&twice)
            .unwrap_err()
            .contains("2 responses to id 1")
    );
    let stray = with_output(
        run(&format!("{INIT}\n")),
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n",
    );
    assert!(violations(&stray).unwrap_err().contains("id 7"));
    let unanswered = with_output(base, "");
    assert!(
        violations(&unanswered)
            .unwrap_err()
            .contains("never answered")
    );
}

#[test]
fn an_id_used_twice_may_be_answered_twice() {
    let execution = run(&format!("{INIT}\n{INIT}\n"));
    assert_eq!(violations(&execution), Ok(()));
}

#[test]
fn odd_lines_are_not_required_to_be_answered_with_their_id() {
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"initialize"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"initialize","x":"\u00ff"}"#,
        r#"{"jsonrpc":"2.0","id":1.0,"method":"initialize"}"#,
        r#"{"jsonrpc":"2\u002e0","id":4,"method":"initialize"}"#,
    ];
    let execution = run(&format!("{}\n", lines.join("\n")));
    assert_eq!(violations(&execution), Ok(()));
}

/// Never ends its input: the run must be reported as a hang, at once (virtual time).
struct Stalls;

impl Script for Stalls {
    fn next(&mut self, _: &[u8]) -> Option<Step> {
        Some(Step::Sleep(Duration::from_secs(24 * 3600)))
    }
}

#[test]
fn a_hang_is_reported_without_waiting() {
    let start = std::time::Instant::now();
    let execution = execute(Stalls);
    assert!(violations(&execution).unwrap_err().contains("hang"));
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_run_reaches_the_agents_tools_and_its_requests_are_answered() {
    let input = concat!(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"s1","cwd":"/w","mcpServers":[]}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"read a.txt"}]}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":0,"result":{"content":"hello"}}"#,
        "\n",
    );
    let execution = run(input);
    assert_eq!(violations(&execution), Ok(()));
    let output = String::from_utf8(execution.output).unwrap();
    assert!(output.contains(r#""text":"5 bytes""#), "{output}");
    assert!(
        output.contains(r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#),
        "{output}"
    );
}
