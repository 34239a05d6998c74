//! Which model the environment configures: a provider and a model name, by the rule below.
//!
//! Owns [`from_env`], so that an agent runs against whatever its user set up, with the
//! variables each provider's own SDKs read.

use std::sync::Arc;

use super::{Anthropic, OpenAi, OpenAiResponses, Provider, anthropic, openai};
use crate::{Error, Result};

/// The environment variable naming the model (e.g. `gpt-4.1`, `claude-sonnet-4-5`).
pub const MODEL_VAR: &str = "ACP_MODEL";
/// The environment variable choosing the provider explicitly: `openai`, `openai-responses`
/// or `anthropic`.
pub const PROVIDER_VAR: &str = "ACP_PROVIDER";

/// The provider the environment configures, and the model `ACP_MODEL` names (if set).
///
/// The rule:
/// 1. `ACP_PROVIDER=openai`, `ACP_PROVIDER=openai-responses` (OpenAI's Responses API,
///    [`OpenAiResponses::from_env`]: the same variables as `openai`) or
///    `ACP_PROVIDER=anthropic` decides, when set.
/// 2. Else Anthropic ([`Anthropic::from_env`]) when `ANTHROPIC_API_KEY` or
///    `ANTHROPIC_BASE_URL` is set and neither `OPENAI_API_KEY` nor `OPENAI_BASE_URL` is.
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
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let provider: Arc<dyn Provider> = if var(PROVIDER_VAR).as_deref() == Some("openai-responses") {
        Arc::new(OpenAiResponses::from_env()?)
    } else if is_anthropic(var)? {
        Arc::new(Anthropic::from_env()?)
    } else {
        Arc::new(OpenAi::from_env()?)
    };
    Ok((provider, var(MODEL_VAR)))
}

/// The rule of [`from_env`], on the variables `var` reads (empty ones as `None`).
fn is_anthropic(var: impl Fn(&str) -> Option<String>) -> Result<bool> {
    match var(PROVIDER_VAR).as_deref() {
        None => Ok((var(anthropic::API_KEY_VAR).is_some()
            || var(anthropic::BASE_URL_VAR).is_some())
            && var(openai::API_KEY_VAR).is_none()
            && var(openai::BASE_URL_VAR).is_none()),
        Some("anthropic") => Ok(true),
        Some("openai" | "openai-responses") => Ok(false),
        Some(other) => Err(Error::msg(format!(
            "{PROVIDER_VAR}=`{other}` names no provider: write `openai`, `openai-responses` or \
             `anthropic`"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(vars: &[(&str, &str)]) -> Result<bool> {
        is_anthropic(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn the_environment_picks_the_provider() {
        assert!(!rule(&[]).unwrap(), "nothing set: OpenAI's API");
        assert!(rule(&[("ANTHROPIC_API_KEY", "sk-ant")]).unwrap());
        assert!(rule(&[("ANTHROPIC_BASE_URL", "http://127.0.0.1:8080")]).unwrap());
        assert!(!rule(&[("ANTHROPIC_API_KEY", "sk-ant"), ("OPENAI_API_KEY", "sk")]).unwrap());
        assert!(
            !rule(&[
                ("ANTHROPIC_API_KEY", "sk-ant"),
                ("OPENAI_BASE_URL", "http://x/v1")
            ])
            .unwrap()
        );
        assert!(rule(&[("ACP_PROVIDER", "anthropic"), ("OPENAI_API_KEY", "sk")]).unwrap());
        assert!(!rule(&[("ACP_PROVIDER", "openai"), ("ANTHROPIC_API_KEY", "sk-ant")]).unwrap());
        let error = rule(&[("ACP_PROVIDER", "gemini")]).unwrap_err().to_string();
        assert_eq!(
            error,
            "ACP_PROVIDER=`gemini` names no provider: write `openai`, `openai-responses` or \
             `anthropic`"
        );
    }
}
