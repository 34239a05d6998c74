//! Text files on the agent's own machine, with the semantics of the client's
//! `fs/read_text_file` and `fs/write_text_file`. The paths given here are already resolved
//! and checked against the session's roots by [`Fs`](crate::session::Fs).

use std::path::Path;
use std::sync::Arc;

use crate::{Error, Result};

/// Files kept somewhere other than this machine's disk, that the local backend reads and
/// writes instead when a connection has them ([`Connection::local_files`]): the
/// [`acp::testing`](crate::testing) client's in-memory file system, so that a test of an agent
/// on protocol v2 (no `fs/*`) sees the same files as on v1.
///
/// [`Connection::local_files`]: crate::session::Connection::local_files
pub(crate) trait Files: std::fmt::Debug + Send + Sync + 'static {
    /// The content of `path`, if there is such a file.
    fn read(&self, path: &Path) -> Option<String>;
    /// Replaces or creates `path`.
    fn write(&self, path: &Path, content: &str);
}

/// Reads the text file `path` (from `files`, or this machine's disk): all of it, or `limit`
/// lines from the 1-based `line` (a `line` of 0 is the first line, as `fs/read_text_file`
/// clients read it). Lines keep their line endings. A missing file is an [`Error::Io`] of
/// kind `NotFound` ([`Error::is_not_found`]); a file that is not UTF-8 one of kind
/// `InvalidData`.
pub(crate) async fn read(
    files: Option<&Arc<dyn Files>>,
    path: &Path,
    line: Option<u32>,
    limit: Option<u32>,
) -> Result<String> {
    let doing = || format!("reading `{}`", path.display());
    let content = match files {
        Some(files) => files
            .read(path)
            .ok_or_else(|| Error::io(doing(), std::io::ErrorKind::NotFound.into()))?,
        None => tokio::fs::read_to_string(path)
            .await
            .map_err(|e| Error::io(doing(), e))?,
    };
    Ok(select_lines(content, line, limit))
}

/// `limit` lines of `content` from the 1-based `line`; all of it when neither is given.
pub(crate) fn select_lines(content: String, line: Option<u32>, limit: Option<u32>) -> String {
    if line.is_none() && limit.is_none() {
        return content;
    }
    let skip = line.map_or(0, |l| l.saturating_sub(1)) as usize;
    let take = limit.map_or(usize::MAX, |l| l as usize);
    content
        .split_inclusive('\n')
        .skip(skip)
        .take(take)
        .collect()
}

/// Writes `content` to `path`, replacing the file or creating it, and the directories it
/// would be in, as an editor saving a new buffer does (the caller checked that `path`, and so
/// every directory above it up to a root, lies inside the session's roots).
pub(crate) async fn write(
    files: Option<&Arc<dyn Files>>,
    path: &Path,
    content: &str,
) -> Result<()> {
    if let Some(files) = files {
        files.write(path, content);
        return Ok(());
    }
    let doing = || format!("writing `{}`", path.display());
    if let Some(parent) = path.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|e| Error::io(doing(), e))?;
    }
    tokio::fs::write(path, content)
        .await
        .map_err(|e| Error::io(doing(), e))
}

#[cfg(test)]
mod tests {
    use super::select_lines;

    #[test]
    fn line_and_limit_select_lines_as_the_client_methods_do() {
        let text = || "one\ntwo\r\nthree\nfour".to_owned();
        assert_eq!(select_lines(text(), None, None), text());
        assert_eq!(select_lines(text(), Some(2), Some(2)), "two\r\nthree\n");
        assert_eq!(select_lines(text(), Some(3), None), "three\nfour");
        assert_eq!(select_lines(text(), None, Some(1)), "one\n");
        // 0 and 1 both name the first line; past the end is empty.
        assert_eq!(select_lines(text(), Some(0), Some(1)), "one\n");
        assert_eq!(select_lines(text(), Some(1), Some(0)), "");
        assert_eq!(select_lines(text(), Some(9), None), "");
    }
}
