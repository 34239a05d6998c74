//! The network service's limits, end to end over real sockets against the `echo` example
//! started with `--listen 127.0.0.1:0` (its address read from its start line on stderr), in
//! `$ACP_TOKENS` and single-`$ACP_TOKEN` modes: no one exhausts the service for the others
//! (HTTP/2 preface-only sockets closed and the descriptor limit survived, a user's share of
//! the connections, the POSTs waiting on one connection bounded), and the credentials and
//! Origin checks as a client meets them.

use crate::support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// 32 characters: a wrong token of the same length differs only in its second half.
const TOKEN: &str = "0123456789abcdef-right-secret-00";
const ALICE: &str = "alice-0123456789-secret-of-alice";
const BOB: &str = "bob-0123456789abcd-secret-of-bob";

/// The `echo` example serving the network; killed when dropped.
struct Agent {
    child: Child,
    /// `127.0.0.1:PORT`.
    addr: String,
    /// Everything it logged so far.
    log: Arc<Mutex<String>>,
}

impl Agent {
    /// Starts echo with `--listen 127.0.0.1:0`, `env`, and `ulimit -n` set to `nofile` if
    /// given; waits for its start line.
    fn start(env: &[(&str, &str)], nofile: Option<u32>) -> Agent {
        let echo = support::echo_binary();
        let mut cmd = Command::new("sh");
        let limit = nofile.map_or(String::new(), |n| format!("ulimit -n {n} && "));
        cmd.arg("-c")
            .arg(format!("{limit}exec \"$0\" --listen 127.0.0.1:0"))
            .arg(&echo)
            .env_remove("ACP_TOKEN")
            .env_remove("ACP_TOKENS")
            .env("ACP_DATA_DIR", support::data_dir())
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start echo");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let kept = log.clone();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.split("serving ACP on http://").nth(1)
                    && let Some(tx) = tx.take()
                {
                    let addr = rest.split("/acp").next().unwrap_or_default().to_owned();
                    let _ = tx.send(addr);
                }
                let mut log = kept.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let addr = rx.recv_timeout(support::HANG_GUARD).unwrap_or_else(|_| {
            panic!("echo did not say where it listens: {}", log.lock().unwrap())
        });
        Agent { child, addr, log }
    }

    fn url(&self) -> String {
        format!("http://{}/acp", self.addr)
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

fn initialize() -> serde_json::Value {
    serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}
    })
}

