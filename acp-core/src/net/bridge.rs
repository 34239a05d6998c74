//! One network connection as one [`serve`](crate::serve): the agent's runtime reads the
//! client's messages from a bounded channel, as they came (a WebSocket message, a POST's
//! body: no newline framing), and hands over its own with their routes (the session each is
//! of, the request it answers: [`transport::Sink`](crate::transport::Sink)), so the network
//! side delivers them without parsing them. Both directions are bounded, so a client that
//! stops reading stalls only its own connection.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::Place;
use crate::transport::messages::Input;
use crate::transport::sink::Receiver;

/// Starts one `serve` for the connection's user (if the service names users): its input,
/// its output, and the runtime to run, which ends when the connection does.
pub(crate) type ServeFn = Arc<dyn Fn(Option<String>) -> Started + Send + Sync>;

/// A connection's runtime, not running yet.
pub(crate) struct Started {
    pub input: Input,
    pub output: Receiver,
    pub running: Pin<Box<dyn Future<Output = ()> + Send>>,
}

/// The network side of one connection's runtime.
pub(crate) struct Bridge {
    /// The client's messages to the agent; dropping every clone is the client's end of file.
    pub input: Input,
    /// The agent's messages, each with its route.
    pub output: Receiver,
}

/// Starts the connection's runtime for `user`; `place` (its place among the connections
/// allowed, and its user's) is released when the runtime has ended, its turns answered and
/// its sessions freed.
pub(crate) fn start(serve: &ServeFn, place: Place, user: Option<String>) -> Bridge {
    let Started {
        input,
        output,
        running,
    } = serve(user);
    tokio::spawn(async move {
        running.await;
        drop(place);
    });
    Bridge { input, output }
}

/// Hands one client message to the agent, waiting while its input is full; `false` once the
/// runtime has stopped reading. The runtime answers anything that is not JSON-RPC with the
/// protocol's error, as over stdio.
pub(crate) async fn send(input: &Input, message: &[u8]) -> bool {
    input.send(message.to_vec()).await.is_ok()
}
