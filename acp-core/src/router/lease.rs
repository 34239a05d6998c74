//! Session ownership across replicas: a session open on a connection holds its ownership
//! lease in the store ([`SessionStore::acquire_lease`]), so that replicas of an agent sharing
//! a store (PostgreSQL) never run turns of one session at once.
//!
//! - Reopening a session (`session/load`, `session/resume`) first takes its lease, waiting
//!   up to one lease period for another holder's to expire (a replica that died stops
//!   renewing); a session still held after that is refused, saying so.
//! - While the session is open, [`keep`] renews the lease every third of its period. A
//!   renewal refused (another holder took it over) closes the session here: its turn is
//!   cancelled and later prompts are answered as for a session this connection does not
//!   know, until it is loaded again. A renewal that fails (the database unreachable) is
//!   retried until the lease would have expired, then the same.
//! - Closing the session, or the connection ending, releases the lease at once.
//!
//! With a store used by one process (SQLite, memory) every lease is granted and nothing
//! waits.

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::time::Instant;
use tracing::{debug, warn};

use crate::error::{Error, Result};
use crate::schema::SessionId;
use crate::session::{Connection, SessionState};
use crate::store::SessionStore;

/// Takes session `id`'s lease for `conn`, waiting up to one lease period (and a tenth) for
/// another holder's to expire.
pub(super) async fn take(
    store: &dyn SessionStore,
    conn: &Connection,
    id: &SessionId,
) -> Result<()> {
    let (holder, ttl) = conn.lease();
    let deadline = Instant::now() + ttl + ttl / 10;
    loop {
        if store.acquire_lease(id, holder, ttl).await? {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Error::msg(format!(
                "session {id} is open on another replica of this agent, which holds it; \
                 it can be loaded here once that replica closes it, or {} s after the \
                 replica stopped",
                ttl.as_secs_f32()
            )));
        }
        debug!(session = %id, "the session is held by another replica; waiting for its lease");
        tokio::time::sleep((ttl / 10).max(Duration::from_millis(10))).await;
    }
}

/// Keeps `state`'s lease while it is open on its connection (see the module's doc), from a
/// task of its own that takes it at once (a new session's first lease).
pub(super) fn keep(store: Arc<dyn SessionStore>, state: &Arc<SessionState>) {
    let conn = Arc::downgrade(state.conn());
    let session = Arc::downgrade(state);
    let (id, ended) = (state.id().clone(), state.ended().clone());
    let (holder, ttl) = state.conn().lease();
    let holder = holder.to_owned();
    tokio::spawn(async move {
        let mut renewed = Instant::now();
        loop {
            match store.acquire_lease(&id, &holder, ttl).await {
                Ok(true) => renewed = Instant::now(),
                Ok(false) => {
                    warn!(session = %id, "another replica took the session over; closed it here");
                    return lose(&conn, &session);
                }
                Err(e) if renewed.elapsed() + ttl / 3 >= ttl => {
                    warn!(session = %id, "could not renew the session's lease ({e}); closed it here");
                    return lose(&conn, &session);
                }
                Err(e) => {
                    warn!(session = %id, "could not renew the session's lease ({e}); retrying")
                }
            }
            tokio::select! {
                () = ended.cancelled() => break,
                () = tokio::time::sleep(ttl / 3) => {}
            }
        }
        // Closed here. Reopened on this same connection, the session is already held again by
        // the same holder: its lease stays.
        let reopened = conn
            .upgrade()
            .is_some_and(|conn| conn.sessions().get(&id).is_some());
        if !reopened && let Err(e) = store.release_lease(&id, &holder).await {
            debug!(session = %id, "could not release the session's lease ({e}); it expires");
        }
    });
}

/// The lease is lost: the session is closed on its connection (if it is still the one open
/// there).
fn lose(conn: &Weak<Connection>, session: &Weak<SessionState>) {
    let (Some(conn), Some(session)) = (conn.upgrade(), session.upgrade()) else {
        return;
    };
    match conn.sessions().get(session.id()) {
        Some(open) if Arc::ptr_eq(&open, &session) => {
            conn.sessions().remove(session.id());
        }
        _ => session.close(),
    }
}
