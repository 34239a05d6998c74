//! Classifying incoming lines: one line is one message, parsed without copying its params
//! ([`RawValue`]), so routing costs one pass over the bytes. A line that is not a message gets
//! the error the JSON-RPC spec names, and the id to answer it with when that id could be read.

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use crate::schema::{self, ErrorCode, RequestId};

/// One classified incoming message, borrowing from the line it was read from.
#[derive(Debug)]
pub(crate) enum Incoming<'a> {
    /// A request: has an id and a method.
    Request {
        id: RequestId,
        method: String,
        params: Option<&'a RawValue>,
    },
    /// A notification: a method and no id; never answered.
    Notification {
        method: String,
        params: Option<&'a RawValue>,
    },
    /// A response to one of our requests.
    Response {
        id: RequestId,
        result: Result<&'a RawValue, schema::Error>,
    },
}

/// Why a line could not be classified, with the id to answer to when it could be read.
#[derive(Debug)]
pub(crate) struct Rejected {
    pub id: RequestId,
    pub error: schema::Error,
}

/// Deserializes a field that may be present with a `null` value into `Some(raw)`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

fn invalid(id: RequestId, why: impl Into<String>) -> Box<Rejected> {
    Box::new(Rejected {
        id,
        error: schema::Error::new(ErrorCode::InvalidRequest.into(), why.into()),
    })
}

/// Classifies one line (without its trailing newline).
pub(crate) fn parse(line: &[u8]) -> Result<Incoming<'_>, Box<Rejected>> {
    let first = line.iter().find(|b| !b.is_ascii_whitespace());
    // serde would read a struct from an array too; only objects are messages.
    let parsed = match first {
        Some(b'{') => serde_json::from_slice::<Envelope<'_>>(line).map_err(|e| e.to_string()),
        _ => Err(String::new()),
    };
    let env = match parsed {
        Ok(env) => env,
        Err(why) => {
            // Valid JSON of the wrong shape is an invalid request; anything else is a parse error.
            return Err(
                match serde_json::from_slice::<serde::de::IgnoredAny>(line) {
                    Ok(_) => invalid(
                        RequestId::Null,
                        match first {
                            Some(b'[') => {
                                "batch requests are not supported; send one message per line"
                                    .to_owned()
                            }
                            Some(b'{') => format!("not a JSON-RPC message: {why}"),
                            _ => "a JSON-RPC message must be a JSON object".to_owned(),
                        },
                    ),
                    Err(e) => Box::new(Rejected {
                        id: RequestId::Null,
                        error: schema::Error::new(
                            ErrorCode::ParseError.into(),
                            format!("parse error: {e}"),
                        ),
                    }),
                },
            );
        }
    };

    let id = match env.id {
        None => None,
        Some(raw) => match serde_json::from_str::<RequestId>(raw.get()) {
            Ok(id) => Some(id),
            Err(_) => {
                return Err(invalid(
                    RequestId::Null,
                    "`id` must be a string, an integer or null",
                ));
            }
        },
    };
    let answer_to = id.clone().unwrap_or(RequestId::Null);

    if env.jsonrpc.map(RawValue::get) != Some("\"2.0\"") {
        return Err(invalid(answer_to, "`jsonrpc` must be exactly \"2.0\""));
    }

    if let Some(method) = env.method {
        let Ok(method) = serde_json::from_str::<String>(method.get()) else {
            return Err(invalid(answer_to, "`method` must be a string"));
        };
        if let Some(p) = env.params
            && !matches!(p.get().as_bytes().first(), Some(b'{' | b'['))
        {
            return Err(invalid(answer_to, "`params` must be an object or an array"));
        }
        return Ok(match id {
            Some(id) => Incoming::Request {
                id,
                method,
                params: env.params,
            },
            None => Incoming::Notification {
                method,
                params: env.params,
            },
        });
    }

    match (id, env.result, env.error) {
        (Some(id), Some(result), None) => Ok(Incoming::Response {
            id,
            result: Ok(result),
        }),
        (Some(id), None, Some(error)) => match serde_json::from_str::<schema::Error>(error.get()) {
            Ok(error) => Ok(Incoming::Response {
                id,
                result: Err(error),
            }),
            Err(_) => Err(invalid(id, "`error` must be a JSON-RPC error object")),
        },
        (id, _, _) => Err(invalid(
            id.unwrap_or(RequestId::Null),
            "a message needs a `method` (request or notification) or an `id` with exactly one of `result` and `error` (response)",
        )),
    }
}

