//! When a model call is tried again, and what it is told while it waits: the policy a
//! provider follows ([`Retry`]: which waits, how many), the wait an answer asks for
//! (`retry-after`), and the hooks the caller of a call lends it ([`CallHooks`]: a first-event
//! timeout, someone to tell about a retry) through a task-local, so that the HTTP client
//! (`http.rs`) needs nothing of sessions.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, HeaderName};

/// How a provider retries a call the provider says may pass later (a rate limit, an
/// overloaded or unavailable server, no answer within the caller's
/// [first-event timeout](CallHooks::first_event_timeout)).
///
/// A call is retried only before the model produced anything: once its first text, reasoning
/// or tool call was read, an error ends the stream. The wait before retry `n` (1, 2, …) is
/// the provider's own when it says (`retry-after-ms`, or `retry-after` in seconds or as an
/// HTTP date); else `initial_backoff × 2^(n−1)`, plus a random jitter of up to half of it (so
/// that clients turned away together do not all come back together); never more than
/// `max_wait`. While it waits, the caller's [`CallHooks::on_retry`] is told (the loop of
/// [`Model`](super::Model) sends the editor a notice).
///
/// ```
/// use std::time::Duration;
/// use acp_core::llm::Retry;
///
/// let patient = Retry { max_retries: 5, ..Retry::default() };
/// assert_eq!(patient.initial_backoff, Duration::from_secs(1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    /// Retries after the first attempt (`0`: never retry). Default 3.
    pub max_retries: u32,
    /// The first wait when the provider does not say how long (doubled at each retry, plus
    /// jitter). Default 1 s.
    pub initial_backoff: Duration,
    /// The longest wait, whatever the provider asks. Default 30 s.
    pub max_wait: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            max_retries: 3,
            initial_backoff: Duration::from_secs(1),
            max_wait: Duration::from_secs(30),
        }
    }
}

impl Retry {
    /// The wait before retry `retry` (1 for the first) when the provider did not say:
    /// exponential, with up to half again of random jitter, at most `max_wait`.
    fn backoff(&self, retry: u32) -> Duration {
        let base = self
            .initial_backoff
            .saturating_mul(1u32 << retry.saturating_sub(1).min(16));
        let jitter = Duration::try_from_secs_f64(base.as_secs_f64() * jitter() / 2.0)
            .unwrap_or(Duration::ZERO);
        base.saturating_add(jitter).min(self.max_wait)
    }

    /// The wait before a retry: the provider's `after` (capped), else the backoff.
    pub(super) fn wait(&self, retry: u32, after: Option<Duration>) -> Duration {
        match after {
            Some(after) => after.min(self.max_wait),
            None => self.backoff(retry),
        }
    }
}

/// A random fraction in `[0, 1)` (`0.5` if the system has no randomness to give).
fn jitter() -> f64 {
    match getrandom::u64() {
        Ok(n) => (n >> 11) as f64 / (1u64 << 53) as f64,
        Err(_) => 0.5,
    }
}

/// A retry about to wait, as told to the [`CallHooks::on_retry`] of the call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryWait {
    /// Which retry this is: 1 for the first.
    pub retry: u32,
    /// How long until it is made.
    pub wait: Duration,
    /// Whether the provider rate-limited the call (`429`), rather than being unavailable,
    /// overloaded or silent.
    pub rate_limited: bool,
    /// Why the attempt failed, in words (never with the API key).
    pub reason: String,
}

impl RetryWait {
    /// The wait in whole seconds, rounded up (at least 1): what to tell a user.
    pub fn seconds(&self) -> u64 {
        let whole = self.wait.as_secs();
        let seconds = if self.wait.subsec_nanos() > 0 {
            whole.saturating_add(1)
        } else {
            whole
        };
        seconds.max(1)
    }
}

/// The future an [`CallHooks::on_retry`] callback returns.
type RetryFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What the caller of one model call lends the HTTP providers ([`OpenAi`](super::OpenAi),
/// [`Anthropic`](super::Anthropic), and anything built on them) while the call starts: how
/// long an attempt may take to produce its first event, and whom to tell about a retry
/// before waiting for it. Set for a call with [`scope`](Self::scope) (the loop of
/// [`Model`](super::Model) does), without the provider's interface knowing about sessions;
/// a provider of its own may read them with [`current`](Self::current).
///
/// ```
/// # async fn demo(provider: &impl acp_core::llm::Provider, request: acp_core::llm::Request<'_>) -> acp_core::Result<()> {
/// use std::time::Duration;
/// use acp_core::llm::CallHooks;
///
/// let hooks = CallHooks::new()
///     .first_event_timeout(Duration::from_secs(60))
///     .on_retry(|wait| async move { eprintln!("retrying in {} s", wait.seconds()) });
/// let _events = hooks.scope(provider.stream(request)).await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct CallHooks {
    pub(super) first_event_timeout: Option<Duration>,
    pub(super) on_retry: Option<Arc<dyn Fn(RetryWait) -> RetryFuture + Send + Sync>>,
}

