//! What the network service lets each user reach on the agent's machine: the directories
//! their sessions may use ([`HttpConfig::roots`], [`HttpConfig::user_roots`]; by default a
//! directory of their own under the agent's data directory), the MCP servers they may name
//! ([`HttpConfig::allow_mcp_commands`], [`HttpConfig::allow_mcp_urls`]; none by default),
//! whether they may repoint the agent's model ([`HttpConfig::allow_providers`]; no by
//! default) and what the processes started for them inherit ([`HttpConfig::pass_env`]).
//! Read from the environment by [`HttpConfig::from_env`], and made into each connection's
//! grant when its user is known.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use tracing::warn;

use super::HttpConfig;
use crate::session::grant::Grant;
use crate::{Error, Result};

/// The variable [`HttpConfig::from_env`] reads the users' directories from.
pub const ROOTS_VAR: &str = "ACP_ROOTS";
/// The variable [`HttpConfig::from_env`] reads the allowed stdio MCP commands from.
pub const MCP_COMMANDS_VAR: &str = "ACP_MCP_COMMANDS";
/// The variable [`HttpConfig::from_env`] reads the allowed HTTP MCP URL prefixes from.
pub const MCP_URLS_VAR: &str = "ACP_MCP_URLS";
/// The variable that lets network clients use `providers/*` when `1` or `true`.
pub const ALLOW_PROVIDERS_VAR: &str = "ACP_ALLOW_PROVIDERS";
/// The variable naming more environment variables the children of network users inherit.
pub const PASS_ENV_VAR: &str = "ACP_PASS_ENV";

/// What the operator grants the network's users (see [`HttpConfig`]'s
/// [Access](HttpConfig#access) section).
#[derive(Clone, Debug, Default)]
pub(crate) struct Grants {
    /// Directories every user may use.
    every: Vec<PathBuf>,
    /// More directories per user.
    per_user: Vec<UserRoots>,
    mcp_commands: Vec<String>,
    mcp_urls: Vec<String>,
    providers: bool,
    pass_env: Vec<String>,
}

impl HttpConfig {
    /// Lets every user open sessions in these directories and below them (`cwd` and the
    /// client's additional directories; for a user without any, by default, a directory of
    /// their own under the agent's data directory: see [Access](HttpConfig#access)). Each must
    /// exist when the service starts; symbolic links are resolved. `$ACP_ROOTS=DIR[:DIR…]`
    /// with no code.
    pub fn roots<P: Into<PathBuf>>(mut self, dirs: impl IntoIterator<Item = P>) -> Self {
        self.grants.every.extend(dirs.into_iter().map(Into::into));
        self
    }

    /// Lets `user` (as [`bearer_tokens`](Self::bearer_tokens) or [`users`](Self::users)
    /// names them) open sessions in these directories too. `$ACP_ROOTS=alice=DIR[:DIR…],bob=DIR`
    /// with no code.
    pub fn user_roots<P: Into<PathBuf>>(
        mut self,
        user: impl Into<String>,
        dirs: impl IntoIterator<Item = P>,
    ) -> Self {
        self.grants
            .per_user
            .push((user.into(), dirs.into_iter().map(Into::into).collect()));
        self
    }

    /// Lets network clients name stdio MCP servers that run one of these commands, exactly
    /// as the client spells it (`npx`, `/usr/local/bin/mcp-git`). The agent starts them on
    /// its own machine, as itself, in the session's directory, with the clean environment of
    /// [`pass_env`](Self::pass_env). None by default: a client-named stdio server is not
    /// started, and reported failed to the agent (`Session::mcp_status`).
    /// `$ACP_MCP_COMMANDS=CMD[,CMD…]` with no code.
    pub fn allow_mcp_commands<S: Into<String>>(
        mut self,
        commands: impl IntoIterator<Item = S>,
    ) -> Self {
        self.grants
            .mcp_commands
            .extend(commands.into_iter().map(Into::into));
        self
    }

    /// Lets network clients name HTTP and SSE MCP servers under these URL prefixes
    /// (`https://mcp.example.com/`: the same scheme, host and port, and a path continuing the
    /// prefix's). None by default: the agent reaches no address a client chose (no requests
    /// into the operator's network on a client's behalf). `$ACP_MCP_URLS=URL[,URL…]` with no
    /// code.
    pub fn allow_mcp_urls<S: Into<String>>(mut self, urls: impl IntoIterator<Item = S>) -> Self {
        self.grants
            .mcp_urls
            .extend(urls.into_iter().map(Into::into));
        self
    }

