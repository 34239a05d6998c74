//! A loopback HTTP/1.1 server replaying recorded model streams, for the provider tests.
//!
//! Each accepted connection gets the next [`Reply`]; every request is recorded (method, path,
//! headers, JSON body) for the test to compare with what it expects. Event streams are sent
//! chunked, piece by piece with a small pause, so that each piece arrives on its own.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp_core::llm::{Event, EventStream};
use futures_util::StreamExt;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// The pause between two pieces of a stream.
const PAUSE: Duration = Duration::from_millis(5);

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Lower-case names.
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub at: Instant,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// How an event stream ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum End {
    /// The last chunk, then the connection closes.
    Finish,
    /// The connection closes in the middle of the chunked body.
    Cut,
    /// The stream stays open until the client closes it (reported by [`Server::eof`]).
    Hold,
}

/// What the server answers one connection.
#[derive(Debug, Clone)]
pub enum Reply {
    /// `200` with an event stream, in these pieces.
    Sse { pieces: Vec<Vec<u8>>, end: End },
    /// A status with a body and extra headers.
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
}

impl Reply {
    /// A recorded stream, whole, in the pieces [`pieces`] cuts.
    pub fn recording(name: &str) -> Reply {
        Reply::Sse {
            pieces: pieces(&recording(name)),
            end: End::Finish,
        }
    }

    pub fn status(status: u16, body: &str) -> Reply {
        Reply::Status {
            status,
            headers: Vec::new(),
            body: body.to_owned(),
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Status { headers, .. } = &mut self {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }
}

/// The text of `tests/llm_recordings/{name}`.
pub fn recording(name: &str) -> String {
    let path = format!("{}/tests/llm_recordings/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `text` cut after each event (blank line), and each event holding a multi-byte character
/// cut once more inside the bytes of its first one (a split UTF-8 sequence on the wire).
pub fn pieces(text: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for event in text.split_inclusive("\n\n") {
        match event.char_indices().find(|(_, c)| c.len_utf8() > 1) {
            Some((at, _)) => {
                out.push(event.as_bytes()[..at + 1].to_vec());
                out.push(event.as_bytes()[at + 1..].to_vec());
            }
            None => out.push(event.as_bytes().to_vec()),
        }
    }
    out
}

/// The server.
pub struct Server {
    /// `http://127.0.0.1:{port}`.
    pub url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    eof: mpsc::UnboundedReceiver<Instant>,
}

impl Server {
    /// Listens on a free loopback port; answers connections with `replies`, in order.
    pub async fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (eof_tx, eof) = mpsc::unbounded_channel();
        let recorded = requests.clone();
        tokio::spawn(async move {
            for reply in replies {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let recorded = recorded.clone();
                let eof_tx = eof_tx.clone();
                tokio::spawn(async move {
                    serve(socket, reply, recorded, eof_tx).await;
                });
            }
        });
        Server { url, requests, eof }
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// When a client closed the connection while its stream was being sent or held (waits
    /// at most 5 s).
    pub async fn eof(&mut self) -> Instant {
        tokio::time::timeout(Duration::from_secs(5), self.eof.recv())
            .await
            .expect("the client did not close the held stream within 5 s")
            .unwrap()
    }
}

async fn serve(
    mut socket: TcpStream,
    reply: Reply,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    eof: mpsc::UnboundedSender<Instant>,
) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    recorded.lock().unwrap().push(request);
    match reply {
        Reply::Status {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} Whatever\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(body.as_bytes()).await;
            let _ = socket.shutdown().await;
        }
        Reply::Sse { pieces, end } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
            if socket.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            for piece in pieces {
                let mut chunk = format!("{:x}\r\n", piece.len()).into_bytes();
                chunk.extend_from_slice(&piece);
                chunk.extend_from_slice(b"\r\n");
                if socket.write_all(&chunk).await.is_err() {
                    // The client closed the connection.
                    let _ = eof.send(Instant::now());
                    return;
                }
                let _ = socket.flush().await;
                tokio::time::sleep(PAUSE).await;
            }
            match end {
                End::Finish => {
                    let _ = socket.write_all(b"0\r\n\r\n").await;
                    let _ = socket.shutdown().await;
                }
                End::Cut => drop(socket),
                End::Hold => {
                    let mut buf = [0u8; 1024];
                    loop {
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(_) => {}
                        }
                    }
                    let _ = eof.send(Instant::now());
                }
            }
        }
    }
}

/// Reads a request's head and its `content-length` body.
async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8(data[..head_end].to_vec()).ok()?;
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let path = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = data[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&buf[..n]);
    }
    Some(Recorded {
        method,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        at: Instant::now(),
    })
}

/// All the events of `stream`, and the error that ended it, if one did.
pub async fn collect(mut stream: EventStream) -> (Vec<Event>, Option<acp_core::Error>) {
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(e) => return (events, Some(e)),
        }
    }
    (events, None)
}

/// The text of the `Text` events, joined.
pub fn text(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}
