//! The loop, as one call in a turn ([`Model::run`]): the prompt joins the session's
//! [`Conversation`]; the model is called with it and the session's tool table; its text and
//! reasoning stream to the editor as they arrive; each tool call it makes is shown as soon as
//! it is named, then run by name through the usual lifecycle (permission, in progress,
//! completed or failed), and its result (or error, as text) goes back to the model; until the
//! model answers, the turn is cancelled, or `max_turn_requests` model calls were made. The
//! calls of one answer run together (up to [`Model::parallel_tool_calls`]), their results
//! going back in the order the model made them. The tools offered are those the session
//! allows now ([`Session::available_tools`]), decided again before each model call.
//!
//! Also one-shot calls without tools ([`Model::complete`], [`Model::complete_streamed`]), and
//! the hooks each call lends the provider ([`CallHooks`]: a first-event timeout, a notice to
//! the editor while a retry waits).

use std::sync::Arc;
use std::time::Duration;

use futures_util::{FutureExt, StreamExt};

use super::{CallHooks, Conversation, Event, EventStream, Message, Part, Provider, Request};
use super::{Role, Stop, ToolSpec, Usage};
use crate::schema::{Cost, Notice, NoticeSeverity, StopReason, UsageUpdate};
use crate::{Error, Prompt, Result, Session, ToolCallGuard, ToolDef};

/// A model to run turns with: a [`Provider`], the model's name, and how a turn may use it.
///
/// Cheap to clone (the provider is shared): keep one per model the editor may pick.
///
/// ```no_run
/// use acp_core::llm::{Model, Provider};
/// use acp_core::schema::StopReason;
/// use acp_core::{Prompt, Result, Session};
///
/// async fn prompt(model: &Model, cx: &Session, prompt: Prompt) -> Result<StopReason> {
///     model.run(cx, &prompt).await
/// }
///
/// fn model(provider: impl Provider) -> Model {
///     Model::new(provider, "gpt-4.1")
///         .system("You are a careful coding assistant.")
///         .max_turn_requests(25)
///         .context_window(1_047_576)
///         .parallel_tool_calls(8)
/// }
/// ```
#[derive(Clone)]
pub struct Model {
    pub(super) provider: Arc<dyn Provider>,
    pub(super) name: String,
    system: Option<String>,
    max_turn_requests: usize,
    pub(super) max_tokens: Option<u32>,
    pub(super) context_window: Option<u64>,
    /// When and with which model the conversation is compacted.
    pub(super) compaction: Compacting,
    /// Which of the session's tools the model is offered (all, by default).
    pub(super) allowed: Option<ToolFilter>,
    pub(super) prompt_caching: bool,
    /// What the model's tokens cost, if the author said.
    prices: Option<super::Prices>,
    pub(super) temperature: Option<f32>,
    parallel_tool_calls: usize,
    first_event_timeout: Option<Duration>,
}

/// Which tools a [`Model`] is offered ([`Model::allow_tools`]).
type ToolFilter = Arc<dyn Fn(&ToolDef) -> bool + Send + Sync>;

/// When a [`Model`]'s conversation is compacted, and by which model.
#[derive(Clone)]
pub(super) struct Compacting {
    /// The share of the context window a call's input may reach before the next call
    /// compacts first; `None`: only when asked.
    pub threshold: Option<f32>,
    /// The model that writes the summary, if not this one.
    pub summarizer: Option<Box<Model>>,
}

impl Default for Compacting {
    fn default() -> Self {
        Compacting {
            threshold: Some(super::compact::DEFAULT_THRESHOLD),
            summarizer: None,
        }
    }
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("name", &self.name)
            .field("max_turn_requests", &self.max_turn_requests)
            .field("max_tokens", &self.max_tokens)
            .field("context_window", &self.context_window)
            .field("temperature", &self.temperature)
            .field("parallel_tool_calls", &self.parallel_tool_calls)
            .field("first_event_timeout", &self.first_event_timeout)
            .finish_non_exhaustive()
    }
}

