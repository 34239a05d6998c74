//! [`Scripted`]: a [`Provider`] that answers from a script and records what it was asked, so
//! that an agent built on [`Model::run`](super::Model::run) is tested offline and
//! deterministically (and an example runs without an API key).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::{StreamExt, stream};

use super::{Event, EventStream, Message, Provider, Request, Stop, ToolSpec, Usage};
use crate::sync::lock;
use crate::{Error, Result};

/// One scripted answer: the events of one model call, in order.
///
/// Without an explicit [`stop`](Self::stop), the answer ends with [`Stop::ToolUse`] when it
/// called a tool and [`Stop::EndTurn`] otherwise (a [`hold`](Self::hold) or [`fail`](Self::fail)
/// answer does not end).
///
/// ```
/// use acp_core::llm::scripted::Reply;
/// use serde_json::json;
///
/// let reply = Reply::new()
///     .reasoning("The user wants the file.")
///     .text("Reading it.")
///     .tool_call("call_1", "read_file", json!({"path": "notes.txt"}));
/// ```
#[derive(Debug, Default)]
pub struct Reply {
    events: Vec<Result<Event>>,
    refused: Option<String>,
    hold: bool,
    stopped: bool,
    called: usize,
}

impl Reply {
    /// An empty answer.
    pub fn new() -> Self {
        Reply::default()
    }

    /// A piece of text (one [`Event::Text`]; call it again for the next chunk).
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.events.push(Ok(Event::Text(text.into())));
        self
    }

    /// A piece of reasoning.
    pub fn reasoning(mut self, text: impl Into<String>) -> Self {
        self.events.push(Ok(Event::Reasoning(text.into())));
        self
    }

    /// A tool call: its start, then its arguments in two pieces (as providers stream them).
    pub fn tool_call(self, id: &str, name: &str, arguments: serde_json::Value) -> Self {
        self.tool_call_raw(id, name, &arguments.to_string())
    }

    /// A tool call whose arguments are this text, as sent (not necessarily JSON).
    pub fn tool_call_raw(mut self, id: &str, name: &str, arguments: &str) -> Self {
        let index = self.called;
        self.called += 1;
        self.events.push(Ok(Event::ToolCallStart {
            index,
            id: id.into(),
            name: name.into(),
        }));
        let mid = (0..=arguments.len() / 2)
            .rev()
            .find(|&i| arguments.is_char_boundary(i))
            .unwrap_or(0);
        for piece in [&arguments[..mid], &arguments[mid..]] {
            self.events.push(Ok(Event::ToolCallArguments {
                index,
                delta: piece.into(),
            }));
        }
        self
    }

    /// Tokens used.
    pub fn usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.events.push(Ok(Event::Usage(Usage {
            input_tokens,
            output_tokens,
            ..Usage::default()
        })));
        self
    }

    /// Any event.
    pub fn event(mut self, event: Event) -> Self {
        self.events.push(Ok(event));
        self
    }

    /// Ends the answer with this stop reason.
    pub fn stop(mut self, stop: Stop) -> Self {
        self.stopped = true;
        self.events.push(Ok(Event::Stop(stop)));
        self
    }

    /// After the events so far, the stream fails with this error (a stream cut mid-way).
    pub fn fail(mut self, message: impl Into<String>) -> Self {
        self.stopped = true;
        self.events.push(Err(Error::msg(message.into())));
        self
    }

    /// The call itself fails with this error (a refused key, the provider down): no stream.
    pub fn refuse(mut self, message: impl Into<String>) -> Self {
        self.refused = Some(message.into());
        self
    }

    /// After the events so far, the stream stays open until it is dropped (a model still
    /// writing when the turn is cancelled).
    pub fn hold(mut self) -> Self {
        self.hold = true;
        self
    }
}

/// A request as the [`Scripted`] provider received it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Recorded {
    /// The model's name.
    pub model: String,
    /// The system prompt.
    pub system: Option<String>,
    /// The conversation sent.
    pub messages: Vec<Message>,
    /// The tools offered.
    pub tools: Vec<ToolSpec>,
    /// The token limit.
    pub max_tokens: Option<u32>,
    /// The conversation's cache key ([`Request::cache_key`]).
    pub cache_key: Option<String>,
    /// Whether prompt caching was asked for ([`Request::prompt_caching`]).
    pub prompt_caching: bool,
    /// The sampling temperature.
    pub temperature: Option<f32>,
}

impl Recorded {
    /// The text of the last user message sent (what the model was last asked), empty if
    /// there is none.
    ///
    /// ```
    /// # use acp_core::llm::scripted::Recorded;
    /// # fn check(recorded: &Recorded) {
    /// assert_eq!(recorded.last_user_text(), "What does main.rs do?");
    /// # }
    /// ```
    pub fn last_user_text(&self) -> String {
        self.messages
            .iter()
            .rev()
            .find(|m| {
                m.role == super::Role::User
                    && m.content
                        .iter()
                        .any(|p| matches!(p, super::Part::Text { .. }))
            })
            .map(Message::text)
            .unwrap_or_default()
    }

