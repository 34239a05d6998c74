//! One TCP connection's deadlines ([`Server::serve_http`](crate::Server::serve_http)): a
//! socket must have a request admitted by the guard (valid credentials) within the header
//! timeout, HTTP/1.1 or HTTP/2, whatever it sent meanwhile; once admitted, it is closed when
//! it has had nothing in progress (no request, no response body, no WebSocket) for the idle
//! timeout. The accept task waits on [`Socket::expired`] beside the connection; each request
//! finds the socket in its extensions, and holds a [`Busy`] while it is in progress. At most
//! so many sockets wait to be admitted at once ([`Waiting`]): a new one beyond closes the
//! oldest, so a flood of silent sockets holds a bounded number of descriptors and a client
//! that sends its request at once still gets in.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::sync::lock;
use tokio::sync::Notify;
use tokio::time::{Instant, sleep_until};

/// One TCP connection's state, shared by its accept task and its requests.
pub(crate) struct Socket {
    admitted: AtomicBool,
    /// Requests, response bodies and WebSockets in progress over it.
    busy: AtomicUsize,
    /// When the last of them ended.
    idle_since: Mutex<Instant>,
    /// Closed by a newer socket while waiting to be admitted, or its connection ended.
    evicted: AtomicBool,
    ended: AtomicBool,
    /// Wakes the accept task when something above changed.
    changed: Notify,
}

/// Why a socket's time is up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expiry {
    /// No request with valid credentials within the header timeout.
    Unadmitted,
    /// Not admitted yet, and the oldest waiting when a new socket came beyond the cap.
    Evicted,
    /// Admitted, and nothing in progress for the idle timeout.
    Idle,
}

impl Socket {
    /// A socket just accepted.
    pub(crate) fn new() -> Arc<Socket> {
        Arc::new(Socket {
            admitted: AtomicBool::new(false),
            busy: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            evicted: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            changed: Notify::new(),
        })
    }

    /// A request over it passed the guard: the header deadline no longer applies.
    pub(crate) fn admit(&self) {
        if !self.admitted.swap(true, Ordering::AcqRel) {
            self.changed.notify_one();
        }
    }

    /// Its connection ended: it waits for nothing any more.
    pub(crate) fn end(&self) {
        self.ended.store(true, Ordering::Release);
    }

    /// Whether it still waits to be admitted.
    fn waiting(&self) -> bool {
        !self.admitted.load(Ordering::Acquire) && !self.ended.load(Ordering::Acquire)
    }

    /// Closes it, unless it was admitted meanwhile.
    fn evict(&self) {
        self.evicted.store(true, Ordering::Release);
        self.changed.notify_one();
    }

    /// Something in progress over the socket until the returned guard is dropped.
    pub(crate) fn busy(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::AcqRel);
        Busy(self.clone())
    }

    /// Waits until the socket's time is up: `header` after `accepted` while not admitted,
    /// else `idle` after the last thing in progress ended (never while one is).
    pub(crate) async fn expired(
        &self,
        accepted: Instant,
        header: Duration,
        idle: Duration,
    ) -> Expiry {
        loop {
            let admitted = self.admitted.load(Ordering::Acquire);
            if !admitted && self.evicted.load(Ordering::Acquire) {
                return Expiry::Evicted;
            }
            let deadline = if !admitted {
                Some((accepted + header, Expiry::Unadmitted))
            } else if self.busy.load(Ordering::Acquire) > 0 {
                None
            } else {
                let since = *lock(&self.idle_since);
                Some((since + idle, Expiry::Idle))
            };
            match deadline {
                None => self.changed.notified().await,
                Some((at, why)) => {
                    if Instant::now() >= at {
                        return why;
                    }
                    tokio::select! {
                        () = sleep_until(at) => {}
                        () = self.changed.notified() => {}
                    }
                }
            }
        }
    }
}

/// The sockets waiting to be admitted, oldest first, at most `max`.
pub(crate) struct Waiting {
    max: usize,
    sockets: Mutex<VecDeque<Arc<Socket>>>,
}

impl Waiting {
    /// Room for `max` sockets waiting at once.
    pub(crate) fn new(max: usize) -> Waiting {
        Waiting {
            max: max.max(1),
            sockets: Mutex::new(VecDeque::new()),
        }
    }

    /// Adds a socket just accepted; whether the oldest waiting had to be closed for it.
    pub(crate) fn push(&self, socket: Arc<Socket>) -> bool {
        let mut sockets = lock(&self.sockets);
        sockets.retain(|socket| socket.waiting());
        let evicted = sockets.len() >= self.max;
        if evicted && let Some(oldest) = sockets.pop_front() {
            oldest.evict();
        }
        sockets.push_back(socket);
        evicted
    }
}

/// Something in progress over a socket (see [`Socket::busy`]).
pub(crate) struct Busy(Arc<Socket>);

impl Drop for Busy {
    fn drop(&mut self) {
        *lock(&self.0.idle_since) = Instant::now();
        if self.0.busy.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.changed.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn beyond_the_cap_the_oldest_socket_waiting_is_closed() {
        let waiting = Waiting::new(2);
        let (a, b, c, d) = (Socket::new(), Socket::new(), Socket::new(), Socket::new());
        assert!(!waiting.push(a.clone()));
        assert!(!waiting.push(b.clone()));
        assert!(waiting.push(c.clone()));
        let long = Duration::from_secs(3600);
        let start = Instant::now();
        assert_eq!(a.expired(start, long, long).await, Expiry::Evicted);
        // An admitted socket no longer counts.
        b.admit();
        assert!(!waiting.push(d.clone()));
        assert!(!c.evicted.load(Ordering::Acquire));
    }

    #[tokio::test(start_paused = true)]
    async fn a_socket_expires_unadmitted_or_idle_never_while_busy() {
        let socket = Socket::new();
        let (header, idle) = (Duration::from_secs(1), Duration::from_secs(5));
        let start = Instant::now();
        assert_eq!(
            socket.expired(start, header, idle).await,
            Expiry::Unadmitted
        );
        assert_eq!(start.elapsed(), header);
        socket.admit();
        let busy = socket.busy();
        let waiting = socket.expired(start, header, idle);
        tokio::pin!(waiting);
        assert!(
            tokio::time::timeout(Duration::from_secs(60), &mut waiting)
                .await
                .is_err()
        );
        let ended = Instant::now();
        drop(busy);
        assert_eq!(waiting.await, Expiry::Idle);
        assert_eq!(ended.elapsed(), idle);
    }
}
