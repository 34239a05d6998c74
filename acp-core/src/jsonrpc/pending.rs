//! The requests we sent and whose answers we await: ids, and the channel each answer goes to.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use serde_json::value::RawValue;
use tokio::sync::oneshot;

use crate::schema::{self, RequestId};
use crate::sync::lock;

/// The client's answer to one of our requests: its `result`, or why there is none.
pub(crate) type Answer = Result<Box<RawValue>, Failed>;

/// Why an answer carries no result.
#[derive(Debug)]
pub(crate) enum Failed {
    /// The client's `error`.
    Error(schema::Error),
    /// A response that is not well formed (both `result` and `error`, neither, or an `error`
    /// that is not an error object), and why.
    Malformed(String),
}

/// Outgoing requests awaiting an answer, by id.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    waiting: Mutex<HashMap<i64, oneshot::Sender<Answer>>>,
    next_id: AtomicI64,
}

impl Pending {
    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<i64, oneshot::Sender<Answer>>> {
        lock(&self.waiting)
    }

    /// A fresh id and the channel its answer will arrive on.
    pub fn register(&self) -> (i64, oneshot::Receiver<Answer>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.waiting().insert(id, tx);
        (id, rx)
    }

    /// Stops waiting for `id` (answered, cancelled or given up).
    pub fn forget(&self, id: i64) {
        self.waiting().remove(&id);
    }

    /// Hands an answer to whoever waits for `id`; `false` if nobody does.
    pub fn resolve(&self, id: &RequestId, answer: Answer) -> bool {
        let RequestId::Number(n) = id else {
            return false;
        };
        match self.waiting().remove(n) {
            Some(tx) => {
                let _ = tx.send(answer);
                true
            }
            None => false,
        }
    }

    /// Fails every waiting request (their receivers see the channel closed).
    pub fn clear(&self) {
        self.waiting().clear();
    }
}
