//! The properties checked after every run; a violation panics with what was wrong and the
//! transcript, which libFuzzer reports as a crash.
//!
//! 1. `serve` returned within the time limit (no hang), with `Ok(())` (the harness's reader
//!    and writer never fail), and the agent had been dropped by then (`serve`'s contract).
//! 2. The output is a sequence of `\n`-terminated lines, each one JSON-RPC 2.0 object:
//!    `"jsonrpc": "2.0"`, and either a request/notification (`method` a string; no `result`
//!    or `error`; a request's `id` an integer, unique among the agent's requests) or a response
//!    (an `id`, exactly one of `result` and `error`, an `error` being `{code: int, message:
//!    string, …}`).
//! 3. Responses match the input: a response's id (other than `null`) is one the input used;
//!    an id used on one input line only is answered at most once; and a well-formed request
//!    (`"jsonrpc":"2.0"`, a string `method`, a string or integer `id`, `params` absent or an
//!    object or array) whose id is used on one input line only is answered exactly once
//!    (unless the line may be longer than the connection's line limit).
//!
//! Input lines are read as the runtime reads them (split at `\n`, ASCII whitespace trimmed,
//! the same `serde_json` machinery with borrowed raw values, ids as `schema::RequestId`), so
//! these properties do not depend on guesses about how an odd line is classified.

use std::collections::HashMap;
use std::fmt;

use acp::schema::RequestId;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::Execution;

/// Panics if `execution` breaks one of the properties (see the module docs).
pub fn check(execution: &Execution) {
    if let Err(why) = violations(execution) {
        panic!("property violated: {why}\n{}", execution.transcript());
    }
}

/// The first property `execution` breaks, if any.
pub fn violations(execution: &Execution) -> Result<(), String> {
    match &execution.served {
        None => {
            return Err(format!(
                "`serve` did not return within {:?} (virtual time, beside its client's sleeps): a hang",
                crate::TIME_LIMIT
            ));
        }
        Some(Err(e)) => return Err(format!("`serve` returned an error: {e}")),
        Some(Ok(())) => {}
    }
    if execution.agent_alive_after_serve {
        return Err("the agent was still alive when `serve` returned".into());
    }
    let output = check_output(&execution.output)?;
    check_ids(&execution.input, &output, execution.max_line_bytes)
}

/// What the output says about ids.
#[derive(Default, Debug)]
pub struct Output {
    /// Responses (to the client's requests) per id.
    pub responses: HashMap<RequestId, usize>,
    /// The agent's requests to the client: id and method, in order.
    pub requests: Vec<(i64, String)>,
}

/// Checks property 2 and collects the ids of the output.
pub fn check_output(output: &[u8]) -> Result<Output, String> {
    let mut seen = Output::default();
    if output.is_empty() {
        return Ok(seen);
    }
    let Some(body) = output.strip_suffix(b"\n") else {
        return Err(
            "the output does not end with `\\n` (a frame was cut or not terminated)".into(),
        );
    };
    for (n, line) in body.split(|b| *b == b'\n').enumerate() {
        let frame = |why: String| {
            format!(
                "output frame {n} {why}: {}",
                String::from_utf8_lossy(&line[..line.len().min(300)])
            )
        };
        if line.is_empty() {
            return Err(frame("is an empty line".into()));
        }
        let value: Value =
            serde_json::from_slice(line).map_err(|e| frame(format!("is not valid JSON ({e})")))?;
        let Value::Object(obj) = &value else {
            return Err(frame("is not a JSON object".into()));
        };
        if obj.get("jsonrpc") != Some(&Value::from("2.0")) {
            return Err(frame("lacks `\"jsonrpc\": \"2.0\"`".into()));
        }
        if let Some(method) = obj.get("method") {
            if !method.is_string() {
                return Err(frame("has a `method` that is not a string".into()));
            }
            if obj.contains_key("result") || obj.contains_key("error") {
                return Err(frame("has a `method` and a `result` or `error`".into()));
            }
            if let Some(params) = obj.get("params")
                && !(params.is_object() || params.is_array())
            {
                return Err(frame(
                    "has `params` that are neither an object nor an array".into(),
                ));
            }
            if let Some(id) = obj.get("id") {
                let Some(id) = id.as_i64() else {
                    return Err(frame(
                        "is a request of the agent whose id is not an integer".into(),
                    ));
                };
                if seen.requests.iter().any(|(other, _)| *other == id) {
                    return Err(frame(format!(
                        "reuses the id {id} of an earlier request of the agent"
                    )));
                }
                seen.requests
                    .push((id, method.as_str().unwrap_or_default().to_owned()));
            }
            continue;
        }
        let Some(id) = obj.get("id") else {
            return Err(frame("has neither a `method` nor an `id`".into()));
        };
        let id: RequestId = serde_json::from_value(id.clone()).map_err(|_| {
            frame("is a response whose id is not a string, an integer or null".into())
        })?;
        match (obj.get("result"), obj.get("error")) {
            (Some(_), None) => {}
            (None, Some(error)) => {
                let ok = error.as_object().is_some_and(|e| {
                    e.get("code").is_some_and(Value::is_i64)
                        && e.get("message").is_some_and(Value::is_string)
                });
                if !ok {
                    return Err(frame(
                        "is a response whose `error` is not {code: integer, message: string}"
                            .into(),
                    ));
                }
            }
            (Some(_), Some(_)) => {
                return Err(frame("is a response with both `result` and `error`".into()));
            }
            (None, None) => {
                return Err(frame(
                    "is a response with neither `result` nor `error`".into(),
                ));
            }
        }
        *seen.responses.entry(id).or_default() += 1;
    }
    Ok(seen)
}