/// Deserializes a request's params into its schema type; the error names the offending field.
pub(crate) fn params<T: serde::de::DeserializeOwned>(
    method: &str,
    params: Option<&RawValue>,
) -> Result<T, schema::Error> {
    let raw = params.map_or("{}", RawValue::get);
    let mut de = serde_json::Deserializer::from_str(raw);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        // Name the field that is wrong, not only what was wrong with it.
        let path = e.path().to_string();
        let what = e.into_inner();
        let message = if path == "." {
            format!("invalid params for `{method}`: {what}")
        } else {
            format!("invalid params for `{method}`: field `{path}`: {what}")
        };
        schema::Error::new(ErrorCode::InvalidParams.into(), message)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(line: &str) -> (i32, RequestId) {
        let r = parse(line.as_bytes()).expect_err("should be rejected");
        (r.error.code.into(), r.id)
    }

    #[test]
    fn not_json_is_a_parse_error_with_null_id() {
        assert_eq!(code("{not json"), (-32700, RequestId::Null));
        assert_eq!(code(""), (-32700, RequestId::Null));
    }

    #[test]
    fn json_of_the_wrong_shape_is_an_invalid_request() {
        assert_eq!(code("[1,2]"), (-32600, RequestId::Null));
        assert_eq!(code("42"), (-32600, RequestId::Null));
        assert_eq!(
            code(r#"{"id":1,"method":"x"}"#),
            (-32600, RequestId::Number(1))
        );
        assert_eq!(
            code(r#"{"jsonrpc":"1.0","id":"a","method":"x"}"#),
            (-32600, RequestId::Str("a".into()))
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#),
            (-32600, RequestId::Null)
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":3,"method":7}"#),
            (-32600, RequestId::Number(3))
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":3,"method":"x","params":5}"#),
            (-32600, RequestId::Number(3))
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":4}"#),
            (-32600, RequestId::Number(4))
        );
    }

    #[test]
    fn requests_notifications_and_responses_are_told_apart() {
        match parse(br#"{"jsonrpc":"2.0","id":null,"method":"m","params":{"a":1}}"#).unwrap() {
            Incoming::Request { id, method, params } => {
                assert_eq!(id, RequestId::Null);
                assert_eq!(method, "m");
                assert_eq!(params.unwrap().get(), r#"{"a":1}"#);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","method":"n"}"#).unwrap(),
            Incoming::Notification { params: None, .. }
        ));
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":9,"result":null}"#).unwrap(),
            Incoming::Response { id: RequestId::Number(9), result: Ok(r) } if r.get() == "null"
        ));
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":9,"error":{"code":-32603,"message":"boom"}}"#).unwrap(),
            Incoming::Response { result: Err(e), .. } if e.message == "boom"
        ));
    }

    #[test]
    fn params_errors_name_the_field() {
        let raw = RawValue::from_string(r#"{"cwd":"/"}"#.into()).unwrap();
        let err = params::<schema::PromptRequest>("session/prompt", Some(&raw)).unwrap_err();
        assert_eq!(i32::from(err.code), -32602);
        assert!(err.message.contains("sessionId"), "{}", err.message);
    }

    #[test]
    fn params_errors_name_a_wrongly_typed_field() {
        let raw = RawValue::from_string(r#"{"cwd":"/","mcpServers":"none"}"#.into()).unwrap();
        let err = params::<schema::NewSessionRequest>("session/new", Some(&raw)).unwrap_err();
        assert!(
            err.message.contains("field `mcpServers`"),
            "{}",
            err.message
        );
        let raw = RawValue::from_string(r#"{"sessionId":"s","prompt":[{"type":"text"}]}"#.into())
            .unwrap();
        let err = params::<schema::PromptRequest>("session/prompt", Some(&raw)).unwrap_err();
        assert!(err.message.contains("prompt[0]"), "{}", err.message);
    }

    /// Random bytes and mangled messages: every line is classified or rejected, never a panic.
    #[test]
    fn arbitrary_lines_never_panic() {
        let seeds: [&[u8]; 5] = [
            br#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#,
            br#"{"jsonrpc":"2.0","id":"x","result":{"outcome":{"outcome":"cancelled"}}}"#,
            br#"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"m","data":[1]}}"#,
            br#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#,
            br#"[{"jsonrpc":"2.0"},null,1.5e400,"\ud800"]"#,
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..20_000 {
            let mut line = seeds[round % seeds.len()].to_vec();
            for _ in 0..=(next() % 4) {
                let at = (next() as usize) % (line.len() + 1);
                match next() % 3 {
                    0 if at < line.len() => {
                        line.remove(at);
                    }
                    1 => line.insert(at, (next() % 256) as u8),
                    _ => line.insert(at, b"{}[]\\\",:0"[(next() % 9) as usize]),
                }
            }
            match parse(&line) {
                Ok(
                    Incoming::Request {
                        params: Some(p), ..
                    }
                    | Incoming::Notification {
                        params: Some(p), ..
                    },
                ) => {
                    let _ = params::<schema::PromptRequest>("session/prompt", Some(p));
                }
                Ok(_) => {}
                Err(rejected) => assert!(
                    matches!(i32::from(rejected.error.code), -32700 | -32600),
                    "{:?}",
                    rejected.error
                ),
            }
        }
    }
}
