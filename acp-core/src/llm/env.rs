//! Which model the environment configures: a provider and a model name, by the rule below.
//!
//! Owns [`from_env`], so that an agent runs against whatever its user set up, with the
//! variables each provider's own SDKs read.

use std::sync::Arc;

use super::{Anthropic, OpenAi, Provider, anthropic, openai};
use crate::{Error, Result};

/// The environment variable naming the model (e.g. `gpt-4.1`, `claude-sonnet-4-5`).
pub const MODEL_VAR: &str = "ACP_MODEL";
/// The environment variable choosing the provider explicitly: `openai` or `anthropic`.
pub const PROVIDER_VAR: &str = "ACP_PROVIDER";

/// The provider the environment configures, and the model `ACP_MODEL` names (if set).
///
/// The rule:
/// 1. `ACP_PROVIDER=openai` or `ACP_PROVIDER=anthropic` decides, when set.
/// 2. Else Anthropic when `ANTHROPIC_API_KEY` or `ANTHROPIC_BASE_URL` is set and neither
///    `OPENAI_API_KEY` nor `OPENAI_BASE_URL` is.
/// 3. Else an OpenAI-compatible API ([`OpenAi::from_env`]: `OPENAI_BASE_URL`, default
///    OpenAI's own; `OPENAI_API_KEY`, optional for local servers).
///
/// Empty variables count as unset. Fails when `ACP_PROVIDER` names another provider or a
/// base URL is not a URL.
///
/// ```no_run
/// # fn demo() -> acp_core::Result<()> {
/// let (provider, model) = acp_core::llm::from_env()?;
/// let model = model.unwrap_or_else(|| "gpt-4.1-mini".to_owned());
/// # let _ = (provider, model);
/// # Ok(()) }
/// ```
pub fn from_env() -> Result<(Arc<dyn Provider>, Option<String>)> {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty());
    let anthropic = match std::env::var(PROVIDER_VAR).unwrap_or_default().as_str() {
        "" => {
            (set(anthropic::API_KEY_VAR) || set(anthropic::BASE_URL_VAR))
                && !set(openai::API_KEY_VAR)
                && !set(openai::BASE_URL_VAR)
        }
        "anthropic" => true,
        "openai" => false,
        other => {
            return Err(Error::msg(format!(
                "{PROVIDER_VAR}=`{other}` names no provider: write `openai` or `anthropic`"
            )));
        }
    };
    let provider: Arc<dyn Provider> = if anthropic {
        Arc::new(Anthropic::from_env()?)
    } else {
        Arc::new(OpenAi::from_env()?)
    };
    let model = std::env::var(MODEL_VAR).ok().filter(|m| !m.is_empty());
    Ok((provider, model))
}
