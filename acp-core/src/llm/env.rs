//! Which model the environment configures: a provider and a model name, by the rule below,
//! and the model's settings.
//!
//! Owns [`from_env`] and [`Model::from_env`], so that an agent runs against whatever its
//! user set up, with the variables each provider's own SDKs read, and every agent built on
//! `acp::llm` reads the same `ACP_*` variables:
//!
//! | variable | what | default |
//! | --- | --- | --- |
//! | `ACP_PROVIDER` | `openai` or `anthropic` | by the keys set (see [`from_env`]) |
//! | `ACP_MODEL` | the model's name | the agent's |
//! | `ACP_MAX_TOKENS` | the most tokens one answer may have | 8192 |
//! | `ACP_CONTEXT_WINDOW` | the model's context window in tokens (a gauge in the editor) | unknown |
//! | `ACP_TEMPERATURE` | the sampling temperature, 0 to 2 | the provider's |
//! | `OPENAI_BASE_URL`, `OPENAI_API_KEY` | an OpenAI-compatible API | OpenAI's, none |
//! | `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY` | the Anthropic API | Anthropic's, none |

use std::sync::Arc;

use super::{Anthropic, Model, OpenAi, OpenAiResponses, Provider, anthropic, openai};
use crate::{Error, Result};

/// The environment variable naming the model (e.g. `gpt-4.1`, `claude-sonnet-4-5`).
pub const MODEL_VAR: &str = "ACP_MODEL";
/// The environment variable choosing the provider explicitly: `openai`, `openai-responses`
/// or `anthropic`.
pub const PROVIDER_VAR: &str = "ACP_PROVIDER";
/// The environment variable bounding one answer's tokens ([`Model::max_tokens`]).
pub const MAX_TOKENS_VAR: &str = "ACP_MAX_TOKENS";
/// The environment variable giving the model's context window ([`Model::context_window`]).
pub const CONTEXT_WINDOW_VAR: &str = "ACP_CONTEXT_WINDOW";
/// The environment variable giving the sampling temperature ([`Model::temperature`]).
pub const TEMPERATURE_VAR: &str = "ACP_TEMPERATURE";
/// The `max_tokens` of [`Model::from_env`] when [`MAX_TOKENS_VAR`] is not set (a bound, so
/// that a server without one of its own, like llama.cpp's, does not write forever).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

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
///
/// This reads the provider and the model's name only; [`Model::from_env`] builds the whole
/// model, its settings included.
pub fn from_env() -> Result<(Arc<dyn Provider>, Option<String>)> {
    provider_from(env_var)
}

/// A variable of the environment; an empty one counts as unset.
fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// [`from_env`], on the variables `var` reads.
fn provider_from(
    var: impl Fn(&str) -> Option<String>,
) -> Result<(Arc<dyn Provider>, Option<String>)> {
    let responses = var(PROVIDER_VAR).as_deref() == Some("openai-responses");
    let provider: Arc<dyn Provider> = if is_anthropic(&var)? {
        let base_url = var(anthropic::BASE_URL_VAR);
        let base_url = base_url.as_deref().unwrap_or(anthropic::DEFAULT_BASE_URL);
        Arc::new(Anthropic::new(base_url, var(anthropic::API_KEY_VAR))?)
    } else if responses {
        let base_url = var(openai::BASE_URL_VAR);
        let base_url = base_url.as_deref().unwrap_or(openai::DEFAULT_BASE_URL);
        Arc::new(OpenAiResponses::new(base_url, var(openai::API_KEY_VAR))?)
    } else {
        let base_url = var(openai::BASE_URL_VAR);
        let base_url = base_url.as_deref().unwrap_or(openai::DEFAULT_BASE_URL);
        Arc::new(OpenAi::new(base_url, var(openai::API_KEY_VAR))?)
    };
    Ok((provider, var(MODEL_VAR)))
}

