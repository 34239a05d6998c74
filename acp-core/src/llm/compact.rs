//! Compaction: before a session's conversation outgrows the model's context window, its older
//! turns are replaced by a summary the model writes (or a smaller model the author names), and
//! the recent turns are kept as they are. The editor is shown the compaction
//! ([`Session::compaction`]: to an editor with `session.compaction`, recorded either way); what
//! the user saw stays in the session's history, only what the model is sent shrinks.

use futures_util::StreamExt;

use super::{Conversation, Event, Message, Model, Part, Request, Role};
use crate::{Error, Result, Session};

/// What the summarising model is told.
const SUMMARISE: &str = "You are compacting a conversation between a user and a coding \
agent so that the agent can continue the work with less context. Write a concise summary of \
the conversation below: the user's goals and requests, decisions made, files and commands \
involved, what was done and what is left. Keep names, paths and numbers exact. Write only \
the summary.";

/// How the summary opens in the conversation the model is sent afterwards.
const SUMMARY_HEADER: &str = "[Summary of the earlier conversation]";

/// The share of the context window a call's input may reach before the next call compacts
/// the conversation first, unless the author says otherwise ([`Model::compact_at`]).
pub(super) const DEFAULT_THRESHOLD: f32 = 0.8;

/// How many of the latest user turns a compaction keeps verbatim.
const KEEP_TURNS: usize = 2;

/// The input tokens of a session's last model call, which decide the next compaction.
#[derive(Debug, Default)]
pub(super) struct ContextUse(std::sync::atomic::AtomicU64);

impl ContextUse {
    pub fn set(&self, tokens: u64) {
        self.0.store(tokens, std::sync::atomic::Ordering::Relaxed);
    }

    fn get(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Model {
    /// Compacts when the last call's input reached `fraction` of the
    /// [context window](Self::context_window) (default 0.8); `None` never compacts by itself
    /// ([`compact`](Self::compact) still does when asked).
    #[must_use]
    pub fn compact_at(mut self, fraction: Option<f32>) -> Self {
        self.compaction.threshold = fraction.map(|f| f.clamp(0.05, 1.0));
        self
    }

    /// The model that writes compactions' summaries (a smaller, cheaper one, say); by
    /// default this one.
    #[must_use]
    pub fn compact_with(mut self, summarizer: Model) -> Self {
        self.compaction.summarizer = Some(Box::new(summarizer));
        self
    }

    /// Whether the conversation should be compacted before the next call: the last call's
    /// input reached the threshold of a known context window.
    pub(super) fn should_compact(&self, cx: &Session) -> bool {
        let (Some(window), Some(threshold)) = (self.context_window, self.compaction.threshold)
        else {
            return false;
        };
        let used = cx.state::<ContextUse>().get();
        used > 0 && used as f64 >= window as f64 * f64::from(threshold)
    }

    /// Compacts the session's conversation now: the turns before the last two are summarised
    /// by the model (or [`compact_with`](Self::compact_with)'s), streamed to the editor as
    /// the compaction's summary, and replaced by it in what the model is sent from now on.
    /// Returns `false` when there is nothing old enough to compact. A failed summary leaves
    /// the conversation as it was and reports the compaction failed.
    ///
    /// [`run`](Self::run) calls it by itself before a call once the last call's input reached
    /// [`compact_at`](Self::compact_at)'s share of the context window; an agent's `/compact`
    /// command calls it directly:
    ///
    /// ```no_run
    /// # async fn compact(model: &acp_core::llm::Model, cx: &acp_core::Session) -> acp_core::Result<()> {
    /// if !model.compact(cx).await? {
    ///     cx.message("Nothing to compact yet.").await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn compact(&self, cx: &Session) -> Result<bool> {
        let conversation = cx.persisted::<Conversation>();
        // Copied only when there is something to compact: `run` asks before every call once
        // the window is nearly full, also while the conversation is still too short.
        let Some((messages, split)) = ({
            let conversation = conversation.lock();
            let messages = conversation.messages();
            split_point(messages).map(|split| (messages.to_vec(), split))
        }) else {
            return Ok(false);
        };
        let compaction = cx.compaction().await?;
        let summarizer = self.compaction.summarizer.as_deref().unwrap_or(self);
        let transcript = transcript(&messages[..split]);
        match summarizer.summarise(cx, &compaction, &transcript).await {
            Ok(summary) => {
                let mut kept = vec![Message::user(format!("{SUMMARY_HEADER}\n{summary}"))];
                kept.extend_from_slice(&messages[split..]);
                {
                    let mut conversation = conversation.lock();
                    // Messages added while the summary was written stay too.
                    let added = conversation
                        .messages()
                        .get(messages.len()..)
                        .unwrap_or_default();
                    kept.extend_from_slice(added);
                    *conversation.messages_mut() = kept;
                }
                cx.state::<ContextUse>().set(0);
                compaction.completed().await?;
                Ok(true)
            }
            Err(Error::Cancelled) => {
                let _ = compaction.cancelled().await;
                Err(Error::Cancelled)
            }
            Err(e) => {
                let _ = compaction.failed(e.to_string()).await;
                Err(e)
            }
        }
    }

    /// The summary of `transcript`, streamed into `compaction` as it comes.
    async fn summarise(
        &self,
        cx: &Session,
        compaction: &crate::Compaction,
        transcript: &str,
    ) -> Result<String> {
        let messages = [Message::user(transcript)];
        let request = Request {
            model: &self.name,
            system: Some(SUMMARISE),
            messages: &messages,
            tools: &[],
            max_tokens: self.max_tokens,
            // Its own text each time: nothing for a provider's cache to reuse.
            cache_key: None,
            prompt_caching: false,
            temperature: self.temperature,
        };
        let mut stream = tokio::select! {
            _ = cx.cancelled() => return Err(Error::Cancelled),
            stream = self.provider.stream(request) => stream?,
        };
        let mut summary = String::new();
        loop {
            let event = tokio::select! {
                _ = cx.cancelled() => return Err(Error::Cancelled),
                event = stream.next() => event,
            };
            match event {
                None => break,
                Some(Ok(Event::Text(text))) => {
                    compaction.summary(text.clone()).await?;
                    summary.push_str(&text);
                }
                Some(Ok(Event::Usage(u))) => cx.token_usage(crate::schema::Usage::new(
                    u.input_tokens.saturating_add(u.output_tokens),
                    u.input_tokens,
                    u.output_tokens,
                )),
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e),
            }
        }
        if summary.trim().is_empty() {
            return Err(Error::msg("the model wrote an empty summary"));
        }
        Ok(summary)
    }
}

