//! What a model's calls cost ([`Prices`], given with
//! [`Model::prices`](super::Model::prices)), added up per session for the `usage_update`s the
//! loop sends.

use super::Usage;

/// What a model's tokens cost, per million, in one currency ([`Model::prices`](super::Model::prices)).
#[derive(Debug, Clone, PartialEq)]
pub struct Prices {
    /// The currency, e.g. `"USD"` (ISO 4217).
    pub currency: String,
    /// Per million input tokens not read from the prompt cache.
    pub input: f64,
    /// Per million output tokens (reasoning included).
    pub output: f64,
    /// Per million input tokens read from the prompt cache (`None`: as `input`).
    pub cached_read: Option<f64>,
    /// Per million input tokens written to the prompt cache (`None`: as `input`).
    pub cache_write: Option<f64>,
}

impl Prices {
    /// `input` and `output` per million tokens, in `currency`; cache reads and writes as
    /// input unless set.
    pub fn new(currency: impl Into<String>, input: f64, output: f64) -> Self {
        Prices {
            currency: currency.into(),
            input,
            output,
            cached_read: None,
            cache_write: None,
        }
    }

    /// Per million input tokens read from the prompt cache.
    #[must_use]
    pub fn cached_read(mut self, per_million: f64) -> Self {
        self.cached_read = Some(per_million);
        self
    }

    /// Per million input tokens written to the prompt cache.
    #[must_use]
    pub fn cache_write(mut self, per_million: f64) -> Self {
        self.cache_write = Some(per_million);
        self
    }

    /// What one call's `usage` cost.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let read = usage
            .cached_input_tokens
            .unwrap_or(0)
            .min(usage.input_tokens);
        let written = usage
            .cache_write_tokens
            .unwrap_or(0)
            .min(usage.input_tokens - read);
        let plain = usage.input_tokens - read - written;
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        per(plain, self.input)
            + per(read, self.cached_read.unwrap_or(self.input))
            + per(written, self.cache_write.unwrap_or(self.input))
            + per(usage.output_tokens, self.output)
    }
}

/// What a session's model calls cost so far ([`Model::prices`](super::Model::prices)).
#[derive(Debug, Default)]
pub(super) struct Spent(std::sync::Mutex<f64>);

impl Spent {
    /// Adds `cost`; the total so far.
    pub fn add(&self, cost: f64) -> f64 {
        let mut total = crate::sync::lock(&self.0);
        *total += cost;
        *total
    }
}