impl Model {
    /// The model the environment configures, whole: the provider and model name of
    /// [`from_env`] (`default_model` when `ACP_MODEL` is not set), with the settings of
    /// [`with_env_settings`](Self::with_env_settings). Every agent built on it reads the
    /// same variables, so a user configures them once for all such agents:
    ///
    /// | variable | sets | default |
    /// | --- | --- | --- |
    /// | `ACP_PROVIDER`, `OPENAI_*`, `ANTHROPIC_*` | the provider ([`from_env`]) | OpenAI's API |
    /// | `ACP_MODEL` | the model's name | `default_model` |
    /// | `ACP_MAX_TOKENS` | [`max_tokens`](Self::max_tokens) | [`DEFAULT_MAX_TOKENS`] (8192) |
    /// | `ACP_CONTEXT_WINDOW` | [`context_window`](Self::context_window) | unknown |
    /// | `ACP_TEMPERATURE` | [`temperature`](Self::temperature) (0 to 2) | the provider's |
    ///
    /// Fails, naming the variable, when one holds what it cannot (`ACP_MAX_TOKENS=lots`),
    /// `ACP_PROVIDER` names another provider, or a base URL is not a URL.
    ///
    /// ```no_run
    /// # fn demo() -> acp_core::Result<()> {
    /// use acp_core::llm::Model;
    ///
    /// let model = Model::from_env("gpt-4.1-mini")?.system("You are a careful assistant.");
    /// # let _ = model;
    /// # Ok(()) }
    /// ```
    pub fn from_env(default_model: &str) -> Result<Model> {
        Model::from_vars(default_model, env_var)
    }

    /// This model with the settings the environment gives: `ACP_MAX_TOKENS` (else
    /// [`DEFAULT_MAX_TOKENS`]), `ACP_CONTEXT_WINDOW` and `ACP_TEMPERATURE` (else left as
    /// they are), for a model whose provider comes from elsewhere. Fails, naming the
    /// variable, on a value it cannot take.
    pub fn with_env_settings(self) -> Result<Model> {
        settings_from(env_var)?.apply(self)
    }

    /// [`from_env`](Self::from_env), on the variables `var` reads.
    fn from_vars(default_model: &str, var: impl Fn(&str) -> Option<String>) -> Result<Model> {
        let settings = settings_from(&var)?;
        let (provider, name) = provider_from(&var)?;
        let name = name.unwrap_or_else(|| default_model.to_owned());
        settings.apply(Model::shared(provider, name))
    }
}

/// The model settings of the environment.
#[derive(Debug, PartialEq)]
struct Settings {
    max_tokens: u32,
    context_window: Option<u64>,
    temperature: Option<f32>,
}

impl Settings {
    fn apply(self, model: Model) -> Result<Model> {
        let mut model = model.max_tokens(self.max_tokens);
        if let Some(window) = self.context_window {
            model = model.context_window(window);
        }
        if let Some(temperature) = self.temperature {
            model = model.temperature(temperature);
        }
        Ok(model)
    }
}

/// The settings `var` gives; an error names the variable and what it takes.
fn settings_from(var: impl Fn(&str) -> Option<String>) -> Result<Settings> {
    let bad = |name: &str, value: &str, takes: &str| {
        Error::msg(format!("{name}=`{value}` is not valid: write {takes}"))
    };
    let tokens = |name: &str, example: &str| -> Result<Option<u64>> {
        let Some(value) = var(name) else {
            return Ok(None);
        };
        match value.trim().parse::<u64>() {
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => Err(bad(
                name,
                &value,
                &format!("a positive whole number of tokens, e.g. {example}"),
            )),
        }
    };
    let max_tokens = match tokens(MAX_TOKENS_VAR, "8192")? {
        None => DEFAULT_MAX_TOKENS,
        Some(n) => u32::try_from(n).map_err(|_| {
            bad(
                MAX_TOKENS_VAR,
                &n.to_string(),
                &format!("a number of tokens of at most {}", u32::MAX),
            )
        })?,
    };
    let context_window = tokens(CONTEXT_WINDOW_VAR, "128000")?;
    let temperature = match var(TEMPERATURE_VAR) {
        None => None,
        Some(value) => match value.trim().parse::<f32>() {
            Ok(t) if (0.0..=2.0).contains(&t) => Some(t),
            _ => {
                return Err(bad(
                    TEMPERATURE_VAR,
                    &value,
                    "a number from 0 to 2, e.g. 0.7",
                ));
            }
        },
    };
    Ok(Settings {
        max_tokens,
        context_window,
        temperature,
    })
}

