//! [`HttpConfig`]: who may connect and as which user (a bearer token, one per user, or the
//! host's own check; the browser origins to trust) and the limits of the network service
//! (bodies, connections, idle time).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::request::Parts;

use crate::{Error, Result};

/// The environment variable [`HttpConfig::from_env`] reads the bearer token from.
pub const TOKEN_VAR: &str = "ACP_TOKEN";

/// The environment variable [`HttpConfig::from_env`] reads one token per user from
/// (`user:token` pairs, separated by commas or whitespace).
pub const TOKENS_VAR: &str = "ACP_TOKENS";

/// The environment variable [`HttpConfig::from_env`] reads the path of a file of
/// `user:token` pairs from (as in [`TOKENS_VAR`], one per line allowed; lines starting with
/// `#` are comments), so that the tokens need not be in the environment.
pub const TOKENS_FILE_VAR: &str = "ACP_TOKENS_FILE";

/// The environment variable [`HttpConfig::from_env`] reads the path of a file holding the one
/// bearer token from (as [`TOKEN_VAR`] would hold it).
pub const TOKEN_FILE_VAR: &str = "ACP_TOKEN_FILE";

/// The host's own admission check (see [`HttpConfig::check`]).
type Check = Arc<dyn Fn(&Parts) -> bool + Send + Sync>;

/// The host's own check naming the user (see [`HttpConfig::users`]).
type Users = Arc<dyn Fn(&Parts) -> Option<String> + Send + Sync>;

/// How a request proves it may use the agent, and as whom.
#[derive(Clone)]
pub(crate) enum Auth {
    /// `Authorization: Bearer <token>`, compared in constant time; no user.
    Bearer(Arc<[u8]>),
    /// One bearer token per user: `(user, token)`, each compared in constant time.
    Tokens(Arc<[(String, Box<[u8]>)]>),
    /// The host's check, given the request's method, URI and headers; no user.
    Check(Check),
    /// The host's check, naming the user.
    Users(Users),
}

/// Who an admitted request is: the user the network service serves it as (`None`: no user,
/// every session of the store is its). Put in the request's extensions by the guard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct User(pub Option<String>);

