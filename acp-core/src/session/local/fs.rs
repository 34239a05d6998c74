//! Text files on the agent's own machine, with the semantics of the client's
//! `fs/read_text_file` and `fs/write_text_file`. The paths given here are already resolved
//! and checked lexically against the session's roots by [`Fs`](crate::session::Fs); here
//! they are opened below their root (the *anchor*) with symbolic links resolved by the
//! kernel, so that a link pointing out of the root is refused as [`Error::OutsideRoots`],
//! on read and on write, with no window between a check and the use (Linux: `openat2` with
//! `RESOLVE_BENEATH`; elsewhere, or on a kernel without it, the path is resolved and checked
//! just before it is opened).

use std::path::{Path, PathBuf};
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
///
/// With an `anchor`, the file must be below it once every symbolic link is resolved.
pub(crate) async fn read(
    files: Option<&Arc<dyn Files>>,
    anchor: Option<&Path>,
    path: &Path,
    line: Option<u32>,
    limit: Option<u32>,
) -> Result<String> {
    let doing = || format!("reading `{}`", path.display());
    let content = match files {
        Some(files) => files
            .read(path)
            .ok_or_else(|| Error::io(doing(), std::io::ErrorKind::NotFound.into()))?,
        None => {
            let (anchor, path) = (anchor.map(Path::to_path_buf), path.to_path_buf());
            blocking(move || beneath::read(anchor.as_deref(), &path)).await?
        }
    };
    Ok(select_lines(content, line, limit))
}

/// Runs `job` off the async runtime's threads.
async fn blocking<T: Send + 'static>(
    job: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(job)
        .await
        .unwrap_or_else(|e| Err(Error::msg(format!("a file operation did not finish: {e}"))))
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
///
/// With an `anchor`, the file and every directory created must be below it once every
/// symbolic link is resolved.
pub(crate) async fn write(
    files: Option<&Arc<dyn Files>>,
    anchor: Option<&Path>,
    path: &Path,
    content: &str,
) -> Result<()> {
    if let Some(files) = files {
        files.write(path, content);
        return Ok(());
    }
    let (anchor, path) = (anchor.map(Path::to_path_buf), path.to_path_buf());
    let content = content.to_owned();
    blocking(move || beneath::write(anchor.as_deref(), &path, &content)).await
}

/// The error of a path that leads out of `anchor` through a symbolic link.
fn escaped(path: &Path, anchor: &Path) -> Error {
    Error::OutsideRoots {
        path: path.to_path_buf(),
        roots: format!("`{}`, which a symbolic link leads out of", anchor.display()),
    }
}

/// `path` relative to `anchor` (`.` for the anchor itself).
fn relative(anchor: &Path, path: &Path) -> Result<PathBuf> {
    match path.strip_prefix(anchor) {
        Ok(rel) if rel.as_os_str().is_empty() => Ok(PathBuf::from(".")),
        Ok(rel) => Ok(rel.to_path_buf()),
        Err(_) => Err(Error::OutsideRoots {
            path: path.to_path_buf(),
            roots: format!("`{}`", anchor.display()),
        }),
    }
}

/// Opening files below an anchor, links resolved by the kernel (`openat2`, Linux 5.6+).
#[cfg(any(target_os = "linux", target_os = "android"))]
mod beneath {
    use std::io::{Read, Write};
    use std::os::fd::OwnedFd;
    use std::path::{Component, Path, PathBuf};

    use rustix::fs::{Mode, OFlags, ResolveFlags};
    use rustix::io::Errno;

    use super::{escaped, relative};
    use crate::{Error, Result};

    /// `rel` opened below the directory `root`: a link (or `..`) that leads out of it is
    /// `EXDEV`, a `/proc` magic link `ELOOP`.
    fn at(root: &OwnedFd, rel: &Path, flags: OFlags, mode: Mode) -> rustix::io::Result<OwnedFd> {
        rustix::fs::openat2(
            root,
            rel,
            flags | OFlags::CLOEXEC,
            mode,
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        )
    }

