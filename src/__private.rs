//! Everything the expansions of `#[acp::agent]` and `#[derive(acp::JsonSchema)]` name, and
//! nothing else: the macros write only `::acp::__private::…` paths. Not a stable API: use the
//! macros.
//!
//! Built on acp-core's expansion ABI (`acp_core::__private`) and public API. The traits here carry
//! the compile errors an author sees when a type does not fit, in our words and at the
//! author's span: each is asserted once, where the expansion spans it.

use std::any::Any;
use std::cell::Cell;
use std::error::Error as StdError;
use std::fmt::Display;
use std::future::Future;
use std::pin::Pin;

pub use acp_core::__private::*;
pub use acp_core::schema::{self, AgentCapabilities, Implementation, StopReason, ToolKind};
pub use acp_core::{
    Agent, Choice, Client, CommandInput, ConfigKind, ConfigOption, ConfigSpec, ConfigValue, Error,
    IntoToolOutput, Modes, Prompt, Requirement, Result, Session, SessionSetup, Settings, ToolDef,
    ToolOutput,
};
pub use acp_macros::erase;
pub use std::vec::Vec;
pub use {schemars, serde, serde_json};

/// `agentInfo` from the attribute's `name`, `title` and `version`.
pub fn info(
    name: impl Into<String>,
    title: Option<String>,
    version: impl Into<String>,
) -> Implementation {
    Implementation::new(name, version).title(title)
}

/// `agentCapabilities` from the recognised methods the impl has and the attribute's
/// `prompt(…)` and `system_prompt` (`Some(true)`: with `override`): what is advertised
/// follows what is implemented.
pub fn capabilities(
    methods: &[&str],
    image: bool,
    audio: bool,
    embedded_context: bool,
    system_prompt: Option<bool>,
) -> AgentCapabilities {
    let system_prompt = system_prompt.map(|takes_override| {
        schema::SessionSystemPromptCapabilities::new().mode(takes_override.then(|| {
            schema::SessionSystemPromptModeCapabilities::new()
                .override_(schema::SessionSystemPromptOverrideCapabilities::new())
        }))
    });
    let logout = methods
        .contains(&"logout")
        .then(schema::LogoutCapabilities::new);
    AgentCapabilities::new()
        .load_session(methods.contains(&"load_session"))
        .prompt_capabilities(
            schema::PromptCapabilities::new()
                .image(image)
                .audio(audio)
                .embedded_context(embedded_context),
        )
        .auth(schema::AgentAuthCapabilities::new().logout(logout))
        .session_capabilities(schema::SessionCapabilities::new().system_prompt(system_prompt))
}

/// One slash command, as advertised: its name, its description (the method's doc comment)
/// and the hint for its input.
pub fn command(name: &str, description: &str, hint: Option<&str>) -> schema::AvailableCommand {
    let description = if description.is_empty() {
        format!("/{name}")
    } else {
        description.to_owned()
    };
    let command = schema::AvailableCommand::new(name, description);
    match hint {
        Some(hint) => command.input(schema::AvailableCommandInput::Unstructured(
            schema::UnstructuredCommandInput::new(hint),
        )),
        None => command,
    }
}

/// The error for a command name no `#[acp::command]` has (never reached: the runtime only
/// runs the commands the agent lists).
pub fn unknown_command(name: &str) -> Error {
    Error::InvalidParams(format!("this agent has no command `/{name}`"))
}

/// The params of an extension method, read into the author's type; `-32602` naming what
/// does not fit.
pub fn ext_params<T: ExtParams>(method: &str, params: serde_json::Value) -> Result<T> {
    serde_path_to_error::deserialize(params).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." {
            String::new()
        } else {
            format!(" at `{path}`")
        };
        Error::InvalidParams(format!("invalid params for `{method}`{at}: {}", e.inner()))
    })
}

/// The result of an extension request, as JSON.
pub fn ext_result<T: serde::Serialize>(value: &T) -> Result<serde_json::Value> {
    Ok(serde_json::to_value(value)?)
}

/// The params type of an extension method.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the params of an #[acp::ext] method: it must be `Deserialize`",
    label = "add `#[derive(serde::Deserialize)]` to this type, or take `serde_json::Value`",
    note = "extension params are the request's JSON `params`, read into this type"
)]
pub trait ExtParams: serde::de::DeserializeOwned {}

#[diagnostic::do_not_recommend]
impl<T: serde::de::DeserializeOwned> ExtParams for T {}

/// The `prompt` of the stand-in `Agent` impl emitted next to a macro error; never runs.
pub fn stub() -> std::future::Ready<Result<StopReason>> {
    std::future::ready(Err(Error::msg(
        "this agent did not compile: see the #[acp::agent] errors",
    )))
}

// ----- the error type of a method or a tool -----

