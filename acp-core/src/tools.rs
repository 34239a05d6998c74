//! Tools: the lifecycle every `#[acp::tool]` call runs, the definitions an agent lists for a
//! model, and how a tool's return value becomes what the client shows.
//!
//! `#[acp::agent]` expands each `#[acp::tool]` method into one static [`expand::ToolSpec`] and
//! a call to [`expand::run_tool`]; everything else — the `tool_call` announcement, permission
//! (with "always" answers remembered per session), status updates, cancellation, panics,
//! output mapping, by-name argument parsing and JSON Schemas — lives here, generic.
//!
//! The public part is small: [`ToolDef`] (what [`Agent::tools`](crate::Agent::tools) lists),
//! [`ToolOutput`] (what a call by name returns), [`IntoToolOutput`] (what a tool may return)
//! and [`Json`] (return any serializable value).

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::schema::{ContentBlock, Diff, ToolCallContent, ToolKind};
use crate::terminal::Terminal;

/// One tool an agent offers: what a model needs to pick it, and how the client shows it.
///
/// Serializes as `{"name", "description", "input_schema"}`, the shape model APIs take for a
/// tool (rename `input_schema` to `parameters` for APIs that want that):
///
/// ```
/// # fn demo(cx: &acp_core::Session) -> serde_json::Result<()> {
/// let tools = serde_json::to_value(cx.tools())?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolDef {
    /// The tool's name (unique within the agent).
    pub name: Cow<'static, str>,
    /// What the tool does (from the method's doc comment).
    pub description: Cow<'static, str>,
    /// The kind shown by the client.
    pub kind: ToolKind,
    /// The title template shown by the client, e.g. `Write {path}`.
    pub title: Cow<'static, str>,
    /// Whether the tool asks the user for permission before it runs.
    pub permission: bool,
    /// JSON Schema of the tool's arguments (an object with one property per parameter).
    pub input_schema: serde_json::Value,
}

impl Serialize for ToolDef {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("ToolDef", 3)?;
        s.serialize_field("name", &self.name)?;
        s.serialize_field("description", &self.description)?;
        s.serialize_field("input_schema", &self.input_schema)?;
        s.end()
    }
}

/// What a tool call returned, as the client saw it: its content, and the structured value when
/// the tool returned one. This is what [`Session::call_tool`](crate::Session::call_tool)
/// returns, ready to hand back to a model.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ToolOutput {
    /// The content shown in the client's tool call.
    pub content: Vec<ToolCallContent>,
    /// The structured return value (`rawOutput`), when the tool returned one.
    pub raw: Option<serde_json::Value>,
}

impl ToolOutput {
    /// An output with this content.
    pub fn new(content: Vec<ToolCallContent>) -> Self {
        ToolOutput { content, raw: None }
    }

    /// An output of one text block.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput::new(vec![text.into().into()])
    }

    /// Sets the structured value sent as `rawOutput`.
    #[must_use]
    pub fn raw(mut self, raw: serde_json::Value) -> Self {
        self.raw = Some(raw);
        self
    }

    /// The output as text for a model: the text blocks joined by newlines, diffs as
    /// `diff <path>` plus the new text, terminals by id; or the raw value when there is no
    /// content.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for item in &self.content {
            if !out.is_empty() {
                out.push('\n');
            }
            match item {
                ToolCallContent::Content(c) => match &c.content {
                    ContentBlock::Text(t) => out.push_str(&t.text),
                    other => out.push_str(&serde_json::to_string(other).unwrap_or_default()),
                },
                ToolCallContent::Diff(d) => {
                    out.push_str(&format!("diff {}\n{}", d.path.display(), d.new_text));
                }
                ToolCallContent::Terminal(t) => {
                    out.push_str(&format!("terminal {}", t.terminal_id))
                }
                _ => {}
            }
        }
        if out.is_empty()
            && let Some(raw) = &self.raw
        {
            out = raw.to_string();
        }
        out
    }
}

