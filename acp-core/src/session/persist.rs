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

impl<T: Serialize> Persisted<T> {
    /// The value as JSON if it may have changed since the last call.
    fn take_changed(&self) -> Option<serde_json::Result<serde_json::Value>> {
        if !self.changed.swap(false, Ordering::AcqRel) {
            return None;
        }
        let value = lock(&self.value);
        Some(serde_json::to_value(&*value))
    }
}

/// Reads one persisted type's value out of a session's values, if it changed.
type Saver = fn(&TypeMap) -> Option<serde_json::Result<serde_json::Value>>;

fn saver<T: Persist>(values: &TypeMap) -> Option<serde_json::Result<serde_json::Value>> {
    values.get::<Persisted<T>>()?.take_changed()
}

/// What a session keeps for its persisted values.
#[derive(Debug, Default)]
pub(crate) struct PersistedValues {
    /// Values read from the store when the session was reopened, not asked for yet.
    restored: Mutex<HashMap<String, serde_json::Value>>,
    /// The persisted types in use, by key.
    in_use: Mutex<Vec<(&'static str, Saver)>>,
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
            lock(&self.persisted.in_use).push((T::KEY, saver::<T>));
            let stored = lock(&self.persisted.restored).remove(T::KEY);
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
            Persisted::new(value)
        })
    }

    /// Saves the persisted values changed since the last save into the session store (none:
    /// nothing to do). Failures are logged: the turn's answer is not held back by them.
    pub(crate) async fn save_persisted(&self) {
        let Some(store) = self.conn.peer().journal.store() else {
            return;
        };
        let in_use = lock(&self.persisted.in_use).clone();
        for (key, save) in in_use {
            let Some(value) = save(&self.values) else {
                continue;
            };
            let saved = match value {
                Ok(value) => store.put_state(&self.id, key, &value).await,
                Err(e) => Err(e.into()),
            };
            if let Err(e) = saved {
                tracing::warn!(session = %self.id, key, "could not save the session's value: {e}");
            }
        }
    }
}