    /// Lets network clients use `providers/*` (feature `llm-providers`): point the agent's
    /// model endpoints elsewhere, for every connection of the process. Off by default: the
    /// methods are neither advertised nor answered (`-32601`). `$ACP_ALLOW_PROVIDERS=1` with no
    /// code.
    pub fn allow_providers(mut self, allowed: bool) -> Self {
        self.grants.providers = allowed;
        self
    }

    /// Passes these environment variables on to the processes started for network clients
    /// (their MCP servers, local commands and terminals), which otherwise start with `PATH`,
    /// `HOME`, `USER`, `LOGNAME`, `SHELL`, `LANG`, `LC_ALL`, `LC_CTYPE`, `TERM`, `TZ` and
    /// `TMPDIR` only. The service's secrets are never passed (see
    /// [`Server::secret_env`](crate::Server::secret_env)). `$ACP_PASS_ENV=NAME[,NAME…]` with
    /// no code.
    pub fn pass_env<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.grants
            .pass_env
            .extend(names.into_iter().map(Into::into));
        self
    }

    /// The grants of the environment (see [`from_env`](Self::from_env)) added to `self`'s.
    pub(crate) fn grants_from_env(mut self) -> Result<Self> {
        let var = |name: &str| -> Result<Option<String>> {
            match std::env::var_os(name) {
                None => Ok(None),
                Some(value) => value
                    .into_string()
                    .map(Some)
                    .map_err(|_| Error::msg(format!("${name} is not UTF-8"))),
            }
        };
        if let Some(roots) = var(ROOTS_VAR)? {
            let (every, per_user) = parse_roots(&roots)?;
            self.grants.every.extend(every);
            self.grants.per_user.extend(per_user);
        }
        if let Some(commands) = var(MCP_COMMANDS_VAR)? {
            self = self.allow_mcp_commands(list(&commands));
        }
        if let Some(urls) = var(MCP_URLS_VAR)? {
            self = self.allow_mcp_urls(list(&urls));
        }
        if let Some(allowed) = var(ALLOW_PROVIDERS_VAR)? {
            self = self.allow_providers(match allowed.trim() {
                "1" | "true" | "yes" => true,
                "" | "0" | "false" | "no" => false,
                other => {
                    return Err(Error::msg(format!(
                        "${ALLOW_PROVIDERS_VAR}={other:?}: expected 1 or 0"
                    )));
                }
            });
        }
        if let Some(names) = var(PASS_ENV_VAR)? {
            self = self.pass_env(list(&names));
        }
        Ok(self)
    }
}

/// Names or URLs separated by commas or whitespace.
fn list(value: &str) -> impl Iterator<Item = String> + '_ {
    value
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Directories granted to one user.
type UserRoots = (String, Vec<PathBuf>);

/// `$ACP_ROOTS`: comma-separated entries, each `DIR[:DIR…]` (every user) or
/// `user=DIR[:DIR…]` (that user).
fn parse_roots(value: &str) -> Result<(Vec<PathBuf>, Vec<UserRoots>)> {
    let (mut every, mut per_user) = (Vec::new(), Vec::new());
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (user, dirs) = match entry.split_once('=') {
            Some((user, dirs)) if !user.contains('/') => (Some(user), dirs),
            _ => (None, entry),
        };
        let dirs: Vec<PathBuf> = dirs
            .split(':')
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .collect();
        if dirs.is_empty() || user == Some("") {
            return Err(Error::msg(format!(
                "${ROOTS_VAR}: `{entry}` is not `DIR[:DIR…]` or `user=DIR[:DIR…]`"
            )));
        }
        if let Some(bad) = dirs.iter().find(|d| !d.is_absolute()) {
            return Err(Error::msg(format!(
                "${ROOTS_VAR}: `{}` is not an absolute path",
                bad.display()
            )));
        }
        match user {
            Some(user) => per_user.push((user.to_owned(), dirs)),
            None => every.extend(dirs),
        }
    }
    Ok((every, per_user))
}

