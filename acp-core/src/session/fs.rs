//! The client's file system (`fs/read_text_file`, `fs/write_text_file`), as a session sees it.

use std::path::{Path, PathBuf};

use super::Session;
use crate::protocol::methods;
use crate::schema;
use crate::{Error, Result};

impl Session {
    /// The client's file system (`fs/read_text_file`, `fs/write_text_file`), bounded by the
    /// session's directories.
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

    /// Whether the client can read files (`fs.readTextFile`).
    pub fn can_read(&self) -> bool {
        self.cx.client_capabilities().fs.read_text_file
    }

    /// Whether the client can write files (`fs.writeTextFile`).
    pub fn can_write(&self) -> bool {
        self.cx.client_capabilities().fs.write_text_file
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
        let params = schema::ReadTextFileRequest::new(self.cx.id().clone(), self.path(path)?)
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
        let params = schema::WriteTextFileRequest::new(
            self.cx.id().clone(),
            self.path(path)?,
            content.into(),
        );
        let _: serde::de::IgnoredAny = self
            .cx
            .request(methods::FS_WRITE_TEXT_FILE, &params)
            .await?;
        Ok(())
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