    /// The text of every message sent, in order, one line per message as `role: text` (tool
    /// calls as `role: name(arguments)`, results as `tool: result`): the conversation as
    /// the model saw it, for a test to assert on.
    pub fn transcript(&self) -> String {
        let mut out = String::new();
        for message in &self.messages {
            let role = match message.role {
                super::Role::User => "user",
                super::Role::Assistant => "assistant",
            };
            for part in &message.content {
                let line = match part {
                    super::Part::Text { text } => format!("{role}: {text}"),
                    super::Part::Reasoning { .. } => continue,
                    super::Part::ToolCall {
                        name, arguments, ..
                    } => {
                        format!("{role}: {name}({arguments})")
                    }
                    super::Part::ToolResult { content, .. } => format!("tool: {content}"),
                };
                out.push_str(&line);
                out.push('\n');
            }
        }
        out
    }
}

type Script = dyn Fn(&Request<'_>) -> Reply + Send + Sync;

/// A [`Provider`] answering from a script: a queue of [`Reply`]s ([`reply`](Self::reply)) or
/// a function of the request ([`from_fn`](Self::from_fn)). It records every request
/// ([`requests`](Self::requests)) and counts the streams dropped before they ended
/// ([`dropped`](Self::dropped)). Clones share the script and the records: keep one to inspect
/// while the agent uses the other.
///
/// ```
/// use acp_core::llm::Model;
/// use acp_core::llm::scripted::{Reply, Scripted};
///
/// let provider = Scripted::new().reply(Reply::new().text("Hello").text(" there"));
/// let model = Model::new(provider.clone(), "scripted");
/// // … run a turn, then:
/// assert!(provider.requests().is_empty());
/// ```
#[derive(Clone, Default)]
pub struct Scripted {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    queue: Mutex<VecDeque<Reply>>,
    script: Option<Box<Script>>,
    requests: Mutex<Vec<Recorded>>,
    dropped: AtomicUsize,
}

impl std::fmt::Debug for Scripted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scripted")
            .field("requests", &self.requests().len())
            .field("dropped", &self.dropped())
            .finish_non_exhaustive()
    }
}

impl Scripted {
    /// A provider with no replies yet (a call then fails, saying so).
    pub fn new() -> Self {
        Scripted::default()
    }

    /// A provider answering each request with `script(request)`.
    pub fn from_fn(script: impl Fn(&Request<'_>) -> Reply + Send + Sync + 'static) -> Self {
        Scripted {
            inner: Arc::new(Inner {
                script: Some(Box::new(script)),
                ..Inner::default()
            }),
        }
    }

    /// Queues the answer to the next request (before the script's, with [`from_fn`](Self::from_fn)).
    pub fn reply(self, reply: Reply) -> Self {
        lock(&self.inner.queue).push_back(reply);
        self
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.inner.requests).clone()
    }

    /// How many streams were dropped before their last event was read (a cancelled turn
    /// drops the one it was reading).
    pub fn dropped(&self) -> usize {
        self.inner.dropped.load(Ordering::SeqCst)
    }
}

/// Counts its stream as dropped unless it was read to the end.
struct DropFlag {
    inner: Arc<Inner>,
    done: bool,
}

impl Drop for DropFlag {
    fn drop(&mut self) {
        if !self.done {
            self.inner.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Pending once (waking itself at once), then ready: what separates two scripted events.
struct Apart(bool);

impl Future for Apart {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

impl Provider for Scripted {
    fn stream<'a>(
        &'a self,
        request: Request<'a>,
    ) -> Pin<Box<dyn Future<Output = Result<EventStream>> + Send + 'a>> {
        lock(&self.inner.requests).push(Recorded {
            model: request.model.to_owned(),
            system: request.system.map(str::to_owned),
            messages: request.messages.to_vec(),
            tools: request.tools.to_vec(),
            max_tokens: request.max_tokens,
            cache_key: request.cache_key.map(str::to_owned),
            prompt_caching: request.prompt_caching,
            temperature: request.temperature,
        });
        let queued = lock(&self.inner.queue).pop_front();
        let reply = queued.or_else(|| self.inner.script.as_ref().map(|s| s(&request)));
        let inner = self.inner.clone();
        Box::pin(async move {
            let Some(mut reply) = reply else {
                return Err(Error::msg("the scripted provider has no more replies"));
            };
            if let Some(message) = reply.refused {
                return Err(Error::msg(message));
            }
            if !reply.stopped && !reply.hold {
                let stop = if reply.called > 0 {
                    Stop::ToolUse
                } else {
                    Stop::EndTurn
                };
                reply.events.push(Ok(Event::Stop(stop)));
            }
            let hold = reply.hold;
            let mut flag = DropFlag { inner, done: false };
            // Each event arrives on its own, as a model's tokens do (so the loop does not join
            // them into one chunk).
            let events = stream::iter(reply.events.into_iter().map(Some)).then(|event| async {
                Apart(false).await;
                event
            });
            let tail = events.chain(stream::once(async move {
                if hold {
                    std::future::pending::<()>().await;
                }
                None
            }));
            let stream = tail.filter_map(move |item| {
                // The whole flag moves into the stream (not just its field): dropped with it.
                let flag = &mut flag;
                if matches!(item, None | Some(Ok(Event::Stop(_)) | Err(_))) {
                    flag.done = true;
                }
                std::future::ready(item)
            });
            Ok(Box::pin(stream) as EventStream)
        })
    }
}
