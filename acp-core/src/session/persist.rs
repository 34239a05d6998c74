//! Per-session values that survive restarts: the [`Persist`] trait an author implements, the
//! [`Persisted`] cell [`Session::persisted`](super::Session::persisted) hands out, and how the
//! runtime saves them after each turn and gives them back on `session/load` / `session/resume`.
//!
//! A value is restored lazily: the stored JSON of a reopened session waits, by key, until the
//! agent first asks for its type; a value that no longer deserializes (the type changed) starts
//! from its `Default`, with a warning.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::state::{SessionState, TypeMap};
use crate::sync::lock;

/// A per-session value the runtime keeps in the session store, so that it comes back when the
/// session is loaded or resumed, also in another process: a model's conversation, a todo list.
///
/// Saved after every prompt turn that touched it (a cancelled or failed turn included), before
/// the turn's answer is sent; read back on the first [`Session::persisted`] of a reopened
/// session. Without a session store (`Server::no_store`) it lives as long as the session.
///
/// ```
/// #[derive(Default, serde::Serialize, serde::Deserialize)]
/// struct Todo {
///     items: Vec<String>,
/// }
///
/// impl acp_core::Persist for Todo {
///     const KEY: &'static str = "todo";
/// }
///
/// # fn turn(cx: &acp_core::Session) {
/// cx.persisted::<Todo>().lock().items.push("write the tests".into());
/// # }
/// ```
///
/// [`Session::persisted`]: super::Session::persisted
pub trait Persist: Default + Serialize + DeserializeOwned + Send + 'static {
    /// The name the value is stored under in its session: unique among the agent's persisted
    /// types, and kept when the type is renamed or moved (a new key starts from `Default`).
    const KEY: &'static str;

    /// For a value that grows by appending (a log, such as a model's conversation), which
    /// serializes to the JSON array of its entries: where it stands ([`PersistLog`]). The runtime then
    /// stores only the entries a turn added, so a turn's store cost does not grow with the
    /// session's length. `None` (the default): the whole value is stored after every turn
    /// that touched it.
    fn log(&self) -> Option<PersistLog> {
        None
    }

    /// The entries from `from` on, as a JSON array (called when [`log`](Self::log) is `Some`
    /// and the value only grew since `from` entries were stored).
    fn log_tail(&self, from: usize) -> serde_json::Result<serde_json::Value> {
        let _ = from;
        serde_json::to_value(self)
    }
}

/// Where a [`Persist`] log stands: how many entries it has, and its generation, which changes
/// whenever it is rewritten rather than appended to (entries removed or replaced, e.g. a
/// conversation compacted), so that the runtime stores it whole again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PersistLog {
    /// The generation of its entries.
    pub generation: u64,
    /// How many entries it has.
    pub len: usize,
}

/// A session's [`Persist`] value: lock it to read or change it. Every lock counts as a change
/// (the value is saved after the turn).
#[derive(Debug, Default)]
pub struct Persisted<T> {
    value: Mutex<T>,
    changed: AtomicBool,
}

impl<T> Persisted<T> {
    fn new(value: T) -> Self {
        Persisted {
            value: Mutex::new(value),
            changed: AtomicBool::new(false),
        }
    }

    /// The value, locked (held across an `.await`, it would block the session's other tasks:
    /// copy out what a model call needs first).
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.changed.store(true, Ordering::Release);
        lock(&self.value)
    }
}

/// What a save writes of one persisted value.
enum Save {
    /// The whole value, under its key.
    Whole(serde_json::Value),
    /// A log's entries added since the last save (a JSON array), as its next segment.
    Tail(serde_json::Value),
}

/// How much of a log the store has: its generation and length at the last save, and how
/// many segments follow the whole value saved under its key.
#[derive(Debug, Clone, Copy, Default)]
struct Stored {
    log: Option<PersistLog>,
    segments: usize,
}

impl<T: Persist> Persisted<T> {
    /// What to save if the value may have changed since the last call, given what the store
    /// has of it (`stored`, brought up to date).
    fn take_changed(&self, stored: &mut Stored) -> Option<serde_json::Result<Save>> {
        if !self.changed.swap(false, Ordering::AcqRel) {
            return None;
        }
        let value = lock(&self.value);
        let log = value.log();
        let appended = match (log, stored.log) {
            (Some(now), Some(then)) => now.generation == then.generation && now.len >= then.len,
            _ => false,
        };
        let save = if appended {
            let from = stored.log.map_or(0, |l| l.len);
            if log.is_some_and(|l| l.len == from) {
                return None;
            }
            stored.segments += 1;
            value.log_tail(from).map(Save::Tail)
        } else {
            serde_json::to_value(&*value).map(Save::Whole)
        };
        stored.log = log;
        Some(save)
    }
}