/// Where the kept part of `messages` starts: at the user prompt that opens the
/// [`KEEP_TURNS`]-th latest turn; `None` when there is nothing before it.
fn split_point(messages: &[Message]) -> Option<usize> {
    let prompts: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| {
            m.role == Role::User && m.content.iter().any(|p| matches!(p, Part::Text { .. }))
        })
        .map(|(i, _)| i)
        .collect();
    let split = *prompts.iter().rev().nth(KEEP_TURNS - 1)?;
    (split > 0).then_some(split)
}

/// `messages` as text for the summariser: one line per part, tool calls and results named.
fn transcript(messages: &[Message]) -> String {
    let mut out = String::new();
    for message in messages {
        let who = match message.role {
            Role::User => "User",
            Role::Assistant => "Agent",
        };
        for part in &message.content {
            match part {
                Part::Text { text } => out.push_str(&format!("{who}: {text}\n")),
                Part::ToolCall {
                    name, arguments, ..
                } => out.push_str(&format!("Agent called {name}({arguments})\n")),
                Part::ToolResult {
                    content, is_error, ..
                } => {
                    let what = if *is_error { "failed" } else { "returned" };
                    out.push_str(&format!("The tool {what}: {content}\n"));
                }
                Part::Reasoning { .. } => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_two_turns_are_kept_and_tool_results_do_not_start_a_turn() {
        let result = Message {
            role: Role::User,
            content: vec![Part::ToolResult {
                id: "1".into(),
                content: "r".into(),
                is_error: false,
            }],
        };
        let messages = vec![
            Message::user("one"),
            Message::assistant("a"),
            Message::user("two"),
            Message::assistant("b"),
            result,
            Message::user("three"),
            Message::assistant("c"),
        ];
        assert_eq!(split_point(&messages), Some(2));
        assert_eq!(
            split_point(&messages[2..]),
            None,
            "two turns: nothing to compact"
        );
        assert!(transcript(&messages[..2]).contains("User: one\nAgent: a\n"));
    }
}
