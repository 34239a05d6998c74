//! A session's directories (its `cwd` and the client's `additionalDirectories`): checked when
//! the session opens, and the boundary of every path the agent hands to the client's file
//! system.
//!
//! Paths are compared lexically, after resolving `.` and `..`: the files live on the
//! client's side (an editor's buffers, a remote machine), so the agent cannot ask its own file
//! system what a symlink points to.

use std::path::{Component, Path, PathBuf};

use crate::schema::{self, ErrorCode};
use crate::{Error, Result};

/// The directories a session may touch through the client's file system.
#[derive(Debug, Clone, Default)]
pub(crate) struct Roots {
    /// The session's working directory: the base of relative paths.
    pub cwd: PathBuf,
    /// More roots the client gave (`additionalDirectories`).
    pub additional: Vec<PathBuf>,
}

impl Roots {
    /// Checks what the client sent: `cwd` and every additional directory must be absolute
    /// (the spec's MUST); the error is the `-32602` to answer with, naming the field.
    pub fn new(cwd: PathBuf, additional: Vec<PathBuf>) -> Result<Self, schema::Error> {
        let invalid = |field: &str, path: &Path| {
            let shown = if path.as_os_str().is_empty() {
                "an empty path".to_owned()
            } else {
                format!("`{}`", path.display())
            };
            schema::Error::new(
                ErrorCode::InvalidParams.into(),
                format!("invalid params: `{field}` must be an absolute path, got {shown}"),
            )
        };
        if !cwd.is_absolute() {
            return Err(invalid("cwd", &cwd));
        }
        if let Some(bad) = additional.iter().find(|p| !p.is_absolute()) {
            return Err(invalid("additionalDirectories", bad));
        }
        Ok(Roots {
            cwd: normalize(&cwd),
            additional: additional.iter().map(|p| normalize(p)).collect(),
        })
    }

    /// `path` made absolute (against the cwd) and normalized, if it lies in one of the roots;
    /// otherwise an error naming the path and the roots, and nothing is sent to the client.
    pub fn resolve(&self, path: &Path) -> Result<PathBuf> {
        let path = self.absolute(path);
        if std::iter::once(&self.cwd)
            .chain(&self.additional)
            .any(|root| path.starts_with(root))
        {
            return Ok(path);
        }
        let roots: Vec<String> = std::iter::once(&self.cwd)
            .chain(&self.additional)
            .map(|r| format!("`{}`", r.display()))
            .collect();
        Err(Error::OutsideRoots {
            path,
            roots: roots.join(", "),
        })
    }

    /// The root `path` (absolute, normalized) lies in lexically: the deepest, when roots
    /// nest.
    pub fn root_of(&self, path: &Path) -> Option<&Path> {
        std::iter::once(&self.cwd)
            .chain(&self.additional)
            .filter(|root| path.starts_with(root))
            .max_by_key(|root| root.components().count())
            .map(PathBuf::as_path)
    }

    /// `path` made absolute against the cwd and normalized, wherever it points.
    pub fn absolute(&self, path: &Path) -> PathBuf {
        normalize(&self.cwd.join(path))
    }
}

/// Resolves `.` and `..` without touching any file system; `..` never climbs above the root.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                // `pop` refuses to remove the root (or a Windows prefix).
                if out.parent().is_some() {
                    out.pop();
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn roots() -> Roots {
        Roots::new("/work/project".into(), vec!["/work/shared/lib/".into()]).unwrap()
    }

    #[test]
    fn relative_or_empty_directories_are_refused_naming_the_field() {
        let e = Roots::new("".into(), vec![]).unwrap_err();
        assert_eq!(i32::from(e.code), -32602);
        assert!(
            e.message.contains("`cwd`") && e.message.contains("empty"),
            "{}",
            e.message
        );
        let e = Roots::new("project".into(), vec![]).unwrap_err();
        assert!(e.message.contains("`project`"), "{}", e.message);
        let e = Roots::new("/p".into(), vec!["/ok".into(), "rel".into()]).unwrap_err();
        assert!(e.message.contains("additionalDirectories"), "{}", e.message);
    }

    #[test]
    fn paths_are_resolved_against_the_cwd_and_normalized() {
        let r = roots();
        assert_eq!(
            r.resolve(Path::new("src/./main.rs")).unwrap(),
            Path::new("/work/project/src/main.rs")
        );
        assert_eq!(
            r.resolve(Path::new("a/../b.txt")).unwrap(),
            Path::new("/work/project/b.txt")
        );
        assert_eq!(
            r.resolve(Path::new("/work/shared/lib/x.rs")).unwrap(),
            Path::new("/work/shared/lib/x.rs")
        );
        assert_eq!(
            r.resolve(Path::new("../shared/lib/y")).unwrap(),
            Path::new("/work/shared/lib/y")
        );
    }

    #[test]
    fn paths_outside_every_root_are_refused() {
        let r = roots();
        for outside in [
            "../../../etc/passwd",
            "/etc/passwd",
            "/work/project-other/x",
            "/work/shared/libx",
            "/../../etc",
        ] {
            match r.resolve(Path::new(outside)) {
                Err(Error::OutsideRoots { path, roots }) => {
                    assert!(!path.starts_with("/work/project"), "{outside}: {path:?}");
                    assert!(roots.contains("/work/project"), "{roots}");
                }
                other => panic!("{outside}: {other:?}"),
            }
        }
        assert_eq!(
            r.absolute(Path::new("../../../etc/passwd")),
            Path::new("/etc/passwd")
        );
    }
}
