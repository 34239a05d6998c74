//! Serving an agent: wires a transport, the peer (reader and writer) and the router together,
//! and shuts everything down when the client goes away — running turns cancelled and answered,
//! requests awaiting the client failed, sessions freed, and the agent dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::{AsyncRead, AsyncWrite};
use tracing::{Instrument, debug, debug_span};

use crate::agent::Agent;
use crate::peer::{Peer, read_loop, write_loop};
use crate::router::Router;
use crate::session::Connection;
use crate::tools::Tools;
use crate::transport::stdio;
use crate::{Error, Result};

/// Serves `agent` on the process's stdin and stdout until the client closes stdin.
///
/// Everything written to stdout is a protocol frame: log through `tracing` to stderr.
pub async fn serve_stdio<A: Agent>(agent: A) -> Result<()> {
    let (reader, writer) = stdio::open();
    let served = serve(agent, reader, writer).await;
    stdio::restore();
    served
}

/// Serves `agent` over any byte stream pair until `reader` reaches end of file.
///
/// On end of file, running turns are cancelled and answered, requests awaiting the client
/// fail with [`Error::ConnectionClosed`], every session is freed, and the call returns
/// `Ok(())` once the agent has been dropped (unless the author kept a session handle of it
/// somewhere else).
pub async fn serve<A, R, W>(agent: A, reader: R, writer: W) -> Result<()>
where
    A: Agent,
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    static CONNECTIONS: AtomicU64 = AtomicU64::new(0);
    let span = debug_span!("acp", conn = CONNECTIONS.fetch_add(1, Ordering::Relaxed));
    let (peer, queue) = Peer::new(writer);
    let conn = Arc::new(Connection::new(peer.clone()));
    let agent = Arc::new(agent);
    conn.extensions.insert(Tools(agent.clone()));
    let writer_task = tokio::spawn(write_loop(queue, peer.clone()).instrument(span.clone()));
    let router = Router::new(agent, conn.clone());
    let read = read_loop(reader, &peer, &router)
        .instrument(span.clone())
        .await;

    // Shut down: cancel every turn (their tokens are children of the peer's), fail pending
    // requests, let the turns answer, then stop the writer once everything queued before the
    // stop is written.
    peer.close();
    router.shutdown().await;
    peer.stop().await;
    let written = writer_task.await;
    // Free the sessions and what the connection holds of the agent, then the agent itself.
    conn.sessions.clear();
    conn.extensions.clear();
    drop(router);
    debug!(parent: &span, "connection closed");
    read?;
    match written {
        Ok(result) => result.or_else(|e| {
            // The client going away first is a normal way for a session to end.
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                Ok(())
            } else {
                Err(Error::Io(e))
            }
        }),
        Err(join) => Err(Error::msg(format!("the writer task failed: {join}"))),
    }
}