impl std::fmt::Debug for CallHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallHooks")
            .field("first_event_timeout", &self.first_event_timeout)
            .field("on_retry", &self.on_retry.is_some())
            .finish()
    }
}

tokio::task_local! {
    /// The hooks of the model call being made on this task.
    static HOOKS: CallHooks;
}

impl CallHooks {
    /// No timeout, no one told.
    pub fn new() -> Self {
        CallHooks::default()
    }

    /// How long one attempt may take to produce the model's first event (counted from the
    /// request being sent); past it the attempt is dropped and, like a passing error,
    /// retried as the provider's [`Retry`] says.
    #[must_use]
    pub fn first_event_timeout(mut self, limit: Duration) -> Self {
        self.first_event_timeout = Some(limit);
        self
    }

    /// Called before each retry's wait, with what is being waited for (the wait starts once
    /// the returned future has finished).
    #[must_use]
    pub fn on_retry<F, Fut>(mut self, on_retry: F) -> Self
    where
        F: Fn(RetryWait) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.on_retry = Some(Arc::new(move |wait| Box::pin(on_retry(wait))));
        self
    }

    /// Runs `call` (a provider's [`stream`](super::Provider::stream)) with these hooks.
    pub async fn scope<F: Future>(self, call: F) -> F::Output {
        HOOKS.scope(self, call).await
    }

    /// The hooks of the call being made (set by [`scope`](Self::scope)), if any.
    pub fn current() -> Option<CallHooks> {
        HOOKS.try_with(Clone::clone).ok()
    }
}

/// The wait an answer asks for: `retry-after-ms`, or `retry-after` in seconds or as an HTTP
/// date (a date in the past: no wait). Values that are none of these are ignored.
pub(super) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &'static str| {
        headers
            .get(HeaderName::from_static(name))
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let seconds = |text: &str| {
        text.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .and_then(|v| Duration::try_from_secs_f64(v).ok())
    };
    if let Some(ms) = text("retry-after-ms").and_then(seconds) {
        return Some(ms / 1000);
    }
    let after = text("retry-after")?;
    seconds(after).or_else(|| {
        let at = http_date(after)?;
        Some(at.duration_since(now).unwrap_or(Duration::ZERO))
    })
}

/// An HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110's preferred format), as a time.
fn http_date(text: &str) -> Option<SystemTime> {
    let mut words = text.split_whitespace();
    let _weekday = words.next().filter(|w| w.ends_with(','))?;
    let day: u64 = words.next()?.parse().ok()?;
    let month = words.next()?;
    let year: u64 = words.next()?.parse().ok()?;
    let time = words.next()?;
    if words.next() != Some("GMT") || words.next().is_some() {
        return None;
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| *m == month)? as u64 + 1;
    let mut hms = time.split(':').map(|n| n.parse::<u64>().ok());
    let (hour, minute, second) = (hms.next()??, hms.next()??, hms.next()??);
    if hms.next().is_some()
        || !(1970..=9999).contains(&year)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    // Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    let (y, m) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let yoe = y % 400;
    let doy = (153 * m + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480); // 2015-10-21 07:28:00
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&headers, now), Some(Duration::from_millis(250)));
        headers.clear();
        headers.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:07 GMT"),
        );
        assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(7)));
        headers.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:27:00 GMT"),
        );
        assert_eq!(retry_after(&headers, now), Some(Duration::ZERO), "past");
        for bad in [
            "Wed, 21 Oct 2015",
            "Wed, 32 Oct 2015 07:28:07 GMT",
            "Wed, 21 Foo 2015 07:28:07 GMT",
            "1e300",
            "-1",
            "soon",
        ] {
            headers.insert("retry-after", HeaderValue::from_static(bad));
            assert_eq!(retry_after(&headers, now), None, "{bad}");
        }
        assert_eq!(
            http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777))
        );
    }

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let retry = Retry {
            max_retries: 5,
            initial_backoff: Duration::from_millis(100),
            max_wait: Duration::from_millis(1000),
        };
        for _ in 0..50 {
            for (n, base) in [(1, 100), (2, 200), (3, 400)] {
                let wait = retry.backoff(n);
                let base = Duration::from_millis(base);
                assert!(wait >= base && wait <= base * 3 / 2, "{n}: {wait:?}");
            }
            assert!(retry.backoff(5) <= Duration::from_millis(1000));
        }
        let waits: std::collections::HashSet<_> = (0..20).map(|_| retry.backoff(1)).collect();
        assert!(waits.len() > 1, "jittered: {waits:?}");
        assert_eq!(
            retry.wait(1, Some(Duration::from_secs(60))),
            Duration::from_millis(1000)
        );
        let huge = Retry {
            initial_backoff: Duration::MAX,
            ..retry
        };
        assert_eq!(huge.backoff(30), Duration::from_millis(1000));
    }
}
