//! One TCP connection's deadlines ([`Server::serve_http`](crate::Server::serve_http)): a
//! socket must have a request admitted by the guard (valid credentials) within the header
//! timeout, HTTP/1.1 or HTTP/2, whatever it sent meanwhile; once admitted, it is closed when
//! it has had nothing in progress (no request, no response body, no WebSocket) for the idle
//! timeout. The accept task waits on [`Socket::expired`] beside the connection; each request
//! finds the socket in its extensions, and holds a [`Busy`] while it is in progress.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, OwnedSemaphorePermit};
use tokio::time::{Instant, sleep_until};

/// One TCP connection's state, shared by its accept task and its requests.
pub(crate) struct Socket {
    admitted: AtomicBool,
    /// Requests, response bodies and WebSockets in progress over it.
    busy: AtomicUsize,
    /// When the last of them ended.
    idle_since: Mutex<Instant>,
    /// Its place among the sockets not yet admitted, released when admitted.
    unadmitted: Mutex<Option<OwnedSemaphorePermit>>,
    /// Wakes the accept task when something above changed.
    changed: Notify,
}

/// Why a socket's time is up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expiry {
    /// No request with valid credentials within the header timeout.
    Unadmitted,
    /// Admitted, and nothing in progress for the idle timeout.
    Idle,
}

impl Socket {
    /// A socket just accepted, holding its place among those not yet admitted.
    pub(crate) fn new(unadmitted: OwnedSemaphorePermit) -> Arc<Socket> {
        Arc::new(Socket {
            admitted: AtomicBool::new(false),
            busy: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            unadmitted: Mutex::new(Some(unadmitted)),
            changed: Notify::new(),
        })
    }

    /// A request over it passed the guard: the header deadline no longer applies.
    pub(crate) fn admit(&self) {
        if !self.admitted.swap(true, Ordering::AcqRel) {
            self.unadmitted
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            self.changed.notify_one();
        }
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
            let deadline = if !self.admitted.load(Ordering::Acquire) {
                Some((accepted + header, Expiry::Unadmitted))
            } else if self.busy.load(Ordering::Acquire) > 0 {
                None
            } else {
                let since = *self.idle_since.lock().unwrap_or_else(|p| p.into_inner());
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

/// Something in progress over a socket (see [`Socket::busy`]).
pub(crate) struct Busy(Arc<Socket>);

impl Drop for Busy {
    fn drop(&mut self) {
        *self.0.idle_since.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        if self.0.busy.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.changed.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::Semaphore;

    #[tokio::test(start_paused = true)]
    async fn a_socket_expires_unadmitted_or_idle_never_while_busy() {
        let places = Arc::new(Semaphore::new(1));
        let socket = Socket::new(places.clone().try_acquire_owned().unwrap());
        let (header, idle) = (Duration::from_secs(1), Duration::from_secs(5));
        let start = Instant::now();
        assert_eq!(
            socket.expired(start, header, idle).await,
            Expiry::Unadmitted
        );
        assert_eq!(start.elapsed(), header);
        assert_eq!(places.available_permits(), 0);
        socket.admit();
        assert_eq!(places.available_permits(), 1);
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