/// A value an `#[acp::tool]` may return (inside its `Result`): how it is shown in the client's
/// tool call when the call completes.
///
/// | returned | shown as |
/// | --- | --- |
/// | `String`, `&str`, `Cow<str>` | text |
/// | [`Diff`] | a diff |
/// | [`Terminal`] | the terminal's live output |
/// | [`ToolCallContent`], `Vec<ToolCallContent>`, [`ContentBlock`] | as is |
/// | [`ToolOutput`] | as is (content and `rawOutput`) |
/// | [`Json<T>`](Json), `serde_json::Value` | `rawOutput`, and pretty JSON as text |
/// | `()` | nothing |
/// | `Option<T>` | `T`'s content, or nothing |
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be shown as the output of a tool call",
    label = "this is what the tool returns on success",
    note = "an `#[acp::tool]` may return `String`, `acp::Diff`, `acp::Terminal`, `acp::ToolOutput`, `()`, or any serializable value wrapped in `acp::Json(…)`"
)]
pub trait IntoToolOutput {
    /// The content (and structured value) shown when the tool call completes.
    fn to_tool_output(&self) -> ToolOutput;
}

impl IntoToolOutput for ToolOutput {
    fn to_tool_output(&self) -> ToolOutput {
        self.clone()
    }
}

impl IntoToolOutput for String {
    fn to_tool_output(&self) -> ToolOutput {
        ToolOutput::text(self.as_str())
    }
}

impl IntoToolOutput for str {
    fn to_tool_output(&self) -> ToolOutput {
        ToolOutput::text(self)
    }
}

impl IntoToolOutput for Cow<'_, str> {
    fn to_tool_output(&self) -> ToolOutput {
        ToolOutput::text(self.as_ref())
    }
}

impl<T: IntoToolOutput + ?Sized> IntoToolOutput for &T {
    fn to_tool_output(&self) -> ToolOutput {
        (**self).to_tool_output()
    }
}

impl<T: IntoToolOutput + ?Sized> IntoToolOutput for Box<T> {
    fn to_tool_output(&self) -> ToolOutput {
        (**self).to_tool_output()
    }
}

impl<T: IntoToolOutput> IntoToolOutput for Option<T> {
    fn to_tool_output(&self) -> ToolOutput {
        self.as_ref()
            .map(IntoToolOutput::to_tool_output)
            .unwrap_or_default()
    }
}

impl IntoToolOutput for () {
    fn to_tool_output(&self) -> ToolOutput {
        ToolOutput::default()
    }
}

impl IntoToolOutput for Diff {
    fn to_tool_output(&self) -> ToolOutput {
        ToolOutput::new(vec![ToolCallContent::Diff(self.clone())])
    }
}

impl IntoToolOutput for Terminal {
    fn to_tool_output(&self) -> ToolOutput {
        ToolOutput::new(vec![self.content()])
    }
}

impl IntoToolOutput for ToolCallContent {
    fn to_tool_output(&self) -> ToolOutput {
        ToolOutput::new(vec![self.clone()])
    }
}

impl IntoToolOutput for Vec<ToolCallContent> {
    fn to_tool_output(&self) -> ToolOutput {
        ToolOutput::new(self.clone())
    }
}

impl IntoToolOutput for ContentBlock {
    fn to_tool_output(&self) -> ToolOutput {
        ToolOutput::new(vec![self.clone().into()])
    }
}

impl IntoToolOutput for serde_json::Value {
    fn to_tool_output(&self) -> ToolOutput {
        let text = serde_json::to_string_pretty(self).unwrap_or_default();
        ToolOutput::text(text).raw(self.clone())
    }
}

/// Returns any serializable value from a tool: sent as the call's `rawOutput`, and shown as
/// pretty-printed JSON text.
///
/// ```
/// # use acp_core::{IntoToolOutput, Json};
/// #[derive(serde::Serialize)]
/// struct Count { matches: usize }
///
/// let output = Json(Count { matches: 3 }).to_tool_output();
/// assert_eq!(output.raw, Some(serde_json::json!({ "matches": 3 })));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoToolOutput for Json<T> {
    fn to_tool_output(&self) -> ToolOutput {
        match serde_json::to_value(&self.0) {
            Ok(value) => value.to_tool_output(),
            Err(e) => ToolOutput::text(format!("(the output could not be serialized: {e})")),
        }
    }
}

