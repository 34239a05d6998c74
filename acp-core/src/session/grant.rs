//! What the operator granted a connection's client on the agent's own machine ([`Grant`]):
//! the directories its sessions may use, the MCP servers it may have the agent start or
//! reach, whether it may repoint the agent's model (`providers/*`), and the environment every
//! process started for it inherits.
//!
//! Over stdio the editor's user owns the machine: the grant is everything ([`Grant::host`]),
//! except that no child process inherits the service's secrets. The network service builds
//! a narrower one per user (`net::HttpConfig`'s grants): deny by default.
//!
//! Directories are compared after resolving symbolic links on this machine (the longest
//! existing part of each path), so that a session opened in a link that points out of the
//! grant is refused; the session keeps the resolved path.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::schema::{self, ErrorCode, McpServer};

use super::roots::Roots;

/// The environment variables of the service that no child process inherits, whatever the
/// connection: the network service's tokens, the store's URL (it may hold a password) and the
/// model providers' keys. [`Server::secret_env`](crate::Server::secret_env) adds more.
pub(crate) const SECRET_VARS: &[&str] = &[
    "ACP_TOKEN",
    "ACP_TOKENS",
    "ACP_TOKEN_FILE",
    "ACP_TOKENS_FILE",
    "ACP_DATABASE_URL",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
];

/// The variables a child started for a network user inherits from the service (when set):
/// what programs need to run at all, nothing that identifies or authorizes anyone.
pub(crate) const PASSED_VARS: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ",
    "TMPDIR",
];

/// What a connection's client may reach on the agent's machine.
#[derive(Debug, Clone)]
pub(crate) struct Grant {
    /// The directories (resolved) its sessions may use as `cwd` and additional directories,
    /// and what is below them; `None`: any.
    roots: Option<Arc<[PathBuf]>>,
    /// The commands of stdio MCP servers it may name (exactly as it names them); `None`: any.
    mcp_commands: Option<Arc<[String]>>,
    /// The URL prefixes of HTTP and SSE MCP servers it may name; `None`: any.
    mcp_urls: Option<Arc<[String]>>,
    /// Whether `providers/*` are answered for it.
    providers: bool,
    /// Whether its children start from an empty environment (plus [`PASSED_VARS`] and
    /// `passed`) rather than the service's.
    clean_env: bool,
    /// More variables its children inherit with `clean_env`.
    passed: Arc<[String]>,
    /// More variables no child inherits (beside [`SECRET_VARS`]).
    secrets: Arc<[String]>,
}

impl Default for Grant {
    fn default() -> Self {
        Grant::host()
    }
}

impl Grant {
    /// Everything: the editor's user owns the machine (stdio). Children inherit the
    /// service's environment less its secrets.
    pub fn host() -> Self {
        Grant {
            roots: None,
            mcp_commands: None,
            mcp_urls: None,
            providers: true,
            clean_env: false,
            passed: Arc::from([]),
            secrets: Arc::from([]),
        }
    }

    /// Nothing beyond `roots` (resolved already): no client-named MCP server, no
    /// `providers/*`, children with a clean environment. The network's default, widened with
    /// the `allow_*` methods.
    #[cfg_attr(not(feature = "http"), allow(dead_code))] // The network builds these.
    pub fn network(roots: Vec<PathBuf>) -> Self {
        Grant {
            roots: Some(roots.into()),
            mcp_commands: Some(Arc::from([])),
            mcp_urls: Some(Arc::from([])),
            providers: false,
            clean_env: true,
            passed: Arc::from([]),
            secrets: Arc::from([]),
        }
    }

    /// Also lets the client name stdio MCP servers with these commands.
    #[cfg_attr(not(feature = "http"), allow(dead_code))] // The network builds these.
    pub fn allow_mcp_commands(mut self, commands: Arc<[String]>) -> Self {
        self.mcp_commands = Some(commands);
        self
    }

    /// Also lets the client name HTTP and SSE MCP servers under these URL prefixes.
    #[cfg_attr(not(feature = "http"), allow(dead_code))] // The network builds these.
    pub fn allow_mcp_urls(mut self, urls: Arc<[String]>) -> Self {
        self.mcp_urls = Some(urls);
        self
    }

    /// Answers `providers/*` for the client (or not).
    #[cfg_attr(not(feature = "http"), allow(dead_code))] // The network builds these.
    pub fn allow_providers(mut self, allowed: bool) -> Self {
        self.providers = allowed;
        self
    }

    /// Also passes these variables to the children of a clean environment.
    #[cfg_attr(not(feature = "http"), allow(dead_code))] // The network builds these.
    pub fn pass_env(mut self, names: Arc<[String]>) -> Self {
        self.passed = names;
        self
    }

    /// Keeps these variables from every child too.
    pub fn secrets(mut self, names: Arc<[String]>) -> Self {
        self.secrets = names;
        self
    }

