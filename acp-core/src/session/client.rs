//! The client as a whole ([`Client`]): what it said in `initialize`, whether it authenticated,
//! its sessions, and the agent's own extension requests and notifications to it; and the
//! request being handled ([`Request`]): its `_meta`, and the `_meta` of its answer.

use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use super::{Connection, Session};
use crate::peer::Frame;
use crate::schema::{ClientCapabilities, Implementation, Meta, SessionId};
use crate::sync::lock;
use crate::{Error, Result};

/// The request an agent's code is handling: the `_meta` the client sent with it, and the
/// `_meta` to send with its answer.
#[derive(Debug, Default)]
pub(crate) struct Request {
    meta: Option<Meta>,
    answer_meta: Mutex<Option<Meta>>,
}

impl Request {
    /// A request the client sent with `meta`.
    pub fn new(meta: Option<Meta>) -> Arc<Self> {
        Arc::new(Request {
            meta,
            answer_meta: Mutex::new(None),
        })
    }

    pub fn meta(&self) -> Option<&Meta> {
        self.meta.as_ref()
    }

    pub fn set_answer_meta(&self, meta: Meta) {
        *lock(&self.answer_meta) = Some(meta);
    }

    /// The `_meta` the agent set for the answer, taken.
    pub fn take_answer_meta(&self) -> Option<Meta> {
        lock(&self.answer_meta).take()
    }
}

/// The client (the editor) this agent is connected to, beyond any one session: what it said
/// in `initialize`, whether it authenticated, and the agent's own extension requests and
/// notifications to it.
///
/// Handed to the methods that are not about one session (`authenticate`, `logout`,
/// extension methods), and reachable from any session with [`Session::client`].
///
/// ```no_run
/// # async fn demo(cx: &acp_core::Session) -> acp_core::Result<()> {
/// let client = cx.client();
/// if client.info().is_some_and(|i| i.name == "zed") {
///     let buffers: serde_json::Value = client
///         .ext_request("_zed.dev/workspace/buffers", &serde_json::json!({"language": "rust"}))
///         .await?;
/// }
/// client.ext_notify("_my-agent/indexed", &serde_json::json!({"files": 120})).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    pub(crate) conn: Arc<Connection>,
    pub(crate) request: Option<Arc<Request>>,
    /// Cancels the agent's requests (a client reached from a prompt turn: the turn's cancel).
    pub(crate) cancel: Option<CancellationToken>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("info", &self.info())
            .finish_non_exhaustive()
    }
}

impl Client {
    pub(crate) fn new(conn: Arc<Connection>, request: Option<Arc<Request>>) -> Self {
        Client {
            conn,
            request,
            cancel: None,
        }
    }

    /// What the client said it supports in `initialize`.
    pub fn capabilities(&self) -> &ClientCapabilities {
        self.conn.client_capabilities()
    }

    /// The client's name, title and version (`clientInfo`), if it sent them.
    pub fn info(&self) -> Option<&Implementation> {
        self.conn.client_info()
    }

    /// The user the network service serves this connection as, when it names users
    /// (`net::HttpConfig::bearer_tokens`, `net::HttpConfig::users`, `$ACP_TOKENS`); `None`
    /// over stdio and with a single token. An agent that keeps its own history (no store)
    /// checks with it that a session it loads is the user's: the runtime refuses another
    /// user's session only where it knows the owner (the store's, or one opened on this
    /// server).
    pub fn user(&self) -> Option<&str> {
        self.conn.user()
    }

    /// Whether the client completed `authenticate` on this connection (and did not `logout`
    /// since).
    pub fn has_authenticated(&self) -> bool {
        self.conn.is_authenticated()
    }

    /// A handle of the session `id`, if it is open on this connection: updates sent through
    /// it are not part of any prompt turn (see [`Session::detached`]).
    pub fn session(&self, id: &SessionId) -> Option<Session> {
        self.conn
            .sessions()
            .get(id)
            .map(|state| Session::new(state, None))
    }

    /// The `_meta` of the request being handled, if the client sent one.
    pub fn request_meta(&self) -> Option<&Meta> {
        self.request.as_ref().and_then(|r| r.meta())
    }

    /// Sets the `_meta` of the answer to the request being handled (`authenticate`,
    /// `logout`); does nothing outside a request.
    pub fn set_answer_meta(&self, meta: Meta) {
        if let Some(request) = &self.request {
            request.set_answer_meta(meta);
        }
    }

    /// Sends the client an extension request (a method starting with `_`, e.g.
    /// `_zed.dev/workspace/buffers`) and returns its result. A client that does not know the
    /// method answers `-32601`: [`Error::Refused`], with that code. Reached from a prompt
    /// turn, the request fails with [`Error::Cancelled`] when the turn is cancelled.
    pub async fn ext_request<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<R> {
        extension_name(method)?;
        let session = named_session(params);
        self.conn
            .request(method, params, self.cancel.as_ref(), session.as_ref())
            .await
    }

    /// Sends the client an extension notification (a method starting with `_`); clients
    /// ignore the ones they do not know.
    pub async fn ext_notify<P: Serialize>(&self, method: &str, params: &P) -> Result<()> {
        extension_name(method)?;
        let bytes = crate::jsonrpc::encode_notification(method, params)?;
        let frame = match named_session(params) {
            Some(session) => Frame::new(bytes, None).of_session(&session),
            None => Frame::new(bytes, None),
        };
        self.conn.peer().send(frame).await
    }
}

/// The session an extension message's params name (`sessionId`), if any: the message is
/// that session's (a network connection delivers it on the session's stream).
fn named_session(params: &impl Serialize) -> Option<SessionId> {
    let params = serde_json::to_value(params).ok()?;
    let session = params.get("sessionId")?.as_str()?;
    Some(SessionId::new(session.to_owned()))
}

/// Extension methods start with `_` (the protocol reserves every other name).
pub(crate) fn extension_name(method: &str) -> Result<()> {
    if method.starts_with('_') && method.len() > 1 {
        Ok(())
    } else {
        Err(Error::InvalidParams(format!(
            "`{method}` is not an extension method: their names start with `_`, e.g. `_my-agent/{}`",
            method.trim_start_matches('_')
        )))
    }
}
