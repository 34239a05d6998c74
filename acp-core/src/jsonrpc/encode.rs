//! Encoding outgoing frames: each is serialized once into a byte buffer ending in `\n`, which
//! the writer coalesces with its neighbours.

use serde::Serialize;

use crate::schema::{self, ErrorCode, RequestId};

const VERSION: &str = "2.0";

#[derive(Serialize)]
struct OutRequest<'a, P> {
    jsonrpc: &'static str,
    id: i64,
    method: &'a str,
    params: &'a P,
}

#[derive(Serialize)]
struct OutNotification<'a, P> {
    jsonrpc: &'static str,
    method: &'a str,
    params: &'a P,
}

#[derive(Serialize)]
struct OutResult<'a, R> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    result: &'a R,
}

#[derive(Serialize)]
struct OutError<'a> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    error: &'a schema::Error,
}

fn encode(value: &impl Serialize) -> serde_json::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(192);
    serde_json::to_writer(&mut buf, value)?;
    buf.push(b'\n');
    Ok(buf)
}

/// A request to the client; `Err` if `params` cannot be serialized.
pub(crate) fn encode_request(
    id: i64,
    method: &str,
    params: &impl Serialize,
) -> serde_json::Result<Vec<u8>> {
    encode(&OutRequest {
        jsonrpc: VERSION,
        id,
        method,
        params,
    })
}

/// A notification to the client; `Err` if `params` cannot be serialized.
pub(crate) fn encode_notification(
    method: &str,
    params: &impl Serialize,
) -> serde_json::Result<Vec<u8>> {
    encode(&OutNotification {
        jsonrpc: VERSION,
        method,
        params,
    })
}

/// The answer to request `id`. A result that cannot be serialized (an author's value with a
/// failing `Serialize`) answers the same id with `-32603` instead, so the request never goes
/// unanswered.
pub(crate) fn encode_result(id: &RequestId, result: &impl Serialize) -> Vec<u8> {
    match encode(&OutResult {
        jsonrpc: VERSION,
        id,
        result,
    }) {
        Ok(bytes) => bytes,
        Err(e) => {
            tracing::error!("the answer to request {id} could not be serialized: {e}");
            let error = schema::Error::new(
                ErrorCode::InternalError.into(),
                format!("the agent's answer could not be serialized: {e}"),
            );
            encode_error(id, &error)
        }
    }
}

/// An error answer to request `id`.
pub(crate) fn encode_error(id: &RequestId, error: &schema::Error) -> Vec<u8> {
    encode(&OutError {
        jsonrpc: VERSION,
        id,
        error,
    })
    // An error object of a code, a string and JSON data always serializes.
    .unwrap_or_else(|_| {
        let mut bytes = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"unserializable error"}}"#.to_vec();
        bytes.push(b'\n');
        bytes
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_single_lines() {
        let frame =
            encode_notification("session/update", &serde_json::json!({"text": "a\nb"})).unwrap();
        assert_eq!(frame.iter().filter(|b| **b == b'\n').count(), 1);
        assert!(frame.ends_with(b"\n"));
    }

    struct Unserializable;

    impl Serialize for Unserializable {
        fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("no way"))
        }
    }

    #[test]
    fn an_answer_that_cannot_be_serialized_is_an_internal_error_for_the_same_id() {
        let id = RequestId::Number(7);
        let frame = encode_result(&id, &Unserializable);
        let v: serde_json::Value = serde_json::from_slice(&frame).unwrap();
        assert_eq!(v["id"], 7);
        assert_eq!(v["error"]["code"], -32603);
        assert!(v["error"]["message"].as_str().unwrap().contains("no way"));
        assert!(v.get("method").is_none());
    }
}
