//! Authentication: `authenticate` (only for one of the agent's methods of type `agent`: the
//! client runs `terminal` ones itself) and `logout`, each answered from the agent's method
//! with a [`Client`] context; the connection remembers whether the client authenticated.

use futures_util::future::BoxFuture;
use serde_json::value::RawValue;

use super::{Router, answer, params};
use crate::agent::Agent;
use crate::protocol::methods;
use crate::schema::{self, AuthMethod, RequestId};
use crate::session::{Client, Request, list};
use crate::{Error, Result};

pub(super) fn authenticate<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::AuthenticateRequest = params(methods::AUTHENTICATE, raw)?;
    let offered = offered_auth_methods(r.agent.auth_methods(), r.conn.client_capabilities());
    match offered.iter().find(|m| *m.id() == req.method_id) {
        Some(AuthMethod::Terminal(_)) => {
            return Err(Error::InvalidParams(format!(
                "`{}` is a terminal authentication method: the client runs the agent with its arguments instead of sending `authenticate`",
                req.method_id
            ))
            .to_rpc());
        }
        Some(_) => {}
        None => {
            return Err(Error::InvalidParams(format!(
                "unknown authentication method `{}`; the methods are {}",
                req.method_id,
                list(offered.iter().map(|m| m.id().0.as_ref()))
            ))
            .to_rpc());
        }
    }
    let (agent, conn) = (r.agent.clone(), r.conn.clone());
    Ok(Box::pin(async move {
        let request = Request::new(req.meta);
        let client = Client::new(conn.clone(), Some(request.clone()));
        let result = agent.authenticate(&client, req.method_id).await;
        if result.is_ok() {
            conn.set_authenticated(true);
        }
        let result =
            result.map(|()| schema::AuthenticateResponse::new().meta(request.take_answer_meta()));
        answer(&conn, &id, result).await;
    }))
}

pub(super) fn logout<A: Agent>(
    r: &Router<A>,
    id: RequestId,
    raw: Option<&RawValue>,
) -> Result<BoxFuture<'static, ()>, schema::Error> {
    let req: schema::LogoutRequest = params(methods::LOGOUT, raw)?;
    let (agent, conn) = (r.agent.clone(), r.conn.clone());
    Ok(Box::pin(async move {
        let request = Request::new(req.meta);
        let client = Client::new(conn.clone(), Some(request.clone()));
        let result = agent.logout(&client).await;
        if result.is_ok() {
            conn.set_authenticated(false);
        }
        let result =
            result.map(|()| schema::LogoutResponse::new().meta(request.take_answer_meta()));
        answer(&conn, &id, result).await;
    }))
}

/// The key of Zed's sign-in convention from before `terminal` methods were typed: in
/// `clientCapabilities._meta` (`true`: the client reads it), and in an authentication method's
/// `_meta`, where it holds the whole command line to run in a terminal:
/// `{"label": …, "command": …, "args": [...], "env": {…}}` (Zed's
/// `crates/agent_servers` reads `label` and `command` as required, `args` and `env` as
/// optional; `claude-agent-acp` and other adapters send it).
pub(crate) const TERMINAL_AUTH_META: &str = "terminal-auth";

/// The authentication methods offered to a client with these capabilities: `terminal` ones
/// only to clients that can run them (`auth.terminal`, or Zed's
/// `_meta["terminal-auth"]: true`). To a client of Zed's convention, each `terminal` method
/// also carries `_meta["terminal-auth"]`: the agent's own program and arguments, the
/// method's arguments after them, its environment, its name as the label (left out if the
/// agent's program cannot be found).
pub(super) fn offered_auth_methods(
    all: Vec<AuthMethod>,
    client: &schema::ClientCapabilities,
) -> Vec<AuthMethod> {
    let by_meta = client
        .meta
        .as_ref()
        .and_then(|meta| meta.get(TERMINAL_AUTH_META))
        .and_then(serde_json::Value::as_bool)
        == Some(true);
    all.into_iter()
        .filter(|m| !matches!(m, AuthMethod::Terminal(_)) || client.auth.terminal || by_meta)
        .map(|m| match m {
            AuthMethod::Terminal(terminal) if by_meta => {
                AuthMethod::Terminal(with_terminal_auth_meta(terminal))
            }
            other => other,
        })
        .collect()
}

/// `method` with Zed's `_meta["terminal-auth"]` command line added (other `_meta` keys kept).
fn with_terminal_auth_meta(mut method: schema::AuthMethodTerminal) -> schema::AuthMethodTerminal {
    let program = match std::env::current_exe() {
        Ok(program) => program,
        Err(e) => {
            tracing::debug!("no `terminal-auth` command line: the agent's program is unknown: {e}");
            return method;
        }
    };
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|arg| arg.to_string_lossy().into_owned())
        .chain(method.args.iter().cloned())
        .collect();
    let mut line = serde_json::json!({
        "label": method.name,
        "command": program.to_string_lossy(),
        "args": args,
    });
    if !method.env.is_empty() {
        line["env"] = serde_json::json!(method.env);
    }
    method
        .meta
        .get_or_insert_with(Default::default)
        .insert(TERMINAL_AUTH_META.to_owned(), line);
    method
}