/// How many tool calls of one answer run at once, unless [set](Model::parallel_tool_calls).
pub const DEFAULT_PARALLEL_TOOL_CALLS: usize = 4;

impl Model {
    /// The model `name` of `provider`, with no system prompt, 50 model calls per turn at
    /// most, the provider's default `max_tokens` and temperature, an unknown context window,
    /// up to [`DEFAULT_PARALLEL_TOOL_CALLS`] tool calls at once, and no first-event timeout.
    pub fn new(provider: impl Provider, name: impl Into<String>) -> Self {
        Model::shared(Arc::new(provider), name)
    }

    /// Like [`new`](Self::new), with a provider shared with other models.
    pub fn shared(provider: Arc<dyn Provider>, name: impl Into<String>) -> Self {
        Model {
            provider,
            name: name.into(),
            system: None,
            max_turn_requests: 50,
            max_tokens: None,
            context_window: None,
            compaction: Compacting::default(),
            allowed: None,
            prices: None,
            prompt_caching: true,
            temperature: None,
            parallel_tool_calls: DEFAULT_PARALLEL_TOOL_CALLS,
            first_event_timeout: None,
        }
    }

    /// The sampling temperature sent with every call (the provider's default otherwise).
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// How many tool calls of one answer run at once (at least 1; `1` runs them one after
    /// the other). Each has its own tool call in the editor and its own permission request
    /// (several may be waiting for the user together); the results go back to the model in
    /// the order it made the calls, whichever finishes first.
    pub fn parallel_tool_calls(mut self, n: usize) -> Self {
        self.parallel_tool_calls = n.max(1);
        self
    }

    /// How long one attempt of a model call may take to produce its first event; past it,
    /// the attempt is given up and retried as the provider's [`Retry`](super::Retry) says
    /// (for the HTTP providers; see [`CallHooks`]).
    pub fn first_event_timeout(mut self, limit: Duration) -> Self {
        self.first_event_timeout = Some(limit);
        self
    }

    /// Offers the model only the session's tools for which `allow` holds (by default, every
    /// tool the session can run); a call to any other is refused, and the model told so.
    ///
    /// ```
    /// # fn demo(model: acp_core::llm::Model) -> acp_core::llm::Model {
    /// use acp_core::schema::ToolKind;
    /// model.allow_tools(|tool| matches!(tool.kind, ToolKind::Read | ToolKind::Search))
    /// # }
    /// ```
    #[must_use]
    pub fn allow_tools(mut self, allow: impl Fn(&ToolDef) -> bool + Send + Sync + 'static) -> Self {
        self.allowed = Some(Arc::new(allow));
        self
    }

    /// What this model's tokens cost: each `usage_update` (sent when the
    /// [context window](Self::context_window) is known) then carries what the session's
    /// calls cost so far, for the editor to show.
    ///
    /// ```
    /// # fn demo(model: acp_core::llm::Model) -> acp_core::llm::Model {
    /// use acp_core::llm::Prices;
    /// model.prices(Prices::new("USD", 2.0, 8.0).cached_read(0.5)) // per million tokens
    /// # }
    /// ```
    #[must_use]
    pub fn prices(mut self, prices: super::Prices) -> Self {
        self.prices = Some(prices);
        self
    }

    /// The system prompt sent with every call.
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// How many model calls one turn may make; the turn then ends with
    /// [`StopReason::MaxTurnRequests`].
    pub fn max_turn_requests(mut self, n: usize) -> Self {
        self.max_turn_requests = n;
        self
    }