/// The security and limits of the network service ([`Server::router`],
/// [`Server::serve_http`]).
///
/// There is no default: every request must prove itself, either with a bearer token
/// ([`HttpConfig::bearer`], [`HttpConfig::from_env`]; one per user:
/// [`HttpConfig::bearer_tokens`]) or with a check the host provides ([`HttpConfig::check`],
/// [`HttpConfig::users`], e.g. a session cookie of the host's own login). The checks run
/// before anything else, the WebSocket upgrade and `initialize` included:
///
/// - a request with an `Origin` header not in [`allow_origin`](HttpConfig::allow_origin)'s
///   list is refused with `403` (a web page in a browser must not reach a local agent: DNS
///   rebinding); requests without `Origin` (editors, command-line clients) pass;
/// - a request without the token, or with another, is refused with `401` and
///   `WWW-Authenticate: Bearer`;
/// - a body over [`max_body_bytes`](HttpConfig::max_body_bytes) (a WebSocket message too) is
///   refused with `413`;
/// - a new connection beyond [`max_connections`](HttpConfig::max_connections) is refused with
///   `503` and `Retry-After`, and so is a user's beyond their share of it
///   ([`max_connections_per_user`](HttpConfig::max_connections_per_user)) when the service
///   names users;
/// - a Streamable HTTP POST beyond the
///   [`max_requests_per_connection`](HttpConfig::max_requests_per_connection) its connection
///   has waiting for the agent is refused with `429` and `Retry-After`;
/// - a connection nobody used for [`idle_timeout`](HttpConfig::idle_timeout) is ended;
/// - ([`Server::serve_http`] only) a TCP connection, HTTP/1.1 or HTTP/2, that has not sent a
///   request with valid credentials within [`header_timeout`](HttpConfig::header_timeout) is
///   closed, whatever it sent; a new socket beyond
///   [`max_unadmitted_sockets`](HttpConfig::max_unadmitted_sockets) waiting for that closes
///   the oldest one waiting; one that has had no request in progress (and no WebSocket open over it) for
///   [`idle_timeout`](HttpConfig::idle_timeout) is closed too; an HTTP/2 connection is pinged
///   while idle (and closed when it does not answer) and has a bounded number of streams
///   open at once.
///
/// Refusals are counted, by kind, in the log (`warn`, at most one line every few seconds).
///
/// # Users
///
/// With [`bearer_tokens`](HttpConfig::bearer_tokens) or [`users`](HttpConfig::users), each
/// request is some user's, and a client only ever sees its user's connections and sessions:
///
/// - a connection belongs to the user (and the `Authorization`) that opened it: another's
///   `Acp-Connection-Id` is `404`, as an id nobody was given is;
/// - `session/new` records the session as the user's ([`StoredSession::owner`]);
///   `session/list` lists the user's sessions only, on every replica sharing the store;
/// - `session/load` and `session/resume` of another user's session are `-32002`, the error
///   of a session that does not exist, and `session/delete` of one does nothing (as for an
///   unknown session): nothing tells a client that another's session exists.
///
/// With one token ([`bearer`](HttpConfig::bearer)) or a yes/no [`check`](HttpConfig::check)
/// there is one user, who sees every session of the store (those recorded over stdio
/// too); so does stdio.
///
/// # Access
///
/// A network user reaches only what the operator granted on the agent's machine (over
/// stdio the editor's user owns the machine, and nothing of this applies):
///
/// - **Directories.** A session's `cwd` and additional directories must lie in the user's
///   directories, after resolving symbolic links: [`roots`](HttpConfig::roots) (every user),
///   [`user_roots`](HttpConfig::user_roots) (one user), `$ACP_ROOTS=DIR[:DIR…]` or
///   `$ACP_ROOTS=alice=DIR[:DIR…],bob=DIR`; a user with none gets a directory of their own,
///   `<data dir>/<agent>/users/user-<name>` (`…/users/default` for the one user of a single
///   token), created `0700`. Anything else is `-32602` and no session. The agent's own file
///   operations on the session (the local backend) stay below those directories, links
///   resolved by the kernel.
/// - **Processes and endpoints.** A stdio MCP server the client names is started only if
///   its command is allowed ([`allow_mcp_commands`](HttpConfig::allow_mcp_commands),
///   `$ACP_MCP_COMMANDS`); an HTTP or SSE one is reached only under an allowed URL prefix
///   ([`allow_mcp_urls`](HttpConfig::allow_mcp_urls), `$ACP_MCP_URLS`). By default neither:
///   the agent starts nothing and reaches nothing a client chose.
/// - **Secrets.** Every process started for a network user (MCP servers, local commands and
///   terminals) starts from an empty environment but for `PATH`, `HOME`, the locale and what
///   [`pass_env`](HttpConfig::pass_env) adds, and never inherits the service's secrets (see
///   [`Server::secret_env`](crate::Server::secret_env)).
/// - **The model.** `providers/*` (feature `llm-providers`) is neither advertised nor
///   answered for a network client unless [`allow_providers`](HttpConfig::allow_providers)
///   (`$ACP_ALLOW_PROVIDERS=1`); even then the operator's key is never sent to a URL the
///   client chose.
/// - **Queues.** A session holds at most 16 prompts (8 MiB) waiting behind its running turn
///   (v2); beyond that a prompt is refused (`-32600`).
///
/// ```
/// # use std::time::Duration;
/// let config = acp_core::net::HttpConfig::bearer("s3cret-token")
///     .allow_origin("https://editor.example.com")
///     .max_body_bytes(8 * 1024 * 1024)
///     .max_connections(64)
///     .idle_timeout(Duration::from_secs(600));
/// # let _ = config;
/// ```
///
/// [`Server::router`]: crate::Server::router
/// [`Server::serve_http`]: crate::Server::serve_http
/// [`StoredSession::owner`]: crate::store::StoredSession::owner
#[derive(Clone)]
pub struct HttpConfig {
    pub(crate) auth: Auth,
    pub(crate) origins: Vec<String>,
    pub(crate) max_body: usize,
    pub(crate) max_connections: usize,
    pub(crate) idle_timeout: Duration,
    pub(crate) header_timeout: Duration,
    /// What each user may reach on the agent's machine (`grants.rs`).
    pub(crate) grants: super::grants::Grants,
    pub(crate) max_connections_per_user: Option<usize>,
    pub(crate) max_unadmitted: usize,
    pub(crate) max_requests: usize,
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let auth = match self.auth {
            Auth::Bearer(_) => "bearer token",
            Auth::Tokens(_) => "bearer token per user",
            Auth::Check(_) => "host check",
            Auth::Users(_) => "host check naming users",
        };
        f.debug_struct("HttpConfig")
            .field("auth", &auth)
            .field("origins", &self.origins)
            .field("max_body", &self.max_body)
            .field("max_connections", &self.max_connections)
            .field("idle_timeout", &self.idle_timeout)
            .field("header_timeout", &self.header_timeout)
            .field("grants", &self.grants)
            .field("max_connections_per_user", &self.user_share())
            .field("max_unadmitted_sockets", &self.max_unadmitted)
            .field("max_requests_per_connection", &self.max_requests)
            .finish()
    }
}