    fn root(anchor: &Path) -> rustix::io::Result<OwnedFd> {
        rustix::fs::open(
            anchor,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
    }

    /// What an `openat2` error means for `path`: leaving the anchor is `OutsideRoots`.
    fn error(errno: Errno, anchor: &Path, path: &Path, doing: &str) -> Error {
        match errno {
            Errno::XDEV | Errno::LOOP => escaped(path, anchor),
            other => Error::io(
                format!("{doing} `{}`", path.display()),
                std::io::Error::from(other),
            ),
        }
    }

    pub(super) fn read(anchor: Option<&Path>, path: &Path) -> Result<String> {
        let Some(anchor) = anchor else {
            return super::fallback::read(None, path);
        };
        let fail = |e| error(e, anchor, path, "reading");
        let open = |path: &Path| {
            root(anchor).and_then(|root| {
                let rel = relative(anchor, path).map_err(|_| Errno::XDEV)?;
                at(&root, &rel, OFlags::RDONLY, Mode::empty())
            })
        };
        let opened = match open(path) {
            // An absolute link is refused below the anchor even where it points inside: open
            // where it leads, if that is inside, still below the anchor.
            Err(Errno::XDEV) => match inside(anchor, path) {
                Some(resolved) => open(&resolved),
                None => Err(Errno::XDEV),
            },
            opened => opened,
        };
        let file = match opened {
            Ok(file) => file,
            Err(Errno::NOSYS) => return super::fallback::read(Some(anchor), path),
            Err(e) => return Err(fail(e)),
        };
        let mut content = String::new();
        std::fs::File::from(file)
            .read_to_string(&mut content)
            .map_err(|e| Error::io(format!("reading `{}`", path.display()), e))?;
        Ok(content)
    }

    pub(super) fn write(anchor: Option<&Path>, path: &Path, content: &str) -> Result<()> {
        let Some(anchor) = anchor else {
            return super::fallback::write(None, path, content);
        };
        match write_below(anchor, path, content) {
            // An absolute link is refused below the anchor even where it points inside: write
            // where it leads, if that is inside, still below the anchor.
            Err(Error::OutsideRoots { .. }) => match inside(anchor, path) {
                Some(resolved) => write_below(anchor, &resolved, content).map_err(|e| match e {
                    Error::OutsideRoots { .. } => escaped(path, anchor),
                    other => other,
                }),
                None => Err(escaped(path, anchor)),
            },
            written => written,
        }
    }

    /// Where `path` leads once its links are resolved (its longest existing part), made
    /// relative to the anchor's own resolved path and back onto the anchor, if it lies
    /// below it; else `None`.
    fn inside(anchor: &Path, path: &Path) -> Option<PathBuf> {
        let real_anchor = std::fs::canonicalize(anchor).ok()?;
        let resolved = crate::session::grant::resolve_existing(path);
        let rel = resolved.strip_prefix(&real_anchor).ok()?;
        (resolved != path).then(|| anchor.join(rel))
    }

    fn write_below(anchor: &Path, path: &Path, content: &str) -> Result<()> {
        let rel = relative(anchor, path)?;
        let fail = |e| error(e, anchor, path, "writing");
        // A session's directory that does not exist yet is created, as the directories below
        // it are (an editor saving a new buffer creates them all).
        let root = match root(anchor) {
            Err(Errno::NOENT) => std::fs::create_dir_all(anchor)
                .map_err(|e| Error::io(format!("writing `{}`", path.display()), e))
                .and_then(|()| root(anchor).map_err(fail))?,
            opened => opened.map_err(fail)?,
        };
        if let Some(parent) = rel.parent() {
            match make_dirs(&root, parent) {
                Ok(()) => {}
                Err(Errno::NOSYS) => return super::fallback::write(Some(anchor), path, content),
                Err(e) => return Err(fail(e)),
            }
        }
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC;
        let file = at(&root, &rel, flags, Mode::from_raw_mode(0o666)).map_err(fail)?;
        std::fs::File::from(file)
            .write_all(content.as_bytes())
            .map_err(|e| Error::io(format!("writing `{}`", path.display()), e))
    }

    /// Creates the directories of `rel` below `root` that are missing, each checked to be
    /// below it.
    fn make_dirs(root: &OwnedFd, rel: &Path) -> rustix::io::Result<()> {
        let dir = OFlags::PATH | OFlags::DIRECTORY;
        let mut prefix = PathBuf::new();
        for part in rel.components() {
            let Component::Normal(name) = part else {
                continue;
            };
            let parent = if prefix.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                prefix.clone()
            };
            prefix.push(name);
            match at(root, &prefix, dir, Mode::empty()) {
                Ok(_) => continue,
                Err(Errno::NOENT) => {}
                Err(e) => return Err(e),
            }
            let parent = at(root, &parent, dir, Mode::empty())?;
            match rustix::fs::mkdirat(&parent, name, Mode::from_raw_mode(0o777)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(e),
            }
            at(root, &prefix, dir, Mode::empty())?;
        }
        Ok(())
    }
}

/// Elsewhere: the path resolved and checked just before it is opened.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
mod beneath {
    pub(super) use super::fallback::{read, write};
}

/// Resolving the path (its longest existing part) and checking it lies below the anchor,
/// then opening it: where the kernel cannot do both at once.
mod fallback {
    use std::path::Path;

    use super::escaped;
    use crate::session::grant::resolve_existing;
    use crate::{Error, Result};

    fn check(anchor: Option<&Path>, path: &Path) -> Result<()> {
        let Some(anchor) = anchor else {
            return Ok(());
        };
        let root = std::fs::canonicalize(anchor).unwrap_or_else(|_| anchor.to_path_buf());
        if resolve_existing(path).starts_with(&root) {
            Ok(())
        } else {
            Err(escaped(path, anchor))
        }
    }

    pub(super) fn read(anchor: Option<&Path>, path: &Path) -> Result<String> {
        check(anchor, path)?;
        std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("reading `{}`", path.display()), e))
    }

    pub(super) fn write(anchor: Option<&Path>, path: &Path, content: &str) -> Result<()> {
        check(anchor, path)?;
        let doing = || format!("writing `{}`", path.display());
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(doing(), e))?;
        }
        std::fs::write(path, content).map_err(|e| Error::io(doing(), e))
    }
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
