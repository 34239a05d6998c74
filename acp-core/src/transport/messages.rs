//! The runtime's input as messages: a [`Source`] yields one message at a time, from the lines
//! of a byte stream ([`LineReader`]) or from a network connection that hands over each
//! message as it received it ([`Messages`]: a WebSocket message, a POST's body), with no
//! newline framing in between. Either way an over-long message is reported and skipped, and
//! a blank one ignored.

use std::future::Future;

use tokio::io::AsyncRead;
use tokio::sync::mpsc;

use super::{Line, LineReader};

/// Messages a network connection may hand over before it waits for the runtime to read (each
/// at most the network's body limit: a message is already in memory when it is handed over).
const QUEUED_MESSAGES: usize = 8;

/// Where the runtime reads its messages from.
pub(crate) trait Source: Send {
    /// The next non-blank message; `None` at the end of the input.
    fn next(&mut self) -> impl Future<Output = std::io::Result<Option<Line<'_>>>> + Send;

    /// The longest message accepted.
    fn max(&self) -> usize;
}

impl<R: AsyncRead + Unpin + Send> Source for LineReader<R> {
    fn next(&mut self) -> impl Future<Output = std::io::Result<Option<Line<'_>>>> + Send {
        LineReader::next(self)
    }

    fn max(&self) -> usize {
        LineReader::max(self)
    }
}

/// A connection's messages, handed over one by one.
#[derive(Debug)]
pub(crate) struct Messages {
    rx: mpsc::Receiver<Vec<u8>>,
    current: Vec<u8>,
    max: usize,
}

/// What hands a connection's messages to its runtime; dropping every clone is the end of the
/// input.
pub(crate) type Input = mpsc::Sender<Vec<u8>>;

impl Messages {
    /// A bounded channel of messages, accepting messages of at most `max` bytes.
    pub fn channel(max: usize) -> (Input, Messages) {
        let (tx, rx) = mpsc::channel(QUEUED_MESSAGES);
        let messages = Messages {
            rx,
            current: Vec::new(),
            max,
        };
        (tx, messages)
    }
}

impl Source for Messages {
    async fn next(&mut self) -> std::io::Result<Option<Line<'_>>> {
        loop {
            let Some(message) = self.rx.recv().await else {
                return Ok(None);
            };
            if message.len() > self.max {
                return Ok(Some(Line::TooLong));
            }
            self.current = message;
            if !self.current.trim_ascii().is_empty() {
                return Ok(Some(Line::Message(self.current.trim_ascii())));
            }
        }
    }

    fn max(&self) -> usize {
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn messages_come_as_sent_blank_ones_skipped_long_ones_reported() {
        let (tx, mut source) = Messages::channel(16);
        tx.send(b"{\n  \"a\": 1\n}".to_vec()).await.unwrap();
        tx.send(b"  ".to_vec()).await.unwrap();
        tx.send(vec![b'x'; 17]).await.unwrap();
        drop(tx);
        let next = source.next().await.unwrap();
        assert!(
            matches!(next, Some(Line::Message(b"{\n  \"a\": 1\n}"))),
            "{next:?}"
        );
        assert!(matches!(source.next().await.unwrap(), Some(Line::TooLong)));
        assert!(source.next().await.unwrap().is_none());
    }
}
