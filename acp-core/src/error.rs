//! The one error type of the crate, [`Error`], and its mapping to JSON-RPC errors.

use std::borrow::Cow;

use crate::schema;

/// The result type of every fallible `acp` operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while serving an agent.
///
/// Authors match on the variants that carry meaning for their logic
/// ([`Error::Cancelled`], [`Error::PermissionDenied`], [`Error::Unsupported`],
/// [`Error::Refused`]) and propagate the rest with `?`.
///
/// ```
/// # async fn demo(cx: &acp_core::Session) -> acp_core::Result<()> {
/// match cx.fs().read_text_file("notes.md").await {
///     Ok(text) => cx.message(text).await?,
///     Err(e) if e.is_not_found() => cx.message("no notes yet").await?,
///     Err(acp_core::Error::Unsupported(cap)) => cx.message(format!("the editor has no {cap}")).await?,
///     Err(e) => return Err(e),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The prompt turn was cancelled by the client (`session/cancel`) or the connection closed.
    ///
    /// Returning it (or any error) from a cancelled turn answers `stopReason: "cancelled"`.
    #[error("the prompt turn was cancelled")]
    Cancelled,
    /// The user rejected a permission request.
    #[error("permission denied by the user")]
    PermissionDenied,
    /// The client did not advertise the capability this call needs; nothing was sent.
    ///
    /// The payload names the capability as the protocol spells it, e.g. `fs.readTextFile`.
    #[error("the client does not support `{0}` (it did not advertise that capability)")]
    Unsupported(&'static str),
    /// A JSON-RPC error: received from the client, or to be sent to it as is.
    #[error("{message} (JSON-RPC error {code})")]
    Rpc {
        /// The JSON-RPC error code, e.g. `-32602`.
        code: i32,
        /// A human-readable description.
        message: String,
        /// Optional structured details.
        data: Option<serde_json::Value>,
    },
    /// The client answered one of the agent's requests (`terminal/create`,
    /// `fs/read_text_file`, `session/request_permission`, an extension request…) with a
    /// JSON-RPC error instead of doing it: it refused, or it tried and failed.
    ///
    /// Editors refuse requests they advertised: a terminal the user's settings forbid, a
    /// command a policy denies (acpx answers `terminal/create` with an error unless the user
    /// approves it), a write to a read-only buffer. Match it where you have a fallback, and
    /// tell the user instead of failing the turn:
    ///
    /// ```
    /// # async fn demo(cx: &acp_core::Session) -> acp_core::Result<()> {
    /// match cx.terminal().create("cargo", ["test"]).await {
    ///     Ok(terminal) => {
    ///         terminal.wait_for_exit().await?;
    ///     }
    ///     // Says what the editor said, e.g. "the client refused `terminal/create`: Internal
    ///     // error: Permission denied for terminal/create (JSON-RPC error -32603)".
    ///     Err(refused @ acp_core::Error::Refused { .. }) => {
    ///         cx.message(format!("I can't run the tests here ({refused}): run `cargo test` yourself."))
    ///             .await?;
    ///     }
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// The code says why only when the client uses a meaningful one (`-32002` for a missing
    /// file, see [`Error::is_not_found`]); most refusals come as `-32603`. Clients built on
    /// the official TypeScript SDK answer `Internal error` and put the reason in
    /// `data.details`: the message of this error shows it, so formatting the error (as above)
    /// tells the user what the editor said.
    ///
    /// Propagated with `?`, it is answered as `-32603 Internal error` naming the client's
    /// error: the client's code is never passed on as the code of the agent's own answer
    /// (a client answering `-32601` to a permission request must not make `session/prompt`
    /// look like a method the agent lacks).
    #[error(
        "the client refused `{method}`: {message}{} (JSON-RPC error {code})",
        details(.data.as_deref())
    )]
    Refused {
        /// The method of the agent's request, e.g. `terminal/create`.
        method: String,
        /// The client's error code, e.g. `-32002` for a missing file.
        code: i32,
        /// The client's description.
        message: String,
        /// The client's structured details, if any.
        data: Option<Box<serde_json::Value>>,
    },
    /// The client broke the protocol: an answer to one of the agent's requests that is not
    /// a well-formed JSON-RPC response (both `result` and `error`, neither, a malformed
    /// `error`), or whose `result` does not match the method's schema.
    #[error("the client broke the protocol: {0}")]
    Protocol(String),
    /// A path handed to the client's file system lies outside the session's directories
    /// (its `cwd` and the client's `additionalDirectories`); nothing was sent. To reach it
    /// anyway, go through [`Fs::unrestricted`](crate::session::Fs::unrestricted).
    #[error("`{}` is outside the session's directories ({roots})", path.display())]
    OutsideRoots {
        /// The path, made absolute and normalized.
        path: std::path::PathBuf,
        /// The session's directories, for the message.
        roots: String,
    },
    /// Parameters or arguments that do not match what was expected.
    ///
    /// Sent to the client as `-32602 Invalid params`.
    #[error("{0}")]
    InvalidParams(String),
    /// An update was sent through a [`Session`](crate::Session) handle whose prompt turn has
    /// already been answered; the protocol forbids updates after the answer, so it was dropped.
    #[error("the prompt turn has ended; updates after its answer are not allowed")]
    TurnEnded,
    /// The connection to the client is closed.
    #[error("the connection to the client is closed")]
    ConnectionClosed,
    /// The session was closed (`session/close`, `session/delete`, or reopened by a
    /// `session/load`) while a handle of it was kept: nothing more can be sent for it.
    #[error("the session is closed")]
    SessionClosed,
    /// The user must authenticate first (one of the agent's `authMethods`).
    ///
    /// Sent to the client as `-32000 Authentication required`, which tells it to offer the
    /// authentication methods. The runtime answers it for `session/new`, `session/load` and
    /// `session/resume` while the agent says it is not authenticated; an agent may also
    /// return it from its own code.
    #[error("authentication required: authenticate with one of the agent's methods first")]
    AuthRequired,
    /// An I/O error: the agent's own (`?` on a `std::fs` or `tokio::fs` call), the
    /// connection's (reading the client's input, writing to it: the message says which), or
    /// the test client's (an agent binary that does not start). Its message shows the kind,
    /// as [`std::io::ErrorKind`] names it, and the error's own message:
    /// `I/O error (NotFound): No such file or directory (os error 2)`.
    #[error("I/O error ({kind:?}): {0}", kind = .0.kind())]
    Io(#[from] std::io::Error),
    /// JSON that could not be read or written in the agent's own code (`?` on a
    /// `serde_json` call). Answered as `-32603 Internal error`: it is the agent's fault, not
    /// the client's params (those are answered `-32602` by the runtime before the agent runs).
    #[error("JSON error: {0}")]
    Json(#[from] serde_json::Error),
    /// Anything else, with a message for the client and the logs.
    #[error("{0}")]
    Other(Cow<'static, str>),
}

impl Error {
    /// An [`Error::Other`] with the given message: the easiest way to fail a turn or a tool.
    pub fn msg(message: impl std::fmt::Display) -> Self {
        Error::Other(Cow::Owned(message.to_string()))
    }

    /// A JSON-RPC error with a code and message, sent to the client unchanged.
    pub fn rpc(code: i32, message: impl Into<String>) -> Self {
        Error::Rpc {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// `-32601 Method not found`, naming the method.
    pub fn method_not_found(method: &str) -> Self {
        Error::rpc(
            schema::ErrorCode::MethodNotFound.into(),
            format!("method not found: `{method}`"),
        )
    }

    /// An [`Error::Io`] of the same kind as `e`, its message saying what was being done
    /// (`writing to the client: Broken pipe (os error 32)`).
    pub(crate) fn io(doing: impl std::fmt::Display, e: std::io::Error) -> Self {
        Error::Io(std::io::Error::new(e.kind(), format!("{doing}: {e}")))
    }

    /// Whether this error means "the file or resource does not exist": the client answered
    /// `-32002 Resource not found` (as the spec says it should for a missing file), or an I/O
    /// error of kind `NotFound`. Decided by code and kind only, never by the message text.
    pub fn is_not_found(&self) -> bool {
        match self {
            Error::Rpc { code, .. } | Error::Refused { code, .. } => {
                *code == i32::from(schema::ErrorCode::ResourceNotFound)
            }
            Error::Io(e) => e.kind() == std::io::ErrorKind::NotFound,
            _ => false,
        }
    }

    /// Whether this error is [`Error::Cancelled`].
    pub fn is_cancelled(&self) -> bool {
        matches!(self, Error::Cancelled)
    }

    /// The JSON-RPC error object this error is answered with.
    pub fn to_rpc(&self) -> schema::Error {
        use schema::ErrorCode as C;
        match self {
            Error::Rpc {
                code,
                message,
                data,
            } => schema::Error::new(*code, message.clone()).data(data.clone()),
            Error::InvalidParams(m) => schema::Error::new(C::InvalidParams.into(), m.clone()),
            // The client's own code stays in the message (see `Error::Refused`).
            Error::Cancelled => schema::Error::new(C::RequestCancelled.into(), self.to_string()),
            Error::AuthRequired => schema::Error::new(C::AuthRequired.into(), self.to_string()),
            _ => schema::Error::new(C::InternalError.into(), self.to_string()),
        }
    }

    /// `-32603`, naming what panicked and the panic's message; also logs it.
    pub(crate) fn panicked(what: &str, panic: &(dyn std::any::Any + Send)) -> Self {
        let message = panic
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("unknown panic payload");
        tracing::error!("{what} panicked: {message}");
        Error::Rpc {
            code: schema::ErrorCode::InternalError.into(),
            message: format!("{what} panicked: {message}"),
            data: None,
        }
    }

    pub(crate) fn from_rpc(e: schema::Error) -> Self {
        Error::Rpc {
            code: e.code.into(),
            message: e.message,
            data: e.data,
        }
    }
}

/// `": <details>"` for a client error whose `data` carries a `details` string (what the
/// official TypeScript SDK answers for an exception in a handler), else nothing.
fn details(data: Option<&serde_json::Value>) -> String {
    match data.and_then(|d| d.get("details")).and_then(|d| d.as_str()) {
        Some(details) if !details.is_empty() => format!(": {details}"),
        _ => String::new(),
    }
}

impl From<String> for Error {
    fn from(message: String) -> Self {
        Error::Other(Cow::Owned(message))
    }
}

impl From<&'static str> for Error {
    fn from(message: &'static str) -> Self {
        Error::Other(Cow::Borrowed(message))
    }
}

/// An error and its sources, `: `-separated, each source left out when the text already says
/// it (the HTTP client's own message says little without them).
#[cfg(any(feature = "mcp-sse", feature = "llm", feature = "postgres"))]
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let part = e.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clients_error_code_is_never_the_code_of_our_answer() {
        let e = Error::Refused {
            method: "session/request_permission".into(),
            code: -32601,
            message: "Method not found".into(),
            data: None,
        };
        let answer = e.to_rpc();
        assert_eq!(i32::from(answer.code), -32603);
        assert!(answer.message.contains("-32601"), "{}", answer.message);
        assert!(answer.message.contains("session/request_permission"));
        let missing = Error::Refused {
            method: "fs/read_text_file".into(),
            code: -32002,
            message: "no such file".into(),
            data: None,
        };
        assert!(missing.is_not_found());
        assert_eq!(i32::from(missing.to_rpc().code), -32603);
    }

    #[test]
    fn a_refusal_names_the_method_and_what_the_client_said() {
        // What acpx answers `terminal/create` by default (a TypeScript SDK exception).
        let e = Error::Refused {
            method: "terminal/create".into(),
            code: -32603,
            message: "Internal error".into(),
            data: Some(Box::new(
                serde_json::json!({"details": "Permission denied for terminal/create"}),
            )),
        };
        assert_eq!(
            e.to_string(),
            "the client refused `terminal/create`: Internal error: Permission denied for \
             terminal/create (JSON-RPC error -32603)"
        );
        assert_eq!(e.to_rpc().message, e.to_string());
        assert!(!e.is_not_found());
        // Data without a `details` string adds nothing.
        let plain = Error::Refused {
            method: "fs/write_text_file".into(),
            code: -32000,
            message: "read-only buffer".into(),
            data: Some(Box::new(serde_json::json!({"details": 7}))),
        };
        assert_eq!(
            plain.to_string(),
            "the client refused `fs/write_text_file`: read-only buffer (JSON-RPC error -32000)"
        );
    }

    #[test]
    fn not_found_is_decided_by_code_and_kind_not_by_message() {
        assert!(Error::rpc(-32002, "whatever the client says").is_not_found());
        assert!(Error::Io(std::io::ErrorKind::NotFound.into()).is_not_found());
        // A message that merely mentions it is not enough.
        assert!(!Error::rpc(-32603, "ENOENT: not found, no such file").is_not_found());
        assert!(!Error::msg("file not found").is_not_found());
    }

    #[test]
    fn an_io_error_shows_its_kind_and_message_and_does_not_blame_the_transport() {
        let missing = std::io::Error::from_raw_os_error(2); // ENOENT
        let shown = Error::from(missing).to_string();
        assert!(shown.starts_with("I/O error (NotFound): "), "{shown}");
        assert!(shown.contains("os error 2"), "{shown}");
        assert!(!shown.contains("transport"), "{shown}");
        let custom = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "read-only");
        assert_eq!(
            Error::from(custom).to_string(),
            "I/O error (PermissionDenied): read-only"
        );
        // With what was being done, the kind kept (and so `is_not_found`).
        let doing = Error::io(
            "starting the agent `x`",
            std::io::ErrorKind::NotFound.into(),
        );
        assert!(doing.is_not_found());
        assert_eq!(
            doing.to_string(),
            "I/O error (NotFound): starting the agent `x`: entity not found"
        );
        assert_eq!(i32::from(doing.to_rpc().code), -32603);
        assert_eq!(doing.to_rpc().message, doing.to_string());
    }

    #[test]
    fn an_authors_json_error_is_an_internal_error_not_invalid_params() {
        let e: Error = serde_json::from_str::<u32>("nope").unwrap_err().into();
        assert_eq!(i32::from(e.to_rpc().code), -32603);
        assert!(matches!(e, Error::Json(_)));
    }
}
