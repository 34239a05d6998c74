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

/// The authentication methods offered to a client with these capabilities: `terminal` ones
/// only to clients that can run them (`auth.terminal`).
pub(super) fn offered_auth_methods(
    all: Vec<AuthMethod>,
    client: &schema::ClientCapabilities,
) -> Vec<AuthMethod> {
    all.into_iter()
        .filter(|m| !matches!(m, AuthMethod::Terminal(_)) || client.auth.terminal)
        .collect()
}
