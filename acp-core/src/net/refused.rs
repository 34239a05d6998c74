//! The refusals of the network service, counted by kind for the operator's log: one `warn`
//! line with the running counts when a refusal comes, at most one every [`EVERY`] (a flood
//! of refused sockets is a few lines, not one per socket).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::sync::lock;
use tokio::time::Instant;
use tracing::warn;

/// The least time between two lines of counts.
const EVERY: Duration = Duration::from_secs(10);

/// What a request or socket was refused for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// An `Origin` not trusted (`403`).
    Origin,
    /// Missing or wrong credentials (`401`).
    Credentials,
    /// A body or WebSocket message over the limit (`413`).
    BodySize,
    /// The connection limit (`503`).
    ConnectionLimit,
    /// A user's share of the connection limit (`503`).
    UserShare,
    /// Too many POSTs waiting on one connection (`429`).
    Requests,
    /// A socket not yet admitted, closed for a new one beyond the cap of those waiting.
    Unadmitted,
    /// A socket with no admitted request within the header timeout (closed).
    Deadline,
}

const KINDS: [(Refusal, &str); 8] = [
    (Refusal::Origin, "origin"),
    (Refusal::Credentials, "credentials"),
    (Refusal::BodySize, "body size"),
    (Refusal::ConnectionLimit, "connection limit"),
    (Refusal::UserShare, "user's share"),
    (Refusal::Requests, "requests per connection"),
    (Refusal::Unadmitted, "unadmitted sockets cap"),
    (Refusal::Deadline, "header deadline"),
];

/// The running counts.
#[derive(Default)]
pub(crate) struct Refusals {
    counts: [AtomicU64; KINDS.len()],
    /// When the last line was logged.
    logged: Mutex<Option<Instant>>,
}

impl Refusals {
    /// Counts one refusal of `kind`, and logs the counts unless a line was logged lately.
    pub(crate) fn count(&self, kind: Refusal) {
        let i = KINDS.iter().position(|(k, _)| *k == kind).unwrap_or(0);
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        {
            let mut logged = lock(&self.logged);
            if logged.is_some_and(|at| now.duration_since(at) < EVERY) {
                return;
            }
            *logged = Some(now);
        }
        warn!("refused so far: {}", self.summary());
    }

    /// `kind n` for each kind refused at least once.
    pub(crate) fn summary(&self) -> String {
        let counted: Vec<String> = KINDS
            .iter()
            .zip(&self.counts)
            .filter_map(|((_, name), n)| {
                let n = n.load(Ordering::Relaxed);
                (n > 0).then(|| format!("{name} {n}"))
            })
            .collect();
        counted.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_counted_by_kind() {
        let refusals = Refusals::default();
        refusals.count(Refusal::Credentials);
        refusals.count(Refusal::Credentials);
        refusals.count(Refusal::Deadline);
        assert_eq!(refusals.summary(), "credentials 2, header deadline 1");
    }
}