impl HttpConfig {
    /// Requests must carry `Authorization: Bearer <token>`. An empty token is refused when
    /// the service is built ([`Server::router`](crate::Server::router)). Everyone with the
    /// token is the same user, who sees every session (see [Users](HttpConfig#users)).
    pub fn bearer(token: impl Into<String>) -> Self {
        Self::with(Auth::Bearer(token.into().into_bytes().into()))
    }

    /// One token per user from `$ACP_TOKENS` when it is set (`alice:TOKEN_A,bob:TOKEN_B`,
    /// see [`bearer_tokens`](Self::bearer_tokens)), or from the file `$ACP_TOKENS_FILE`
    /// names (the same pairs, one per line allowed, `#` comments); else the one bearer token
    /// from `$ACP_TOKEN` ([`bearer`](Self::bearer)), or from the file `$ACP_TOKEN_FILE`
    /// names. An error saying so when none is set, when a variable and its file are both set,
    /// when the file cannot be read, or when the tokens are malformed (the message never
    /// shows a token).
    ///
    /// The grants of the environment come along (see [Access](HttpConfig#access)):
    /// `$ACP_ROOTS`, `$ACP_MCP_COMMANDS`, `$ACP_MCP_URLS`, `$ACP_ALLOW_PROVIDERS`,
    /// `$ACP_PASS_ENV`.
    pub fn from_env() -> Result<Self> {
        Self::from_vars(|name| std::env::var_os(name))?.grants_from_env()
    }

