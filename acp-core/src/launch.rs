//! What an agent's `main` serves, chosen by its command line ([`serve_main`]): stdio, or with
//! `--listen ADDR` the network service (feature `http`). Above both `serve` (stdio) and
//! `net` (the network), which know nothing of command lines.

use crate::agent::Agent;
use crate::error::{Error, Result};
use crate::serve::Server;

/// The environment variable `--listen` reads the connection limit from (see
/// [`Server::serve_main`]).
#[cfg_attr(not(feature = "http"), allow(dead_code))]
const MAX_CONNECTIONS_VAR: &str = "ACP_MAX_CONNECTIONS";

/// The environment variable `--listen` reads each user's share of the connection limit from.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
const MAX_CONNECTIONS_PER_USER_VAR: &str = "ACP_MAX_CONNECTIONS_PER_USER";

/// The environment variable `--listen` reads the header timeout from, in milliseconds.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
const HEADER_TIMEOUT_VAR: &str = "ACP_HEADER_TIMEOUT_MS";

/// Serves `agent` as its command line says: on stdio (see [`serve_stdio`](crate::serve_stdio)), or, given
/// `--listen ADDR` (or `--listen=ADDR`), on the network at `http://ADDR/acp` with the bearer
/// token from `$ACP_TOKEN` (or one per user from `$ACP_TOKENS`) and at most
/// `$ACP_MAX_CONNECTIONS` connections at once (see [`Server::serve_main`]). An agent's `main`
/// in one line:
///
/// ```no_run
/// # async fn demo(agent: impl acp_core::Agent) -> acp_core::Result<()> {
/// acp_core::serve_main(agent).await
/// # }
/// ```
pub async fn serve_main<A: Agent>(agent: A) -> Result<()> {
    Server::new(agent).serve_main().await
}

/// The address `--listen ADDR` or `--listen=ADDR` gives among `args`, if any.
fn listen_arg(args: impl IntoIterator<Item = String>) -> Result<Option<String>> {
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "--listen" {
            return match args.next() {
                Some(addr) if !addr.starts_with("--") => Ok(Some(addr)),
                _ => Err(Error::msg(
                    "--listen needs an address, e.g. `--listen 127.0.0.1:8080`",
                )),
            };
        }
        if let Some(addr) = arg.strip_prefix("--listen=") {
            return Ok(Some(addr.to_owned()));
        }
    }
    Ok(None)
}

impl<A: Agent> Server<A> {
    /// Serves as the process's command line says: on stdio by default ([`Server::serve_stdio`]);
    /// with `--listen ADDR` (e.g. `--listen 127.0.0.1:8080`), on the network at
    /// `http://ADDR/acp` (feature `http`: `Server::serve_http`), requiring the bearer token
    /// in `$ACP_TOKEN`, or one of the users' tokens in `$ACP_TOKENS` (`alice:TOKEN,bob:TOKEN`:
    /// each user then sees only their own sessions; see `net::HttpConfig::from_env`), and
    /// accepting at most `$ACP_MAX_CONNECTIONS` connections at once if set (else
    /// `HttpConfig`'s default, 256), at most `$ACP_MAX_CONNECTIONS_PER_USER` of them per user
    /// if set (else a quarter), and closing a socket that sent no request with valid
    /// credentials within `$ACP_HEADER_TIMEOUT_MS` milliseconds if set (else 30 s). Without a
    /// token, with a malformed address or number, or without feature `http` it fails at once
    /// with an error saying so (the process then exits non-zero), before anything listens.
    pub async fn serve_main(self) -> Result<()> {
        let Some(addr) = listen_arg(std::env::args().skip(1))? else {
            return self.serve_stdio().await;
        };
        #[cfg(feature = "http")]
        {
            let mut config = crate::net::HttpConfig::from_env()?;
            let number = |var: &str, what: &str, example: &str| {
                positive(var, std::env::var(var).ok(), what, example)
            };
            let most = "the most connections to serve at once";
            if let Some(max) = number(MAX_CONNECTIONS_VAR, most, "1000")? {
                config = config.max_connections(max);
            }
            let share = "the most connections one user may hold at once";
            if let Some(max) = number(MAX_CONNECTIONS_PER_USER_VAR, share, "64")? {
                config = config.max_connections_per_user(max);
            }
            let timeout = "the milliseconds a socket has to send a request with credentials";
            if let Some(ms) = number(HEADER_TIMEOUT_VAR, timeout, "30000")? {
                config = config.header_timeout(std::time::Duration::from_millis(ms as u64));
            }
            let addr: std::net::SocketAddr = addr.parse().map_err(|e| {
                Error::msg(format!(
                    "--listen {addr}: not an address and port ({e}), e.g. 127.0.0.1:8080"
                ))
            })?;
            self.serve_http(addr, config).await
        }
        #[cfg(not(feature = "http"))]
        {
            Err(Error::msg(format!(
                "--listen {addr}: this agent was built without the network service (feature \
                 `http` of acp-framework)"
            )))
        }
    }
}

/// The number `$var` gives (`value`), if set: a whole number from 1, `what` the variable
/// means (for the error).
#[cfg_attr(not(feature = "http"), allow(dead_code))]
fn positive(var: &str, value: Option<String>, what: &str, example: &str) -> Result<Option<usize>> {
    let Some(value) = value else {
        return Ok(None);
    };
    match value.trim().parse::<usize>() {
        Ok(max) if max > 0 => Ok(Some(max)),
        _ => Err(Error::msg(format!(
            "${var}={value:?}: expected {what}, a whole number from 1 (e.g. {var}={example})"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_is_read_in_both_spellings_and_needs_an_address() {
        let args = |a: &[&str]| listen_arg(a.iter().map(|s| s.to_string()));
        assert_eq!(args(&[]).unwrap(), None);
        assert_eq!(args(&["--login"]).unwrap(), None);
        let addr = Some("127.0.0.1:8080".to_owned());
        assert_eq!(args(&["--listen", "127.0.0.1:8080"]).unwrap(), addr);
        assert_eq!(args(&["-v", "--listen=127.0.0.1:8080"]).unwrap(), addr);
        assert!(args(&["--listen"]).is_err());
        assert!(args(&["--listen", "--verbose"]).is_err());
    }

    #[test]
    fn the_connection_limit_is_a_positive_number_when_set() {
        let max = |v: Option<&str>| {
            positive(
                MAX_CONNECTIONS_VAR,
                v.map(str::to_owned),
                "connections",
                "1000",
            )
        };
        assert_eq!(max(None).unwrap(), None);
        assert_eq!(max(Some("1000")).unwrap(), Some(1000));
        assert_eq!(max(Some(" 2 ")).unwrap(), Some(2));
        for bad in ["", "0", "-1", "many", "1e3"] {
            let e = max(Some(bad)).unwrap_err().to_string();
            assert!(e.contains("ACP_MAX_CONNECTIONS"), "{bad:?}: {e}");
        }
    }
}
