//! The SSE transport against a hand-written HTTP server on 127.0.0.1, one answer per
//! connection, for what the real server in `tests/it/mcp.rs` does not do: errors, bounds,
//! relative and foreign endpoints, and the connection closing with the transport.

use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A listener on 127.0.0.1 and its base URL.
async fn listener() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    (listener, url)
}

/// Reads one request (head and `content-length` body) from `socket`.
async fn request(socket: &mut TcpStream) -> (String, String) {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        let n = socket.read(&mut buf).await.unwrap();
        assert!(n > 0, "the connection closed mid-request");
        data.extend_from_slice(&buf[..n]);
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    while data.len() < head_end + length {
        let n = socket.read(&mut buf).await.unwrap();
        assert!(n > 0, "the connection closed mid-body");
        data.extend_from_slice(&buf[..n]);
    }
    let body = String::from_utf8_lossy(&data[head_end..]).into_owned();
    (head, body)
}

const STREAM_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n";

/// Accepts the GET, checks it, answers with an event stream starting with `events`; the
/// socket, for more.
async fn accept_stream(listener: &TcpListener, events: &str) -> TcpStream {
    let (mut socket, _) = listener.accept().await.unwrap();
    let (head, _) = request(&mut socket).await;
    assert!(head.starts_with("GET /sse "), "{head}");
    assert!(head.contains("accept: text/event-stream"), "{head}");
    assert!(head.contains("x-token: secret"), "{head}");
    socket
        .write_all(format!("{STREAM_HEAD}{events}").as_bytes())
        .await
        .unwrap();
    socket
}

fn headers() -> Vec<HttpHeader> {
    vec![HttpHeader::new("X-Token", "secret")]
}

#[test]
fn the_endpoint_is_resolved_against_the_sse_url_and_kept_on_its_origin() {
    let base = Url::parse("http://127.0.0.1:3001/mcp/sse").unwrap();
    let at = |data: &str| resolve(&base, data).map(|u| u.to_string());
    assert_eq!(
        at("/message?sessionId=abc").unwrap(),
        "http://127.0.0.1:3001/message?sessionId=abc"
    );
    assert_eq!(
        at(" messages/?session_id=1\n").unwrap(),
        "http://127.0.0.1:3001/mcp/messages/?session_id=1"
    );
    assert_eq!(
        at("http://127.0.0.1:3001/post").unwrap(),
        "http://127.0.0.1:3001/post"
    );
    for foreign in [
        "http://example.com/post",
        "//example.com/post",
        "https://127.0.0.1:3001/",
    ] {
        let e = at(foreign).unwrap_err().to_string();
        assert!(e.contains("not on the SSE URL's origin"), "{foreign}: {e}");
    }
    assert!(at("").unwrap_err().to_string().contains("empty"));
}

#[tokio::test]
async fn messages_go_both_ways_with_the_configured_headers() {
    let (listener, url) = listener().await;
    let server = tokio::spawn(async move {
        let mut stream = accept_stream(
            &listener,
            ": a comment\n\nevent: endpoint\ndata: /message?sessionId=s1\n\n",
        )
        .await;
        let (mut post, _) = listener.accept().await.unwrap();
        let (head, body) = request(&mut post).await;
        assert!(head.starts_with("POST /message?sessionId=s1 "), "{head}");
        assert!(head.contains("x-token: secret"), "{head}");
        assert!(head.contains("content-type: application/json"), "{head}");
        post.write_all(
            b"HTTP/1.1 202 Accepted\r\ncontent-length: 8\r\nconnection: close\r\n\r\nAccepted",
        )
        .await
        .unwrap();
        // The answer, split across writes, after an event of another kind.
        let answer = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        for part in [
            "event: ping\ndata: x\n\nevent: mess".to_owned(),
            format!("age\ndata: {answer}\n\n"),
        ] {
            stream.write_all(part.as_bytes()).await.unwrap();
        }
        body
    });
    let mut transport = SseTransport::connect(&format!("{url}/sse"), &headers())
        .await
        .unwrap();
    let ping: ClientJsonRpcMessage =
        serde_json::from_value(serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            .unwrap();
    transport.send(ping).await.unwrap();
    let message = transport.receive().await.unwrap();
    assert_eq!(
        serde_json::to_value(&message).unwrap(),
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {}})
    );
    let posted: serde_json::Value = serde_json::from_str(&server.await.unwrap()).unwrap();
    assert_eq!(posted["method"], "ping");
}