/// POSTs `initialize` with `token` (and `headers`): the response's status and connection id.
async fn post_initialize(
    url: &str,
    token: &str,
    headers: &[(&str, &str)],
) -> (u16, Option<String>) {
    let mut request = http()
        .post(url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize().to_string());
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.send().await.expect("POST initialize");
    let id = response
        .headers()
        .get("acp-connection-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (response.status().as_u16(), id)
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>;

/// Opens a WebSocket with `token` (and `headers`): the socket, or the refusal's status and
/// `Retry-After`.
async fn websocket(
    agent: &Agent,
    token: &str,
    headers: &[(&str, &str)],
) -> Result<Ws, (u16, Option<String>)> {
    let mut request = format!("ws://{}/acp", agent.addr)
        .into_client_request()
        .unwrap();
    let bearer = format!("Bearer {token}");
    for (k, v) in [("authorization", bearer.as_str())].iter().chain(headers) {
        let name = tokio_tungstenite::tungstenite::http::HeaderName::from_bytes(k.as_bytes());
        request
            .headers_mut()
            .insert(name.unwrap(), v.parse().unwrap());
    }
    let connecting = tokio_tungstenite::connect_async(request);
    match timeout(support::HANG_GUARD, connecting)
        .await
        .expect("WebSocket hang")
    {
        Ok((ws, _)) => Ok(ws),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => Err((
            response.status().as_u16(),
            response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        )),
        Err(e) => panic!("unexpected WebSocket error: {e}"),
    }
}

/// Waits until the server closes `socket` (end of file or reset), reading whatever it sends
/// first (an HTTP/2 server's SETTINGS); `false` if it is still open after `bound`.
async fn closed_within(socket: &mut TcpStream, bound: Duration) -> bool {
    let mut buf = [0u8; 1024];
    let deadline = Instant::now() + bound;
    loop {
        match tokio::time::timeout_at(deadline, socket.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => {}
        }
    }
}

/// The client connection preface of HTTP/2 (RFC 9113 §3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// An empty SETTINGS frame: length 0, type 4, no flags, stream 0.
const SETTINGS: &[u8] = &[0, 0, 0, 4, 0, 0, 0, 0, 0];

/// Hundreds of unauthenticated sockets that send the HTTP/2 preface (or the preface and
/// SETTINGS) and nothing more, against an agent allowed 192 file descriptors: a client with
/// the token still gets in (at once: the oldest silent sockets are closed for new ones), and
/// every silent socket is closed, the last ones after the header timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_preface_only_sockets_are_closed_and_the_descriptor_limit_survives() {
    let agent = Agent::start(
        &[("ACP_TOKEN", TOKEN), ("ACP_HEADER_TIMEOUT_MS", "1000")],
        Some(192),
    );
    let mut silent = Vec::new();
    for i in 0..400 {
        let connected = timeout(support::HANG_GUARD, TcpStream::connect(&agent.addr)).await;
        let Ok(Ok(mut socket)) = connected else {
            panic!("silent socket {i}: the agent no longer accepts connections: {connected:?}");
        };
        socket.write_all(PREFACE).await.unwrap();
        if i % 2 == 1 {
            socket.write_all(SETTINGS).await.unwrap();
        }
        silent.push(socket);
    }
    // A legitimate client gets in, well within the hang guard (the deadline at worst).
    let started = Instant::now();
    let (status, id) = loop {
        let attempt = timeout(
            Duration::from_secs(3),
            post_initialize(&agent.url(), TOKEN, &[]),
        )
        .await;
        if let Ok(answered) = attempt {
            break answered;
        }
        assert!(
            started.elapsed() < support::HANG_GUARD,
            "no client got in while silent HTTP/2 sockets were open\n{}",
            agent.log()
        );
    };
    assert_eq!(status, 200, "{}", agent.log());
    assert!(id.is_some());
    // Every silent socket is closed: the newest after the header timeout (1 s).
    for (i, socket) in silent.iter_mut().enumerate().rev() {
        assert!(
            closed_within(socket, Duration::from_secs(5)).await,
            "silent socket {i} (preface{}) is still open\n{}",
            if i % 2 == 1 { " and SETTINGS" } else { " only" },
            agent.log()
        );
    }
    // And the service still serves, over WebSocket too.
    websocket(&agent, TOKEN, &[]).await.expect("a WebSocket");
}

/// With users named, one user holds at most their share of the connections: alice's third
/// connection (share 2 of 8) is `503` with `Retry-After`, over WebSocket and Streamable HTTP,
/// while bob still connects; the refusal is counted in the log, which names the users and
/// never their tokens. With one token, the whole limit is the one user's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_holds_at_most_their_share_of_the_connections() {
    let tokens = format!("alice:{ALICE},bob:{BOB}");
    let agent = Agent::start(
        &[
            ("ACP_TOKENS", &tokens),
            ("ACP_MAX_CONNECTIONS", "8"),
            ("ACP_MAX_CONNECTIONS_PER_USER", "2"),
        ],
        None,
    );
    let _a1 = websocket(&agent, ALICE, &[]).await.expect("alice's first");
    let (status, _a2) = post_initialize(&agent.url(), ALICE, &[]).await;
    assert_eq!(status, 200, "alice's second");
    let refused = websocket(&agent, ALICE, &[]).await.err();
    assert!(
        matches!(&refused, Some((503, Some(_)))),
        "alice's third WebSocket: {refused:?}"
    );
    let (status, _) = post_initialize(&agent.url(), ALICE, &[]).await;
    assert_eq!(status, 503, "alice's third over Streamable HTTP");
    let _b1 = websocket(&agent, BOB, &[])
        .await
        .expect("bob still connects");
    let (status, _b2) = post_initialize(&agent.url(), BOB, &[]).await;
    assert_eq!(status, 200, "bob's second");

    let deadline = Instant::now() + support::HANG_GUARD;
    while !agent.log().contains("user's share") && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let log = agent.log();
    let start = log
        .lines()
        .find(|l| l.contains("serving ACP on"))
        .unwrap_or_default();
    for says in ["alice", "bob", "WebSocket", "Streamable HTTP", "HTTP/2"] {
        assert!(start.contains(says), "the start line names {says}: {start}");
    }
    assert!(
        log.contains("refused so far: user's share"),
        "the refusals are counted: {log}"
    );
    assert!(
        !log.contains(ALICE) && !log.contains(BOB),
        "a token in the log: {log}"
    );

    // One token: one user, the whole limit.
    let agent = Agent::start(&[("ACP_TOKEN", TOKEN), ("ACP_MAX_CONNECTIONS", "4")], None);
    let mut held = Vec::new();
    for i in 0..4 {
        held.push(
            websocket(&agent, TOKEN, &[])
                .await
                .unwrap_or_else(|e| panic!("{i}: {e:?}")),
        );
    }
    let refused = websocket(&agent, TOKEN, &[]).await.err();
    assert!(
        matches!(refused, Some((503, _))),
        "beyond the limit: {refused:?}"
    );
    let start = agent.log();
    assert!(
        start.contains("one bearer token") && !start.contains(TOKEN),
        "{start}"
    );
}