    /// [`from_env`](Self::from_env), with the variables `env` gives.
    fn from_vars(env: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<Self> {
        let var = |name: &str| -> Result<Option<String>> {
            match env(name) {
                None => Ok(None),
                Some(value) => value
                    .into_string()
                    .map(Some)
                    .map_err(|_| Error::msg(format!("${name} is not UTF-8"))),
            }
        };
        let file = |name: &str| -> Result<Option<String>> {
            let Some(path) = env(name) else {
                return Ok(None);
            };
            let path = std::path::PathBuf::from(path);
            std::fs::read_to_string(&path).map(Some).map_err(|e| {
                Error::msg(format!(
                    "${name}: cannot read the tokens file {}: {}",
                    path.display(),
                    e.kind()
                ))
            })
        };
        let both = |a: &str, b: &str| {
            Error::msg(format!(
                "both ${a} and ${b} are set: give the tokens one way only"
            ))
        };
        let tokens = var(TOKENS_VAR)?;
        let tokens_file = file(TOKENS_FILE_VAR)?;
        match (tokens, tokens_file) {
            (Some(_), Some(_)) => return Err(both(TOKENS_VAR, TOKENS_FILE_VAR)),
            (Some(tokens), None) => return Self::parse_tokens(&tokens, TOKENS_VAR),
            (None, Some(tokens)) => return Self::parse_tokens(&tokens, TOKENS_FILE_VAR),
            (None, None) => {}
        }
        let token = var(TOKEN_VAR)?.filter(|t| !t.trim().is_empty());
        let token_file = file(TOKEN_FILE_VAR)?;
        match (token, token_file) {
            (Some(_), Some(_)) => Err(both(TOKEN_VAR, TOKEN_FILE_VAR)),
            (Some(token), None) => Ok(Self::bearer(token.trim())),
            (None, Some(token)) if !token.trim().is_empty() => Ok(Self::bearer(token.trim())),
            (None, Some(_)) => Err(Error::msg(format!(
                "${TOKEN_FILE_VAR} names an empty file: put a long random secret in it"
            ))),
            (None, None) => Err(Error::msg(format!(
                "refusing to listen without a bearer token: set ${TOKEN_VAR} to a long random \
                 secret (e.g. `export {TOKEN_VAR}=$(openssl rand -hex 32)`), or ${TOKEN_FILE_VAR} \
                 to a file holding it, and give it to the clients as \
                 `Authorization: Bearer <token>`"
            ))),
        }
    }

    /// `user:token` pairs, separated by commas or whitespace (lines starting with `#` are
    /// comments), from `source` (the variable named in errors).
    fn parse_tokens(tokens: &str, source: &str) -> Result<Self> {
        let pairs = tokens
            .lines()
            .filter(|line| !line.trim_start().starts_with('#'))
            .flat_map(|line| line.split(|c: char| c == ',' || c.is_whitespace()))
            .filter(|p| !p.is_empty())
            .enumerate()
            .map(|(i, pair)| match pair.split_once(':') {
                Some((user, token)) if !user.is_empty() && !token.is_empty() => Ok((user, token)),
                _ => Err(Error::msg(format!(
                    "${source}: entry {} is not `user:token`",
                    i + 1
                ))),
            })
            .collect::<Result<Vec<_>>>()?;
        if pairs.is_empty() {
            return Err(Error::msg(format!(
                "${source} is set but names no `user:token`"
            )));
        }
        Ok(Self::bearer_tokens(pairs))
    }

    /// The host decides who gets in: `check` sees each request's method, URI and headers
    /// (before its body) and returns whether it may proceed; `false` is `401`. For a host
    /// with its own authentication (a session cookie, mTLS terminated in front, a header set
    /// by an authenticating proxy). The Origin check and the limits still apply.
    pub fn check(check: impl Fn(&Parts) -> bool + Send + Sync + 'static) -> Self {
        Self::with(Auth::Check(Arc::new(check)))
    }

    /// One bearer token per user: a request with `Authorization: Bearer <token>` is the
    /// user of that token (a user may have several, e.g. while one is replaced), and sees
    /// only that user's connections and sessions (see [Users](HttpConfig#users)). Each token
    /// is compared in constant time, all of them for every request. No token, an empty one,
    /// or one given to two users is refused when the service is built
    /// ([`Server::router`](crate::Server::router)).
    ///
    /// ```
    /// let config = acp_core::net::HttpConfig::bearer_tokens([
    ///     ("alice", "a-long-random-secret-of-alice"),
    ///     ("bob", "a-long-random-secret-of-bob"),
    /// ]);
    /// # let _ = config;
    /// ```
    pub fn bearer_tokens<U, T>(tokens: impl IntoIterator<Item = (U, T)>) -> Self
    where
        U: Into<String>,
        T: Into<String>,
    {
        let tokens = tokens
            .into_iter()
            .map(|(user, token)| (user.into(), token.into().into_bytes().into_boxed_slice()))
            .collect();
        Self::with(Auth::Tokens(tokens))
    }

    /// The host decides who gets in and as which user: `users` sees each request's method,
    /// URI and headers (before its body) and names its user, or returns `None`: `401`. The
    /// client then sees only that user's connections and sessions (see
    /// [Users](HttpConfig#users)). For a host with its own authentication (a session cookie,
    /// a header set by an authenticating proxy). The Origin check and the limits still apply.
    ///
    /// ```
    /// // Behind a proxy that authenticates users and says who they are.
    /// let config = acp_core::net::HttpConfig::users(|parts| {
    ///     let user = parts.headers.get("x-authenticated-user")?;
    ///     Some(user.to_str().ok()?.to_owned())
    /// });
    /// # let _ = config;
    /// ```
    pub fn users(users: impl Fn(&Parts) -> Option<String> + Send + Sync + 'static) -> Self {
        Self::with(Auth::Users(Arc::new(users)))
    }

    fn with(auth: Auth) -> Self {
        HttpConfig {
            auth,
            origins: Vec::new(),
            max_body: 4 * 1024 * 1024,
            max_connections: 256,
            idle_timeout: Duration::from_secs(300),
            header_timeout: Duration::from_secs(30),
            grants: Default::default(),
            max_connections_per_user: None,
            max_unadmitted: 128,
            max_requests: 64,
        }
    }

    /// Trusts browser pages of this origin (`scheme://host[:port]`, as browsers send it in
    /// `Origin`). None is trusted by default.
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.origins.push(origin.into());
        self
    }

