//! Provider errors against a loopback server: retries (429 with `retry-after`, 5xx with
//! backoff), a refused key (never shown), a rejected request, a refused connection, a stream
//! cut mid-way, a malformed event, and cancelling while the server holds the stream open.

use crate::llm_support;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp_core::llm::{Anthropic, Event, Message, OpenAi, Provider, Request, Retry, Stop};
use futures_util::StreamExt;
use llm_support::{End, Reply, Server, collect, pieces, recording, text};

fn fast_retry() -> Retry {
    Retry {
        max_retries: 3,
        initial_backoff: Duration::from_millis(50),
        max_wait: Duration::from_secs(2),
    }
}

const MESSAGES: &[Message] = &[];

fn request(messages: &[Message]) -> Request<'_> {
    Request {
        model: "m",
        system: None,
        messages,
        tools: &[],
        max_tokens: None,
        cache_key: None,
        prompt_caching: false,
        temperature: None,
    }
}

fn openai(server: &Server, key: Option<&str>) -> OpenAi {
    OpenAi::new(format!("{}/v1", server.url), key.map(str::to_owned)).unwrap()
}

#[tokio::test]
async fn a_429_with_retry_after_is_retried_after_that_wait() {
    let server = Server::start(vec![
        Reply::status(
            429,
            r#"{"error":{"message":"Rate limit reached for gpt-4.1-mini","type":"requests"}}"#,
        )
        .with_header("retry-after", "1"),
        Reply::recording("openai_text.sse"),
    ])
    .await;
    let messages = [Message::user("hi")];
    // Backoff alone would wait 50 ms: the second request comes after the 1 s asked for.
    let model = openai(&server, Some("sk-proj-test")).with_retry(fast_retry());
    let (events, error) = collect(model.stream(request(&messages)).await.unwrap()).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(events.last(), Some(&Event::Stop(Stop::EndTurn)));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "retried once");
    assert_eq!(requests[0].body, requests[1].body);
    let waited = requests[1].at - requests[0].at;
    assert!(
        waited >= Duration::from_secs(1),
        "retry-after honoured: waited {waited:?}"
    );
    assert!(
        waited < Duration::from_secs(2),
        "no longer than asked: waited {waited:?}"
    );
}