    /// The most tokens one answer may have.
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = Some(n);
        self
    }

    /// The model's context window in tokens: with it, each model call is followed by a
    /// `usage_update` (tokens in use out of this many), which editors show as a gauge.
    pub fn context_window(mut self, tokens: u64) -> Self {
        self.context_window = Some(tokens);
        self
    }

    /// Whether to ask the provider to cache the prompt (on by default): Anthropic's
    /// `cache_control` breakpoints, OpenAI's `prompt_cache_key` (the session's id); see
    /// [`Request::prompt_caching`].
    pub fn prompt_caching(mut self, on: bool) -> Self {
        self.prompt_caching = on;
        self
    }

    /// The model's name, as sent to the provider.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The same model settings and provider, for another model of that provider.
    pub fn with_name(&self, name: impl Into<String>) -> Self {
        Model {
            name: name.into(),
            ..self.clone()
        }
    }

    /// Runs one prompt turn: `prompt` (its text, @-mentions and embedded text resources as
    /// text) joins the session's [`Conversation`], and the model is called with it and the
    /// session's tools ([`Session::tools`]: the agent's `#[acp::tool]`s and the editor's MCP
    /// tools) until it answers.
    ///
    /// - Its text streams to the editor as message chunks, its reasoning as thought chunks,
    ///   as they arrive. Deltas that arrived while the last chunk was being sent go out
    ///   joined, as one chunk (up to 64 KiB): a model that outruns the editor's connection
    ///   costs one frame per batch, not one per token, and one that does not is never
    ///   delayed.
    /// - The [system prompt](Self::system) is sent with every call, with the editor's
    ///   ([`Session::system_prompt`], for an agent that takes one) applied as its mode says:
    ///   after it (`append`) or instead of it (`override`).
    /// - The tools offered are decided again before each model call: those the session
    ///   allows now ([`Session::available_tools`]: a tool whose `check` refuses it in the
    ///   current mode or state is not offered).
    /// - A tool call is shown (pending, titled by the tool) as soon as the model names the
    ///   tool, then runs by name in that call ([`Session::call_tool_in`]): permission, in
    ///   progress, completed or failed. Its result goes back to the model (a tool's
    ///   [text for the model](crate::ToolOutput::for_model) when it set one: a diff as a
    ///   one-line summary); so does an error (bad arguments, permission denied, a failing
    ///   tool), as text it can act on.
    /// - The calls of one answer run together, up to
    ///   [`parallel_tool_calls`](Self::parallel_tool_calls) at once; their results go back
    ///   in the order the model made them.
    /// - While a call to the provider waits to retry (a rate limit, an overloaded server),
    ///   an editor that takes notices is told (`Rate limited: retrying in N s`).
    /// - After each model call, its tokens are added to the turn's
    ///   ([`Session::token_usage`]: told with the turn's end), and a `usage_update` is sent
    ///   when the [context window](Self::context_window) is known.
    /// - The model's `max_tokens` or refusal end the turn with that stop reason; more than
    ///   [`max_turn_requests`](Self::max_turn_requests) calls with
    ///   [`StopReason::MaxTurnRequests`].
    /// - A cancelled turn drops the provider's stream at once and ends with
    ///   [`Error::Cancelled`] (answered `cancelled`); what was streamed stays in the
    ///   conversation; tool calls running are stopped (failed `cancelled`), those not
    ///   started are not started. A provider error ends the turn with that error.
    pub async fn run(&self, cx: &Session, prompt: &Prompt) -> Result<StopReason> {
        let conversation = cx.persisted::<Conversation>();
        conversation.lock().push(Message::user(prompt.text()));
        // The editor's system prompt, applied to the agent's own as its mode says.
        let system = cx.instructions(self.system.as_deref());
        for _ in 0..self.max_turn_requests {
            cx.check_cancelled()?;
            // Near the context window: the older turns give way to a summary first.
            if self.should_compact(cx) {
                self.compact(cx).await?;
            }
            // What the session allows now (a tool call may have changed its mode), and of it
            // what the author lets this model use.
            let mut tools = cx.available_tools().await;
            // The tools the author keeps from this model: a call to one is refused.
            let mut withheld = Vec::new();
            if let Some(allowed) = &self.allowed {
                tools.retain(|t| allowed(t));
                withheld = cx.tools().await;
                withheld.retain(|t| !allowed(t));
            }
            let specs: Vec<ToolSpec> = tools.iter().map(tool_spec).collect();
            let messages = conversation.lock().request_messages();
            let request = self
                .request(system.as_deref(), &messages, &specs)
                .cached_as(&cx.id().0);
            let mut answer = Answer::default();
            let outcome = self.call(cx, request, &tools, &mut answer).await;
            // What streamed stays in the conversation, whatever the outcome; tool calls only
            // when they are about to run (each needs its result next).
            conversation.lock().push(answer.message(outcome.is_ok()));
            let stop = outcome?;
            // The turn's token count (told with its end: v1's answer, v2's idle).
            add_usage(cx, answer.usage);
            cx.state::<super::compact::ContextUse>()
                .set(answer.usage.input_tokens);
            if let Some(window) = self.context_window {
                let used = answer.usage.input_tokens + answer.usage.output_tokens;
                let mut update = UsageUpdate::new(used, window);
                if let Some(prices) = &self.prices {
                    let spent = cx.state::<super::cost::Spent>();
                    let total = { spent.add(prices.cost(&answer.usage)) };
                    update = update.cost(Cost::new(total, prices.currency.clone()));
                }
                cx.usage(update).await?;
            }
            if answer.calls.is_empty() {
                return Ok(match stop {
                    Stop::MaxTokens => StopReason::MaxTokens,
                    Stop::Refusal => StopReason::Refusal,
                    _ => StopReason::EndTurn,
                });
            }
            let (results, cancelled) =
                run_calls(cx, answer.calls, self.parallel_tool_calls, &withheld).await;
            conversation.lock().push(Message {
                role: Role::User,
                content: results,
            });
            if cancelled {
                return Err(Error::Cancelled);
            }
        }
        Ok(StopReason::MaxTurnRequests)
    }

    /// One call of the model without tools, with its settings (system prompt, `max_tokens`,
    /// temperature, timeout and retries): `messages` in, the answer's text out (reasoning
    /// left out). Nothing is sent to the editor but a retry's notice; the tokens are added to
    /// the turn's ([`Session::token_usage`]). The session's [`Conversation`] is neither read
    /// nor changed. Cancelling the turn ends it with [`Error::Cancelled`].
    ///
    /// For the model's own work beside the conversation: a title, a summary, a commit
    /// message. A `/summary` command:
    ///
    /// ```no_run
    /// use acp_core::llm::{Conversation, Message, Model};
    /// use acp_core::{Result, Session};
    ///
    /// async fn summary(model: &Model, cx: &Session) -> Result<()> {
    ///     let transcript: String = cx
    ///         .persisted::<Conversation>()
    ///         .lock()
    ///         .messages()
    ///         .iter()
    ///         .map(|m| format!("{:?}: {}\n", m.role, m.text()))
    ///         .collect();
    ///     let ask = format!("Summarise this conversation in three lines:\n\n{transcript}");
    ///     // Streamed to the editor as the agent's message; `complete` would only return it.
    ///     model.complete_streamed(cx, &[Message::user(ask)]).await?;
    ///     Ok(())
    /// }
    /// ```
    pub async fn complete(&self, cx: &Session, messages: &[Message]) -> Result<String> {
        self.one_shot(cx, messages, false).await
    }

    /// Like [`complete`](Self::complete), with the answer's text also streamed to the editor
    /// as the agent's message chunks as it arrives.
    pub async fn complete_streamed(&self, cx: &Session, messages: &[Message]) -> Result<String> {
        self.one_shot(cx, messages, true).await
    }

    async fn one_shot(&self, cx: &Session, messages: &[Message], stream: bool) -> Result<String> {
        cx.check_cancelled()?;
        let request = self.request(self.system.as_deref(), messages, &[]);
        let mut events = self.start(cx, request).await?;
        let mut text = String::new();
        let mut usage = Usage::default();
        let outcome = loop {
            let event = tokio::select! {
                biased;
                () = cx.cancelled() => break Err(Error::Cancelled),
                event = events.next() => event,
            };
            match event {
                None | Some(Ok(Event::Stop(_))) => break Ok(()),
                Some(Err(e)) => break Err(e),
                Some(Ok(Event::Text(more))) if !more.is_empty() => {
                    if stream && let Err(e) = cx.message(more.clone()).await {
                        break Err(e);
                    }
                    text.push_str(&more);
                }
                Some(Ok(Event::Usage(u))) => usage = u,
                Some(Ok(_)) => {}
            }
        };
        drop(events);
        add_usage(cx, usage);
        outcome.map(|()| text)
    }

    /// The request of one call with this model's settings.
    fn request<'a>(
        &'a self,
        system: Option<&'a str>,
        messages: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> Request<'a> {
        Request {
            model: &self.name,
            system,
            messages,
            tools,
            max_tokens: self.max_tokens,
            cache_key: None,
            prompt_caching: self.prompt_caching,
            temperature: self.temperature,
        }
    }

    /// Starts one call: the provider's stream, with this model's [`CallHooks`] (its
    /// first-event timeout; a notice to the editor before each retry's wait), racing the
    /// turn's cancellation.
    async fn start(&self, cx: &Session, request: Request<'_>) -> Result<EventStream> {
        let notify = cx.clone();
        let mut hooks = CallHooks::new().on_retry(move |wait| {
            let cx = notify.clone();
            async move {
                let what = if wait.rate_limited {
                    "Rate limited"
                } else {
                    "The model is unavailable"
                };
                let text = format!("{what}: retrying in {} s", wait.seconds());
                let notice = Notice::new(NoticeSeverity::Warning, text).description(wait.reason);
                if let Err(e) = cx.notice(notice).await {
                    tracing::debug!("could not send the retry's notice: {e}");
                }
            }
        });
        if let Some(limit) = self.first_event_timeout {
            hooks = hooks.first_event_timeout(limit);
        }
        tokio::select! {
            biased;
            () = cx.cancelled() => Err(Error::Cancelled),
            stream = hooks.scope(self.provider.stream(request)) => stream,
        }
    }

    /// One model call: streams its events into `answer` and the editor, racing the turn's
    /// cancellation (which drops the stream). Returns why the model stopped.
    async fn call(
        &self,
        cx: &Session,
        request: Request<'_>,
        tools: &[ToolDef],
        answer: &mut Answer,
    ) -> Result<Stop> {
        let mut stream: EventStream = self.start(cx, request).await?;
        // An event read ahead while coalescing, to take next.
        let mut ahead = None;
        loop {
            let event = match ahead.take() {
                Some(event) => event,
                None => tokio::select! {
                    biased;
                    () = cx.cancelled() => {
                        drop(stream);
                        return Err(Error::Cancelled);
                    }
                    event = stream.next() => event,
                },
            };
            match event {
                None => return Ok(Stop::EndTurn),
                Some(Err(e)) => return Err(e),
                Some(Ok(Event::Stop(stop))) => return Ok(stop),
                Some(Ok(event)) => {
                    let event = coalesce(event, &mut stream, &mut ahead);
                    answer.take(cx, tools, event).await?;
                }
            }
        }
    }
}

