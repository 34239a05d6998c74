//! # workspace — every directory of the session: its cwd and the editor's other roots
//!
//! Shows: the directories of a session — `cx.cwd()` and `cx.additional_directories()`, the
//! other roots of a multi-root workspace that an editor passes as `additionalDirectories`
//! (the runtime advertises `sessionCapabilities.additionalDirectories` for every agent, checks
//! the paths and keeps them with the session's history) — files read and written through the
//! editor in any of them, and a path outside all of them refused by `cx.fs()` with
//! `Error::OutsideRoots` before anything reaches the editor, told to the user plainly.
//!
//! - `roots`: the session's directories, one per line, the cwd first;
//! - `find NAME`: reads `NAME` in every directory (e.g. `find README.md`) and says where it is;
//! - `read PATH`: shows a file (PATH absolute, or relative to the cwd);
//! - `append PATH TEXT`: adds a line to a file, after asking (a diff in the tool call).
//!
//! Run it: `ACP_DEMO_DIRS=/some/other/dir ./scripts/demo workspace "roots" "find README.md"`,
//! or point a multi-root editor's agent server setting at `target/debug/examples/workspace`.

use std::path::{Path, PathBuf};

use acp::{Diff, Prompt, Session, StopReason};

/// The agent: no state of its own; the session knows its directories.
#[derive(Default)]
pub struct Workspace;

/// What to tell the user instead of failing the turn, if `e` is something they can act on.
fn explain(e: &acp::Error, path: &Path) -> Option<String> {
    match e {
        acp::Error::OutsideRoots { .. } => Some(format!(
            "I can only work inside this session's directories: {e}. Add the folder to your \
             workspace to let me in."
        )),
        acp::Error::Unsupported(capability) => Some(format!(
            "This editor does not let agents use its files (no {capability} capability)."
        )),
        e if e.is_not_found() => Some(format!("There is no `{}`.", path.display())),
        _ => None,
    }
}

#[acp::agent(name = "workspace", title = "Workspace")]
impl Workspace {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        // The command is the first line; @-mentions follow it as `[@name](uri)` lines.
        let text = prompt.text();
        let line = text.lines().next().unwrap_or_default().trim();
        let (command, rest) = line.split_once(' ').unwrap_or((line, ""));
        let rest = rest.trim();
        let answer = match command {
            "roots" => roots(cx)
                .iter()
                .map(|r| r.display().to_string())
                .collect::<Vec<_>>()
                .join("\n"),
            "find" if !rest.is_empty() => self.find(cx, Path::new(rest)).await?,
            "read" if !rest.is_empty() => {
                let path = PathBuf::from(rest);
                match self.read(cx, path.clone()).await {
                    Ok(text) => text,
                    Err(e) => explain(&e, &path).ok_or(e)?,
                }
            }
            "append" if rest.contains(' ') => {
                let (path, line) = rest.split_once(' ').unwrap_or_default();
                self.append(cx, PathBuf::from(path), line.trim()).await?
            }
            _ => "Say `roots`, `find NAME`, `read PATH` or `append PATH TEXT`.".to_owned(),
        };
        cx.message(answer).await?;
        Ok(StopReason::EndTurn)
    }

    /// Reads a text file through the editor; it must lie in one of the session's directories.
    ///
    /// # Arguments
    /// - `path`: the file, absolute or relative to the session's directory.
    #[acp::tool(kind = "read", title = "Read {path}", requires(fs_read))]
    async fn read(&self, cx: &Session, path: PathBuf) -> acp::Result<String> {
        cx.fs().read_text_file(&path).await
    }

    /// Writes a text file through the editor, after asking the user; it must lie in one of
    /// the session's directories.
    ///
    /// # Arguments
    /// - `path`: the file, absolute or relative to the session's directory.
    /// - `content`: the file's new content.
    #[acp::tool(kind = "edit", title = "Write {path}", permission, requires(fs))]
    async fn write(&self, cx: &Session, path: PathBuf, content: String) -> acp::Result<Diff> {
        let old = cx.fs().read_text_file(&path).await.ok();
        cx.fs().write_text_file(&path, &content).await?;
        Ok(Diff::new(cx.cwd().join(path), content).old_text(old))
    }
}

impl Workspace {
    /// `name` looked up in every directory of the session, one read each.
    async fn find(&self, cx: &Session, name: &Path) -> acp::Result<String> {
        let mut found = Vec::new();
        for root in roots(cx) {
            let path = root.join(name);
            let line = match self.read(cx, path.clone()).await {
                Ok(text) => format!("{}: {} lines", path.display(), text.lines().count()),
                Err(e) => explain(&e, &path).ok_or(e)?,
            };
            found.push(line);
        }
        Ok(found.join("\n"))
    }

    /// Adds `line` to the file at `path` (a missing file is created); the read comes first, so
    /// a path outside the session's directories is refused before the user is asked anything.
    async fn append(&self, cx: &Session, path: PathBuf, line: &str) -> acp::Result<String> {
        let old = match self.read(cx, path.clone()).await {
            Ok(text) => text,
            Err(e) if e.is_not_found() => String::new(),
            Err(e) => return explain(&e, &path).ok_or(e),
        };
        match self.write(cx, path.clone(), format!("{old}{line}\n")).await {
            Ok(_) => Ok(format!("Added to `{}`.", path.display())),
            Err(acp::Error::PermissionDenied) => Ok("Not added: you said no.".to_owned()),
            Err(e) => explain(&e, &path).ok_or(e),
        }
    }
}

/// The session's directories: the cwd, then the editor's additional ones.
fn roots(cx: &Session) -> Vec<PathBuf> {
    std::iter::once(cx.cwd().to_path_buf())
        .chain(cx.additional_directories().iter().cloned())
        .collect()
}

#[tokio::main]
async fn main() -> acp::Result<()> {
    acp::init_logging();
    acp::serve_main(Workspace).await
}
