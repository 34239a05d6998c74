//! What an agent's `main` serves, chosen by its command line ([`serve_main`]): stdio, or with
//! `--listen ADDR` the network service (feature `http`). Above both `serve` (stdio) and
//! `net` (the network), which know nothing of command lines.

use crate::agent::Agent;
use crate::error::{Error, Result};
use crate::serve::Server;

/// Serves `agent` as its command line says: on stdio (see [`serve_stdio`](crate::serve_stdio)), or, given
/// `--listen ADDR` (or `--listen=ADDR`), on the network at `http://ADDR/acp` with the bearer
/// token from `$ACP_TOKEN`, or one per user from `$ACP_TOKENS` (see [`Server::serve_main`]). An agent's `main` in one line:
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
    /// each user then sees only their own sessions; see `net::HttpConfig::from_env`). Without
    /// a token, with a malformed address or without feature `http`
    /// it fails at once with an error saying so (the process then exits non-zero), before
    /// anything listens.
    pub async fn serve_main(self) -> Result<()> {
        let Some(addr) = listen_arg(std::env::args().skip(1))? else {
            return self.serve_stdio().await;
        };
        #[cfg(feature = "http")]
        {
            let config = crate::net::HttpConfig::from_env()?;
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
}