/// The most text one coalesced chunk carries.
const COALESCE_LIMIT: usize = 64 * 1024;

/// Joins to a text (or reasoning) `event` the deltas of the same kind that have already
/// arrived behind it, so that a model streaming faster than the editor reads costs one frame
/// per batch instead of one per token; when the editor keeps up, nothing is waiting and
/// every delta goes out alone, at once. The first event of another kind read is left in
/// `ahead`.
fn coalesce(
    event: Event,
    stream: &mut EventStream,
    ahead: &mut Option<Option<Result<Event>>>,
) -> Event {
    let (mut text, reasoning) = match event {
        Event::Text(text) => (text, false),
        Event::Reasoning(text) => (text, true),
        event => return event,
    };
    while text.len() < COALESCE_LIMIT {
        match stream.next().now_or_never() {
            None => break,
            Some(Some(Ok(Event::Text(more)))) if !reasoning => text.push_str(&more),
            Some(Some(Ok(Event::Reasoning(more)))) if reasoning => text.push_str(&more),
            Some(next) => {
                *ahead = Some(next);
                break;
            }
        }
    }
    if reasoning {
        Event::Reasoning(text)
    } else {
        Event::Text(text)
    }
}

/// A tool as offered to the model.
fn tool_spec(tool: &ToolDef) -> ToolSpec {
    ToolSpec {
        name: tool.name.to_string(),
        description: tool.description.to_string(),
        parameters: tool.input_schema.clone(),
    }
}

