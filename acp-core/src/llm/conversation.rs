//! The conversation the loop keeps per session: a [`Persist`] log, so what each turn added is
//! saved after it (a cancelled one included; the store's cost of a turn does not grow with the
//! session), and it comes back when the session is loaded or resumed, also in a new process.

use serde::{Deserialize, Serialize};

use super::{Message, Part, Role};
use crate::Persist;

/// A session's conversation with its model, oldest message first: what the user said, what
/// the model answered (text, reasoning, tool calls), and what the tools returned.
///
/// [`Model::run`](super::Model::run) keeps it in the session
/// (`cx.persisted::<Conversation>()`); read it there to show or trim it.
///
/// ```
/// use acp_core::llm::{Conversation, Message};
///
/// let mut conversation = Conversation::default();
/// conversation.push(Message::user("hello"));
/// assert_eq!(conversation.messages().len(), 1);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Conversation {
    messages: Vec<Message>,
    /// Changed whenever the messages are changed other than by [`push`](Self::push), so that
    /// the session store rewrites them instead of appending.
    #[serde(skip)]
    generation: u64,
}

impl Persist for Conversation {
    const KEY: &'static str = "acp.llm.conversation";

    fn log(&self) -> Option<crate::session::PersistLog> {
        Some(crate::session::PersistLog {
            generation: self.generation,
            len: self.messages.len(),
        })
    }

    fn log_tail(&self, from: usize) -> serde_json::Result<serde_json::Value> {
        serde_json::to_value(self.messages.get(from..).unwrap_or_default())
    }
}

impl Conversation {
    /// The messages, oldest first, as pushed.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The messages as a model is sent them: a user message that follows another (a prompt
    /// after tool results) joins it, for providers that want the roles to alternate.
    pub fn request_messages(&self) -> Vec<Message> {
        let mut joined: Vec<Message> = Vec::with_capacity(self.messages.len());
        for message in &self.messages {
            match joined.last_mut() {
                Some(last) if last.role == Role::User && message.role == Role::User => {
                    last.content.extend(message.content.iter().cloned());
                }
                _ => joined.push(message.clone()),
            }
        }
        joined
    }

    /// The messages, to change them (e.g. to forget the oldest ones); the session store then
    /// saves them whole once.
    pub fn messages_mut(&mut self) -> &mut Vec<Message> {
        self.generation += 1;
        &mut self.messages
    }

    /// Adds a message at the end (one without content is left out): the session store saves
    /// only what was added.
    pub fn push(&mut self, message: Message) {
        if message.content.is_empty() {
            return;
        }
        self.messages.push(message);
    }

    /// What the user said, in order (the text parts of user messages).
    pub fn user_texts(&self) -> impl Iterator<Item = &str> {
        self.messages
            .iter()
            .filter(|m| m.role == Role::User)
            .flat_map(|m| m.content.iter())
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_after_tool_results_joins_their_user_message_when_sent() {
        let mut c = Conversation::default();
        c.push(Message::user("a"));
        c.push(Message::assistant("b"));
        c.push(Message {
            role: Role::User,
            content: vec![Part::ToolResult {
                id: "1".into(),
                content: "r".into(),
                is_error: false,
            }],
        });
        c.push(Message::user("c"));
        assert_eq!(c.messages().len(), 4);
        let sent = c.request_messages();
        assert_eq!(sent.len(), 3);
        assert_eq!(sent[2].content.len(), 2);
        assert_eq!(c.user_texts().collect::<Vec<_>>(), ["a", "c"]);
        let json = serde_json::to_value(&c).unwrap();
        assert!(json.is_array());
    }
}
