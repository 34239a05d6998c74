//! The conversation the loop keeps per session: a [`Persist`] value, so it is saved after each
//! turn (a cancelled one included) and comes back when the session is loaded or resumed, also
//! in a new process.

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
pub struct Conversation(Vec<Message>);

impl Persist for Conversation {
    const KEY: &'static str = "acp.llm.conversation";
}

impl Conversation {
    /// The messages, oldest first.
    pub fn messages(&self) -> &[Message] {
        &self.0
    }

    /// The messages, to change them (e.g. to forget the oldest ones).
    pub fn messages_mut(&mut self) -> &mut Vec<Message> {
        &mut self.0
    }

    /// Adds a message at the end. Parts of the same role as the last message join it (two
    /// user messages in a row become one: a prompt after tool results, for providers that
    /// want the roles to alternate).
    pub fn push(&mut self, message: Message) {
        if message.content.is_empty() {
            return;
        }
        match self.0.last_mut() {
            Some(last) if last.role == message.role && message.role == Role::User => {
                last.content.extend(message.content);
            }
            _ => self.0.push(message),
        }
    }

    /// What the user said, in order (the text parts of user messages).
    pub fn user_texts(&self) -> impl Iterator<Item = &str> {
        self.0
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
    fn a_prompt_after_tool_results_joins_their_user_message() {
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
        assert_eq!(c.messages().len(), 3);
        assert_eq!(c.user_texts().collect::<Vec<_>>(), ["a", "c"]);
        let json = serde_json::to_value(&c).unwrap();
        assert!(json.is_array());
    }
}