/// What a recognised method or a tool may fail with: [`Error`] itself, or any error that can
/// hold one and be shown, like `anyhow::Error`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the error type of an `#[acp::agent]` method or `#[acp::tool]`",
    label = "the error type must have `From<acp::Error>` and `Display` (and be `Send + 'static`)",
    note = "use `acp::Result<T>`, or an error type that converts from `acp::Error` and can be shown, like `anyhow::Error` (`anyhow::Result<T>`)"
)]
pub trait ErrorType: From<Error> + Display + Send + 'static {}

#[diagnostic::do_not_recommend]
impl<E: From<Error> + Display + Send + 'static> ErrorType for E {}

/// An author's error on its way back to [`Error`]. The expansion calls `__acp_error()` on
/// `&&&&ErrWrap::new(e)`; method resolution picks the first that applies of
/// - [`ViaErrorRef`]: errors that show their inner error as `dyn std::error::Error`, like
///   `anyhow::Error` and `Box<dyn Error + Send + Sync>`;
/// - [`ViaStdError`]: any `std::error::Error`, [`Error`] itself included;
/// - [`ViaDisplay`]: any other [`ErrorType`]: its message;
/// - [`ViaRejected`]: any other type; reached only when the method's return-type check has
///   already failed to compile, so that its error stays the only one.
///
/// An [`Error`] comes back unchanged (copied out of a wrapper), so `?` on `Error::Cancelled`
/// still ends a turn as cancelled and `Error::InvalidParams` is still answered `-32602`; a
/// cancel anywhere in the chain of causes is a cancel; anything else is its message, with its
/// causes as `anyhow` shows them with `{:#}` (`outer: inner: root`).
pub struct ErrWrap<E>(Cell<Option<E>>);

impl<E> std::fmt::Debug for ErrWrap<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ErrWrap")
    }
}

impl<E> ErrWrap<E> {
    /// Wraps the author's error.
    pub fn new(error: E) -> Self {
        ErrWrap(Cell::new(Some(error)))
    }
}

const TAKEN: &str = "the error was already converted";

/// See [`ErrWrap`]: errors that show their inner error, like `anyhow::Error`.
pub trait ViaErrorRef {
    /// The error as an [`Error`].
    fn __acp_error(&self) -> Error;
}

impl<E: AsRef<dyn StdError + Send + Sync>> ViaErrorRef for &&&ErrWrap<E> {
    fn __acp_error(&self) -> Error {
        match self.0.take() {
            Some(error) => recover(error.as_ref()),
            None => Error::msg(TAKEN),
        }
    }
}

/// See [`ErrWrap`]: any `std::error::Error`.
pub trait ViaStdError {
    /// The error as an [`Error`].
    fn __acp_error(&self) -> Error;
}

impl<E: StdError + Send + 'static> ViaStdError for &&ErrWrap<E> {
    fn __acp_error(&self) -> Error {
        let Some(error) = self.0.take() else {
            return Error::msg(TAKEN);
        };
        let mut slot = Some(error);
        if let Some(acp) = (&mut slot as &mut dyn Any).downcast_mut::<Option<Error>>()
            && let Some(acp) = acp.take()
        {
            return acp;
        }
        slot.map_or_else(|| Error::msg(TAKEN), |e| recover(&e))
    }
}

/// See [`ErrWrap`]: any other [`ErrorType`].
pub trait ViaDisplay {
    /// The error as an [`Error`].
    fn __acp_error(&self) -> Error;
}

impl<E: ErrorType> ViaDisplay for &ErrWrap<E> {
    fn __acp_error(&self) -> Error {
        self.0.take().map_or_else(|| Error::msg(TAKEN), into_error)
    }
}

/// See [`ErrWrap`]: never in a program that compiles.
pub trait ViaRejected {
    /// An error saying the error type was rejected.
    fn __acp_error(&self) -> Error;
}

impl<E> ViaRejected for ErrWrap<E> {
    fn __acp_error(&self) -> Error {
        Error::msg("this error type is not an `ErrorType`; the agent did not compile")
    }
}