#[tokio::test]
async fn unavailable_is_retried_with_doubling_backoff_then_given_up() {
    let overloaded = || {
        Reply::status(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
    };
    let server = Server::start(vec![overloaded(), overloaded(), overloaded(), overloaded()]).await;
    let model = Anthropic::new(server.url.clone(), Some("sk-ant-api03-test".into()))
        .unwrap()
        .with_retry(fast_retry());
    let error = model
        .stream(request(MESSAGES))
        .await
        .err()
        .expect("fails")
        .to_string();
    assert_eq!(
        error,
        "Anthropic is unavailable or overloaded (529 Overloaded: Overloaded) (gave up after 3 retries)"
    );
    let at: Vec<Instant> = server.requests().iter().map(|r| r.at).collect();
    assert_eq!(at.len(), 4, "3 retries");
    for (i, wait) in [50, 100, 200].into_iter().enumerate() {
        let waited = at[i + 1] - at[i];
        assert!(
            waited >= Duration::from_millis(wait),
            "retry {i}: {waited:?} < {wait} ms"
        );
    }
}

#[tokio::test]
async fn a_long_retry_after_is_capped() {
    let server = Server::start(vec![
        Reply::status(503, "").with_header("retry-after", "30"),
        Reply::recording("openai_text.sse"),
    ])
    .await;
    let retry = Retry {
        max_wait: Duration::from_millis(100),
        ..fast_retry()
    };
    let model = openai(&server, None).with_retry(retry);
    let started = Instant::now();
    let _events = model.stream(request(MESSAGES)).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(server.requests().len(), 2);
}

/// A writer the log lines go to, for the test to read.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_refused_key_names_its_variable_and_the_key_is_never_shown() {
    const KEY: &str = "sk-secret-789xyz";
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    // The server echoes the key, in a rate limit (retried, logged) and then in the refusal.
    let echo = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {KEY}.","code":"invalid_api_key"}}}}"#
    );
    let server = Server::start(vec![
        Reply::status(429, &echo).with_header("retry-after", "0"),
        Reply::status(401, &echo),
    ])
    .await;
    let model = openai(&server, Some(KEY));
    assert!(!format!("{model:?}").contains(KEY), "{model:?}");
    let error = model
        .stream(request(MESSAGES))
        .await
        .err()
        .expect("refused");
    let message = error.to_string();
    assert_eq!(
        message,
        "OpenAI refused the API key (401 Unauthorized: Incorrect API key provided: [redacted].); check the API key in OPENAI_API_KEY"
    );
    assert!(!format!("{error:?}").contains(KEY));
    assert_eq!(
        server.requests()[1].header("authorization"),
        Some(&*format!("Bearer {KEY}"))
    );

    let logs = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("retrying"), "the retry is logged: {logs}");
    assert!(!logs.contains(KEY), "the key is in the logs: {logs}");

    // Without a key, the error says to set one.
    let server = Server::start(vec![Reply::status(401, r#"{"type":"error","error":{"type":"authentication_error","message":"x-api-key header is required"}}"#)]).await;
    let model = Anthropic::new(server.url.clone(), None).unwrap();
    let error = model
        .stream(request(MESSAGES))
        .await
        .err()
        .expect("refused")
        .to_string();
    assert_eq!(
        error,
        "Anthropic refused the API key (401 Unauthorized: x-api-key header is required); no API key was sent: set ANTHROPIC_API_KEY"
    );
}

#[tokio::test]
async fn a_rejected_request_quotes_the_providers_message_and_is_not_retried() {
    let cases = [
        (
            404,
            r#"{"error":{"message":"The model `gpt-9` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#,
            "OpenAI rejected the request (404 Not Found: The model `gpt-9` does not exist or you do not have access to it.)",
        ),
        (
            400,
            r#"{"error":{"code":400,"message":"the request exceeds the available context size (8192 tokens)","type":"exceed_context_size_error"}}"#,
            "OpenAI rejected the request (400 Bad Request: the request exceeds the available context size (8192 tokens))",
        ),
        (
            422,
            r#"{"detail":"messages: field required"}"#,
            "OpenAI rejected the request (422 Unprocessable Entity: messages: field required)",
        ),
    ];
    for (status, body, expected) in cases {
        let server = Server::start(vec![
            Reply::status(status, body),
            Reply::recording("openai_text.sse"),
        ])
        .await;
        let model = openai(&server, None).with_retry(fast_retry());
        let error = model
            .stream(request(MESSAGES))
            .await
            .err()
            .expect("rejected")
            .to_string();
        assert_eq!(error, expected);
        assert_eq!(server.requests().len(), 1, "{status} is not retried");
    }
}

#[tokio::test]
async fn a_json_answer_instead_of_a_stream_quotes_its_message() {
    let server = Server::start(vec![Reply::status(
        200,
        r#"{"error":{"message":"streaming is not supported"}}"#,
    )])
    .await;
    let error = openai(&server, None)
        .stream(request(MESSAGES))
        .await
        .err()
        .expect("no stream")
        .to_string();
    assert_eq!(
        error,
        "OpenAI answered with JSON, not an event stream: streaming is not supported"
    );
}

#[tokio::test]
async fn a_refused_connection_names_the_base_url() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let model = OpenAi::new(base.clone(), None).unwrap();
    let error = model
        .stream(request(MESSAGES))
        .await
        .err()
        .expect("refused")
        .to_string();
    assert!(
        error.starts_with(&format!("could not connect to OpenAI at {base}: ")),
        "{error}"
    );
}

#[tokio::test]
async fn a_stream_cut_before_the_model_stopped_is_an_error() {
    let recorded = pieces(&recording("openai_text.sse"));
    for end in [End::Cut, End::Finish] {
        // Up to the middle of the text: no finish_reason, no `[DONE]`.
        let server = Server::start(vec![Reply::Sse {
            pieces: recorded[..6].to_vec(),
            end,
        }])
        .await;
        // (pieces: the role chunk, `Le`, ` café` and ` était` in two pieces each)
        let model = openai(&server, None);
        let (events, error) = collect(model.stream(request(MESSAGES)).await.unwrap()).await;
        assert_eq!(text(&events), "Le café était", "{end:?}");
        let error = error.expect("the cut is an error").to_string();
        assert!(
            error.starts_with("the model's stream ended before it finished"),
            "{end:?}: {error}"
        );
    }
    // Anthropic: ended before `message_stop`.
    let recorded = pieces(&recording("anthropic_text.sse"));
    let server = Server::start(vec![Reply::Sse {
        pieces: recorded[..recorded.len() - 1].to_vec(),
        end: End::Finish,
    }])
    .await;
    let model = Anthropic::new(server.url.clone(), None).unwrap();
    let (events, error) = collect(model.stream(request(MESSAGES)).await.unwrap()).await;
    assert_eq!(text(&events), "Bonjour à vous.");
    assert_eq!(
        error.expect("cut").to_string(),
        "the model's stream ended before it finished"
    );
}

#[tokio::test]
async fn a_malformed_event_is_quoted() {
    let mut recorded = pieces(&recording("openai_text.sse"))[..2].to_vec();
    recorded.push(
        br#"data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"x"}"#.to_vec(),
    );
    recorded.push(b"\n\n".to_vec());
    let server = Server::start(vec![Reply::Sse {
        pieces: recorded,
        end: End::Finish,
    }])
    .await;
    let model = openai(&server, None).with_retry(fast_retry());
    let (events, error) = collect(model.stream(request(MESSAGES)).await.unwrap()).await;
    assert_eq!(text(&events), "Le");
    let error = error.expect("malformed").to_string();
    assert!(
        error.starts_with("OpenAI sent a malformed event (EOF while parsing"),
        "{error}"
    );
    assert!(
        error.ends_with(r#": `{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"x"}`"#),
        "{error}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection_at_once() {
    // After some text, the server holds the stream open.
    let recorded = pieces(&recording("openai_text.sse"));
    let mut server = Server::start(vec![Reply::Sse {
        pieces: recorded[..4].to_vec(),
        end: End::Hold,
    }])
    .await;
    let model = openai(&server, None);
    let mut events = model.stream(request(MESSAGES)).await.unwrap();
    assert_eq!(
        events.next().await.unwrap().unwrap(),
        Event::Text("Le".into())
    );
    let dropped = Instant::now();
    drop(events);
    let eof = server.eof().await;
    assert!(
        eof - dropped < Duration::from_millis(500),
        "EOF after {:?}",
        eof - dropped
    );

    // Before any output, dropping the pending call closes it too.
    let mut server = Server::start(vec![Reply::Sse {
        pieces: recorded[..1].to_vec(),
        end: End::Hold,
    }])
    .await;
    let model = openai(&server, None);
    let pending =
        tokio::time::timeout(Duration::from_millis(300), model.stream(request(MESSAGES))).await;
    assert!(pending.is_err(), "no output yet: the call is still pending");
    let dropped = Instant::now();
    let eof = server.eof().await;
    assert!(
        eof - dropped < Duration::from_millis(500),
        "EOF after {:?}",
        eof - dropped
    );
}

#[tokio::test]
async fn text_that_arrives_together_is_one_event_and_a_cut_after_it_still_comes_second() {
    // The whole recorded stream in one piece: every delta has arrived before the first is
    // read, so the text is one event (then usage, then the stop).
    let (events, error) = read_in_one_piece(recording("openai_text.sse").into_bytes()).await;
    assert!(error.is_none(), "{error:?}");
    let texts: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e, Event::Text(_)))
        .collect();
    assert_eq!(
        texts,
        [&Event::Text("Le café était déjà servi — 🦀 prêt.".into())],
        "{events:?}"
    );
    assert!(
        matches!(events.last(), Some(Event::Stop(Stop::EndTurn))),
        "{events:?}"
    );

    // The same, cut before the model stopped: the text first, then the error.
    let recorded = pieces(&recording("openai_text.sse"));
    let server = Server::start(vec![Reply::Sse {
        pieces: vec![recorded[..6].concat()],
        end: End::Cut,
    }])
    .await;
    let (events, error) = collect(
        openai(&server, None)
            .stream(request(MESSAGES))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(events, [Event::Text("Le café était".into())]);
    assert!(error.is_some(), "the cut is an error");
}

#[tokio::test]
async fn a_flood_of_deltas_is_read_in_few_events_of_at_most_64_kib() {
    // 20,000 deltas (160,000 bytes of text, 1.3 MB of events) sent as fast as the socket
    // takes them: the client's HTTP connection hands them on in pieces of a few KiB, and
    // the reader lets it run between pieces, so text keeps joining while more has arrived.
    let n = 20_000;
    let mut body = String::new();
    for i in 0..n {
        body.push_str(&format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{i:07} \"}},\"finish_reason\":null}}]}}\n\n"
        ));
    }
    body.push_str(
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
    );
    let (events, error) = read_in_one_piece(body.into_bytes()).await;
    assert!(error.is_none(), "{error:?}");
    let expected: String = (0..n).map(|i| format!("{i:07} ")).collect();
    assert_eq!(text(&events), expected, "every delta, in order");
    let sizes: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            Event::Text(t) => Some(t.len()),
            _ => None,
        })
        .collect();
    assert!(sizes.iter().all(|&len| len <= 64 * 1024 + 8), "{sizes:?}");
    assert!(
        sizes.len() <= 5,
        "{} text events for 160,000 bytes: {sizes:?}",
        sizes.len()
    );
}

/// The events an OpenAI client reads from a server that sends `body` as one piece, then ends.
async fn read_in_one_piece(body: Vec<u8>) -> (Vec<Event>, Option<acp_core::Error>) {
    let server = Server::start(vec![Reply::Sse {
        pieces: vec![body],
        end: End::Finish,
    }])
    .await;
    collect(
        openai(&server, None)
            .stream(request(MESSAGES))
            .await
            .unwrap(),
    )
    .await
}
