//! Classifying incoming lines: one line is one message, parsed without copying its params
//! ([`RawValue`]), so routing costs one pass over the bytes. A line that is not a message gets
//! the error the JSON-RPC spec names, and the id to answer it with when that id could be read.

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::Failed;
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
    /// A response to one of our requests: its `result`, or why there is none (the client's
    /// `error`, or what is malformed about the response). Never answered.
    Response {
        id: RequestId,
        result: Result<&'a RawValue, Failed>,
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
    #[serde(borrow, default, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    // `"error": null` beside a result (as JSON-RPC 1.0 peers write it) counts as no error.
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
    // JSON text is UTF-8: anything else is not JSON at all (serde_json would skip the bytes
    // of a string it ignores without checking them).
    let Ok(line) = std::str::from_utf8(line) else {
        return Err(Box::new(Rejected {
            id: RequestId::Null,
            error: schema::Error::new(
                ErrorCode::ParseError.into(),
                "parse error: the line is not valid UTF-8",
            ),
        }));
    };
    let first = line.bytes().find(|b| !b.is_ascii_whitespace());
    // serde would read a struct from an array too; only objects are messages.
    let parsed = match first {
        Some(b'{') => serde_json::from_str::<Envelope<'_>>(line).map_err(|e| e.to_string()),
        _ => Err(String::new()),
    };
    let env = match parsed {
        Ok(env) => env,
        Err(why) => {
            // Valid JSON of the wrong shape is an invalid request; anything else is a parse error.
            return Err(match serde_json::from_str::<serde::de::IgnoredAny>(line) {
                Ok(_) => invalid(
                    RequestId::Null,
                    match first {
                        Some(b'[') => {
                            "batch requests are not supported; send one message per line".to_owned()
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
            });
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

    // No method: a response, or nothing. A response is never answered, even a malformed one
    // (an error reply would reuse the id of one of our own requests, and could collide with
    // the client's ids): its failure goes to the request it names.
    let Some(id) = id else {
        return Err(invalid(
            RequestId::Null,
            "a message needs a `method` (request or notification) or an `id` (response)",
        ));
    };
    let malformed = |why: &str| {
        Ok(Incoming::Response {
            id: id.clone(),
            result: Err(Failed::Malformed(why.to_owned())),
        })
    };
    match (env.result, env.error) {
        (Some(result), None) => Ok(Incoming::Response {
            id,
            result: Ok(result),
        }),
        (None, Some(error)) => match serde_json::from_str::<schema::Error>(error.get()) {
            Ok(error) => Ok(Incoming::Response {
                id,
                result: Err(Failed::Error(error)),
            }),
            Err(_) => malformed("`error` is not a JSON-RPC error object"),
        },
        (Some(_), Some(_)) => malformed("it has both `result` and `error`"),
        (None, None) => malformed("it has neither `result` nor `error`"),
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
        assert_eq!(code(r#"{"jsonrpc":"2.0"}"#), (-32600, RequestId::Null));
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":"m","method":null}"#),
            (-32600, RequestId::Str("m".into()))
        );
    }

    #[test]
    fn a_line_that_is_not_utf8_is_a_parse_error() {
        // Inside a field the envelope ignores, where serde_json would not look at the bytes.
        let line = b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"x\":\"\xff\xfe\"}";
        let r = parse(line).expect_err("not UTF-8");
        assert_eq!(i32::from(r.error.code), -32700);
        assert_eq!(r.id, RequestId::Null);
    }

    #[test]
    fn a_malformed_response_is_not_rejected_but_fails_the_request_it_names() {
        let failure = |line: &str| match parse(line.as_bytes()) {
            Ok(Incoming::Response {
                id: RequestId::Number(7),
                result: Err(Failed::Malformed(why)),
            }) => why,
            other => panic!("{line}: {other:?}"),
        };
        assert!(failure(r#"{"jsonrpc":"2.0","id":7}"#).contains("neither"));
        assert!(
            failure(r#"{"jsonrpc":"2.0","id":7,"result":1,"error":{"code":1,"message":"m"}}"#)
                .contains("both")
        );
        assert!(failure(r#"{"jsonrpc":"2.0","id":7,"error":"boom"}"#).contains("error object"));
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
            Incoming::Response { result: Err(Failed::Error(e)), .. } if e.message == "boom"
        ));
    }

    #[test]
    fn params_errors_name_the_field() {
        let raw = RawValue::from_string(r#"{"cwd":"/"}"#.into()).unwrap();
        let err = params::<schema::PromptRequest>("example/prompt", Some(&raw)).unwrap_err();
        assert_eq!(i32::from(err.code), -32602);
        assert!(err.message.contains("sessionId"), "{}", err.message);
    }

    #[test]
    fn params_errors_name_a_wrongly_typed_field() {
        let raw = RawValue::from_string(r#"{"cwd":"/","mcpServers":"none"}"#.into()).unwrap();
        let err = params::<schema::NewSessionRequest>("example/new", Some(&raw)).unwrap_err();
        assert!(
            err.message.contains("field `mcpServers`"),
            "{}",
            err.message
        );
        let raw = RawValue::from_string(r#"{"sessionId":"s","prompt":[{"type":"text"}]}"#.into())
            .unwrap();
        let err = params::<schema::PromptRequest>("example/prompt", Some(&raw)).unwrap_err();
        assert!(err.message.contains("prompt[0]"), "{}", err.message);
    }

    /// Random bytes and mangled messages: every line is classified or rejected, never a panic.
    #[test]
    fn arbitrary_lines_never_panic() {
        let seeds: [&[u8]; 5] = [
            br#"{"jsonrpc":"2.0","id":1,"method":"example/prompt","params":{"sessionId":"s","prompt":[]}}"#,
            br#"{"jsonrpc":"2.0","id":"x","result":{"outcome":{"outcome":"cancelled"}}}"#,
            br#"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"m","data":[1]}}"#,
            br#"{"jsonrpc":"2.0","method":"example/cancel","params":{"sessionId":"s"}}"#,
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
                    let _ = params::<schema::PromptRequest>("example/prompt", Some(p));
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
