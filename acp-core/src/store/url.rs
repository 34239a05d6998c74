//! Which store a database URL names: [`open_url`], and `$ACP_DATABASE_URL` ([`DATABASE_URL_VAR`]),
//! which picks the store `serve_stdio` records into (see the [module docs](super)).

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use super::{Opening, SessionStore, SqliteStore};
use crate::error::{Error, Result};

/// The environment variable that picks the store [`serve_stdio`](crate::serve_stdio)
/// records into when the agent chose none: `ACP_DATABASE_URL`, a URL as [`open_url`] takes
/// it; unset or empty means the agent's default SQLite file.
pub const DATABASE_URL_VAR: &str = "ACP_DATABASE_URL";

/// A store a URL names.
#[derive(Debug, Clone, PartialEq)]
enum Location {
    /// `sqlite://PATH`.
    Sqlite(PathBuf),
    /// `postgres://…` or `postgresql://…`, as given (it may hold a password: never shown).
    Postgres(String),
}

impl Location {
    /// Reads `url`; `what` names where it came from, for the errors (which never show the
    /// URL: it may hold a password).
    fn parse(url: &str, what: &str) -> Result<Location> {
        if let Some(path) = url.strip_prefix("sqlite://") {
            if path.is_empty() {
                return Err(Error::msg(format!(
                    "session store: {what} `sqlite://` names no file: write `sqlite://PATH`, \
                     e.g. `sqlite:///var/lib/agent/sessions.sqlite3`"
                )));
            }
            return Ok(Location::Sqlite(PathBuf::from(path)));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Location::Postgres(url.to_owned()));
        }
        let scheme = match url.split_once("://") {
            Some((scheme, _))
                if scheme
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b)) =>
            {
                format!("it starts with `{scheme}://`")
            }
            _ => "it has no `scheme://`".to_owned(),
        };
        Err(Error::msg(format!(
            "session store: {what} must start with `postgres://`, `postgresql://` or \
             `sqlite://` ({scheme})"
        )))
    }

    /// Opens the store, as an `Arc` (blocking calls on tokio's blocking pool).
    async fn open(self) -> Result<Arc<dyn SessionStore>> {
        match self {
            Location::Sqlite(path) => {
                let opened = tokio::task::spawn_blocking(move || SqliteStore::open(path))
                    .await
                    .map_err(|e| Error::msg(format!("session store: opening it failed: {e}")))?;
                Ok(Arc::new(opened?))
            }
            Location::Postgres(url) => open_postgres(&url).await,
        }
    }

    /// The store, opened in the background (see [`Opening`]). Call it inside a tokio runtime.
    fn opening(self) -> Opening {
        match self {
            Location::Sqlite(path) => Opening::spawn(move || SqliteStore::open(path)),
            Location::Postgres(url) => {
                Opening::spawn_async(async move { open_postgres(&url).await })
            }
        }
    }

    /// Fails for a store this build cannot open (PostgreSQL without feature `postgres`).
    fn check_supported(&self, what: &str) -> Result<()> {
        let _ = what;
        match self {
            #[cfg(not(feature = "postgres"))]
            Location::Postgres(_) => Err(Error::msg(format!(
                "session store: {what} names a PostgreSQL database, but this agent was built \
                 without acp's `postgres` feature: enable it (`features = [\"postgres\"]` on \
                 the `acp-framework` dependency) or choose another store"
            ))),
            _ => Ok(()),
        }
    }
}

#[cfg(feature = "postgres")]
async fn open_postgres(url: &str) -> Result<Arc<dyn SessionStore>> {
    Ok(Arc::new(super::PostgresStore::connect(url).await?))
}

#[cfg(not(feature = "postgres"))]
async fn open_postgres(_url: &str) -> Result<Arc<dyn SessionStore>> {
    Err(Error::msg(
        "session store: the URL names a PostgreSQL database, but this agent was built \
         without acp's `postgres` feature: enable it (`features = [\"postgres\"]` on the \
         `acp-framework` dependency)",
    ))
}

/// Opens the store `url` names: `postgres://…` or `postgresql://…` (a `PostgresStore`, with
/// feature `postgres`), or `sqlite://PATH` (a [`SqliteStore`] at `PATH`). What
/// `$ACP_DATABASE_URL` does with no code (see the [module docs](super)), for an agent that
/// takes the URL from elsewhere:
///
/// ```no_run
/// # async fn demo(agent: impl acp_core::Agent) -> acp_core::Result<()> {
/// let store = acp_core::store::open_url("sqlite:///var/lib/scribe/sessions.sqlite3").await?;
/// acp_core::Server::new(agent).shared_store(store).serve_stdio().await
/// # }
/// ```
///
/// Fails on any other URL, on a PostgreSQL URL without feature `postgres`, and when the store
/// does not open; the errors never show the URL's password.
pub async fn open_url(url: &str) -> Result<Arc<dyn SessionStore>> {
    let location = Location::parse(url, "the database URL")?;
    location.check_supported("the database URL")?;
    location.open().await
}

/// The store `serve_stdio` records into when the agent chose none, opening in the
/// background: the one `$ACP_DATABASE_URL` names, else the agent's default SQLite file. Fails
/// at once on a URL it cannot open. Call it inside a tokio runtime.
pub(crate) fn opening_default(agent_name: &str) -> Result<Opening> {
    opening_for(std::env::var_os(DATABASE_URL_VAR), agent_name)
}

fn opening_for(url: Option<OsString>, agent_name: &str) -> Result<Opening> {
    let what = format!("${DATABASE_URL_VAR}");
    let url = match url {
        Some(url) if !url.is_empty() => url
            .into_string()
            .map_err(|_| Error::msg(format!("session store: {what} is not valid UTF-8")))?,
        _ => {
            let name = agent_name.to_owned();
            return Ok(Opening::spawn(move || SqliteStore::open_default(&name)));
        }
    };
    let location = Location::parse(&url, &what)?;
    location.check_supported(&what)?;
    Ok(location.opening())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_their_store_and_errors_never_show_them() {
        let parse = |url: &str| Location::parse(url, "$X");
        assert_eq!(
            parse("sqlite:///var/lib/a.db").unwrap(),
            Location::Sqlite("/var/lib/a.db".into())
        );
        assert_eq!(
            parse("sqlite://a.db").unwrap(),
            Location::Sqlite("a.db".into())
        );
        for url in ["postgres://u:pw@db/acp", "postgresql://db", "postgres://"] {
            assert_eq!(parse(url).unwrap(), Location::Postgres(url.to_owned()));
        }
        for (url, says) in [
            ("sqlite://", "names no file"),
            ("mysql://u:secret@db/x", "starts with `mysql://`"),
            ("u:secret@db", "has no `scheme://`"),
            ("secret ://", "has no `scheme://`"),
            ("", "has no `scheme://`"),
        ] {
            let e = parse(url).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("$X"), "{url}: {e}");
            assert!(!e.contains("secret"), "{e}");
        }
    }

    #[cfg(not(feature = "postgres"))]
    #[test]
    fn a_postgres_url_without_the_feature_says_to_enable_it() {
        let url = Some(OsString::from("postgres://u:secret@db/acp"));
        let Err(e) = opening_for(url, "agent") else {
            panic!("opened");
        };
        let e = e.to_string();
        assert!(
            e.contains("`postgres` feature") && !e.contains("secret"),
            "{e}"
        );
    }
}