    /// Whether the client may repoint the agent's model (`providers/*`).
    #[cfg_attr(not(feature = "llm-providers"), allow(dead_code))]
    pub fn providers(&self) -> bool {
        self.providers
    }

    /// Whether the sessions' directories are confined to a grant (the network).
    pub fn confined(&self) -> bool {
        self.roots.is_some()
    }

    /// `roots` as the session keeps them: unchanged when any directory is granted; else each
    /// resolved through symbolic links and checked to lie in a granted directory, or the
    /// `-32602` to answer with, naming the field and the path.
    pub fn check_roots(&self, roots: Roots) -> Result<Roots, schema::Error> {
        let Some(granted) = &self.roots else {
            return Ok(roots);
        };
        let check = |field: &str, dir: &Path| {
            let resolved = resolve_existing(dir);
            if granted.iter().any(|root| resolved.starts_with(root)) {
                return Ok(resolved);
            }
            let shown: Vec<String> = granted
                .iter()
                .map(|r| format!("`{}`", r.display()))
                .collect();
            Err(schema::Error::new(
                ErrorCode::InvalidParams.into(),
                format!(
                    "invalid params: `{field}` `{}` is outside the directories this user may \
                     use ({})",
                    dir.display(),
                    if shown.is_empty() {
                        "none".to_owned()
                    } else {
                        shown.join(", ")
                    }
                ),
            ))
        };
        let cwd = check("cwd", &roots.cwd)?;
        let additional = roots
            .additional
            .iter()
            .map(|dir| check("additionalDirectories", dir))
            .collect::<Result<_, _>>()?;
        Ok(Roots { cwd, additional })
    }

    /// The granted directory `path` (absolute, normalized) lies in, if the grant confines
    /// the sessions: the anchor below which a local file operation must stay even when the
    /// author asked for [`Fs::unrestricted`](crate::session::Fs::unrestricted).
    pub fn anchor_of(&self, path: &Path) -> Option<Option<&Path>> {
        match &self.roots {
            None => Some(None),
            Some(granted) => granted
                .iter()
                .find(|root| path.starts_with(root))
                .map(|root| Some(root.as_path())),
        }
    }

    /// Whether the client may have the agent start or reach `server`; the reason when not.
    pub fn mcp_server(&self, server: &McpServer) -> Result<(), String> {
        match server {
            McpServer::Stdio(s) => match &self.mcp_commands {
                None => Ok(()),
                Some(allowed) if allowed.iter().any(|c| Path::new(c) == s.command) => Ok(()),
                Some(_) => Err(format!(
                    "the service does not start the command `{}` for network clients (the \
                     operator allows stdio MCP servers by command)",
                    s.command.display()
                )),
            },
            McpServer::Http(h) => self.mcp_url(&h.url),
            McpServer::Sse(s) => self.mcp_url(&s.url),
            _ => Ok(()),
        }
    }

    fn mcp_url(&self, url: &str) -> Result<(), String> {
        match &self.mcp_urls {
            None => Ok(()),
            Some(allowed) if allowed.iter().any(|prefix| url_under(url, prefix)) => Ok(()),
            Some(_) => Err(format!(
                "the service does not reach `{url}` for network clients (the operator allows \
                 MCP servers by URL)"
            )),
        }
    }

    /// Sets the environment `command` starts with: the service's less its secrets, or, for
    /// a confined client, only the variables programs need to run.
    pub fn child_env(&self, command: &mut tokio::process::Command) {
        if self.clean_env {
            command.env_clear();
            let passed = PASSED_VARS
                .iter()
                .copied()
                .chain(self.passed.iter().map(String::as_str));
            for name in passed {
                if let Some(value) = std::env::var_os(name) {
                    command.env(name, value);
                }
            }
        }
        for name in SECRET_VARS
            .iter()
            .copied()
            .chain(self.secrets.iter().map(String::as_str))
        {
            command.env_remove(name);
        }
    }
}

/// Whether `url` lies under the allowed `prefix`: the same scheme, host and port, and a path
/// that continues the prefix's at a `/` boundary (`https://mcp.example.com/a` allows
/// `https://mcp.example.com/a/b`, not `https://mcp.example.com/ab` or
/// `https://mcp.example.com.evil/`).
fn url_under(url: &str, prefix: &str) -> bool {
    let Some(rest) = url.strip_prefix(prefix) else {
        return false;
    };
    // The prefix ends at a boundary itself, or the URL continues at one.
    prefix.ends_with('/') || rest.is_empty() || rest.starts_with(['/', '?', '#'])
}

