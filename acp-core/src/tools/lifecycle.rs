//! The lifecycle every tool call runs: `tool_call` (pending) → the tool's check, which may
//! refuse the call before the user is asked → permission, remembering "always" answers per
//! session → `in_progress` → the body, raced with the turn's cancellation and guarded against
//! panics → `completed` with the output, or `failed` with the error.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;

use futures_util::FutureExt;

use super::checks::Ret;
use super::spec::{
    ALLOW_ALWAYS, ALLOW_ONCE, REJECT_ALWAYS, REJECT_ONCE, ToolInput, ToolSpec, check_requirements,
};
use super::title::render_title;
use crate::schema::{
    PermissionOption, PermissionOptionKind, ToolCallLocation, ToolCallUpdate, ToolCallUpdateFields,
};
use crate::session::{Session, ToolCallGuard, in_tool_call};
use crate::{Error, Result};

/// Runs one tool call: announce (pending) → the tool's `check` (an error refuses the call:
/// it fails, nothing more is asked or run) → permission if the tool asks → in progress →
/// the body, raced with the turn's cancellation and guarded against panics → completed
/// with the output, or failed with the error. Typed calls and calls by name both come here,
/// so the order is the same for both.
pub async fn run_tool<R, C, F>(
    cx: &Session,
    spec: &ToolSpec,
    ret: Ret<R>,
    input: ToolInput,
    check: C,
    body: F,
) -> R
where
    C: Future<Output = Result<()>>,
    F: Future<Output = R>,
{
    match lifecycle(cx, spec, ret, input, check, body).await {
        Ok(value) => value,
        Err(e) => (ret.from_error)(e),
    }
}

/// `Ok` holds whatever the body returned (success or the author's error, already
/// reported); `Err` is an error of the lifecycle itself, or the check's refusal.
async fn lifecycle<R, C, F>(
    cx: &Session,
    spec: &ToolSpec,
    ret: Ret<R>,
    input: ToolInput,
    check: C,
    body: F,
) -> Result<R>
where
    C: Future<Output = Result<()>>,
    F: Future<Output = R>,
{
    cx.check_cancelled()?;
    check_requirements(spec.requires, cx)?;
    let raw = serde_json::Value::Object(input.raw);
    let call = start(cx, spec, raw.clone(), &input.locations).await?;
    let call = checked(cx, spec, call, check).await?;
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
    let body = AssertUnwindSafe(in_tool_call(&call, body)).catch_unwind();
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

/// Runs the tool's check (within the call, like its body), raced with the turn's cancellation
/// and guarded against panics. A refusal fails the call with the check's error and returns it.
async fn checked<C>(
    cx: &Session,
    spec: &ToolSpec,
    call: ToolCallGuard,
    check: C,
) -> Result<ToolCallGuard>
where
    C: Future<Output = Result<()>>,
{
    let check = AssertUnwindSafe(in_tool_call(&call, check)).catch_unwind();
    let (error, message) = tokio::select! {
        biased;
        outcome = check => match outcome {
            Ok(Ok(())) => return Ok(call),
            Ok(Err(e)) if cx.is_cancelled() => (e, "cancelled".to_owned()),
            Ok(Err(e)) => {
                let message = e.to_string();
                (e, message)
            }
            Err(panic) => {
                let what = format!("the check of the tool `{}`", spec.name);
                let error = Error::panicked(&what, panic.as_ref());
                let message = match &error {
                    Error::Rpc { message, .. } => message.clone(),
                    other => other.to_string(),
                };
                (error, message)
            }
        },
        () = cx.cancelled() => (Error::Cancelled, "cancelled".to_owned()),
    };
    let _ = call.fail(message).await;
    Err(error)
}

fn locations(cx: &Session, paths: &[PathBuf]) -> Vec<ToolCallLocation> {
    paths
        .iter()
        .map(|p| ToolCallLocation::new(cx.cwd().join(p)))
        .collect()
}

pub(crate) async fn start(
    cx: &Session,
    spec: &ToolSpec,
    raw: serde_json::Value,
    paths: &[PathBuf],
) -> Result<ToolCallGuard> {
    let mut call = cx
        .tool_call(render_title(spec.title, &raw))
        .name(spec.name)
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
    let mut fields = ToolCallUpdateFields::new()
        .title(render_title(spec.title, &raw))
        .kind(spec.kind)
        .raw_input(raw);
    if !paths.is_empty() {
        fields = fields.locations(locations(cx, paths));
    }
    ask_permission(cx, spec.permission_key(), call, fields).await
}

/// Asks the user whether tool call `call` (shown with `fields`) may run, or recalls the
/// "always" answer remembered under `key`; `Ok` means it may. Shared by every kind of tool
/// (the agent's own, the client's MCP servers').
pub(crate) async fn ask_permission(
    cx: &Session,
    key: String,
    call: &ToolCallGuard,
    fields: ToolCallUpdateFields,
) -> Result<()> {
    match cx.remembered_permission(&key) {
        Some(true) => return Ok(()),
        Some(false) => return Err(Error::PermissionDenied),
        None => {}
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
