//! Sessions whose client went away while their turns still ran: a connection that keeps its
//! turns running after its client left (the network service, see
//! [`Server::detached_turns`](crate::Server::detached_turns)) holds its sessions here until
//! those turns have ended and what they sent is recorded. A client that reconnects and
//! reopens one of them (`session/load`, `session/resume`) on another connection of the same
//! server waits here first, so that it resumes the session with nothing missing and never
//! runs a turn beside the one still going. A `session/cancel` for such a session, from the
//! same user on another connection, cancels its turn.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::SessionState;
use crate::schema::SessionId;
use crate::sync::lock;

/// What a connection that keeps its turns running after its client left needs: how long
/// they may run on, and the server's register of such sessions.
#[derive(Debug, Clone)]
pub(crate) struct Detach {
    /// How long the turns may run on after the client left; then they are cancelled.
    pub limit: Duration,
    /// Shared by every connection of one server.
    pub sessions: Arc<Detached>,
}

/// The sessions held by connections whose client went away, by id.
#[derive(Debug, Default)]
pub(crate) struct Detached {
    held: Mutex<HashMap<SessionId, Hold>>,
    next: AtomicU64,
}

/// One held session.
#[derive(Debug)]
struct Hold {
    /// The hold's number (a later hold of the same id replaces it).
    number: u64,
    /// Cancelled when the session is freed.
    freed: CancellationToken,
    /// The user of the departed connection (who may cancel the turn).
    user: Option<String>,
    session: Weak<SessionState>,
}

impl Detached {
    fn lock(&self) -> MutexGuard<'_, HashMap<SessionId, Hold>> {
        lock(&self.held)
    }

    /// Holds `sessions` (by id) of `user`'s connection whose client went away, until the
    /// returned guard is dropped (which wakes whoever waits for them).
    pub fn hold(
        self: &Arc<Self>,
        sessions: impl IntoIterator<Item = (SessionId, Weak<SessionState>)>,
        user: Option<&str>,
    ) -> Held {
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let mut held = self.lock();
        let ids = sessions
            .into_iter()
            .map(|(id, session)| {
                let freed = CancellationToken::new();
                let hold = Hold {
                    number,
                    freed: freed.clone(),
                    user: user.map(str::to_owned),
                    session,
                };
                held.insert(id.clone(), hold);
                (id, freed)
            })
            .collect();
        Held {
            register: self.clone(),
            number,
            ids,
        }
    }

    /// Cancels the turn of session `id` if a departed connection of `user`'s holds it;
    /// whether one did.
    pub fn cancel(&self, id: &SessionId, user: Option<&str>) -> bool {
        let session = self
            .lock()
            .get(id)
            .filter(|hold| hold.user.as_deref() == user)
            .and_then(|hold| hold.session.upgrade());
        match session {
            Some(session) => {
                session.cancel_turn();
                true
            }
            None => false,
        }
    }

    /// Whether a connection whose client went away holds session `id` (its turn runs on).
    #[cfg(feature = "unstable-session-status")]
    pub fn holds(&self, id: &SessionId) -> bool {
        self.lock().contains_key(id)
    }

    /// Waits until session `id` is held by no connection whose client went away.
    pub async fn wait(&self, id: &SessionId) {
        loop {
            let freed = self.lock().get(id).map(|hold| hold.freed.clone());
            match freed {
                Some(freed) => {
                    tracing::debug!(session = %id, "waiting for the turn its last client left running");
                    freed.cancelled().await;
                }
                None => return,
            }
        }
    }
}

/// A departed connection's hold on its sessions (see [`Detached::hold`]).
#[derive(Debug)]
pub(crate) struct Held {
    register: Arc<Detached>,
    number: u64,
    ids: Vec<(SessionId, CancellationToken)>,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut held = self.register.lock();
        for (id, freed) in self.ids.drain(..) {
            if held.get(&id).is_some_and(|hold| hold.number == self.number) {
                held.remove(&id);
            }
            freed.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_reopen_waits_until_the_departed_connection_frees_the_session() {
        let register = Arc::new(Detached::default());
        let id = SessionId::new("s");
        // Nothing held: no wait.
        register.wait(&id).await;
        let held = register.hold([(id.clone(), Weak::new())], Some("alice"));
        assert!(
            !register.cancel(&id, Some("bob")),
            "only its user cancels it"
        );
        let waiting = tokio::spawn({
            let register = register.clone();
            let id = id.clone();
            async move { register.wait(&id).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "waits while the session is held");
        drop(held);
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("woken when freed")
            .unwrap();
        assert!(register.lock().is_empty());
    }
}