/// Where `path` (absolute) leads on this machine: every symbolic link along it resolved,
/// dangling ones too (as `realpath -m` does); `..` and `.` resolved; components that do not
/// exist taken as they are. Gives up following links after 40 (a loop), taking the rest as
/// it is.
pub(crate) fn resolve_existing(path: &Path) -> PathBuf {
    use std::collections::VecDeque;
    use std::path::Component;
    let mut out = PathBuf::new();
    let mut pending: VecDeque<std::ffi::OsString> = VecDeque::new();
    for part in path.components() {
        match part {
            Component::Prefix(_) | Component::RootDir => out.push(part.as_os_str()),
            other => pending.push_back(other.as_os_str().to_owned()),
        }
    }
    let mut hops = 0;
    while let Some(part) = pending.pop_front() {
        if part == "." {
            continue;
        }
        if part == ".." {
            out.pop();
            continue;
        }
        let next = out.join(&part);
        let link = std::fs::symlink_metadata(&next)
            .ok()
            .filter(|meta| meta.file_type().is_symlink() && hops < 40)
            .and_then(|_| std::fs::read_link(&next).ok());
        match link {
            Some(target) => {
                hops += 1;
                let mut parts = Vec::new();
                for component in target.components() {
                    match component {
                        // An absolute target starts over from its root.
                        Component::Prefix(_) | Component::RootDir => {
                            out = PathBuf::from(component.as_os_str());
                        }
                        other => parts.push(other.as_os_str().to_owned()),
                    }
                }
                for part in parts.into_iter().rev() {
                    pending.push_front(part);
                }
            }
            None => out = next,
        }
    }
    out
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn url_prefixes_allow_only_what_continues_them_at_a_boundary() {
        let p = "https://mcp.example.com/a";
        assert!(url_under("https://mcp.example.com/a", p));
        assert!(url_under("https://mcp.example.com/a/b", p));
        assert!(url_under("https://mcp.example.com/a?x=1", p));
        assert!(!url_under("https://mcp.example.com/ab", p));
        assert!(!url_under(
            "https://mcp.example.com.evil/a",
            "https://mcp.example.com"
        ));
        assert!(url_under(
            "https://mcp.example.com/x",
            "https://mcp.example.com/"
        ));
        assert!(!url_under("http://mcp.example.com/a", p));
    }

    #[test]
    fn a_directory_linking_out_of_the_grant_is_refused_and_one_inside_is_kept_resolved() {
        let granted = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(granted.path()).unwrap();
        std::fs::create_dir(root.join("project")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        std::os::unix::fs::symlink(root.join("project"), root.join("in")).unwrap();
        let grant = Grant::network(vec![root.clone()]);
        let open = |cwd: PathBuf| grant.check_roots(Roots::new(cwd, vec![]).unwrap());
        let kept = open(root.join("in")).unwrap();
        assert_eq!(kept.cwd, root.join("project"));
        let e = open(root.join("out")).unwrap_err();
        assert_eq!(i32::from(e.code), -32602);
        assert!(e.message.contains("`cwd`"), "{}", e.message);
        assert!(open(root.join("out/new/dir")).is_err());
        // A dangling link out is followed as far as it goes.
        std::os::unix::fs::symlink(outside.path().join("none/yet"), root.join("dangling")).unwrap();
        assert!(open(root.join("dangling")).is_err());
        std::os::unix::fs::symlink("project/../project", root.join("relative")).unwrap();
        assert_eq!(
            open(root.join("relative/x")).unwrap().cwd,
            root.join("project/x")
        );
        assert!(open(root.join("not/yet")).is_ok());
        assert!(open("/proc/self".into()).is_err());
        assert!(
            Grant::host()
                .check_roots(Roots::new("/proc/self".into(), vec![]).unwrap())
                .is_ok()
        );
    }

    #[test]
    fn children_of_a_confined_client_see_no_secret_and_only_what_programs_need() {
        let grant = Grant::network(vec![]).pass_env(Arc::from(["ACP_TEST_PASSED".to_owned()]));
        let mut command = tokio::process::Command::new("env");
        grant.child_env(&mut command);
        let envs: Vec<_> = command.as_std().get_envs().collect();
        // A clean environment: only names set explicitly (PATH and the like, when set).
        assert!(envs.iter().all(|(name, value)| {
            value.is_none() || PASSED_VARS.iter().any(|p| name == p) || *name == "ACP_TEST_PASSED"
        }));
        let host = Grant::host().secrets(Arc::from(["MY_SECRET".to_owned()]));
        let mut command = tokio::process::Command::new("env");
        host.child_env(&mut command);
        let removed: Vec<_> = command
            .as_std()
            .get_envs()
            .filter(|(_, v)| v.is_none())
            .map(|(n, _)| n.to_owned())
            .collect();
        assert!(removed.iter().any(|n| n == "ACP_TOKENS"));
        assert!(removed.iter().any(|n| n == "MY_SECRET"));
    }
}
