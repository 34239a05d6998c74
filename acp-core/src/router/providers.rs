//! `providers/list`, `providers/set` and `providers/disable` (feature `llm-providers`; the
//! unstable "Configurable LLM Providers" RFD), answered inline from the endpoints the server
//! was given ([`Server::llm_providers`](crate::Server::llm_providers)); their gate is that
//! there are some and that the client may set them (a network client only when the
//! operator allows it).

use serde_json::value::RawValue;

use super::{Route, Router, params};
use crate::agent::Agent;
use crate::jsonrpc;
use crate::llm::providers::Endpoints;
use crate::schema::{
    self, AGENT_METHOD_NAMES, DisableProviderRequest, DisableProviderResponse,
    ListProvidersRequest, ListProvidersResponse, RequestId, SetProviderRequest,
    SetProviderResponse,
};

/// The gate: the server was given endpoints, and the operator lets this client repoint them
/// (always over stdio; on the network only when granted: the endpoints are the process's,
/// shared by every user, and carry the operator's keys).
pub(super) fn configurable<A: Agent>(r: &Router<A>) -> bool {
    r.conn.grant().providers() && r.conn.services().get::<Endpoints>().is_some()
}

/// The three routes.
pub(super) fn requests<A: Agent>() -> [Route<A>; 3] {
    [
        Route {
            names: super::Names::both(AGENT_METHOD_NAMES.providers_list),
            gate: configurable,
            handler: super::Handler::Inline(list),
        },
        Route {
            names: super::Names::both(AGENT_METHOD_NAMES.providers_set),
            gate: configurable,
            handler: super::Handler::Inline(set),
        },
        Route {
            names: super::Names::both(AGENT_METHOD_NAMES.providers_disable),
            gate: configurable,
            handler: super::Handler::Inline(disable),
        },
    ]
}

fn endpoints<A: Agent>(r: &Router<A>) -> Endpoints {
    r.conn
        .services()
        .get::<Endpoints>()
        .map(|e| (*e).clone())
        .unwrap_or_default()
}

fn list<A: Agent>(
    r: &Router<A>,
    id: &RequestId,
    raw: Option<&RawValue>,
) -> Result<Vec<u8>, schema::Error> {
    let _: ListProvidersRequest = params(AGENT_METHOD_NAMES.providers_list, raw)?;
    let providers = endpoints(r).0.iter().map(|e| e.info()).collect();
    Ok(jsonrpc::encode_result(
        id,
        &ListProvidersResponse::new(providers),
    ))
}

fn set<A: Agent>(
    r: &Router<A>,
    id: &RequestId,
    raw: Option<&RawValue>,
) -> Result<Vec<u8>, schema::Error> {
    let request: SetProviderRequest = params(AGENT_METHOD_NAMES.providers_set, raw)?;
    endpoints(r).set(&request).map_err(|e| e.to_rpc())?;
    Ok(jsonrpc::encode_result(id, &SetProviderResponse::new()))
}

fn disable<A: Agent>(
    r: &Router<A>,
    id: &RequestId,
    raw: Option<&RawValue>,
) -> Result<Vec<u8>, schema::Error> {
    let request: DisableProviderRequest = params(AGENT_METHOD_NAMES.providers_disable, raw)?;
    endpoints(r).disable(&request).map_err(|e| e.to_rpc())?;
    Ok(jsonrpc::encode_result(id, &DisableProviderResponse::new()))
}