/// Arguments whose values are files the tool touches: sent as the tool call's `locations`.
///
/// `#[acp::agent]` uses it for parameters typed `PathBuf`, `Option<PathBuf>` or
/// `Vec<PathBuf>`.
pub trait ToolLocations {
    /// Appends the paths in `self` to `out`.
    fn push_paths(&self, out: &mut Vec<PathBuf>);
}

impl ToolLocations for Path {
    fn push_paths(&self, out: &mut Vec<PathBuf>) {
        out.push(self.to_path_buf());
    }
}

impl ToolLocations for PathBuf {
    fn push_paths(&self, out: &mut Vec<PathBuf>) {
        out.push(self.clone());
    }
}

impl<T: ToolLocations> ToolLocations for Option<T> {
    fn push_paths(&self, out: &mut Vec<PathBuf>) {
        if let Some(p) = self {
            p.push_paths(out);
        }
    }
}

impl<T: ToolLocations> ToolLocations for [T] {
    fn push_paths(&self, out: &mut Vec<PathBuf>) {
        for p in self {
            p.push_paths(out);
        }
    }
}

impl<T: ToolLocations> ToolLocations for Vec<T> {
    fn push_paths(&self, out: &mut Vec<PathBuf>) {
        self.as_slice().push_paths(out);
    }
}

/// What `#[acp::agent]`'s expansion calls. Not a stable API: use the macros.
#[doc(hidden)]
pub mod expand {
    use std::any::Any;
    use std::fmt::Display;
    use std::future::Future;
    use std::panic::AssertUnwindSafe;
    use std::path::PathBuf;
    use std::pin::Pin;

    use futures_util::FutureExt;
    use serde::Serialize;
    use serde::de::DeserializeOwned;

    use super::{IntoToolOutput, ToolDef, ToolLocations, ToolOutput};
    use crate::schema::{
        PermissionOption, PermissionOptionKind, ToolCallLocation, ToolCallUpdate,
        ToolCallUpdateFields, ToolKind,
    };
    use crate::{Error, Result, Session, ToolCallGuard};

    /// Permission option ids, stable so that clients and tests can rely on them.
    pub const ALLOW_ONCE: &str = "allow_once";
    /// See [`ALLOW_ONCE`].
    pub const ALLOW_ALWAYS: &str = "allow_always";
    /// See [`ALLOW_ONCE`].
    pub const REJECT_ONCE: &str = "reject_once";
    /// See [`ALLOW_ONCE`].
    pub const REJECT_ALWAYS: &str = "reject_always";

    /// The static description of one `#[acp::tool]`, generated once per tool.
    #[derive(Debug, Clone, Copy)]
    pub struct ToolSpec {
        /// Unique tool name.
        pub name: &'static str,
        /// The doc comment.
        pub description: &'static str,
        /// The client's icon.
        pub kind: ToolKind,
        /// Title template: `{param}` placeholders, `{{`/`}}` escapes (checked by the macro).
        pub title: &'static str,
        /// Parameter names and descriptions, in order.
        pub params: &'static [Param],
        /// Whether to ask the user first.
        pub permission: bool,
    }

    /// One parameter of a tool.
    #[derive(Debug)]
    pub struct Param {
        /// The parameter's name (the JSON property).
        pub name: &'static str,
        /// Its description, from the doc comment's `# Arguments` list (may be empty).
        pub description: &'static str,
    }

    impl ToolSpec {
        fn permission_key(&self) -> String {
            format!("acp.tool:{}", self.name)
        }
    }

    // ----- compile-time checks, spanned at the user's code by the expansion -----