#[tokio::test]
async fn an_error_status_is_named_with_the_start_of_a_text_body() {
    let (listener, url) = listener().await;
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        request(&mut socket).await;
        let body = "no such stream";
        let answer = format!(
            "HTTP/1.1 404 Not Found\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        socket.write_all(answer.as_bytes()).await.unwrap();
    });
    let e = SseTransport::connect(&format!("{url}/sse"), &headers())
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "the server answered 404 Not Found: no such stream"
    );
    server.await.unwrap();
}

#[tokio::test]
async fn what_is_not_an_event_stream_with_an_endpoint_is_refused() {
    let (listener, url) = listener().await;
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        request(&mut socket).await;
        socket
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 2\r\n\r\nhi")
            .await
            .unwrap();
        // A stream that ends before its endpoint.
        let socket = accept_stream(&listener, "event: message\ndata: {}\n\n").await;
        drop(socket);
    });
    let url = format!("{url}/sse");
    let e = SseTransport::connect(&url, &headers()).await.unwrap_err();
    assert!(matches!(e, SseError::NotEventStream(_)), "{e}");
    let e = SseTransport::connect(&url, &headers()).await.unwrap_err();
    assert!(matches!(e, SseError::NoEndpoint), "{e}");
    server.await.unwrap();
    // Nothing listens there any more.
    let e = SseTransport::connect(&url, &headers()).await.unwrap_err();
    assert!(matches!(e, SseError::Request(_)), "{e}");
    assert!(!e.to_string().contains("127.0.0.1"), "no URL: {e}");
    let e = SseTransport::connect("ftp://127.0.0.1/sse", &[])
        .await
        .unwrap_err();
    assert!(e.to_string().contains("not an http(s) URL"), "{e}");
    let e = SseTransport::connect(&url, &[HttpHeader::new("bad name", "x")])
        .await
        .unwrap_err();
    assert!(e.to_string().contains("bad header name"), "{e}");
}

#[tokio::test]
async fn an_event_over_the_bound_ends_the_stream() {
    let (listener, url) = listener().await;
    let server = tokio::spawn(async move {
        let mut socket = accept_stream(&listener, "event: endpoint\ndata: /m\n\n").await;
        // One `data` line that never ends, past the bound; the client hangs up on it.
        let line = vec![b'x'; 64 * 1024];
        let _ = socket.write_all(b"data: ").await;
        let mut sent = 0;
        while sent <= MAX_EVENT + 1024 * 1024 {
            if socket.write_all(&line).await.is_err() {
                return;
            }
            sent += line.len();
        }
        // Blocked only if the client stopped reading without closing.
        let mut buf = [0u8; 1];
        let _ = socket.read(&mut buf).await;
    });
    let mut transport = SseTransport::connect(&format!("{url}/sse"), &headers())
        .await
        .unwrap();
    let e = transport.next_message().await.unwrap_err();
    assert!(matches!(e, SseError::TooLarge), "{e}");
    assert!(transport.receive().await.is_none());
    let ping: ClientJsonRpcMessage =
        serde_json::from_value(serde_json::json!({"jsonrpc": "2.0", "method": "ping", "id": 2}))
            .unwrap();
    assert!(matches!(transport.send(ping).await, Err(SseError::Closed)));
    drop(transport);
    server.await.unwrap();
}

#[tokio::test]
async fn dropping_or_closing_the_transport_closes_the_connection() {
    let (listener, url) = listener().await;
    let url = format!("{url}/sse");
    let headers = headers();
    for close in [false, true] {
        let accepted = async { accept_stream(&listener, "event: endpoint\ndata: /m\n\n").await };
        let (mut socket, transport) = tokio::join!(accepted, SseTransport::connect(&url, &headers));
        let mut transport = transport.unwrap();
        if close {
            transport.close().await.unwrap();
            assert!(transport.receive().await.is_none());
        } else {
            drop(transport);
        }
        let mut buf = [0u8; 64];
        let read = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut buf)).await;
        assert!(
            matches!(read, Ok(Ok(0)) | Ok(Err(_))),
            "close={close}: the connection is still open: {read:?}"
        );
    }
}

#[tokio::test]
async fn a_connect_that_is_dropped_while_waiting_for_the_endpoint_closes_the_connection() {
    let (listener, url) = listener().await;
    let url = format!("{url}/sse");
    let headers = headers();
    let accepted = async { accept_stream(&listener, ": nothing yet\n\n").await };
    let connect = tokio::time::timeout(
        Duration::from_millis(300),
        SseTransport::connect(&url, &headers),
    );
    let (mut socket, outcome) = tokio::join!(accepted, connect);
    assert!(outcome.is_err(), "no endpoint, no transport");
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut buf)).await;
    assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "{read:?}");
}
