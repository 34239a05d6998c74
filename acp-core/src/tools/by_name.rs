//! Calls by name with JSON arguments (as a model makes them): every argument problem collected
//! into one message for the model, and the outcome mapped back to [`ToolOutput`].

use std::any::Any;
use std::future::Future;
use std::pin::Pin;

use super::ToolOutput;
use super::checks::{ArgDeserialize, Ret, ToolError};
use super::lifecycle::start;
use super::spec::ToolSpec;
use crate::session::Session;
use crate::{Error, Result};

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
        // A tool the client cannot run fails before anything is shown.
        super::spec::check_requirements(self.spec.requires, cx)?;
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
        return Error::InvalidParams(format!("no tool named `{name}`: this agent has no tools"));
    }
    Error::InvalidParams(format!(
        "no tool named `{name}`; the tools are: {}",
        tools.join(", ")
    ))
}