    /// A tool parameter's type, for `rawInput` (the arguments shown to the user).
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a tool parameter: it is not `Serialize`",
        label = "tool parameters must be `Serialize` (for the rawInput shown to the user)",
        note = "tool arguments are JSON: derive `serde::Serialize`, `serde::Deserialize` and `schemars::JsonSchema` on the type"
    )]
    pub trait ArgSerialize: Serialize {}
    impl<T: Serialize + ?Sized> ArgSerialize for T {}

    /// A tool parameter's type, for calls by name.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a tool parameter: it is not `Deserialize`",
        label = "tool parameters must be `Deserialize` (to parse the arguments of a call by name)",
        note = "tool arguments are JSON: derive `serde::Serialize`, `serde::Deserialize` and `schemars::JsonSchema` on the type"
    )]
    pub trait ArgDeserialize: DeserializeOwned {}
    impl<T: DeserializeOwned> ArgDeserialize for T {}

    /// A tool parameter's type, for the tool's JSON Schema.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a tool parameter: it has no JSON Schema",
        label = "tool parameters must be `JsonSchema` (to describe the tool to a model)",
        note = "tool arguments are JSON: derive `serde::Serialize`, `serde::Deserialize` and `schemars::JsonSchema` on the type"
    )]
    pub trait ArgSchema: schemars::JsonSchema {}
    impl<T: schemars::JsonSchema + ?Sized> ArgSchema for T {}

    /// The return type of a tool: a `Result` whose `Ok` can be shown and whose `Err` can carry
    /// the lifecycle's errors.
    #[diagnostic::on_unimplemented(
        message = "an `#[acp::tool]` must return a `Result`, not `{Self}`",
        label = "expected `acp::Result<…>` here",
        note = "write `-> acp::Result<T>` where `T` is shown as the call's output (`String`, `acp::Diff`, `acp::Json<…>`, …)"
    )]
    pub trait ToolReturn: Sized {
        /// The success value.
        type Ok: IntoToolOutput;
        /// The error.
        type Err: ToolError;
        /// Converts to a plain `Result`.
        fn into_result(self) -> std::result::Result<Self::Ok, Self::Err>;
        /// Borrows as a plain `Result`.
        fn as_result(&self) -> std::result::Result<&Self::Ok, &Self::Err>;
        /// Converts from a plain `Result`.
        fn from_result(result: std::result::Result<Self::Ok, Self::Err>) -> Self;
    }

    impl<T: IntoToolOutput, E: ToolError> ToolReturn for std::result::Result<T, E> {
        type Ok = T;
        type Err = E;
        fn into_result(self) -> Self {
            self
        }
        fn as_result(&self) -> std::result::Result<&T, &E> {
            self.as_ref()
        }
        fn from_result(result: Self) -> Self {
            result
        }
    }

    /// The error type of a tool: [`Error`] itself, or any error that can hold one and be
    /// shown (e.g. `anyhow::Error`).
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be the error type of an `#[acp::tool]`",
        note = "use `acp::Result<T>`, or an error type that implements `From<acp::Error>` and `Display` (like `anyhow::Error`)"
    )]
    pub trait ToolError: From<Error> + Display + Send + 'static {}
    impl<E: From<Error> + Display + Send + 'static> ToolError for E {}

    /// Boxes a tool's future for the by-name dispatcher; the expansion spans this call at the
    /// tool method so that a non-`Send` future is reported there.
    pub fn box_send<'a, F>(future: F) -> Pin<Box<dyn Future<Output = F::Output> + Send + 'a>>
    where
        F: Future + Send + 'a,
    {
        Box::pin(future)
    }

    /// Identity; the expansion spans this call at a session method so that a non-`Send` future
    /// is reported there.
    pub fn send<F: Future + Send>(future: F) -> F {
        future
    }

    // ----- the lifecycle -----

    /// The arguments of a typed call, as the client will see them.
    #[derive(Debug, Default)]
    pub struct ToolInput {
        raw: serde_json::Map<String, serde_json::Value>,
        locations: Vec<PathBuf>,
    }

    impl ToolInput {
        /// No arguments yet.
        pub fn new() -> Self {
            ToolInput::default()
        }

        /// Records an argument for `rawInput` and the title.
        pub fn arg<T: ArgSerialize + ?Sized>(mut self, name: &str, value: &T) -> Self {
            let value = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
            self.raw.insert(name.to_owned(), value);
            self
        }

        /// Records the paths of an argument as the call's locations.
        pub fn location<T: ToolLocations + ?Sized>(mut self, value: &T) -> Self {
            value.push_paths(&mut self.locations);
            self
        }
    }

    /// What the lifecycle needs from a tool's return type `R`, as plain function pointers.
    ///
    /// The expansion builds one per tool, in an associated const whose initializer is the only
    /// place that requires `R: ToolReturn`; so a return type that does not fit is reported
    /// once, at the author's return type, and nothing else depends on the bound.
    pub struct Ret<R> {
        /// The output shown on success, or the error's message.
        inspect: fn(&R) -> std::result::Result<ToolOutput, String>,
        /// `Err(error)` of the tool's own error type.
        from_error: fn(Error) -> R,
        /// The outcome of a call by name.
        into_output: fn(R) -> Result<ToolOutput>,
    }

    impl<R> Clone for Ret<R> {
        fn clone(&self) -> Self {
            *self
        }
    }

    impl<R> Copy for Ret<R> {}

    impl<R> std::fmt::Debug for Ret<R> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("Ret")
        }
    }

    /// The operations of a tool's return type (a free function, so that a type that does not
    /// fit gets [`ToolReturn`]'s own message).
    pub const fn ret<R: ToolReturn>() -> Ret<R> {
        {
            Ret {
                inspect: |r| match r.as_result() {
                    Ok(value) => Ok(value.to_tool_output()),
                    Err(e) => Err(e.to_string()),
                },
                from_error: |e| R::from_result(Err(e.into())),
                into_output: |r| match r.into_result() {
                    Ok(value) => Ok(value.to_tool_output()),
                    Err(e) => Err(into_error(e)),
                },
            }
        }
    }

    /// Runs one tool call: announce (pending) → permission if the tool asks → in progress →
    /// the body, raced with the turn's cancellation and guarded against panics → completed
    /// with the output, or failed with the error.
    pub async fn run_tool<R, F>(
        cx: &Session,
        spec: &ToolSpec,
        ret: Ret<R>,
        input: ToolInput,
        body: F,
    ) -> R
    where
        F: Future<Output = R>,
    {
        match lifecycle(cx, spec, ret, input, body).await {
            Ok(value) => value,
            Err(e) => (ret.from_error)(e),
        }
    }

    /// `Ok` holds whatever the body returned (success or the author's error, already
    /// reported); `Err` is an error of the lifecycle itself.
    async fn lifecycle<R, F>(
        cx: &Session,
        spec: &ToolSpec,
        ret: Ret<R>,
        input: ToolInput,
        body: F,
    ) -> Result<R>
    where
        F: Future<Output = R>,
    {
        cx.check_cancelled()?;
        let raw = serde_json::Value::Object(input.raw);
        let call = start(cx, spec, raw.clone(), &input.locations).await?;
        if spec.permission
            && let Err(e) = permission(cx, spec, &call, raw, &input.locations).await
        {
            let _ = call.fail(&e).await;
            return Err(e);
        }
        if let Err(e) = call.in_progress().await {
            let _ = call.fail(&e).await;
            return Err(e);
        }
        // Within the body, `cx.current_tool_call()` names this call and terminals embed in it.
        let body = AssertUnwindSafe(crate::in_tool_call(&call, body)).catch_unwind();
        let outcome = tokio::select! {
            biased;
            outcome = body => outcome,
            () = cx.cancelled() => {
                let _ = call.fail("cancelled").await;
                return Err(Error::Cancelled);
            }
        };
        let value = match outcome {
            Ok(value) => value,
            Err(panic) => {
                let error = Error::panicked(&format!("the tool `{}`", spec.name), panic.as_ref());
                if let Error::Rpc { message, .. } = &error {
                    let _ = call.fail(message).await;
                }
                return Err(error);
            }
        };
        match (ret.inspect)(&value) {
            Ok(output) => {
                let mut fields = ToolCallUpdateFields::new().content(output.content);
                if output.raw.is_some() {
                    fields = fields.raw_output(output.raw);
                }
                if let Err(e) = call.complete_with(fields).await {
                    tracing::debug!(
                        tool = spec.name,
                        "could not report the tool call completed: {e}"
                    );
                }
            }
            Err(message) => {
                let message = if cx.is_cancelled() {
                    "cancelled".to_owned()
                } else {
                    message
                };
                let _ = call.fail(message).await;
            }
        }
        Ok(value)
    }

    fn locations(cx: &Session, paths: &[PathBuf]) -> Vec<ToolCallLocation> {
        paths
            .iter()
            .map(|p| ToolCallLocation::new(cx.cwd().join(p)))
            .collect()
    }

    async fn start(
        cx: &Session,
        spec: &ToolSpec,
        raw: serde_json::Value,
        paths: &[PathBuf],
    ) -> Result<ToolCallGuard> {
        let mut call = cx
            .tool_call(render_title(spec.title, &raw))
            .kind(spec.kind)
            .raw_input(raw);
        if !paths.is_empty() {
            call = call.locations(locations(cx, paths));
        }
        call.start().await
    }

    /// Asks (or recalls) permission; `Ok` means the call may run.
    async fn permission(
        cx: &Session,
        spec: &ToolSpec,
        call: &ToolCallGuard,
        raw: serde_json::Value,
        paths: &[PathBuf],
    ) -> Result<()> {
        let key = spec.permission_key();
        match cx.remembered_permission(&key) {
            Some(true) => return Ok(()),
            Some(false) => return Err(Error::PermissionDenied),
            None => {}
        }
        let mut fields = ToolCallUpdateFields::new()
            .title(render_title(spec.title, &raw))
            .kind(spec.kind)
            .raw_input(raw);
        if !paths.is_empty() {
            fields = fields.locations(locations(cx, paths));
        }
        let options = vec![
            PermissionOption::new(ALLOW_ONCE, "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new(
                ALLOW_ALWAYS,
                "Always allow",
                PermissionOptionKind::AllowAlways,
            ),
            PermissionOption::new(REJECT_ONCE, "Reject", PermissionOptionKind::RejectOnce),
            PermissionOption::new(
                REJECT_ALWAYS,
                "Always reject",
                PermissionOptionKind::RejectAlways,
            ),
        ];
        let chosen = cx
            .request_permission(ToolCallUpdate::new(call.id().clone(), fields), options)
            .await?;
        match chosen.0.as_ref() {
            ALLOW_ONCE => Ok(()),
            ALLOW_ALWAYS => {
                cx.remember_permission(key, true);
                Ok(())
            }
            REJECT_ALWAYS => {
                cx.remember_permission(key, false);
                Err(Error::PermissionDenied)
            }
            // Reject, or an option we never offered: fail closed.
            _ => Err(Error::PermissionDenied),
        }
    }

    /// Renders a title template (`{name}` → the argument; strings without quotes).
    pub fn render_title(template: &str, args: &serde_json::Value) -> String {
        let mut out = String::with_capacity(template.len());
        let mut rest = template;
        while let Some(i) = rest.find(['{', '}']) {
            out.push_str(&rest[..i]);
            let brace = &rest[i..];
            if brace.starts_with("{{") || brace.starts_with("}}") {
                out.push_str(&brace[..1]);
                rest = &brace[2..];
            } else if let Some(end) = brace.strip_prefix('{').and_then(|b| b.find('}')) {
                let name = &brace[1..=end];
                match args.get(name) {
                    Some(serde_json::Value::String(s)) => out.push_str(s),
                    Some(serde_json::Value::Null) | None => out.push('…'),
                    Some(other) => out.push_str(&other.to_string()),
                }
                rest = &brace[end + 2..];
            } else {
                out.push_str(&brace[..1]);
                rest = &brace[1..];
            }
        }
        out.push_str(rest);
        out
    }

    // ----- by name -----

    /// The JSON arguments of a call by name, taken one parameter at a time; every problem is
    /// collected and reported together by [`Args::finish`] (parameters are taken in order).
    #[derive(Debug)]
    pub struct Args {
        spec: ToolSpec,
        raw: serde_json::Value,
        map: serde_json::Map<String, serde_json::Value>,
        next: usize,
        problems: Vec<String>,
    }

    impl Args {
        /// Starts reading `args` (a JSON object; `null` counts as `{}`).
        pub fn new(spec: ToolSpec, args: serde_json::Value) -> Self {
            let mut problems = Vec::new();
            let map = match &args {
                serde_json::Value::Object(map) => map.clone(),
                serde_json::Value::Null => serde_json::Map::new(),
                other => {
                    problems.push(format!(
                        "the arguments must be a JSON object, not {}",
                        json_kind(other)
                    ));
                    serde_json::Map::new()
                }
            };
            Args {
                spec,
                raw: args,
                map,
                next: 0,
                problems,
            }
        }

        /// The next parameter's value. An error here is also recorded for [`Args::finish`].
        pub fn take<T: ArgDeserialize>(&mut self) -> Result<T> {
            let Some(param) = self.spec.params.get(self.next) else {
                return Err(Error::msg(
                    "more arguments taken than the tool has parameters",
                ));
            };
            self.next += 1;
            let value = self.map.remove(param.name);
            let present = value.is_some();
            match serde_json::from_value(value.unwrap_or(serde_json::Value::Null)) {
                Ok(v) => Ok(v),
                Err(e) => {
                    if !self.problems.is_empty() && !self.raw.is_object() && !self.raw.is_null() {
                        // Already reported: the arguments are not an object at all.
                        return Err(Error::InvalidParams(self.problems[0].clone()));
                    }
                    let problem = if present {
                        format!("argument `{}`: {e}", param.name)
                    } else {
                        format!("missing argument `{}`", param.name)
                    };
                    self.problems.push(problem.clone());
                    Err(Error::InvalidParams(problem))
                }
            }
        }

        /// `Ok` if every argument was valid and none was unknown; otherwise announces the
        /// call, fails it with every problem, and returns [`Error::InvalidParams`] with the
        /// same message (meant for a model to read and retry).
        pub async fn finish(mut self, cx: &Session) -> Result<()> {
            for unknown in self.map.keys() {
                self.problems.push(format!("unknown argument `{unknown}`"));
            }
            if self.problems.is_empty() {
                return Ok(());
            }
            cx.check_cancelled()?;
            let message = format!(
                "invalid arguments for tool `{}`: {} (expected {})",
                self.spec.name,
                self.problems.join("; "),
                property_list(&self.spec),
            );
            let raw = std::mem::take(&mut self.raw);
            let call = start(cx, &self.spec, raw, &[]).await?;
            let _ = call.fail(&message).await;
            Err(Error::InvalidParams(message))
        }
    }

    fn property_list(spec: &ToolSpec) -> String {
        if spec.params.is_empty() {
            return "an empty object".to_owned();
        }
        let names: Vec<_> = spec
            .params
            .iter()
            .map(|p| format!("`{}`", p.name))
            .collect();
        format!("an object with {}", names.join(", "))
    }

    fn json_kind(value: &serde_json::Value) -> &'static str {
        match value {
            serde_json::Value::Null => "null",
            serde_json::Value::Bool(_) => "a boolean",
            serde_json::Value::Number(_) => "a number",
            serde_json::Value::String(_) => "a string",
            serde_json::Value::Array(_) => "an array",
            serde_json::Value::Object(_) => "an object",
        }
    }

    /// Awaits a typed call made on behalf of a call by name, and maps its outcome.
    pub async fn by_name<R>(
        ret: Ret<R>,
        call: Pin<Box<dyn Future<Output = R> + Send + '_>>,
    ) -> Result<ToolOutput> {
        (ret.into_output)(call.await)
    }

    /// Converts a tool's error back to [`Error`]: unchanged when it is one, else its message.
    pub fn into_error<E: ToolError>(e: E) -> Error {
        let mut slot = Some(e);
        if let Some(acp) = (&mut slot as &mut dyn Any).downcast_mut::<Option<Error>>()
            && let Some(acp) = acp.take()
        {
            return acp;
        }
        match slot {
            Some(e) => Error::msg(e),
            None => Error::msg("tool error"),
        }
    }

    /// The error for a name no tool has.
    pub fn unknown_tool(name: &str, tools: &[&str]) -> Error {
        if tools.is_empty() {
            return Error::InvalidParams(format!(
                "no tool named `{name}`: this agent has no tools"
            ));
        }
        Error::InvalidParams(format!(
            "no tool named `{name}`; the tools are: {}",
            tools.join(", ")
        ))
    }

    // ----- schemas -----

    /// Builds a tool's [`ToolDef`], one parameter type at a time.
    #[derive(Debug)]
    pub struct Def {
        spec: ToolSpec,
        generator: schemars::SchemaGenerator,
        properties: serde_json::Map<String, serde_json::Value>,
        required: Vec<serde_json::Value>,
        next: usize,
    }

    /// Starts the definition of the tool described by `spec`.
    pub fn def(spec: ToolSpec) -> Def {
        Def {
            spec,
            generator: schemars::generate::SchemaSettings::draft2020_12().into_generator(),
            properties: serde_json::Map::new(),
            required: Vec::new(),
            next: 0,
        }
    }

    impl Def {
        /// Adds the next parameter, of type `T`. It is required unless its schema accepts
        /// `null` (as `Option`'s does; a missing argument is parsed from `null`).
        #[must_use]
        pub fn param<T: ArgSchema>(mut self) -> Self {
            let Some(param) = self.spec.params.get(self.next) else {
                return self;
            };
            self.next += 1;
            let mut schema = self.generator.subschema_for::<T>().to_value();
            if !accepts_null(&schema) {
                self.required.push(param.name.into());
            }
            if !param.description.is_empty()
                && let serde_json::Value::Object(map) = &mut schema
            {
                map.insert("description".into(), param.description.into());
            }
            self.properties.insert(param.name.to_owned(), schema);
            self
        }

        /// The finished definition.
        pub fn finish(mut self) -> ToolDef {
            let mut schema = serde_json::Map::new();
            schema.insert("type".into(), "object".into());
            schema.insert("properties".into(), self.properties.into());
            if !self.required.is_empty() {
                schema.insert("required".into(), self.required.into());
            }
            schema.insert("additionalProperties".into(), false.into());
            let defs = self.generator.take_definitions(true);
            if !defs.is_empty() {
                schema.insert("$defs".into(), defs.into());
            }
            ToolDef {
                name: self.spec.name.into(),
                description: self.spec.description.into(),
                kind: self.spec.kind,
                title: self.spec.title.into(),
                permission: self.spec.permission,
                input_schema: schema.into(),
            }
        }
    }

    /// Whether a (sub)schema accepts `null`: `true`, `{}`, `"type": "null"`,
    /// `"type": [.., "null"]`, or an `anyOf`/`oneOf` branch that does.
    fn accepts_null(schema: &serde_json::Value) -> bool {
        use serde_json::Value;
        match schema {
            Value::Bool(b) => *b,
            Value::Object(map) if map.is_empty() => true,
            Value::Object(map) => match map.get("type") {
                Some(Value::String(t)) => t == "null",
                Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
                _ => ["anyOf", "oneOf"].iter().any(|k| {
                    map.get(*k)
                        .and_then(Value::as_array)
                        .is_some_and(|branches| branches.iter().any(accepts_null))
                }),
            },
            _ => false,
        }
    }
}