/// The rule of [`from_env`], on the variables `var` reads (empty ones as `None`).
fn is_anthropic(var: &impl Fn(&str) -> Option<String>) -> Result<bool> {
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

    fn vars<'a>(vars: &'a [(&str, &str)]) -> impl Fn(&str) -> Option<String> + 'a {
        |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    fn rule(set: &[(&str, &str)]) -> Result<bool> {
        is_anthropic(&vars(set))
    }

    #[test]
    fn the_environment_gives_the_whole_model() {
        let model = Model::from_vars("fallback", vars(&[])).unwrap();
        assert_eq!(model.name(), "fallback");
        assert_eq!(model.max_tokens_set(), Some(DEFAULT_MAX_TOKENS), "bounded");
        assert_eq!(model.context_window_set(), None);
        assert_eq!(model.temperature_set(), None);
        let route = model.provider().route().unwrap();
        assert_eq!(route.base_url, openai::DEFAULT_BASE_URL);

        let model = Model::from_vars(
            "fallback",
            vars(&[
                ("ACP_PROVIDER", "anthropic"),
                ("ANTHROPIC_BASE_URL", "http://127.0.0.1:8080"),
                ("ACP_MODEL", "claude-x"),
                ("ACP_MAX_TOKENS", "1024"),
                ("ACP_CONTEXT_WINDOW", " 200000 "),
                ("ACP_TEMPERATURE", "0.2"),
            ]),
        )
        .unwrap();
        assert_eq!(model.name(), "claude-x");
        assert_eq!(model.max_tokens_set(), Some(1024));
        assert_eq!(model.context_window_set(), Some(200_000));
        assert_eq!(model.temperature_set(), Some(0.2));
        let route = model.provider().route().unwrap();
        assert_eq!(route.api, super::super::Api::Anthropic);
        assert_eq!(route.base_url, "http://127.0.0.1:8080");
    }

    #[test]
    fn a_bad_value_is_an_error_naming_its_variable() {
        let error =
            |set: &[(&str, &str)]| Model::from_vars("m", vars(set)).unwrap_err().to_string();
        assert_eq!(
            error(&[("ACP_MAX_TOKENS", "lots")]),
            "ACP_MAX_TOKENS=`lots` is not valid: write a positive whole number of tokens, e.g. 8192"
        );
        assert!(error(&[("ACP_MAX_TOKENS", "0")]).starts_with("ACP_MAX_TOKENS=`0`"));
        assert!(error(&[("ACP_MAX_TOKENS", "99999999999")]).contains("at most 4294967295"));
        assert_eq!(
            error(&[("ACP_CONTEXT_WINDOW", "-5")]),
            "ACP_CONTEXT_WINDOW=`-5` is not valid: write a positive whole number of tokens, e.g. 128000"
        );
        for bad in ["hot", "NaN", "3", "-0.1", "inf"] {
            assert_eq!(
                error(&[("ACP_TEMPERATURE", bad)]),
                format!(
                    "ACP_TEMPERATURE=`{bad}` is not valid: write a number from 0 to 2, e.g. 0.7"
                )
            );
        }
        assert!(error(&[("OPENAI_BASE_URL", "not a url")]).contains("not valid"));
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
