//! The editor's endpoint (feature `llm-providers`; the unstable `providers/*` methods of
//! ACP's "Configurable LLM Providers" RFD): an [`Endpoint`] is a [`Provider`] the editor may
//! point at its own gateway, proxy or self-hosted server (`providers/set`), or disable
//! (`providers/disable`), and whose current route it can read (`providers/list`).
//!
//! Give the endpoints to [`Server::llm_providers`](crate::Server::llm_providers): the agent
//! then advertises `agentCapabilities.providers` and answers the three methods. Their state
//! is the process's (shared by every connection, never written to disk, as the RFD says); a
//! change applies from the next model call on, in every session.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};

use super::{Anthropic, Api, EventStream, OpenAi, Provider, Request, Route};
use crate::schema::{
    DisableProviderRequest, LlmProtocol, ProviderCurrentConfig, ProviderId, ProviderInfo,
    SetProviderRequest,
};
use crate::sync::{read, write};
use crate::{Error, Result};

/// A provider the editor may reroute or disable, known to it by an id (`"main"`, say).
///
/// It starts as the provider it is made with (typically [`from_env`](super::from_env)'s).
/// When the editor sets it (`providers/set`: an API type, a base URL, headers), its calls go
/// to an [`OpenAi`] or [`Anthropic`] client of that URL, sending those headers (which replace
/// the provider's own of the same name: a gateway's `Authorization` wins) and, only when the
/// URL is the one the endpoint started with, the API key of the environment for that API
/// (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`): the operator's key never goes to a URL the
/// editor chose.
/// Disabled, each call fails with an error saying so, until the editor sets it again.
///
/// Cheap to clone: clones share their state.
///
/// ```no_run
/// use acp_core::llm::{Endpoint, Model};
///
/// # async fn demo(agent: impl acp_core::Agent) -> acp_core::Result<()> {
/// let (provider, _) = acp_core::llm::from_env()?;
/// let main = Endpoint::new("main", provider);
/// let model = Model::new(main.clone(), "gpt-4.1");
/// // … the agent runs its turns with `model` …
/// acp_core::Server::new(agent)
///     .llm_providers([main])
///     .serve_stdio()
///     .await
/// # }
/// ```
#[derive(Clone)]
pub struct Endpoint {
    inner: Arc<Inner>,
}

struct Inner {
    id: ProviderId,
    required: bool,
    /// What the endpoint started as.
    initial: Arc<dyn Provider>,
    state: RwLock<State>,
}

#[derive(Clone)]
enum State {
    Initial,
    Set(Arc<dyn Provider>),
    Disabled,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("id", &self.inner.id)
            .field("required", &self.inner.required)
            .field("route", &self.route())
            .finish_non_exhaustive()
    }
}

/// The API types an endpoint can be set to.
const SUPPORTED: [Api; 2] = [Api::OpenAi, Api::Anthropic];

impl Endpoint {
    /// The endpoint `id`, starting as `provider`. It is required (the editor cannot disable
    /// it) unless made [`optional`](Self::optional).
    pub fn new(id: impl Into<String>, provider: impl Provider) -> Self {
        let id: String = id.into();
        Endpoint {
            inner: Arc::new(Inner {
                id: ProviderId::new(id),
                required: true,
                initial: Arc::new(provider),
                state: RwLock::new(State::Initial),
            }),
        }
    }

    /// The same endpoint, one the editor may disable (`providers/disable`).
    pub fn optional(self) -> Self {
        let inner = &self.inner;
        Endpoint {
            inner: Arc::new(Inner {
                id: inner.id.clone(),
                required: false,
                initial: inner.initial.clone(),
                state: RwLock::new(self.state()),
            }),
        }
    }

    /// Its id.
    pub fn id(&self) -> &str {
        &self.inner.id.0
    }

    fn state(&self) -> State {
        read(&self.inner.state).clone()
    }

    fn set_state(&self, state: State) {
        *write(&self.inner.state) = state;
    }

    /// The provider its calls go to now; `None` when disabled.
    fn current(&self) -> Option<Arc<dyn Provider>> {
        match self.state() {
            State::Initial => Some(self.inner.initial.clone()),
            State::Set(provider) => Some(provider),
            State::Disabled => None,
        }
    }