/// The answer of one model call, as it streams.
#[derive(Default)]
struct Answer {
    /// Text and reasoning, in order.
    parts: Vec<Part>,
    /// The tool calls named, in order, each already shown.
    calls: Vec<Named>,
    usage: Usage,
}

/// A tool call the model named: shown in the editor, its arguments arriving.
struct Named {
    index: usize,
    id: String,
    name: String,
    arguments: String,
    shown: ToolCallGuard,
}

impl Answer {
    /// Takes one event: streams text and reasoning to the editor, shows a named tool call.
    async fn take(&mut self, cx: &Session, tools: &[ToolDef], event: Event) -> Result<()> {
        match event {
            Event::Text(text) if !text.is_empty() => {
                self.append(false, &text);
                cx.message(text).await?;
            }
            Event::Reasoning(text) if !text.is_empty() => {
                self.append(true, &text);
                cx.thought(text).await?;
            }
            Event::ReasoningSignature(sig) => match self.parts.last_mut() {
                Some(Part::Reasoning { signature, .. }) if signature.is_none() => {
                    *signature = Some(sig)
                }
                _ => self.parts.push(Part::Reasoning {
                    text: String::new(),
                    signature: Some(sig),
                }),
            },
            Event::ToolCallStart { index, id, name } => {
                let tool = tools.iter().find(|t| t.name == name);
                let title = match tool {
                    Some(tool) => {
                        crate::tools::title::render_title(&tool.title, &Default::default())
                    }
                    None => name.clone(),
                };
                let mut call = cx.tool_call(title).name(name.clone());
                if let Some(tool) = tool {
                    call = call.kind(tool.kind);
                }
                let shown = call.start().await?;
                self.calls.push(Named {
                    index,
                    id,
                    name,
                    arguments: String::new(),
                    shown,
                });
            }
            Event::ToolCallArguments { index, delta } => {
                if let Some(call) = self.calls.iter_mut().rev().find(|c| c.index == index) {
                    call.arguments.push_str(&delta);
                }
            }
            Event::Usage(usage) => self.usage = usage,
            _ => {}
        }
        Ok(())
    }

