//! The process's stdin and stdout, taken for the protocol alone.
//!
//! On Unix, [`take`] moves the protocol's input and output to private descriptors (closed on
//! exec, so child processes never inherit them), then points fd 0 at `/dev/null` and fd 1 at
//! stderr. From then on nothing else in the process can touch the protocol streams: a
//! `println!` in author code, a dependency's debug print or a child process writing to its
//! inherited stdout all land on stderr, and nothing can read (steal) the client's messages
//! from stdin. Making the private descriptors non-blocking touches no descriptor anyone else
//! holds.
//!
//! Pipes and sockets (what editors use) are then driven by the runtime's event loop directly:
//! `tokio::io::stdin()`/`stdout()` would hand every read and write to the blocking thread
//! pool, two extra thread hops on the path of each message. Anything else (a terminal, a
//! file) is read and written through the blocking pool, left in blocking mode.

use tokio::io::{AsyncRead, AsyncWrite};

pub(crate) type Reader = Box<dyn AsyncRead + Unpin + Send>;
pub(crate) type Writer = Box<dyn AsyncWrite + Unpin + Send>;

/// Takes stdin and stdout for the protocol (see the module's doc). If a descriptor cannot be
/// moved, the stream is used where it is, as before.
#[cfg(unix)]
pub(crate) fn take() -> (Reader, Writer) {
    use std::io::Write;
    use std::os::fd::AsFd;

    let reader = match private::take_input() {
        Ok(fd) => private::reader(fd),
        Err(e) => {
            tracing::warn!("could not move stdin to a private descriptor: {e}");
            Box::new(tokio::io::stdin()) as Reader
        }
    };
    // Whatever was printed before serving goes where it was meant to, first.
    let _ = std::io::stdout().lock().flush();
    let writer = match private::take_output(std::io::stderr().as_fd()) {
        Ok(fd) => private::writer(fd),
        Err(e) => {
            tracing::warn!("could not move stdout to a private descriptor: {e}");
            Box::new(tokio::io::stdout()) as Writer
        }
    };
    (reader, writer)
}

#[cfg(not(unix))]
pub(crate) fn take() -> (Reader, Writer) {
    (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
}

#[cfg(unix)]
mod private {
    use std::fs::File;
    use std::io;
    use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
    use std::os::unix::fs::FileTypeExt;

    use tokio::net::unix::pipe;

    use super::{Reader, Writer};

    /// A private duplicate of fd 0 (close-on-exec); fd 0 then reads `/dev/null`.
    pub fn take_input() -> io::Result<OwnedFd> {
        let private = io::stdin().as_fd().try_clone_to_owned()?;
        let null = File::open("/dev/null")?;
        rustix::stdio::dup2_stdin(&null)?;
        Ok(private)
    }

    /// A private duplicate of fd 1 (close-on-exec); fd 1 then writes where `to` (stderr) does,
    /// or to `/dev/null` if that is not open.
    pub fn take_output(to: BorrowedFd<'_>) -> io::Result<OwnedFd> {
        let private = io::stdout().as_fd().try_clone_to_owned()?;
        if rustix::stdio::dup2_stdout(to).is_err() {
            let null = File::options().write(true).open("/dev/null")?;
            rustix::stdio::dup2_stdout(&null)?;
        }
        Ok(private)
    }

    enum Kind {
        Pipe,
        Socket,
        Other,
    }

    fn kind(fd: &OwnedFd) -> Kind {
        let Ok(file) = fd.try_clone().map(File::from) else {
            return Kind::Other;
        };
        match file.metadata().map(|m| m.file_type()) {
            Ok(t) if t.is_fifo() => Kind::Pipe,
            Ok(t) if t.is_socket() => Kind::Socket,
            _ => Kind::Other,
        }
    }

    fn socket(fd: OwnedFd) -> io::Result<tokio::net::UnixStream> {
        let stream = std::os::unix::net::UnixStream::from(fd);
        stream.set_nonblocking(true)?;
        tokio::net::UnixStream::from_std(stream)
    }

    pub fn reader(fd: OwnedFd) -> Reader {
        let opened: io::Result<Reader> = match kind(&fd) {
            Kind::Pipe => pipe::Receiver::from_owned_fd(fd).map(|p| Box::new(p) as Reader),
            Kind::Socket => socket(fd).map(|s| Box::new(s) as Reader),
            Kind::Other => Ok(Box::new(tokio::fs::File::from_std(File::from(fd)))),
        };
        opened.unwrap_or_else(|e| {
            tracing::warn!("could not read stdin asynchronously: {e}");
            Box::new(tokio::io::empty())
        })
    }

    pub fn writer(fd: OwnedFd) -> Writer {
        let opened: io::Result<Writer> = match kind(&fd) {
            Kind::Pipe => pipe::Sender::from_owned_fd(fd).map(|p| Box::new(p) as Writer),
            Kind::Socket => socket(fd).map(|s| Box::new(s) as Writer),
            Kind::Other => Ok(Box::new(tokio::fs::File::from_std(File::from(fd)))),
        };
        opened.unwrap_or_else(|e| {
            tracing::warn!("could not write stdout asynchronously: {e}");
            Box::new(tokio::io::sink())
        })
    }
}