    /// The largest request body, and WebSocket message, accepted (default 4 MiB).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body = bytes.max(1);
        self
    }

    /// How many ACP connections (WebSockets and Streamable HTTP connections) may be open at
    /// once (default 256).
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.max(1);
        self
    }

    /// How many of the [`max_connections`](Self::max_connections) one user may hold at once
    /// when the service names users ([`bearer_tokens`](Self::bearer_tokens),
    /// [`users`](Self::users)): beyond it, that user's new connection is refused with `503`
    /// and `Retry-After` while others still get in. Default: a quarter of
    /// `max_connections`, at least 1. With one token or a yes/no [`check`](Self::check) there
    /// is one user, and the whole limit is theirs.
    pub fn max_connections_per_user(mut self, connections: usize) -> Self {
        self.max_connections_per_user = Some(connections.max(1));
        self
    }

    /// How many TCP connections may be open at once that have not yet sent a request with
    /// valid credentials (default 128; [`Server::serve_http`](crate::Server::serve_http)
    /// only): a new one beyond it closes the oldest of them, so that sockets opened and left
    /// silent (or sending a bare HTTP/2 preface) cannot use up the process's file descriptors,
    /// while a client that sends its request as soon as it connects still gets in. Each is
    /// closed anyway after [`header_timeout`](Self::header_timeout).
    pub fn max_unadmitted_sockets(mut self, sockets: usize) -> Self {
        self.max_unadmitted = sockets.max(1);
        self
    }

    /// How many Streamable HTTP POSTs one connection may have waiting for its agent at once
    /// (default 64): while the agent does not keep up (it reads a connection's messages only
    /// as fast as it can handle them), a POST beyond it is refused with `429` and
    /// `Retry-After` before its body is read, so the bodies held for a connection are bounded
    /// (by this times [`max_body_bytes`](Self::max_body_bytes)). A WebSocket reads its next
    /// message only once the agent took the last one.
    pub fn max_requests_per_connection(mut self, requests: usize) -> Self {
        self.max_requests = requests.max(1);
        self
    }

    /// The most connections one named user may hold at once.
    pub(crate) fn user_share(&self) -> usize {
        self.max_connections_per_user
            .unwrap_or(self.max_connections / 4)
            .clamp(1, self.max_connections)
    }

    /// Whether each request is some named user's (then each has a share of the connections).
    pub(crate) fn names_users(&self) -> bool {
        matches!(self.auth, Auth::Tokens(_) | Auth::Users(_))
    }

    /// Who may connect, for the operator's log: the users by name, never a token.
    pub(crate) fn describe_users(&self) -> String {
        match &self.auth {
            Auth::Bearer(_) => "one bearer token (one user)".to_owned(),
            Auth::Check(_) => "the host's check (one user)".to_owned(),
            Auth::Users(_) => "the users the host's check names".to_owned(),
            Auth::Tokens(tokens) => {
                let mut users: Vec<&str> = tokens.iter().map(|(user, _)| user.as_str()).collect();
                users.sort_unstable();
                users.dedup();
                format!("users {}", users.join(", "))
            }
        }
    }

    /// How long a connection may go without a message in either direction (and, over
    /// Streamable HTTP, without an open stream) before it is ended (default 5 minutes).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout.max(Duration::from_millis(10));
        self
    }

    /// How long a new TCP connection may take to send a request with valid credentials
    /// before it is closed, whatever it sent meanwhile (default 30 s;
    /// [`Server::serve_http`](crate::Server::serve_http) only, a host mounting
    /// [`Server::router`](crate::Server::router) sets its own): thousands of sockets opened
    /// and left silent, or sending an HTTP/2 preface and nothing more, are closed, not kept.
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.header_timeout = timeout.max(Duration::from_millis(10));
        self
    }

    /// Refuses a configuration that would let anyone in.
    pub(crate) fn validate(&self) -> Result<()> {
        let empty = |token: &[u8]| token.iter().all(u8::is_ascii_whitespace);
        match &self.auth {
            Auth::Bearer(token) if empty(token) => Err(Error::msg(
                "refusing to serve ACP over the network with an empty bearer token: give \
                 `HttpConfig::bearer` a long random secret, or `HttpConfig::check` the host's \
                 own check",
            )),
            Auth::Tokens(tokens) if tokens.is_empty() => Err(Error::msg(
                "refusing to serve ACP over the network with no bearer token: give \
                 `HttpConfig::bearer_tokens` a long random secret per user",
            )),
            Auth::Tokens(tokens) => {
                for (i, (user, token)) in tokens.iter().enumerate() {
                    if empty(token) {
                        return Err(Error::msg(format!(
                            "refusing to serve ACP over the network with an empty bearer \
                             token for user `{user}`: give each user a long random secret"
                        )));
                    }
                    if let Some((other, _)) = tokens[..i].iter().find(|(_, t)| t == token)
                        && other != user
                    {
                        return Err(Error::msg(format!(
                            "refusing to serve ACP over the network with one bearer token for \
                             two users (`{other}` and `{user}`): give each user a secret of \
                             their own"
                        )));
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Who the request is, if it may proceed: its credentials (not its `Origin`).
    pub(crate) fn admits(&self, parts: &Parts) -> Option<User> {
        let given = || {
            parts
                .headers
                .get(http::header::AUTHORIZATION)
                .and_then(|v| bearer_of(v.as_bytes()))
        };
        match &self.auth {
            Auth::Bearer(token) => given()
                .is_some_and(|given| constant_time_eq(given, token))
                .then_some(User(None)),
            Auth::Tokens(tokens) => {
                let given = given()?;
                // Every token is compared, whichever matches: the time says nothing of which.
                let mut found = None;
                for (user, token) in tokens.iter() {
                    if constant_time_eq(given, token) {
                        found = Some(user);
                    }
                }
                found.map(|user| User(Some(user.clone())))
            }
            Auth::Check(check) => check(parts).then_some(User(None)),
            Auth::Users(users) => users(parts).map(|user| User(Some(user))),
        }
    }

    /// Whether a request with this `Origin` (if any) may proceed.
    pub(crate) fn origin_allowed(&self, parts: &Parts) -> bool {
        match parts.headers.get(http::header::ORIGIN) {
            None => true,
            Some(origin) => self
                .origins
                .iter()
                .any(|allowed| allowed.as_bytes() == origin.as_bytes()),
        }
    }
}

/// The token of an `Authorization: Bearer <token>` value (the scheme is case-insensitive).
fn bearer_of(value: &[u8]) -> Option<&[u8]> {
    let scheme = value.get(..7)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    let token = value[7..].trim_ascii();
    (!token.is_empty()).then_some(token)
}

/// Compares two byte strings in time that depends on their lengths only, not on where they
/// differ.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let len = a.len().max(b.len());
    let mut diff = a.len() ^ b.len();
    for i in 0..len {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= usize::from(x ^ y);
    }
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_from_the_environment_name_their_users_and_malformed_ones_never_show_a_token() {
        let config =
            HttpConfig::parse_tokens("alice:sekrit-a, bob:sekrit-b\ncarol:sekrit-c", TOKENS_VAR)
                .unwrap();
        config.validate().unwrap();
        let bearer = |t: &str| parts(&[("authorization", &format!("Bearer {t}"))]);
        let user = |t: &str| config.admits(&bearer(t)).map(|u| u.0);
        assert_eq!(user("sekrit-b"), Some(Some("bob".to_owned())));
        assert_eq!(user("sekrit-c"), Some(Some("carol".to_owned())));
        assert_eq!(user("nope"), None);
        for bad in ["alice", "alice:", ":sekrit-x", "  ,  "] {
            let e = HttpConfig::parse_tokens(bad, TOKENS_VAR)
                .err()
                .unwrap()
                .to_string();
            assert!(
                e.contains(TOKENS_VAR) && !e.contains("sekrit"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn tokens_come_from_a_file_and_its_errors_never_show_a_token() {
        let dir = std::env::temp_dir().join(format!("acp-tokens-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("tokens");
        std::fs::write(
            &file,
            "# the users\nalice:sekrit-a\nbob:sekrit-b, carol:sekrit-c\n",
        )
        .unwrap();
        let vars = |pairs: &[(&str, &std::path::Path)]| {
            let pairs: Vec<(String, std::ffi::OsString)> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.as_os_str().to_owned()))
                .collect();
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
            }
        };
        let config = HttpConfig::from_vars(vars(&[(TOKENS_FILE_VAR, &file)])).unwrap();
        let bearer = |t: &str| parts(&[("authorization", &format!("Bearer {t}"))]);
        assert_eq!(
            config.admits(&bearer("sekrit-c")),
            Some(User(Some("carol".into())))
        );
        assert_eq!(config.describe_users(), "users alice, bob, carol");
        let one = dir.join("token");
        std::fs::write(&one, "  sekrit-one\n").unwrap();
        let config = HttpConfig::from_vars(vars(&[(TOKEN_FILE_VAR, &one)])).unwrap();
        assert_eq!(config.admits(&bearer("sekrit-one")), Some(User(None)));
        std::fs::write(&file, "alice:sekrit-a\nsekrit-b\n").unwrap();
        let errors = [
            HttpConfig::from_vars(vars(&[(TOKENS_FILE_VAR, &file)])),
            HttpConfig::from_vars(vars(&[(TOKENS_FILE_VAR, &dir.join("none"))])),
            HttpConfig::from_vars(vars(&[(TOKEN_FILE_VAR, &one), (TOKEN_VAR, &one)])),
        ];
        for e in errors {
            let e = e.err().unwrap().to_string();
            assert!(e.contains("ACP_TOKEN") && !e.contains("sekrit"), "{e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn parts(headers: &[(&str, &str)]) -> Parts {
        let mut request = http::Request::builder().uri("/acp");
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        request.body(()).unwrap().into_parts().0
    }

    #[test]
    fn only_the_exact_bearer_token_is_admitted() {
        let config = HttpConfig::bearer("abc123");
        let none = Some(User(None));
        assert_eq!(
            config.admits(&parts(&[("authorization", "Bearer abc123")])),
            none
        );
        assert_eq!(
            config.admits(&parts(&[("authorization", "bearer abc123")])),
            none
        );
        for wrong in [
            "Bearer abc12",
            "Bearer abc1234",
            "Basic abc123",
            "abc123",
            "Bearer ",
        ] {
            assert!(
                config.admits(&parts(&[("authorization", wrong)])).is_none(),
                "{wrong}"
            );
        }
        assert!(config.admits(&parts(&[])).is_none());
    }

    #[test]
    fn each_users_token_is_that_user_and_no_other_token_is_anyone() {
        let config =
            HttpConfig::bearer_tokens([("alice", "tok-a"), ("bob", "tok-b"), ("alice", "tok-a2")]);
        let user = |auth: &str| config.admits(&parts(&[("authorization", auth)]));
        let named = |name: &str| Some(User(Some(name.to_owned())));
        assert_eq!(user("Bearer tok-a"), named("alice"));
        assert_eq!(user("Bearer tok-a2"), named("alice"));
        assert_eq!(user("Bearer tok-b"), named("bob"));
        for wrong in [
            "Bearer tok-",
            "Bearer tok-bb",
            "Bearer alice",
            "Basic tok-a",
            "tok-a",
        ] {
            assert_eq!(user(wrong), None, "{wrong}");
        }
        assert_eq!(config.admits(&parts(&[])), None);
    }

    #[test]
    fn the_hosts_users_check_names_the_user_or_refuses() {
        let config = HttpConfig::users(|parts| {
            let user = parts.headers.get("x-user")?.to_str().ok()?;
            (user != "mallory").then(|| user.to_owned())
        });
        let user = |headers: &[(&str, &str)]| config.admits(&parts(headers));
        assert_eq!(
            user(&[("x-user", "carol")]),
            Some(User(Some("carol".into())))
        );
        assert_eq!(user(&[("x-user", "mallory")]), None);
        assert_eq!(user(&[]), None);
        assert_eq!(
            HttpConfig::check(|_| true).admits(&parts(&[])),
            Some(User(None))
        );
    }

    #[test]
    fn users_tokens_that_are_missing_empty_or_shared_are_refused_when_building() {
        let none: [(&str, &str); 0] = [];
        assert!(HttpConfig::bearer_tokens(none).validate().is_err());
        assert!(
            HttpConfig::bearer_tokens([("a", "x"), ("b", " ")])
                .validate()
                .is_err()
        );
        let shared = HttpConfig::bearer_tokens([("a", "x"), ("b", "x")]).validate();
        assert!(shared.unwrap_err().to_string().contains("two users"));
        assert!(
            HttpConfig::bearer_tokens([("a", "x"), ("a", "x"), ("b", "y")])
                .validate()
                .is_ok()
        );
    }

    #[test]
    fn an_empty_token_is_refused_when_building() {
        assert!(HttpConfig::bearer("  ").validate().is_err());
        assert!(HttpConfig::bearer("t").validate().is_ok());
        assert!(HttpConfig::check(|_| true).validate().is_ok());
    }

    #[test]
    fn origins_pass_only_when_listed_or_absent() {
        let config = HttpConfig::bearer("t").allow_origin("https://ok.example");
        assert!(config.origin_allowed(&parts(&[])));
        assert!(config.origin_allowed(&parts(&[("origin", "https://ok.example")])));
        assert!(!config.origin_allowed(&parts(&[("origin", "https://evil.example")])));
        assert!(!HttpConfig::bearer("t").origin_allowed(&parts(&[("origin", "null")])));
    }
}
