//! The client's file system (`fs/read_text_file`, `fs/write_text_file`), as a session sees it.

use std::path::{Path, PathBuf};

use super::Session;
use crate::protocol::methods;
use crate::schema;
use crate::{Error, Result};

impl Session {
    /// The client's file system (`fs/read_text_file`, `fs/write_text_file`).
    pub fn fs(&self) -> Fs<'_> {
        Fs { cx: self }
    }
}

/// The client's file system, as seen through the editor (including unsaved buffers).
///
/// Each method fails with [`Error::Unsupported`], without sending anything, when the client
/// did not advertise the matching `fs` capability.
#[derive(Debug, Clone, Copy)]
pub struct Fs<'a> {
    cx: &'a Session,
}

impl Fs<'_> {
    /// Whether the client can read files (`fs.readTextFile`).
    pub fn can_read(&self) -> bool {
        self.cx.client_capabilities().fs.read_text_file
    }

    /// Whether the client can write files (`fs.writeTextFile`).
    pub fn can_write(&self) -> bool {
        self.cx.client_capabilities().fs.write_text_file
    }

    /// Reads a whole text file. Paths are resolved against the session's cwd.
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
        let params = schema::ReadTextFileRequest::new(self.cx.id().clone(), self.absolute(path))
            .line(line)
            .limit(limit);
        let answer: schema::ReadTextFileResponse =
            self.cx.request(methods::FS_READ_TEXT_FILE, &params).await?;
        Ok(answer.content)
    }

    /// Writes a whole text file, creating it if needed. Paths are resolved against the cwd.
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
            self.absolute(path),
            content.into(),
        );
        let _: serde::de::IgnoredAny = self
            .cx
            .request(methods::FS_WRITE_TEXT_FILE, &params)
            .await?;
        Ok(())
    }

    fn absolute(&self, path: impl AsRef<Path>) -> PathBuf {
        self.cx.cwd().join(path)
    }
}