/// [`Grants`] checked and resolved when the service is built: what each connection's
/// [`Grant`] is made of.
#[derive(Debug)]
pub(crate) struct Resolved {
    every: Vec<PathBuf>,
    per_user: HashMap<String, Vec<PathBuf>>,
    /// Where users without directories get one of their own (`<agent data dir>/users`).
    default_base: Option<PathBuf>,
    mcp_commands: Arc<[String]>,
    mcp_urls: Arc<[String]>,
    providers: bool,
    pass_env: Arc<[String]>,
}

impl Grants {
    /// Checks that every directory granted exists (resolving its links) and finds where
    /// users without any get theirs (under `agent`'s data directory).
    pub(crate) fn resolve(&self, agent: &str) -> Result<Resolved> {
        let resolve = |dir: &PathBuf| {
            std::fs::canonicalize(dir).map_err(|e| {
                Error::msg(format!(
                    "the directory `{}` granted to network users: {e}",
                    dir.display()
                ))
            })
        };
        let every = self.every.iter().map(resolve).collect::<Result<_>>()?;
        let mut per_user: HashMap<String, Vec<PathBuf>> = HashMap::new();
        for (user, dirs) in &self.per_user {
            let dirs: Vec<PathBuf> = dirs.iter().map(resolve).collect::<Result<_>>()?;
            per_user.entry(user.clone()).or_default().extend(dirs);
        }
        Ok(Resolved {
            every,
            per_user,
            default_base: crate::store::SqliteStore::agent_dir(agent).map(|d| d.join("users")),
            mcp_commands: self.mcp_commands.clone().into(),
            mcp_urls: self.mcp_urls.clone().into(),
            providers: self.providers,
            pass_env: self.pass_env.clone().into(),
        })
    }
}

impl Resolved {
    /// What a connection of `user` (`None`: the one user of a single token) may reach.
    pub(crate) fn grant(&self, user: Option<&str>) -> Grant {
        let mut roots: Vec<PathBuf> = self.every.clone();
        if let Some(dirs) = user.and_then(|u| self.per_user.get(u)) {
            roots.extend(dirs.iter().cloned());
        }
        if roots.is_empty()
            && let Some(dir) = self.default_dir(user)
        {
            roots.push(dir);
        }
        Grant::network(roots)
            .allow_mcp_commands(self.mcp_commands.clone())
            .allow_mcp_urls(self.mcp_urls.clone())
            .allow_providers(self.providers)
            .pass_env(self.pass_env.clone())
    }

    /// `user`'s own directory under the data directory, created (owner only) if missing.
    fn default_dir(&self, user: Option<&str>) -> Option<PathBuf> {
        let name = match user {
            Some(user) => format!("user-{}", safe_name(user)),
            None => "default".to_owned(),
        };
        let dir = self.default_base.as_ref()?.join(name);
        match crate::store::sqlite::private_dir(&dir).and_then(|()| std::fs::canonicalize(&dir)) {
            Ok(dir) => Some(dir),
            Err(e) => {
                warn!(
                    "no directory for a network user at `{}`: {e}",
                    dir.display()
                );
                None
            }
        }
    }
}

/// A user's name as one directory name: letters, digits, `-` and `_` kept, anything else
/// (a `/`, `..`) as `_` plus its code point, so two names never share a directory.
fn safe_name(user: &str) -> String {
    user.chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' => c.to_string(),
            other => format!("_{:x}", u32::from(other)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_every_users_or_one_users_and_must_be_absolute() {
        let (every, per_user) =
            parse_roots("/srv/shared:/opt/x, alice=/home/a:/tmp/a,bob=/b").unwrap();
        assert_eq!(
            every,
            [PathBuf::from("/srv/shared"), PathBuf::from("/opt/x")]
        );
        assert_eq!(per_user[0].0, "alice");
        assert_eq!(
            per_user[0].1,
            [PathBuf::from("/home/a"), PathBuf::from("/tmp/a")]
        );
        assert_eq!(per_user[1], ("bob".to_owned(), vec![PathBuf::from("/b")]));
        for bad in ["relative", "alice=", "=/x", "alice=rel"] {
            let e = parse_roots(bad).unwrap_err().to_string();
            assert!(e.contains(ROOTS_VAR), "{bad}: {e}");
        }
    }

    #[test]
    fn user_names_make_distinct_safe_directory_names() {
        assert_eq!(safe_name("alice"), "alice");
        assert_ne!(safe_name("a/b"), safe_name("a_b"));
        assert!(!safe_name("../x").contains('/') && !safe_name("..").contains('.'));
    }
}
