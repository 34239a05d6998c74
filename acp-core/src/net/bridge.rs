//! One network connection as one [`serve`](crate::serve): the agent's runtime on an in-memory
//! duplex pair, messages in as lines, lines out as messages. Both pipes are bounded, so a
//! client that stops reading stalls only its own connection.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf};

use super::Place;

/// Starts one `serve` over the two pipes (input, output) for the connection's user (if the
/// service names users); ends when the connection does.
pub(crate) type ServeFn = Arc<
    dyn Fn(DuplexStream, DuplexStream, Option<String>) -> Pin<Box<dyn Future<Output = ()> + Send>>
        + Send
        + Sync,
>;

/// How many bytes each direction's pipe holds before the writer waits.
const PIPE_BYTES: usize = 64 * 1024;

/// The network side of one connection's runtime.
pub(crate) struct Bridge {
    /// Lines to the agent; dropping it is the client's end of file.
    pub input: DuplexStream,
    /// Lines from the agent.
    pub output: Lines,
}

/// The agent's output, a line at a time.
pub(crate) struct Lines(BufReader<ReadHalf<DuplexStream>>);

impl Lines {
    /// Whether a whole line is already read and waiting: [`next`](Self::next) returns it
    /// without waiting for the agent.
    pub fn has_line(&self) -> bool {
        self.0.buffer().contains(&b'\n')
    }

    /// The next line without its newline; `None` once the agent's runtime has ended.
    pub async fn next(&mut self) -> Option<String> {
        let mut line = Vec::new();
        loop {
            line.clear();
            match self.0.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
            while line.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                line.pop();
            }
            if !line.is_empty() {
                return Some(String::from_utf8_lossy(&line).into_owned());
            }
        }
    }
}

impl Lines {
    /// Reads and discards the rest of the agent's output until its runtime ends: once the
    /// client went away, the turns it left running go on (and are recorded) without waiting
    /// for a reader (see [`Server::detached_turns`](crate::Server::detached_turns)).
    pub fn discard_rest(self) {
        let mut reader = self.0;
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut reader, &mut tokio::io::sink()).await;
        });
    }
}

/// Starts the connection's runtime for `user`; `place` (its place among the connections
/// allowed, and its user's) is released when the runtime has ended, its turns answered and
/// its sessions freed.
pub(crate) fn start(serve: &ServeFn, place: Place, user: Option<String>) -> Bridge {
    let (input, agent_in) = tokio::io::duplex(PIPE_BYTES);
    let (agent_out, output) = tokio::io::duplex(PIPE_BYTES);
    let running = serve(agent_in, agent_out, user);
    tokio::spawn(async move {
        running.await;
        drop(place);
    });
    let (read, _write) = tokio::io::split(output);
    Bridge {
        input,
        output: Lines(BufReader::new(read)),
    }
}

/// Writes one client message to the agent as one line. A message spread over several lines
/// (pretty-printed JSON) is put on one; the runtime answers anything that is not JSON-RPC
/// with the protocol's error, as over stdio.
pub(crate) async fn send_line(input: &mut DuplexStream, message: &str) -> std::io::Result<()> {
    let message = message.trim();
    if message.is_empty() {
        return Ok(());
    }
    let line = if message.contains(['\n', '\r']) {
        match serde_json::from_str::<serde_json::Value>(message) {
            Ok(value) => value.to_string(),
            Err(_) => message.replace(['\n', '\r'], " "),
        }
    } else {
        message.to_owned()
    };
    input.write_all(line.as_bytes()).await?;
    input.write_all(b"\n").await?;
    input.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn a_pretty_printed_message_becomes_one_line() {
        let (mut a, mut b) = tokio::io::duplex(1024);
        send_line(&mut a, "{\n  \"jsonrpc\": \"2.0\",\n  \"method\": \"x\"\n}")
            .await
            .unwrap();
        send_line(&mut a, "  ").await.unwrap();
        drop(a);
        let mut out = String::new();
        b.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n");
    }
}
