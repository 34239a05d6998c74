//! [`HttpConfig`]: who may connect (a bearer token or the host's own check, the browser
//! origins to trust) and the limits of the network service (bodies, connections, idle time).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::request::Parts;

use crate::{Error, Result};

/// The environment variable [`HttpConfig::from_env`] reads the bearer token from.
pub const TOKEN_VAR: &str = "ACP_TOKEN";

/// The host's own admission check (see [`HttpConfig::check`]).
type Check = Arc<dyn Fn(&Parts) -> bool + Send + Sync>;

/// How a request proves it may use the agent.
#[derive(Clone)]
pub(crate) enum Auth {
    /// `Authorization: Bearer <token>`, compared in constant time.
    Bearer(Arc<[u8]>),
    /// The host's check, given the request's method, URI and headers.
    Check(Check),
}

/// The security and limits of the network service ([`Server::router`],
/// [`Server::serve_http`]).
///
/// There is no default: every request must prove itself, either with a bearer token
/// ([`HttpConfig::bearer`], [`HttpConfig::from_env`]) or with a check the host provides
/// ([`HttpConfig::check`], e.g. a session cookie of the host's own login). The checks run
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
///   `503` and `Retry-After`;
/// - a connection nobody used for [`idle_timeout`](HttpConfig::idle_timeout) is ended, and a
///   socket that sends no request within [`header_timeout`](HttpConfig::header_timeout)
///   closed.
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
#[derive(Clone)]
pub struct HttpConfig {
    pub(crate) auth: Auth,
    pub(crate) origins: Vec<String>,
    pub(crate) max_body: usize,
    pub(crate) max_connections: usize,
    pub(crate) idle_timeout: Duration,
    pub(crate) header_timeout: Duration,
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let auth = match self.auth {
            Auth::Bearer(_) => "bearer token",
            Auth::Check(_) => "host check",
        };
        f.debug_struct("HttpConfig")
            .field("auth", &auth)
            .field("origins", &self.origins)
            .field("max_body", &self.max_body)
            .field("max_connections", &self.max_connections)
            .field("idle_timeout", &self.idle_timeout)
            .field("header_timeout", &self.header_timeout)
            .finish()
    }
}

impl HttpConfig {
    /// Requests must carry `Authorization: Bearer <token>`. An empty token is refused when
    /// the service is built ([`Server::router`](crate::Server::router)).
    pub fn bearer(token: impl Into<String>) -> Self {
        Self::with(Auth::Bearer(token.into().into_bytes().into()))
    }

    /// The bearer token from `$ACP_TOKEN`; an error saying so when it is unset or empty.
    pub fn from_env() -> Result<Self> {
        match std::env::var(TOKEN_VAR) {
            Ok(token) if !token.trim().is_empty() => Ok(Self::bearer(token.trim())),
            _ => Err(Error::msg(format!(
                "refusing to listen without a bearer token: set ${TOKEN_VAR} to a long random \
                 secret (e.g. `export {TOKEN_VAR}=$(openssl rand -hex 32)`) and give it to the \
                 clients as `Authorization: Bearer <token>`"
            ))),
        }
    }

    /// The host decides who gets in: `check` sees each request's method, URI and headers
    /// (before its body) and returns whether it may proceed; `false` is `401`. For a host
    /// with its own authentication (a session cookie, mTLS terminated in front, a header set
    /// by an authenticating proxy). The Origin check and the limits still apply.
    pub fn check(check: impl Fn(&Parts) -> bool + Send + Sync + 'static) -> Self {
        Self::with(Auth::Check(Arc::new(check)))
    }

    fn with(auth: Auth) -> Self {
        HttpConfig {
            auth,
            origins: Vec::new(),
            max_body: 4 * 1024 * 1024,
            max_connections: 256,
            idle_timeout: Duration::from_secs(300),
            header_timeout: Duration::from_secs(30),
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

    /// How long a connection may go without a message in either direction (and, over
    /// Streamable HTTP, without an open stream) before it is ended (default 5 minutes).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout.max(Duration::from_millis(10));
        self
    }

    /// How long a new TCP connection may take to send its request's headers before it is
    /// closed (default 30 s; [`Server::serve_http`](crate::Server::serve_http) only, a host
    /// mounting [`Server::router`](crate::Server::router) sets its own): thousands of sockets
    /// opened and left silent are closed, not kept.
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.header_timeout = timeout.max(Duration::from_millis(10));
        self
    }

    /// Refuses a configuration that would let anyone in.
    pub(crate) fn validate(&self) -> Result<()> {
        match &self.auth {
            Auth::Bearer(token) if token.iter().all(u8::is_ascii_whitespace) => Err(Error::msg(
                "refusing to serve ACP over the network with an empty bearer token: give \
                 `HttpConfig::bearer` a long random secret, or `HttpConfig::check` the host's \
                 own check",
            )),
            _ => Ok(()),
        }
    }

    /// Whether the request may proceed: its credentials (not its `Origin`).
    pub(crate) fn admits(&self, parts: &Parts) -> bool {
        match &self.auth {
            Auth::Bearer(token) => parts
                .headers
                .get(http::header::AUTHORIZATION)
                .and_then(|v| bearer_of(v.as_bytes()))
                .is_some_and(|given| constant_time_eq(given, token)),
            Auth::Check(check) => check(parts),
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
        assert!(config.admits(&parts(&[("authorization", "Bearer abc123")])));
        assert!(config.admits(&parts(&[("authorization", "bearer abc123")])));
        for wrong in [
            "Bearer abc12",
            "Bearer abc1234",
            "Basic abc123",
            "abc123",
            "Bearer ",
        ] {
            assert!(
                !config.admits(&parts(&[("authorization", wrong)])),
                "{wrong}"
            );
        }
        assert!(!config.admits(&parts(&[])));
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
