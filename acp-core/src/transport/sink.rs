//! The runtime's output: each outgoing message is handed over with its [`Route`], what the
//! runtime knows of it when it writes it (the session it belongs to, or the request it
//! answers). A byte stream (stdio, [`Sink::lines`]) writes the messages one per line and
//! ignores the routes; a network connection ([`Sink::messages`]) takes the messages as they
//! are and delivers each by its route, without parsing it.
//!
//! Both are bounded: the byte stream by its buffer and the writes it waits for, the messages by
//! a channel of a few batches of at most [`BATCH_BYTES`] each (a frame larger than that travels
//! alone). A reader that stops reading stalls the runtime's writer, and nothing else.

use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::mpsc;

use crate::schema::{RequestId, SessionId};

/// Where an outgoing message belongs, as the runtime knows it when it writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum Route {
    /// The connection as a whole (`initialize`'s world: `$/cancel_request`, extension
    /// notifications, anything that names no session).
    #[default]
    Connection,
    /// A session's: its updates, and the agent's requests made for it.
    Session(SessionId),
    /// The answer to the client's request of this id: where the request came from.
    Answer(RequestId),
    /// The answer to the client's request of this id, which belongs to the connection
    /// whatever session the request named (`session/load`'s, as the transport RFD has it).
    ConnectionAnswer(RequestId),
}

/// One outgoing message and its route.
#[derive(Debug)]
pub(crate) struct Message {
    /// One JSON-RPC message, compact JSON, no newline.
    pub text: String,
    pub route: Route,
}

/// Bytes of messages gathered before they are handed over (unless flushed before).
const BATCH_BYTES: usize = 64 * 1024;

/// Batches handed over and not yet taken, at most: beyond, the writer waits.
const BATCHES: usize = 2;

/// The output of one connection.
pub(crate) enum Sink {
    /// A byte stream, one message per line, buffered.
    Lines(BufWriter<Box<dyn AsyncWrite + Unpin + Send>>),
    /// Messages with their routes, for the network.
    Messages(Messages),
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Sink::Lines(_) => f.write_str("Sink::Lines"),
            Sink::Messages(_) => f.write_str("Sink::Messages"),
        }
    }
}

impl Sink {
    /// Messages written one per line onto `writer`, through a 64 KiB buffer.
    pub fn lines(writer: impl AsyncWrite + Unpin + Send + 'static) -> Sink {
        let writer: Box<dyn AsyncWrite + Unpin + Send> = Box::new(writer);
        Sink::Lines(BufWriter::with_capacity(64 * 1024, writer))
    }

    /// Messages handed over with their routes; the receiver takes them.
    pub fn messages() -> (Sink, Receiver) {
        let (tx, rx) = mpsc::channel(BATCHES);
        let sink = Sink::Messages(Messages {
            tx,
            batch: Vec::new(),
            bytes: 0,
        });
        (
            sink,
            Receiver {
                rx,
                batch: Vec::new().into_iter(),
            },
        )
    }

    /// Takes one frame: its bytes are one message ending in a newline (empty: nothing to
    /// write). May keep it buffered until [`flush`](Self::flush).
    pub async fn write(&mut self, bytes: Vec<u8>, route: Route) -> std::io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        match self {
            Sink::Lines(out) => out.write_all(&bytes).await,
            Sink::Messages(out) => out.push(bytes, route).await,
        }
    }

    /// Hands over everything taken so far.
    pub async fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Lines(out) => out.flush().await,
            Sink::Messages(out) => out.hand_over().await,
        }
    }
}

/// The sending side of a message sink: a batch being gathered, and the channel.
pub(crate) struct Messages {
    tx: mpsc::Sender<Vec<Message>>,
    batch: Vec<Message>,
    bytes: usize,
}

impl Messages {
    async fn push(&mut self, mut bytes: Vec<u8>, route: Route) -> std::io::Result<()> {
        while bytes.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
            bytes.pop();
        }
        // The runtime's frames are serde_json's output: always UTF-8.
        let text = String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        self.bytes += text.len();
        self.batch.push(Message { text, route });
        if self.bytes >= BATCH_BYTES {
            self.hand_over().await?;
        }
        Ok(())
    }

    async fn hand_over(&mut self) -> std::io::Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        self.bytes = 0;
        let batch = std::mem::take(&mut self.batch);
        self.tx.send(batch).await.map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the connection went away")
        })
    }
}

/// The receiving side of a message sink: the runtime's messages, in order.
#[derive(Debug)]
pub(crate) struct Receiver {
    rx: mpsc::Receiver<Vec<Message>>,
    batch: std::vec::IntoIter<Message>,
}

impl Receiver {
    /// The next message; `None` once the runtime's writer has ended.
    pub async fn next(&mut self) -> Option<Message> {
        loop {
            if let Some(message) = self.batch.next() {
                return Some(message);
            }
            self.batch = self.rx.recv().await?.into_iter();
        }
    }

    /// Whether a message is already waiting: [`next`](Self::next) returns it at once.
    pub fn has_next(&self) -> bool {
        self.batch.len() > 0 || !self.rx.is_empty()
    }

    /// Takes and drops the rest of the runtime's messages until its writer ends, from a task
    /// of its own (the runtime must not wait on a reader that is gone).
    pub fn discard_rest(self) {
        let mut rx = self.rx;
        tokio::spawn(async move { while rx.recv().await.is_some() {} });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_end_in_a_newline_and_messages_do_not() {
        let (mut sink, mut rx) = Sink::messages();
        let id = RequestId::Number(3);
        sink.write(b"{\"a\":1}\n".to_vec(), Route::Answer(id.clone()))
            .await
            .unwrap();
        sink.write(Vec::new(), Route::Connection).await.unwrap();
        assert!(!rx.has_next(), "gathered until flushed");
        sink.flush().await.unwrap();
        let message = rx.next().await.unwrap();
        assert_eq!(message.text, "{\"a\":1}");
        assert_eq!(message.route, Route::Answer(id));
        assert!(!rx.has_next());

        let (w, mut r) = tokio::io::duplex(1024);
        let mut sink = Sink::lines(w);
        sink.write(b"{\"a\":1}\n".to_vec(), Route::Connection)
            .await
            .unwrap();
        sink.flush().await.unwrap();
        drop(sink);
        let mut out = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut r, &mut out)
            .await
            .unwrap();
        assert_eq!(out, "{\"a\":1}\n");
    }

    #[tokio::test]
    async fn a_full_batch_is_handed_over_and_the_channel_is_bounded() {
        let (mut sink, mut rx) = Sink::messages();
        let big = |n: u8| {
            let mut bytes = vec![b'x'; BATCH_BYTES];
            bytes[0] = n;
            bytes.push(b'\n');
            bytes
        };
        for n in 0..BATCHES as u8 {
            sink.write(big(n), Route::Connection).await.unwrap();
        }
        assert!(rx.has_next(), "handed over without a flush");
        let blocked = sink.write(big(9), Route::Connection);
        tokio::pin!(blocked);
        assert!(
            futures_util::poll!(blocked.as_mut()).is_pending(),
            "the writer waits for the reader"
        );
        assert_eq!(rx.next().await.unwrap().text.as_bytes()[0], 0);
        blocked.await.unwrap();
    }
}
