//! Routing, driven by one table ([`routes`]): each method the agent answers has one entry
//! naming its capability gate, whether it is answered inline on the reader's task or by a task
//! of its own, and its handler. A method with no entry, or whose gate the agent does not pass
//! (it does not advertise it), is answered `-32601`, before `initialize` too; a method it
//! answers, but `initialize`, is answered `-32600` before `initialize`.

/// The initial config option values (`configOptions`, Unstable) of `$req`, a request of
/// `$method` that opens a session, checked (`-32602` for an option given twice); none without
/// feature `unstable-session-options`, where requests have no such field.
macro_rules! initial_options {
    ($method:expr, $req:ident) => {{
        #[cfg(feature = "unstable-session-options")]
        let initial =
            crate::session::config::InitialOptions::checked($method, $req.config_options)?;
        #[cfg(not(feature = "unstable-session-options"))]
        let initial = crate::session::config::InitialOptions::default();
        initial
    }};
}

mod auth;

#[cfg(feature = "testing")]
pub(crate) use auth::TERMINAL_AUTH_META;
mod ext;
mod history;
mod lease;
mod open;
mod owner;
mod prompt;
#[cfg(feature = "llm-providers")]
mod providers;
mod queue;
mod routes;
mod sessions;
mod unstable;
#[cfg(feature = "v2")]
mod v2;
#[cfg(feature = "v2")]
mod v2_terminals;

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::value::RawValue;
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};

use crate::agent::Agent;
use crate::jsonrpc;
use crate::peer::{Admission, Dispatch, Frame, admitted};
use crate::protocol::methods;
use crate::schema::{self, ErrorCode, RequestId, SessionId};
use crate::session::{Connection, Settings};
use crate::turn::Turn;
use crate::{Error, Result};

/// How long handlers may take to finish once the client has closed the connection.
const SHUTDOWN_WAIT: Duration = Duration::from_millis(500);

/// What a route's handler returns: its answer now (inline), or the task that will answer.
type Routed<T> = std::result::Result<T, schema::Error>;

/// An inline handler: the frame of the answer to request `id`.
type InlineFn<A> = fn(&Router<A>, &RequestId, Option<&RawValue>) -> Routed<Vec<u8>>;

/// A spawned handler: the task that will answer request `id`.
type SpawnFn<A> = fn(&Router<A>, RequestId, Option<&RawValue>) -> Routed<BoxFuture<'static, ()>>;

/// How a route answers.
pub(crate) enum Handler<A> {
    /// On the reader's task, at once (it must not wait on the client).
    Inline(InlineFn<A>),
    /// Params checked (and any bookkeeping done) on the reader's task, then the returned future
    /// runs as its own task and sends the answer.
    Spawned(SpawnFn<A>),
}

/// What a method is called in each protocol version (schema-crate constants); none in a
/// version that does not have it.
#[derive(Clone, Copy)]
pub(crate) struct Names {
    v1: Option<&'static str>,
    #[cfg_attr(not(feature = "v2"), allow(dead_code))]
    v2: Option<&'static str>,
}

impl Names {
    /// A method of v1 only.
    pub const fn v1(name: &'static str) -> Self {
        Names {
            v1: Some(name),
            v2: None,
        }
    }

    /// A method of v2 only.
    #[cfg(feature = "v2")]
    pub const fn v2(name: &'static str) -> Self {
        Names {
            v1: None,
            v2: Some(name),
        }
    }

    /// A method both versions call `name`.
    pub const fn both(name: &'static str) -> Self {
        Names {
            v1: Some(name),
            v2: Some(name),
        }
    }

    /// Its name in `version`.
    pub fn of(&self, version: crate::protocol::Version) -> Option<&'static str> {
        match version {
            crate::protocol::Version::V1 => self.v1,
            #[cfg(feature = "v2")]
            crate::protocol::Version::V2 => self.v2,
        }
    }
}

