//! What the expansion of `#[acp::agent]` asserts about the author's types, spanned at the
//! author's code so that a type that does not fit is reported there with our message: tool
//! parameter and return types, tool error types, a tool's `check` function, `Send` futures;
//! and the operations on a tool's return type ([`Ret`]), resolved once per tool.

use std::fmt::Display;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{IntoToolOutput, ToolOutput, by_name::into_error};
use crate::Error;
use crate::Result;
use crate::session::Session;

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

/// What the lifecycle needs from a tool's return type `R`, as plain function pointers.
///
/// The expansion builds one per tool, in an associated const whose initializer is the only
/// place that requires `R: ToolReturn`; so a return type that does not fit is reported
/// once, at the author's return type, and nothing else depends on the bound.
pub struct Ret<R> {
    /// The output shown on success, or the error's message.
    pub(crate) inspect: fn(&R) -> std::result::Result<ToolOutput, String>,
    /// `Err(error)` of the tool's own error type.
    pub(crate) from_error: fn(Error) -> R,
    /// The outcome of a call by name.
    pub(crate) into_output: fn(R) -> Result<ToolOutput>,
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

/// The future of a tool's check, as the lifecycle awaits it.
pub type CheckFuture<'a> = Pin<Box<dyn Future<Output = Result<()>> + Send + 'a>>;

/// The `check` of an `#[acp::tool(check = …)]`: a function of the agent `A` and the session,
/// sync or async, returning `Result<(), E>` for any tool error type `E`. `M` tells the sync and
/// the async kind apart ([`SyncCheck`], [`AsyncCheck`]); it is inferred.
#[diagnostic::on_unimplemented(
    message = "this function cannot be the `check` of an `#[acp::tool]`",
    label = "a check takes `&self` and `&acp::Session`, and returns `acp::Result<()>`",
    note = "write `fn may_run(&self, cx: &acp::Session) -> acp::Result<()>` (or `async fn`, whose future must be `Send`) in the agent's impl and `check = Self::may_run`: `Ok(())` lets the call go on (to the permission request, if any), `Err(e)` refuses it with `e`"
)]
pub trait ToolCheck<A, M> {
    /// The check, to run when the future is first polled.
    fn check<'a>(&'a self, agent: &'a A, cx: &'a Session) -> CheckFuture<'a>;
}

/// [`ToolCheck`]'s marker for a plain `fn` returning `Result<(), E>`.
#[derive(Debug)]
pub struct SyncCheck<E>(PhantomData<E>);

/// [`ToolCheck`]'s marker for an `async fn` returning `Result<(), E>`.
#[derive(Debug)]
pub struct AsyncCheck<E>(PhantomData<E>);

#[diagnostic::do_not_recommend]
impl<A, E, F> ToolCheck<A, SyncCheck<E>> for F
where
    A: Sync,
    E: ToolError,
    F: Fn(&A, &Session) -> std::result::Result<(), E> + Sync,
{
    fn check<'a>(&'a self, agent: &'a A, cx: &'a Session) -> CheckFuture<'a> {
        Box::pin(async move { self(agent, cx).map_err(into_error) })
    }
}

/// An `async fn(&A, &Session) -> Result<(), E>` whose future is `Send`, for each lifetime
/// `'a` of its arguments.
pub trait AsyncCheckFn<'a, A: 'a, E>: Fn(&'a A, &'a Session) -> Self::Fut {
    /// The future it returns.
    type Fut: Future<Output = std::result::Result<(), E>> + Send + 'a;
}

impl<'a, A: 'a, E, F, Fut> AsyncCheckFn<'a, A, E> for F
where
    F: Fn(&'a A, &'a Session) -> Fut,
    Fut: Future<Output = std::result::Result<(), E>> + Send + 'a,
{
    type Fut = Fut;
}

#[diagnostic::do_not_recommend]
impl<A, E, F> ToolCheck<A, AsyncCheck<E>> for F
where
    E: ToolError,
    F: for<'a> AsyncCheckFn<'a, A, E>,
{
    fn check<'a>(&'a self, agent: &'a A, cx: &'a Session) -> CheckFuture<'a> {
        let check = self(agent, cx);
        Box::pin(async move { check.await.map_err(into_error) })
    }
}

/// The check of one call, as the lifecycle runs it: nothing happens until it is awaited. The
/// expansion spans this call at the author's `check = …` path, the only place that requires
/// [`ToolCheck`], so a function that does not fit is reported there, once.
pub fn run_check<'a, A, M, F>(check: &'a F, agent: &'a A, cx: &'a Session) -> CheckFuture<'a>
where
    F: ToolCheck<A, M>,
{
    check.check(agent, cx)
}

/// The check of a tool without `check = …`: always passes.
pub fn no_check() -> std::future::Ready<Result<()>> {
    std::future::ready(Ok(()))
}