/// The keys the runtime reads from a message; any other key is skipped as it skips it.
const KNOWN: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];

/// A message's known keys with their raw values, in order, duplicates kept.
struct Fields<'a>(Vec<(String, &'a RawValue)>);

impl<'de> serde::Deserialize<'de> for Fields<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fields<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut fields = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if KNOWN.contains(&key.as_str()) {
                        fields.push((key, map.next_value::<&RawValue>()?));
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(Fields(fields))
            }
        }
        d.deserialize_map(V)
    }
}

/// What one input line says about ids.
#[derive(Debug, Default)]
struct InputLine {
    /// The ids the runtime may answer this line with (other than `null`).
    ids: Vec<RequestId>,
    /// The id of a well-formed request, which must be answered.
    request: Option<RequestId>,
}

fn read_line(line: &[u8]) -> InputLine {
    let mut out = InputLine::default();
    if line.first() != Some(&b'{') {
        return out;
    }
    let Ok(Fields(fields)) = serde_json::from_slice::<Fields<'_>>(line) else {
        return out;
    };
    let get = |key: &str| -> Vec<&RawValue> {
        fields
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| *v)
            .collect()
    };
    for raw in get("id") {
        if let Ok(id) = serde_json::from_str::<RequestId>(raw.get())
            && id != RequestId::Null
        {
            out.ids.push(id);
        }
    }
    let duplicates = KNOWN.iter().any(|k| get(k).len() > 1);
    if duplicates || out.ids.len() != 1 {
        return out;
    }
    let jsonrpc_ok = get("jsonrpc").first().map(|r| r.get()) == Some("\"2.0\"");
    let method_ok = get("method")
        .first()
        .is_some_and(|r| serde_json::from_str::<String>(r.get()).is_ok());
    let params_ok = get("params")
        .first()
        .is_none_or(|r| matches!(r.get().as_bytes().first(), Some(b'{' | b'[')));
    // Skipped values (unknown keys) are not checked for UTF-8 by serde_json; whether the
    // runtime rejects such a line whole is its business, so it is not required to be answered.
    let utf8 = std::str::from_utf8(line).is_ok();
    if jsonrpc_ok && method_ok && params_ok && utf8 {
        out.request = Some(out.ids[0].clone());
    }
    out
}

/// Checks property 3.
fn check_ids(input: &[u8], output: &Output, max_line: usize) -> Result<(), String> {
    let mut used: HashMap<RequestId, usize> = HashMap::new();
    let mut requests = Vec::new();
    for line in input.split(|b| *b == b'\n') {
        let line = line.trim_ascii();
        if line.is_empty() {
            continue;
        }
        let mut read = read_line(line);
        if line.len() + 2 >= max_line {
            // Possibly skipped as too long, and answered with a null id.
            read.request = None;
        }
        let mut ids = read.ids;
        ids.sort();
        ids.dedup();
        for id in ids {
            *used.entry(id).or_default() += 1;
        }
        requests.extend(read.request);
    }
    for (id, answers) in &output.responses {
        if *id == RequestId::Null {
            continue;
        }
        match used.get(id).copied().unwrap_or(0) {
            0 => return Err(format!("a response to id {id}, which no input line used")),
            1 if *answers > 1 => {
                return Err(format!(
                    "{answers} responses to id {id}, which one input line used"
                ));
            }
            _ => {}
        }
    }
    for id in requests {
        if used.get(&id) == Some(&1) && !output.responses.contains_key(&id) {
            return Err(format!("the request with id {id} was never answered"));
        }
    }
    Ok(())
}