/// One entry of the method table.
pub(crate) struct Route<A> {
    /// The method's names.
    pub names: Names,
    /// Whether this connection answers the method (e.g. the agent advertises the capability,
    /// or sessions are recorded).
    pub gate: fn(&Router<A>) -> bool,
    pub handler: Handler<A>,
}

/// Where a request goes: a route of the table, or an extension method the agent declares (its
/// name starts with `_`).
enum Target<'a, A> {
    Route(&'a Route<A>),
    Ext(&'static str),
}

/// One notification the runtime handles.
pub(crate) struct NotificationRoute<A> {
    pub method: &'static str,
    pub handler: fn(&Router<A>, Option<&RawValue>),
}

/// Routes one connection's requests and notifications to its agent.
pub(crate) struct Router<A> {
    pub agent: Arc<A>,
    pub conn: Arc<Connection>,
    tasks: TaskTracker,
    /// Running turns by the id of their `session/prompt`, for `$/cancel_request`.
    pub prompts: Arc<Mutex<HashMap<RequestId, Arc<Turn>>>>,
    routes: Vec<Route<A>>,
    notifications: Vec<NotificationRoute<A>>,
    /// The agent's modes and config options (also on the connection, for sessions).
    pub settings: Arc<Settings>,
}

impl<A: Agent> Router<A> {
    pub fn new(agent: Arc<A>, conn: Arc<Connection>, settings: Arc<Settings>) -> Self {
        Router {
            agent,
            conn,
            tasks: TaskTracker::new(),
            prompts: Arc::default(),
            routes: routes::requests(),
            notifications: routes::notifications(),
            settings,
        }
    }

    /// Waits up to `limit` for every handler (and so every running turn) to end on its own,
    /// taking no new ones: for a connection that keeps its turns after its client left.
    pub async fn finish(&self, limit: std::time::Duration) {
        self.tasks.close();
        if tokio::time::timeout(limit, self.tasks.wait())
            .await
            .is_err()
        {
            warn!(
                "turns left running by a departed client were still running after {limit:?}; cancelling them"
            );
        }
    }

    /// Waits (briefly) for running handlers once the client has gone.
    pub async fn shutdown(&self) {
        self.tasks.close();
        if tokio::time::timeout(SHUTDOWN_WAIT, self.tasks.wait())
            .await
            .is_err()
        {
            warn!("some handlers did not finish after the client closed the connection");
        }
    }

    /// Runs a handler's future as its own task, in flight until it ends; a panic in it
    /// answers `-32603`.
    fn spawn(&self, id: RequestId, fut: BoxFuture<'static, ()>, admission: Admission) {
        let peer = self.conn.peer().clone();
        self.tasks.spawn(admitted(admission, async move {
            if let Err(panic) = AssertUnwindSafe(fut).catch_unwind().await {
                let error = Error::panicked("the agent", panic.as_ref());
                let _ = peer
                    .send(
                        Frame::new(jsonrpc::encode_error(&id, &error.to_rpc()), None)
                            .answering(&id),
                    )
                    .await;
            }
        }));
    }
}

impl<A: Agent> Router<A> {
    /// Runs a notification's handler as a task of its own (tracked like the others); a panic
    /// in it is logged.
    fn spawn_notification(&self, fut: impl Future<Output = ()> + Send + 'static) {
        self.tasks.spawn(async move {
            if let Err(panic) = AssertUnwindSafe(fut).catch_unwind().await {
                Error::panicked("an extension notification handler", panic.as_ref());
            }
        });
    }
}

impl<A: Agent> Dispatch for Router<A> {
    fn request(
        &self,
        id: RequestId,
        method: &str,
        params: Option<&RawValue>,
        admission: Admission,
    ) {
        let peer = self.conn.peer();
        // The transport RFD's one exception: answered on the connection, not the session.
        if method == methods::SESSION_LOAD {
            peer.answer_on_connection(&id);
        }
        let version = self.conn.codec().version();
        let route =
            (self.routes.iter()).find(|r| r.names.of(version) == Some(method) && (r.gate)(self));
        let target = match route {
            Some(route) => Target::Route(route),
            None => match self.agent.ext_methods().iter().find(|m| **m == method) {
                Some(&method) => Target::Ext(method),
                // Not answered whenever it comes, before `initialize` too.
                None => {
                    let error = Error::method_not_found(method).to_rpc();
                    return peer.reply_error(&id, error, admission);
                }
            },
        };
        if method != methods::INITIALIZE && !self.conn.is_initialized() {
            let error = schema::Error::new(
                ErrorCode::InvalidRequest.into(),
                format!("`{method}` was sent before `initialize`; call `initialize` first"),
            );
            return peer.reply_error(&id, error, admission);
        }
        match target {
            Target::Ext(method) => self.ext_request(id, method, params, admission),
            Target::Route(route) => match &route.handler {
                Handler::Inline(answer) => match answer(self, &id, params) {
                    Ok(bytes) => peer.reply(Frame::new(bytes, None).answering(&id), admission),
                    Err(e) => peer.reply_error(&id, e, admission),
                },
                Handler::Spawned(start) => match start(self, id.clone(), params) {
                    Ok(fut) => self.spawn(id, fut, admission),
                    Err(e) => peer.reply_error(&id, e, admission),
                },
            },
        }
    }

    fn notification(&self, method: &str, params: Option<&RawValue>) {
        match self.notifications.iter().find(|n| n.method == method) {
            Some(route) => (route.handler)(self, params),
            None if method.starts_with('_') && self.ext_notification(method, params) => {}
            None => debug!(method, "ignored a notification"),
        }
    }
}

/// Every name of the method table's requests and notifications, in every version this build
/// speaks.
pub(crate) fn method_names() -> Vec<&'static str> {
    /// An agent for reading the table (its handlers are never called).
    struct Reader;
    impl Agent for Reader {
        async fn prompt(
            &self,
            _: &crate::Session,
            _: crate::agent::Prompt,
        ) -> Result<schema::StopReason> {
            Ok(schema::StopReason::EndTurn)
        }
    }
    let versions = [
        crate::protocol::Version::V1,
        #[cfg(feature = "v2")]
        crate::protocol::Version::V2,
    ];
    let requests = routes::requests::<Reader>().into_iter().map(|r| r.names);
    let notifications = routes::notifications::<Reader>()
        .into_iter()
        .map(|n| n.method);
    let mut names: Vec<&'static str> = requests
        .flat_map(|names| versions.iter().filter_map(move |v| names.of(*v)))
        .chain(notifications)
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// Queues the answer to request `id`, written in the connection's version.
pub(super) async fn answer<T: crate::protocol::Answer>(
    conn: &Connection,
    id: &RequestId,
    result: Result<T>,
) {
    let bytes = conn.codec().answer(id, result);
    let _ = conn
        .peer()
        .send(Frame::new(bytes, None).answering(id))
        .await;
}

/// Refuses `method` on `session` while it is a live subagent's: its parent drives it, and the
/// client may only cancel it (the one control a subagent advertises). Once its work is over it
/// is an ordinary stored session.
fn not_a_live_subagent(
    conn: &Connection,
    session: &SessionId,
    method: &str,
) -> Result<(), schema::Error> {
    match conn.sessions().get(session) {
        Some(state) if state.parent_id().is_some() => Err(schema::Error::new(
            ErrorCode::InvalidRequest.into(),
            format!(
                "{method}: session `{session}` is a subagent of `{}`, which drives it: \
                 a client may only cancel it (`session/cancel`)",
                state
                    .parent_id()
                    .map(ToString::to_string)
                    .unwrap_or_default()
            ),
        )),
        _ => Ok(()),
    }
}

/// Parses a request's params, or the `-32602` error naming the field.
fn params<T: serde::de::DeserializeOwned>(
    method: &str,
    params: Option<&RawValue>,
) -> Result<T, schema::Error> {
    jsonrpc::params(method, params)
}
