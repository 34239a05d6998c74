//! Where v2's prompts wait for their turn ([`PromptQueue`], one per session, kept with the
//! session's values): the lock the running turn holds, the bounded backlog of prompts behind
//! it, and the idempotency keys of the prompts taken (a retried prompt starts no second turn);
//! and the session's background terminals, which v2 reports in its state.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::schema;
use crate::session::SessionState;
use crate::session::local::LocalTerminal;
use crate::sync::lock;

/// How many idempotency keys of prompts a session remembers (a client retries a prompt soon
/// after sending it; memory stays bounded however many prompts a session takes).
const IDEMPOTENCY_KEYS: usize = 256;

/// How many prompts may wait behind a session's running turn.
pub(super) const MAX_QUEUED_PROMPTS: usize = 16;

/// How many bytes of prompts (as the client sent them) may wait behind a session's running
/// turn.
pub(super) const MAX_QUEUED_BYTES: usize = 8 * 1024 * 1024;

/// A session's prompt queue.
#[derive(Debug, Default)]
pub(super) struct PromptQueue {
    /// Held by the prompt whose turn runs: prompts take it in the order they came, each its
    /// own turn.
    pub turn: Arc<tokio::sync::Mutex<()>>,
    /// The prompts waiting for `turn` and their size: bounded, so that a client cannot grow
    /// the agent's memory by queueing prompts behind a running turn.
    backlog: Arc<Backlog>,
    /// The user message id each idempotency key of a prompt was given; the latest
    /// [`IDEMPOTENCY_KEYS`], oldest first.
    keys: Mutex<VecDeque<(String, schema::MessageId)>>,
}

impl PromptQueue {
    /// The queue of `state`'s session.
    pub fn of(state: &SessionState) -> Arc<PromptQueue> {
        state.values().get_or_insert_with(PromptQueue::default)
    }

    /// A place in the queue for a prompt of `bytes`, if it has room for it (at most
    /// [`MAX_QUEUED_PROMPTS`] prompts of [`MAX_QUEUED_BYTES`] in all); given back when the
    /// place is dropped (the prompt's turn started, or it gave up).
    pub fn admit(&self, bytes: usize) -> Option<Queued> {
        let mut load = lock(&self.backlog.0);
        let (count, total) = *load;
        if count >= MAX_QUEUED_PROMPTS || total.saturating_add(bytes) > MAX_QUEUED_BYTES {
            return None;
        }
        *load = (count + 1, total + bytes);
        Some(Queued {
            backlog: self.backlog.clone(),
            bytes,
        })
    }

    /// The user message id a prompt with idempotency key `key` was given, if remembered.
    pub fn prompt_with_key(&self, key: &str) -> Option<schema::MessageId> {
        lock(&self.keys)
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, id)| id.clone())
    }

    /// Remembers that the prompt with idempotency key `key` was given `message`.
    pub fn remember_key(&self, key: String, message: schema::MessageId) {
        let mut keys = lock(&self.keys);
        if keys.len() == IDEMPOTENCY_KEYS {
            keys.pop_front();
        }
        keys.push_back((key, message));
    }
}

/// The prompts waiting for a session's turn: their count and bytes.
#[derive(Debug, Default)]
struct Backlog(Mutex<(usize, usize)>);

/// A prompt's place in its session's queue.
#[derive(Debug)]
pub(super) struct Queued {
    backlog: Arc<Backlog>,
    bytes: usize,
}

impl Drop for Queued {
    fn drop(&mut self) {
        let mut load = lock(&self.backlog.0);
        load.0 -= 1;
        load.1 -= self.bytes;
    }
}

/// The session's local terminals whose command still runs: v2's background work once the
/// turn that started them ended.
pub(super) fn running_terminals(state: &SessionState) -> Vec<Arc<LocalTerminal>> {
    state.running_local_terminals()
}

/// The ids of [`running_terminals`].
pub(super) fn background_terminal_ids(state: &SessionState) -> Vec<String> {
    running_terminals(state)
        .iter()
        .map(|t| t.id.0.to_string())
        .collect()
}