/// Reads what to save of one persisted type's value out of a session's values, if it changed.
type Saver = fn(&TypeMap, &mut Stored) -> Option<serde_json::Result<Save>>;

fn saver<T: Persist>(values: &TypeMap, stored: &mut Stored) -> Option<serde_json::Result<Save>> {
    values.get::<Persisted<T>>()?.take_changed(stored)
}

/// The store key of a log's segment `n` (from 1): its entries after the whole value under
/// `key` and the segments before it.
fn segment_key(key: &str, n: usize) -> String {
    format!("{key}#{n}")
}

/// A log's whole value as stored: the value under `key`, followed by its segments (taken out
/// of `values`) in order; the number of segments.
fn join_segments(
    key: &str,
    base: serde_json::Value,
    values: &mut HashMap<String, serde_json::Value>,
) -> (serde_json::Value, usize) {
    let serde_json::Value::Array(mut entries) = base else {
        return (base, 0);
    };
    let mut n = 0;
    while let Some(segment) = values.remove(&segment_key(key, n + 1)) {
        n += 1;
        if let serde_json::Value::Array(more) = segment {
            entries.extend(more);
        }
    }
    (serde_json::Value::Array(entries), n)
}

/// What a session keeps for its persisted values.
#[derive(Debug, Default)]
pub(crate) struct PersistedValues {
    /// Values read from the store when the session was reopened, not asked for yet.
    restored: Mutex<HashMap<String, serde_json::Value>>,
    /// The persisted types in use, by key, and what the store has of each.
    in_use: Mutex<Vec<(&'static str, Saver, Stored)>>,
}

impl PersistedValues {
    /// Keeps the values of a reopened session until they are asked for.
    pub fn restore(&self, values: HashMap<String, serde_json::Value>) {
        *lock(&self.restored) = values;
    }
}

impl SessionState {
    /// The session's `T`, restored or `Default`.
    pub(crate) fn persisted<T: Persist>(&self) -> std::sync::Arc<Persisted<T>> {
        self.values.get_or_insert_with(|| {
            let (stored, segments) = {
                let mut restored = lock(&self.persisted.restored);
                match restored.remove(T::KEY) {
                    Some(base) => {
                        let (json, segments) = join_segments(T::KEY, base, &mut restored);
                        (Some(json), segments)
                    }
                    None => (None, 0),
                }
            };
            let was_stored = stored.is_some();
            let value = stored.map_or_else(T::default, |json| {
                serde_json::from_value(json).unwrap_or_else(|e| {
                    tracing::warn!(
                        session = %self.id,
                        key = T::KEY,
                        "the saved value no longer reads as {}; starting from its default: {e}",
                        std::any::type_name::<T>()
                    );
                    T::default()
                })
            });
            // The store has it as read (a log: appended to from there); a value it does not
            // have yet is saved whole first.
            let kept = Stored {
                log: was_stored.then(|| value.log()).flatten(),
                segments,
            };
            lock(&self.persisted.in_use).push((T::KEY, saver::<T>, kept));
            Persisted::new(value)
        })
    }

    /// Saves the persisted values changed since the last save into the session store (none:
    /// nothing to do). Failures are logged: the turn's answer is not held back by them.
    pub(crate) async fn save_persisted(&self) {
        let Some(store) = self.conn.peer().journal.store() else {
            return;
        };
        // What to write, worked out under the lock; written after it.
        let mut writes: Vec<(String, serde_json::Value)> = Vec::new();
        for (key, save, stored) in lock(&self.persisted.in_use).iter_mut() {
            let before = stored.segments;
            match save(&self.values, stored) {
                None => {}
                Some(Ok(Save::Tail(tail))) => {
                    writes.push((segment_key(key, stored.segments), tail))
                }
                Some(Ok(Save::Whole(whole))) => {
                    writes.push(((*key).to_owned(), whole));
                    // A rewrite: the segments stored after the old value no longer count.
                    writes.extend(
                        (1..=before).map(|n| (segment_key(key, n), serde_json::Value::Null)),
                    );
                    stored.segments = 0;
                }
                Some(Err(e)) => {
                    tracing::warn!(session = %self.id, key, "could not encode the session's value: {e}");
                }
            }
        }
        for (key, value) in writes {
            if let Err(e) = store.put_state(&self.id, &key, &value).await {
                tracing::warn!(session = %self.id, key, "could not save the session's value: {e}");
            }
        }
    }
}
