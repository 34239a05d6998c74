//! The sessions of one connection, by id: added when a session is created or loaded, removed
//! when it is closed, and all dropped when the connection ends (which frees their memory and
//! breaks the session → connection references); and, across the connections of a server
//! without a store, who opened each session ([`Owners`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use super::state::SessionState;
use crate::schema::SessionId;
use crate::sync::lock;

/// How many sessions [`Owners`] remembers (the oldest are forgotten first).
const MAX_OWNERS: usize = 65_536;

/// Who opened the sessions of a server that keeps no store (the network's users), so that
/// the runtime's owner check holds without one: a user cannot `session/load` a session
/// another user opened on this server, even when the agent loads sessions itself. Shared by
/// the server's connections; bounded.
#[derive(Debug, Default)]
pub(crate) struct Owners(Mutex<(HashMap<SessionId, String>, VecDeque<SessionId>)>);

impl Owners {
    /// Records that `user` opened session `id`.
    pub fn record(&self, id: &SessionId, user: &str) {
        let mut guard = lock(&self.0);
        let (owners, order) = &mut *guard;
        if owners.insert(id.clone(), user.to_owned()).is_none() {
            order.push_back(id.clone());
        }
        while order.len() > MAX_OWNERS {
            if let Some(oldest) = order.pop_front() {
                owners.remove(&oldest);
            }
        }
    }

    /// Whether `user` (`None`: the one user of stdio or a single token) may open session
    /// `id`: unless another user opened it on this server.
    pub fn sees(&self, id: &SessionId, user: Option<&str>) -> bool {
        let Some(user) = user else {
            return true;
        };
        let guard = lock(&self.0);
        guard.0.get(id).is_none_or(|owner| owner == user)
    }
}

/// The sessions of one connection.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    sessions: Mutex<HashMap<SessionId, Arc<SessionState>>>,
}

impl Registry {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Arc<SessionState>>> {
        lock(&self.sessions)
    }

    /// Adds (or replaces) a session.
    pub fn insert(&self, state: Arc<SessionState>) {
        self.map().insert(state.id.clone(), state);
    }

    /// The session `id`, if it is known.
    pub fn get(&self, id: &SessionId) -> Option<Arc<SessionState>> {
        self.map().get(id).cloned()
    }

    /// Removes the session `id` and closes it (its running turn is cancelled, handles kept
    /// outside a turn can no longer send), returning it if it was known.
    pub fn remove(&self, id: &SessionId) -> Option<Arc<SessionState>> {
        let removed = self.map().remove(id);
        if let Some(session) = &removed {
            session.close();
        }
        removed
    }

    /// The sessions open now, by id, not kept alive by this.
    pub fn weak(&self) -> Vec<(SessionId, std::sync::Weak<SessionState>)> {
        self.map()
            .iter()
            .map(|(id, s)| (id.clone(), Arc::downgrade(s)))
            .collect()
    }

    /// Removes and closes every session.
    pub fn clear(&self) -> Vec<Arc<SessionState>> {
        let sessions: Vec<_> = self.map().drain().map(|(_, s)| s).collect();
        for session in &sessions {
            session.close();
        }
        sessions
    }
}

/// `<prefix>_<process>_<n>`: unique across processes (a per-process random-ish part) and
/// within one (a counter per prefix's caller, `next`).
pub(crate) fn process_unique(prefix: &str, next: &std::sync::atomic::AtomicU64) -> String {
    use std::sync::OnceLock;
    use std::sync::atomic::Ordering;
    static PROCESS: OnceLock<u64> = OnceLock::new();
    let process = *PROCESS.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        nanos ^ u64::from(std::process::id()).rotate_left(32)
    });
    format!(
        "{prefix}_{process:016x}_{}",
        next.fetch_add(1, Ordering::Relaxed)
    )
}

/// A session id unique across processes and unguessable: 128 bits from the operating
/// system's random source (`sess_` and 32 hex digits), so that over a network a client can
/// only name the sessions it was told about. Should that source fail, the id is unique but
/// guessable, and a warning says so.
pub(crate) fn fresh_id() -> SessionId {
    let mut bytes = [0u8; 16];
    match getrandom::fill(&mut bytes) {
        Ok(()) => {
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            SessionId::new(format!("sess_{hex}"))
        }
        Err(e) => {
            tracing::warn!("no random source ({e}): session ids are guessable");
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            SessionId::new(process_unique("sess", &NEXT))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_128_random_bits() {
        let ids: Vec<String> = (0..64).map(|_| fresh_id().0.to_string()).collect();
        for id in &ids {
            let hex = id.strip_prefix("sess_").expect(id);
            assert_eq!(hex.len(), 32, "{id}");
            assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        }
        let mut unique = ids.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), ids.len());
        // Not a counter: consecutive ids share no long prefix.
        let shared = ids[0]
            .bytes()
            .zip(ids[1].bytes())
            .take_while(|(a, b)| a == b)
            .count();
        assert!(shared < "sess_".len() + 8, "{} / {}", ids[0], ids[1]);
    }
}
