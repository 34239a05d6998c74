//! The local backend of [`Session::fs`](crate::Session::fs) and
//! [`Session::terminal`](crate::Session::terminal): the same author API acting on the agent's
//! own machine instead of asking the client.
//!
//! Which backend a connection uses is decided once, when it is initialized ([`Backends`]):
//!
//! - protocol v1, by default: the client's `fs/*` and `terminal/*` methods where the client
//!   advertised them, [`Error::Unsupported`](crate::Error::Unsupported) where it did not;
//! - protocol v1 with [`Server::local_fallback`](crate::Server::local_fallback): the same,
//!   except that what the client did not advertise (reading, writing, terminals: each on its
//!   own) is done locally;
//! - a connection whose client has no such methods at all (protocol v2) is switched to the
//!   local backend entirely with [`Connection::use_local_backend`](super::Connection::use_local_backend).
//!
//! Locally, files are read and written with the same boundary as through the client (the
//! session's roots, compared lexically: see [`roots`](super::roots)) and the same `line` /
//! `limit` semantics as `fs/read_text_file`; commands run as child processes in their own
//! process group, their output kept as `terminal/output` keeps it (see [`terminal`]).
//!
//! | file | owns |
//! | --- | --- |
//! | `mod.rs` | the choice of backend, the observer hook of local terminals |
//! | `fs.rs` | reading and writing text files on the agent's machine |
//! | `terminal.rs` | [`LocalTerminal`]: a child process, its output buffer, its exit, killing its group |

pub(crate) mod fs;
pub(crate) mod terminal;

use std::sync::Arc;

use crate::schema::ClientCapabilities;

pub(crate) use terminal::{LocalTerminal, exited, kill_group};

/// Where one facility of `cx.fs()` / `cx.terminal()` acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Backend {
    /// The client's methods (`fs/*`, `terminal/*`), when it advertised them.
    #[default]
    Client,
    /// The agent's own machine.
    Local,
}

/// The backend of each facility, chosen once per connection when it is initialized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Backends {
    /// `cx.fs().read_text_file` / `read_lines`.
    pub read: Backend,
    /// `cx.fs().write_text_file`.
    pub write: Backend,
    /// `cx.terminal()`.
    pub terminal: Backend,
}

impl Backends {
    /// Protocol v1: the client wherever it advertised the capability; where it did not,
    /// local if `fallback` (the server's [`local_fallback`](crate::Server::local_fallback)),
    /// else the client (whose methods then fail with `Unsupported`, sending nothing).
    pub fn v1(client: &ClientCapabilities, fallback: bool) -> Self {
        let pick = |advertised: bool| {
            if advertised || !fallback {
                Backend::Client
            } else {
                Backend::Local
            }
        };
        Backends {
            read: pick(client.fs.read_text_file),
            write: pick(client.fs.write_text_file),
            terminal: pick(client.terminal),
        }
    }

    /// Everything local: for a client that has no `fs/*` or `terminal/*` methods at all.
    pub fn local() -> Self {
        Backends {
            read: Backend::Local,
            write: Backend::Local,
            terminal: Backend::Local,
        }
    }
}

/// What happens to a local terminal, as reported to a [`TerminalObserver`].
///
/// Events of one terminal arrive in order: `Started`, any number of `Output`, then `Exited`
/// (unless the connection ends first), and `Released` once the author released or dropped
/// the handle (it may come before `Exited`: releasing kills the command).
#[derive(Debug)]
#[allow(dead_code)] // Read by the v2 encoder (terminal_update / terminal_output_chunk).
pub(crate) enum TerminalEvent<'a> {
    /// The command started: the terminal knows its command line and cwd.
    Started,
    /// Bytes the command wrote (stdout and stderr together), in order, as they arrived; not
    /// cut to the output byte limit, not necessarily split at character boundaries.
    Output(&'a [u8]),
    /// The command exited (or was killed).
    Exited(&'a crate::schema::TerminalExitStatus),
    /// The handle was released (or dropped).
    Released,
}

/// A hook through which a higher layer (the v2 encoder: `terminal_update`,
/// `terminal_output_chunk`) watches every local terminal of a connection as it runs. It is
/// called synchronously, from the task that reads the command's output: keep it short
/// (e.g. queue what it is given), never block in it.
pub(crate) type TerminalObserver = Arc<dyn Fn(&LocalTerminal, TerminalEvent<'_>) + Send + Sync>;

/// The [`TerminalObserver`] of a connection, once set (the first one stays).
#[derive(Default)]
pub(crate) struct ObserverSlot(std::sync::OnceLock<TerminalObserver>);

impl ObserverSlot {
    pub fn set(&self, observer: TerminalObserver) {
        let _ = self.0.set(observer);
    }

    pub fn get(&self) -> Option<TerminalObserver> {
        self.0.get().cloned()
    }
}

impl std::fmt::Debug for ObserverSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "ObserverSlot(set)"
        } else {
            "ObserverSlot(none)"
        })
    }
}

#[cfg(test)]
mod tests;