    fn append(&mut self, reasoning: bool, more: &str) {
        match (self.parts.last_mut(), reasoning) {
            (Some(Part::Text { text }), false) => text.push_str(more),
            (
                Some(Part::Reasoning {
                    text,
                    signature: None,
                }),
                true,
            ) => text.push_str(more),
            (_, false) => self.parts.push(Part::Text { text: more.into() }),
            (_, true) => self.parts.push(Part::Reasoning {
                text: more.into(),
                signature: None,
            }),
        }
    }

    /// The assistant message to keep: text, reasoning, and (`with_calls`) the tool calls
    /// named, with their arguments as JSON (or as the string the model sent, if not JSON).
    fn message(&self, with_calls: bool) -> Message {
        let mut content = self.parts.clone();
        for call in self.calls.iter().filter(|_| with_calls) {
            content.push(Part::ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: parse_arguments(&call.arguments)
                    .unwrap_or_else(|_| serde_json::Value::String(call.arguments.clone())),
            });
        }
        Message {
            role: Role::Assistant,
            content,
        }
    }
}

/// A tool call's arguments: `{}` when the model sent none.
fn parse_arguments(arguments: &str) -> serde_json::Result<serde_json::Value> {
    if arguments.trim().is_empty() {
        return Ok(serde_json::Value::Object(Default::default()));
    }
    serde_json::from_str(arguments)
}