/// A token of the right length that differs from the real one only in its second half is
/// `401`, over both transports, with one token and with one per user.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_of_the_right_length_is_refused() {
    let tokens = format!("alice:{ALICE},bob:{BOB}");
    for (env, right) in [
        (("ACP_TOKEN", TOKEN), TOKEN),
        (("ACP_TOKENS", tokens.as_str()), ALICE),
    ] {
        let agent = Agent::start(&[env], None);
        let wrong = format!("{}{}", &right[..16], "x".repeat(right.len() - 16));
        assert_eq!(wrong.len(), right.len());
        let (status, _) = post_initialize(&agent.url(), &wrong, &[]).await;
        assert_eq!(status, 401, "{}: a POST with a wrong token", env.0);
        let refused = websocket(&agent, &wrong, &[]).await.err();
        assert!(
            matches!(refused, Some((401, _))),
            "{}: a WebSocket with a wrong token: {refused:?}",
            env.0
        );
        let (status, _) = post_initialize(&agent.url(), right, &[]).await;
        assert_eq!(status, 200, "{}: the right token", env.0);
    }
}

/// With no Origin allow-list (the examples' default), a request with any `Origin` is `403`,
/// its own origin included, over both transports; one without `Origin` passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_allowed_origin_any_origin_is_refused() {
    let agent = Agent::start(&[("ACP_TOKEN", TOKEN)], None);
    let own = format!("http://{}", agent.addr);
    for origin in [own.as_str(), "https://evil.example", "null"] {
        let (status, _) = post_initialize(&agent.url(), TOKEN, &[("origin", origin)]).await;
        assert_eq!(status, 403, "a POST from {origin}");
        let refused = websocket(&agent, TOKEN, &[("origin", origin)]).await.err();
        assert!(
            matches!(refused, Some((403, _))),
            "a WebSocket from {origin}: {refused:?}"
        );
    }
    let (status, _) = post_initialize(&agent.url(), TOKEN, &[]).await;
    assert_eq!(status, 200, "no Origin");
    let mut ws = websocket(&agent, TOKEN, &[]).await.expect("no Origin");
    let _ = ws.close(None).await;
    let _ = timeout(Duration::from_secs(1), ws.next()).await;
}

/// A client that POSTs requests faster than they are answered (here: it never reads the
/// answers, so the agent stops taking its messages) cannot make the agent hold an unbounded
/// number of them: beyond a bound the POSTs of that connection are `429` with `Retry-After`,
/// at once, not left waiting with their bodies; another connection is unaffected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_requests_waiting_on_one_connection_are_bounded() {
    let agent = Agent::start(&[("ACP_TOKEN", TOKEN)], None);
    let (status, id) = post_initialize(&agent.url(), TOKEN, &[]).await;
    assert_eq!(status, 200);
    let id = id.unwrap();
    let pad = "x".repeat(16 * 1024);
    let client = http();
    let too_many = Arc::new(tokio::sync::Notify::new());
    let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut workers = Vec::new();
    for w in 0..100u64 {
        let (client, url, id, pad) = (client.clone(), agent.url(), id.clone(), pad.clone());
        let (too_many, seen) = (too_many.clone(), seen.clone());
        workers.push(tokio::spawn(async move {
            for n in 0.. {
                let body = serde_json::json!({
                    "jsonrpc": "2.0", "id": w * 1_000_000 + n + 1, "method": "x/nothing",
                    "params": {"pad": pad}
                });
                let Ok(response) = client
                    .post(&url)
                    .bearer_auth(TOKEN)
                    .header("content-type", "application/json")
                    .header("acp-connection-id", &id)
                    .body(body.to_string())
                    .send()
                    .await
                else {
                    continue;
                };
                match response.status().as_u16() {
                    202 => {}
                    429 => {
                        assert!(response.headers().contains_key("retry-after"));
                        seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        too_many.notify_one();
                        return;
                    }
                    other => panic!("POST {n}: {other}"),
                }
            }
        }));
    }
    let refused = timeout(Duration::from_secs(60), too_many.notified()).await;
    for worker in &workers {
        worker.abort();
    }
    assert!(
        refused.is_ok(),
        "no POST was refused: they wait, holding their bodies\n{}",
        agent.log()
    );
    // Another connection is not held up by this one.
    let (status, _) = timeout(
        support::HANG_GUARD,
        post_initialize(&agent.url(), TOKEN, &[]),
    )
    .await
    .expect("another connection");
    assert_eq!(status, 200);
}
