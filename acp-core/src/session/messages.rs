//! Message ids: the runtime stamps every message chunk the agent sends (and the user's
//! prompt, as recorded) with a `messageId`, so that clients tell one message from the next.
//!
//! Chunks of one kind sent one after another belong to one message; anything else the agent
//! sends in between (a tool call, a plan, a chunk of another kind), the start of a turn, or
//! [`Session::new_message`](super::Session::new_message) starts a new one. Ids are `msg_<n>`,
//! unique in their session, also after it is reloaded (numbering goes on after the recorded
//! ones). A chunk the agent gave an id itself keeps it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::schema::{ContentChunk, MessageId, SessionUpdate};
use crate::sync::lock;

/// Which stream a message belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Agent,
    Thought,
}

/// The message ids of one session.
#[derive(Debug, Default)]
pub(crate) struct Messages {
    next: AtomicU64,
    current: Mutex<Option<(Kind, MessageId)>>,
}

impl Messages {
    fn fresh(&self) -> MessageId {
        MessageId::new(format!("msg_{}", self.next.fetch_add(1, Ordering::Relaxed)))
    }

    /// Gives `update` its message id (a chunk without one), or ends the current message
    /// (anything else).
    pub fn stamp(&self, update: &mut SessionUpdate) {
        let (kind, chunk) = match update {
            SessionUpdate::AgentMessageChunk(chunk) => (Kind::Agent, chunk),
            SessionUpdate::AgentThoughtChunk(chunk) => (Kind::Thought, chunk),
            SessionUpdate::UserMessageChunk(_) => return,
            _ => return self.end(),
        };
        let mut current = lock(&self.current);
        if let Some(id) = &chunk.message_id {
            // The agent's own id: later chunks of this kind continue its message.
            *current = Some((kind, id.clone()));
            return;
        }
        let id = match &*current {
            Some((k, id)) if *k == kind => id.clone(),
            _ => {
                let id = self.fresh();
                *current = Some((kind, id.clone()));
                id
            }
        };
        chunk.message_id = Some(id);
    }

    /// Ends the current message: the next chunk starts a new one.
    pub fn end(&self) {
        *lock(&self.current) = None;
    }

    /// A fresh id for the user's prompt, whose chunks all share it.
    pub fn user_message(&self) -> MessageId {
        self.end();
        self.fresh()
    }

    /// Numbers new messages after `n` (the highest `msg_<n>` recorded) at least.
    pub fn continue_after(&self, n: u64) {
        self.next.fetch_max(n + 1, Ordering::Relaxed);
    }
}

/// A user message chunk of the prompt, with its message's id.
pub(crate) fn user_chunk(block: crate::schema::ContentBlock, id: &MessageId) -> SessionUpdate {
    SessionUpdate::UserMessageChunk(ContentChunk::new(block).message_id(id.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(kind: &str) -> SessionUpdate {
        let c = ContentChunk::new("x".into());
        match kind {
            "agent" => SessionUpdate::AgentMessageChunk(c),
            _ => SessionUpdate::AgentThoughtChunk(c),
        }
    }

    fn id(update: &SessionUpdate) -> String {
        match update {
            SessionUpdate::AgentMessageChunk(c) | SessionUpdate::AgentThoughtChunk(c) => c
                .message_id
                .as_ref()
                .map(|m| m.0.to_string())
                .unwrap_or_default(),
            _ => String::new(),
        }
    }

    #[test]
    fn runs_of_one_kind_share_an_id_and_anything_else_starts_a_new_message() {
        let m = Messages::default();
        let mut seen = Vec::new();
        for kind in ["agent", "agent", "thought", "agent"] {
            let mut u = chunk(kind);
            m.stamp(&mut u);
            seen.push(id(&u));
        }
        assert_eq!(seen, ["msg_0", "msg_0", "msg_1", "msg_2"]);
        let mut plan = SessionUpdate::Plan(crate::schema::Plan::new(vec![]));
        m.stamp(&mut plan);
        let mut u = chunk("agent");
        m.stamp(&mut u);
        assert_eq!(id(&u), "msg_3");
        m.end();
        let mut u = chunk("agent");
        m.stamp(&mut u);
        assert_eq!(id(&u), "msg_4");
        m.continue_after(41);
        assert_eq!(m.user_message().0.as_ref(), "msg_42");
    }
}