    /// What `providers/list` says of it.
    pub(crate) fn info(&self) -> ProviderInfo {
        let current = self
            .current()
            .and_then(|p| p.route())
            .map(|route| ProviderCurrentConfig::new(protocol_of(route.api), route.base_url));
        let supported = SUPPORTED.into_iter().map(protocol_of).collect();
        ProviderInfo::new(
            self.inner.id.clone(),
            supported,
            self.inner.required,
            current,
        )
    }

    /// `providers/set`: its calls go to `request`'s API at its base URL, with its headers.
    /// An API type it cannot speak, or a URL or header that cannot be sent, is an
    /// [`Error::InvalidParams`] and changes nothing.
    pub(crate) fn set(&self, request: &SetProviderRequest) -> Result<()> {
        let invalid = |message: String| Error::InvalidParams(message);
        let headers = request
            .headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()));
        // The operator's key goes only where the operator pointed the endpoint.
        let own_url = self.inner.initial.route().is_some_and(|route| {
            route.base_url.trim_end_matches('/') == request.base_url.trim_end_matches('/')
        });
        let env_key = |var: &str| env_key(var).filter(|_| own_url);
        let provider: Arc<dyn Provider> = match &request.api_type {
            LlmProtocol::OpenAi => Arc::new(
                OpenAi::new(&request.base_url, env_key("OPENAI_API_KEY"))
                    .and_then(|p| p.with_headers(headers))
                    .map_err(|e| invalid(e.to_string()))?,
            ),
            LlmProtocol::Anthropic => Arc::new(
                Anthropic::new(&request.base_url, env_key("ANTHROPIC_API_KEY"))
                    .and_then(|p| p.with_headers(headers))
                    .map_err(|e| invalid(e.to_string()))?,
            ),
            other => {
                return Err(invalid(format!(
                    "provider `{}` does not support the API type `{}`: it speaks `openai` \
                     and `anthropic`",
                    self.id(),
                    serde_json::to_value(other)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default()
                )));
            }
        };
        tracing::info!(
            provider = self.id(),
            base_url = request.base_url,
            "the editor set the LLM provider"
        );
        self.set_state(State::Set(provider));
        Ok(())
    }

    /// `providers/disable`: a required endpoint is an [`Error::InvalidParams`].
    pub(crate) fn disable(&self) -> Result<()> {
        if self.inner.required {
            return Err(Error::InvalidParams(format!(
                "provider `{}` is required and cannot be disabled",
                self.id()
            )));
        }
        tracing::info!(provider = self.id(), "the editor disabled the LLM provider");
        self.set_state(State::Disabled);
        Ok(())
    }
}

/// The endpoints a server was given (what the router answers `providers/*` from).
#[derive(Clone, Debug, Default)]
pub(crate) struct Endpoints(pub Arc<[Endpoint]>);

impl Endpoints {
    /// `providers/set`: an unknown id is an [`Error::InvalidParams`].
    pub(crate) fn set(&self, request: &SetProviderRequest) -> Result<()> {
        self.find(&request.provider_id)
            .ok_or_else(|| {
                Error::InvalidParams(format!("no provider `{}`", request.provider_id.0))
            })?
            .set(request)
    }

    /// `providers/disable`: an unknown id is done (the RFD makes it idempotent).
    pub(crate) fn disable(&self, request: &DisableProviderRequest) -> Result<()> {
        match self.find(&request.provider_id) {
            Some(endpoint) => endpoint.disable(),
            None => Ok(()),
        }
    }

    fn find(&self, id: &ProviderId) -> Option<&Endpoint> {
        self.0.iter().find(|e| e.inner.id == *id)
    }
}

fn protocol_of(api: Api) -> LlmProtocol {
    match api {
        Api::OpenAi | Api::OpenAiResponses => LlmProtocol::OpenAi,
        Api::Anthropic => LlmProtocol::Anthropic,
    }
}

fn env_key(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|k| !k.is_empty())
}

impl Provider for Endpoint {
    fn stream<'a>(
        &'a self,
        request: Request<'a>,
    ) -> Pin<Box<dyn Future<Output = Result<EventStream>> + Send + 'a>> {
        let current = self.current();
        let id = self.id();
        Box::pin(async move {
            match current {
                Some(provider) => provider.stream(request).await,
                None => Err(Error::msg(format!(
                    "the editor disabled the LLM provider `{id}`; set it again \
                     (providers/set) to use it"
                ))),
            }
        })
    }

    fn route(&self) -> Option<Route> {
        self.current().and_then(|p| p.route())
    }
}
