//! The process's stdin and stdout as async streams.
//!
//! When they are pipes (as under every ACP client), they are driven by the runtime's event
//! loop directly: `tokio::io::stdin()`/`stdout()` would hand every read and write to the
//! blocking thread pool, two extra thread hops on the path of each message. Anything else
//! (a terminal, a file) falls back to those.

use tokio::io::{AsyncRead, AsyncWrite};

pub(crate) type Reader = Box<dyn AsyncRead + Unpin + Send>;
pub(crate) type Writer = Box<dyn AsyncWrite + Unpin + Send>;

#[cfg(unix)]
pub(crate) fn open() -> (Reader, Writer) {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    let reader: Reader = match std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Receiver::from_owned_fd)
    {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdin()),
    };
    let writer: Writer = match std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Sender::from_owned_fd)
    {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdout()),
    };
    (reader, writer)
}

/// Puts stdin and stdout back in blocking mode (the pipe ends share their mode with the
/// duplicates made by [`open`]), for whatever the process does after serving.
#[cfg(unix)]
pub(crate) fn restore() {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    if let Ok(pipe) = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Receiver::from_owned_fd)
    {
        let _ = pipe.into_blocking_fd();
    }
    if let Ok(pipe) = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Sender::from_owned_fd)
    {
        let _ = pipe.into_blocking_fd();
    }
}

#[cfg(not(unix))]
pub(crate) fn open() -> (Reader, Writer) {
    (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
}

#[cfg(not(unix))]
pub(crate) fn restore() {}