/// The [`Error`] an error stands for: a copy of it when it is one, `Cancelled` when a cause is,
/// else its message with its causes.
fn recover(top: &(dyn StdError + 'static)) -> Error {
    if let Some(acp) = top.downcast_ref::<Error>() {
        return copy(acp);
    }
    let mut message = top.to_string();
    let mut source = top.source();
    while let Some(cause) = source {
        if cause
            .downcast_ref::<Error>()
            .is_some_and(Error::is_cancelled)
        {
            return Error::Cancelled;
        }
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    Error::msg(message)
}

/// An owned [`Error`] equal to `e` (the variants that carry meaning keep it).
fn copy(e: &Error) -> Error {
    match e {
        Error::Cancelled => Error::Cancelled,
        Error::PermissionDenied => Error::PermissionDenied,
        Error::Unsupported(capability) => Error::Unsupported(capability),
        Error::Rpc {
            code,
            message,
            data,
        } => Error::Rpc {
            code: *code,
            message: message.clone(),
            data: data.clone(),
        },
        Error::Refused {
            method,
            code,
            message,
            data,
        } => Error::Refused {
            method: method.clone(),
            code: *code,
            message: message.clone(),
            data: data.clone(),
        },
        Error::Protocol(message) => Error::Protocol(message.clone()),
        Error::OutsideRoots { path, roots } => Error::OutsideRoots {
            path: path.clone(),
            roots: roots.clone(),
        },
        Error::InvalidParams(message) => Error::InvalidParams(message.clone()),
        Error::TurnEnded => Error::TurnEnded,
        Error::ConnectionClosed => Error::ConnectionClosed,
        Error::SessionClosed => Error::SessionClosed,
        Error::AuthRequired => Error::AuthRequired,
        Error::Io(io) => Error::Io(std::io::Error::new(io.kind(), io.to_string())),
        Error::Other(message) => Error::Other(message.clone()),
        other => Error::msg(other),
    }
}

// ----- tools -----

/// One tool, generated once per `#[acp::tool]` method: its static description, the operations
/// on its return type `R`, and the operations on each parameter's type (a tuple of
/// [`ArgFns`]). Nothing else in the expansion requires a bound on the author's types, so each
/// type that does not fit is reported once, where this is built.
#[derive(Debug)]
pub struct ToolConst<R, A> {
    /// Name, description, kind, title, parameters, permission.
    pub spec: ToolSpec,
    /// See [`tool_ret`].
    pub ret: Ret<R>,
    /// See [`arg_fns`].
    pub args: A,
}

/// The return type of a tool: a `Result` whose `Ok` can be shown ([`IntoToolOutput`]) and
/// whose `Err` can hold an [`Error`] ([`ErrorType`]); each part that does not fit is reported
/// with its own trait's message.
#[diagnostic::on_unimplemented(
    message = "an `#[acp::tool]` must return a `Result`, not `{Self}`",
    label = "expected `acp::Result<…>` here",
    note = "write `-> acp::Result<T>` where `T` is shown as the call's output (`String`, `acp::Diff`, `acp::Json<…>`, …)"
)]
pub trait ToolResult: ToolReturn {}

impl<T: IntoToolOutput, E: ErrorType> ToolResult for std::result::Result<T, E> {}

/// The operations of a tool's return type; asserted at the author's return type, once.
pub const fn tool_ret<R: ToolResult>() -> Ret<R> {
    ret::<R>()
}

/// The type of a tool parameter: JSON in both directions, with a schema.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool parameter: it must be `Serialize`, `Deserialize` and `JsonSchema`",
    label = "add `#[derive(serde::Serialize, serde::Deserialize, acp::JsonSchema)]` to this type",
    note = "tool arguments are JSON, described to the model by a JSON Schema: derive `serde::Serialize`, `serde::Deserialize` and `acp::JsonSchema` on the type, or use a type that has them (`String`, numbers, `bool`, `PathBuf`, `Vec<…>`, `Option<…>`, …)"
)]
pub trait ToolArg: serde::Serialize + serde::de::DeserializeOwned + schemars::JsonSchema {}

#[diagnostic::do_not_recommend]
impl<T: serde::Serialize + serde::de::DeserializeOwned + schemars::JsonSchema> ToolArg for T {}

/// The operations on one tool parameter's type `T`, as plain function pointers.
pub struct ArgFns<T> {
    arg: fn(ToolInput, &str, &T) -> ToolInput,
    take: fn(&mut Args) -> Result<T>,
    param: fn(Def) -> Def,
}

impl<T> Clone for ArgFns<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for ArgFns<T> {}

impl<T> std::fmt::Debug for ArgFns<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ArgFns")
    }
}

/// The operations on a tool parameter's type; asserted at the author's parameter type, once.
pub const fn arg_fns<T: ToolArg>() -> ArgFns<T> {
    ArgFns {
        arg: |input, name, value| input.arg(name, value),
        take: |args| args.take(),
        param: |def| def.param::<T>(),
    }
}

impl<T> ArgFns<T> {
    /// Records the argument `name` of a typed call for `rawInput` and the title.
    pub fn arg(&self, input: ToolInput, name: &str, value: &T) -> ToolInput {
        (self.arg)(input, name, value)
    }

    /// Takes the next argument of a call by name.
    pub fn take(&self, args: &mut Args) -> Result<T> {
        (self.take)(args)
    }

    /// Adds the parameter's schema to the tool's definition.
    pub fn param(&self, def: Def) -> Def {
        (self.param)(def)
    }
}

/// Boxes the future of a tool's body or of a recognised method. The expansion spans this call
/// at the method's name, so a future that is not `Send` is reported there, and only there: the
/// boxed future is `Send` to every caller (the prompt turn awaiting a tool, the by-name
/// dispatch, the runtime).
pub fn send_boxed<'a, R, F>(future: F) -> Pin<Box<dyn Future<Output = R> + Send + 'a>>
where
    F: Future<Output = R> + Send + 'a,
{
    Box::pin(future)
}
