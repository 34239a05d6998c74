//! The file system of a session (`cx.fs()`): the client's (`fs/read_text_file`,
//! `fs/write_text_file`), or the agent's own machine's (see [`local`]).

use std::path::{Path, PathBuf};

use super::Session;
use super::local::{self, Backend};
use crate::protocol::methods;
use crate::schema;
use crate::{Error, Result};

impl Session {
    /// The client's file system (`fs/read_text_file`, `fs/write_text_file`), bounded by the
    /// session's directories; the agent's own, where the client lacks it and the server
    /// opted in with [`Server::local_fallback`](crate::Server::local_fallback).
    pub fn fs(&self) -> Fs<'_> {
        Fs {
            cx: self,
            restricted: true,
        }
    }
}

/// The client's file system, as seen through the editor (including unsaved buffers).
///
/// Paths are resolved against the session's [cwd](Session::cwd) and normalized (`.` and
/// `..` resolved) before they are sent, and must lie inside the session's directories: the
/// cwd or one of the client's [additional directories](Session::additional_directories).
/// A path outside them fails with [`Error::OutsideRoots`] and nothing is sent — a model
/// asking for `../../../etc/passwd` gets an error, not the file. An agent that must reach
/// further says so explicitly with [`Fs::unrestricted`].
///
/// Each method fails with [`Error::Unsupported`], without sending anything, when the client
/// did not advertise the matching `fs` capability, and with [`Error::Refused`] when the
/// client answers with an error (a missing file: [`Error::is_not_found`]).
///
/// **Locally.** With [`Server::local_fallback`](crate::Server::local_fallback), what the client
/// does not offer (reading, writing: each on its own) is done on the agent's machine instead,
/// within the same boundary, with symbolic links resolved: a link that leads out of the
/// session's directories is refused with [`Error::OutsideRoots`], on read and on write (see
/// `local::fs`). On the network, even [`Fs::unrestricted`] stays within the directories the
/// operator granted the client. `line` and `limit` select lines as the client does, keeping their line endings;
/// a write replaces the file or creates it, and the directories it would be in, as an editor
/// saving a new buffer does. Errors are then [`Error::Io`] (a missing file: `NotFound`, which
/// [`Error::is_not_found`] tells apart too). Files are read from disk: unsaved editor buffers
/// are not seen.
///
/// ```no_run
/// # async fn demo(cx: &acp_core::Session) -> acp_core::Result<()> {
/// let notes = cx.fs().read_text_file("notes/today.md").await?; // <cwd>/notes/today.md
/// let refused = cx.fs().read_text_file("/etc/passwd").await;
/// assert!(matches!(refused, Err(acp_core::Error::OutsideRoots { .. })));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Fs<'a> {
    cx: &'a Session,
    restricted: bool,
}

impl Fs<'_> {
    /// The same file system without the boundary of the session's directories: relative
    /// paths are still resolved against the cwd, and any absolute path is sent as it is
    /// (normalized). For agents whose job reaches outside the project, e.g. reading the
    /// user's global configuration.
    pub fn unrestricted(self) -> Self {
        Fs {
            restricted: false,
            ..self
        }
    }

    /// Whether files can be read: the client advertised `fs.readTextFile`, or they are read
    /// locally ([`Server::local_fallback`](crate::Server::local_fallback)).
    pub fn can_read(&self) -> bool {
        self.backend(|b| b.read) == Backend::Local
            || self.cx.client_capabilities().fs.read_text_file
    }

    /// Whether files can be written: the client advertised `fs.writeTextFile`, or they are
    /// written locally ([`Server::local_fallback`](crate::Server::local_fallback)).
    pub fn can_write(&self) -> bool {
        self.backend(|b| b.write) == Backend::Local
            || self.cx.client_capabilities().fs.write_text_file
    }

    fn backend(&self, of: impl FnOnce(local::Backends) -> Backend) -> Backend {
        of(self.cx.connection().backends())
    }

    /// Reads a whole text file.
    pub async fn read_text_file(&self, path: impl AsRef<Path>) -> Result<String> {
        self.read_lines(path, None, None).await
    }

    /// Reads `limit` lines starting at the 1-based `line` (either may be `None`).
    pub async fn read_lines(
        &self,
        path: impl AsRef<Path>,
        line: Option<u32>,
        limit: Option<u32>,
    ) -> Result<String> {
        if !self.can_read() {
            return Err(Error::Unsupported("fs.readTextFile"));
        }
        if self.backend(|b| b.read) == Backend::Local {
            let path = self.path(path)?;
            let anchor = self.anchor(&path)?;
            self.cx.check_usable()?;
            let files = self.cx.connection().local_files();
            return local::fs::read(files, anchor, &path, line, limit).await;
        }
        let params = schema::ReadTextFileRequest::new(
            self.cx.client_session().id().clone(),
            self.path(path)?,
        )
        .line(line)
        .limit(limit);
        let answer: schema::ReadTextFileResponse =
            self.cx.request(methods::FS_READ_TEXT_FILE, &params).await?;
        Ok(answer.content)
    }

    /// Writes a whole text file, creating it if needed.
    pub async fn write_text_file(
        &self,
        path: impl AsRef<Path>,
        content: impl Into<String>,
    ) -> Result<()> {
        if !self.can_write() {
            return Err(Error::Unsupported("fs.writeTextFile"));
        }
        if self.backend(|b| b.write) == Backend::Local {
            let path = self.path(path)?;
            let anchor = self.anchor(&path)?;
            self.cx.check_usable()?;
            let files = self.cx.connection().local_files();
            return local::fs::write(files, anchor, &path, &content.into()).await;
        }
        let params = schema::WriteTextFileRequest::new(
            self.cx.client_session().id().clone(),
            self.path(path)?,
            content.into(),
        );
        let _: serde::de::IgnoredAny = self
            .cx
            .request(methods::FS_WRITE_TEXT_FILE, &params)
            .await?;
        Ok(())
    }

    /// The directory a local file operation on `path` (resolved) must stay below once links
    /// are resolved: its session root, or unrestricted, the directory granted to a network
    /// client it lies in (a path outside every granted one is refused) or none over stdio.
    fn anchor(&self, path: &Path) -> Result<Option<&Path>> {
        let roots = &self.cx.state.roots;
        if self.restricted {
            return Ok(roots.root_of(path));
        }
        self.cx
            .connection()
            .grant()
            .anchor_of(path)
            .ok_or_else(|| Error::OutsideRoots {
                path: path.to_path_buf(),
                roots: format!(
                    "`{}`, the directories granted to this client",
                    roots.cwd.display()
                ),
            })
    }

    /// The path to send: absolute, normalized, and inside the roots unless unrestricted.
    fn path(&self, path: impl AsRef<Path>) -> Result<PathBuf> {
        let roots = &self.cx.state.roots;
        if self.restricted {
            roots.resolve(path.as_ref())
        } else {
            Ok(roots.absolute(path.as_ref()))
        }
    }
}