#[cfg(test)]
impl Model {
    pub(crate) fn max_tokens_set(&self) -> Option<u32> {
        self.max_tokens
    }
    pub(crate) fn context_window_set(&self) -> Option<u64> {
        self.context_window
    }
    pub(crate) fn temperature_set(&self) -> Option<f32> {
        self.temperature
    }
    pub(crate) fn provider(&self) -> &Arc<dyn Provider> {
        &self.provider
    }
}

/// The turn's token count, told with its end (v1's answer, v2's idle): `u` added to it.
fn add_usage(cx: &Session, u: Usage) {
    if u != Usage::default() {
        cx.token_usage(
            crate::schema::Usage::new(
                u.input_tokens.saturating_add(u.output_tokens),
                u.input_tokens,
                u.output_tokens,
            )
            .thought_tokens(u.reasoning_tokens)
            .cached_read_tokens(u.cached_input_tokens)
            .cached_write_tokens(u.cache_write_tokens),
        );
    }
}

/// Runs the named tool calls, up to `parallel` at once, each in the call already shown;
/// returns their results for the model in the order of `calls`, and whether the turn was
/// cancelled (the calls not run are then failed, their results saying so).
///
/// The calls run as futures of this task (not spawned): each carries its own task-local
/// scopes (the call adopted, the call whose body runs), set only while it is polled.
async fn run_calls(
    cx: &Session,
    calls: Vec<Named>,
    parallel: usize,
    withheld: &[ToolDef],
) -> (Vec<Part>, bool) {
    let outcomes: Vec<(Part, bool)> = futures_util::stream::iter(calls)
        .map(|call| run_call(cx, call, withheld))
        .buffered(parallel.max(1))
        .collect()
        .await;
    let cancelled = outcomes.iter().any(|(_, cancelled)| *cancelled);
    (
        outcomes.into_iter().map(|(part, _)| part).collect(),
        cancelled,
    )
}

/// Runs one named tool call, unless it is one of the tools `withheld` from the model; its
/// result for the model, and whether the turn was cancelled.
async fn run_call(cx: &Session, call: Named, withheld: &[ToolDef]) -> (Part, bool) {
    let mut cancelled = false;
    let (content, is_error) = if cx.is_cancelled() {
        cancelled = true;
        let _ = call.shown.fail("cancelled").await;
        ("cancelled by the user".to_owned(), true)
    } else if withheld.iter().any(|t| t.name == call.name) {
        let message = format!("the tool `{}` is not available here", call.name);
        let _ = call.shown.fail(&message).await;
        (message, true)
    } else {
        match parse_arguments(&call.arguments) {
            Err(e) => {
                let message = format!(
                    "invalid arguments for tool `{}`: not a JSON object ({e})",
                    call.name
                );
                let _ = call.shown.fail(&message).await;
                (message, true)
            }
            Ok(args) => match cx.call_tool_in(call.shown, &call.name, args).await {
                Ok(output) => (output.to_text(), false),
                Err(Error::Cancelled) => {
                    cancelled = true;
                    ("cancelled by the user".to_owned(), true)
                }
                Err(e) => (e.to_string(), true),
            },
        }
    };
    let part = Part::ToolResult {
        id: call.id,
        content,
        is_error,
    };
    (part, cancelled || cx.is_cancelled())
}
