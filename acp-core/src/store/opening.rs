//! [`Opening`]: a store still being opened in the background. The runtime serves with one
//! from the first byte, so that `initialize` never waits for a database: only the operations
//! that reach the store wait until it is open. Every operation is passed on, the leases too.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::watch;

use super::{Batch, Cursor, ListFilter, Page, Record, SessionStore, StoredSession};
use crate::error::{Error, Result};
use crate::schema;

/// What opening gave: the store, or why it did not open.
type Opened = std::result::Result<Arc<dyn SessionStore>, String>;

/// A [`SessionStore`] opened on tokio's blocking pool; each operation waits for the opening to
/// finish, then runs on the opened store (or fails with the reason it did not open).
pub(crate) struct Opening {
    opened: watch::Receiver<Option<Opened>>,
}

impl Opening {
    /// Starts `open` on the blocking pool. Call it inside a tokio runtime.
    pub fn spawn<S, F>(open: F) -> Opening
    where
        S: SessionStore,
        F: FnOnce() -> Result<S> + Send + 'static,
    {
        let (tx, opened) = watch::channel(None);
        tokio::task::spawn_blocking(move || {
            let result = open().map(|store| Arc::new(store) as Arc<dyn SessionStore>);
            let _ = tx.send(Some(reported(result)));
        });
        Opening { opened }
    }

    /// Starts `open`, a store that opens asynchronously (a database over the network), as a
    /// task. Call it inside a tokio runtime.
    pub fn spawn_async<F>(open: F) -> Opening
    where
        F: Future<Output = Result<Arc<dyn SessionStore>>> + Send + 'static,
    {
        let (tx, opened) = watch::channel(None);
        tokio::spawn(async move {
            let _ = tx.send(Some(reported(open.await)));
        });
        Opening { opened }
    }

    /// The opened store, once opening is done.
    async fn store(&self) -> Result<Arc<dyn SessionStore>> {
        let mut opened = self.opened.clone();
        let done = opened
            .wait_for(Option::is_some)
            .await
            .map_err(|_| Error::msg("session store: opening it did not finish"))?;
        match &*done {
            Some(Ok(store)) => Ok(store.clone()),
            Some(Err(why)) => Err(Error::msg(format!("session store: not open: {why}"))),
            None => Err(Error::msg("session store: opening it did not finish")),
        }
    }
}

/// What opening gave, the failure said on stderr.
fn reported(result: Result<Arc<dyn SessionStore>>) -> Opened {
    result.map_err(|e| {
        tracing::warn!("sessions will not be recorded: the session store did not open: {e}");
        e.to_string()
    })
}

impl SessionStore for Opening {
    fn save_session<'a>(&'a self, session: &'a StoredSession) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move { self.store().await?.save_session(session).await })
    }

    fn append<'a>(
        &'a self,
        id: &'a schema::SessionId,
        records: &'a [Record],
    ) -> BoxFuture<'a, Result<Cursor>> {
        Box::pin(async move { self.store().await?.append(id, records).await })
    }

    fn append_batch<'a>(
        &'a self,
        id: &'a schema::SessionId,
        batch: Batch,
    ) -> BoxFuture<'a, Result<Cursor>> {
        Box::pin(async move { self.store().await?.append_batch(id, batch).await })
    }

    fn append_batches<'a>(
        &'a self,
        batches: Vec<(schema::SessionId, Batch)>,
    ) -> BoxFuture<'a, Result<Vec<Option<Cursor>>>> {
        Box::pin(async move { self.store().await?.append_batches(batches).await })
    }

    fn session<'a>(
        &'a self,
        id: &'a schema::SessionId,
    ) -> BoxFuture<'a, Result<Option<StoredSession>>> {
        Box::pin(async move { self.store().await?.session(id).await })
    }

    fn records<'a>(
        &'a self,
        id: &'a schema::SessionId,
        after: Option<Cursor>,
    ) -> BoxFuture<'a, Result<Vec<(Cursor, Record)>>> {
        Box::pin(async move { self.store().await?.records(id, after).await })
    }

    fn records_page<'a>(
        &'a self,
        id: &'a schema::SessionId,
        after: Option<Cursor>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<(Cursor, Record)>>> {
        Box::pin(async move { self.store().await?.records_page(id, after, limit).await })
    }

    fn list<'a>(
        &'a self,
        filter: ListFilter<'a>,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Page>> {
        Box::pin(async move { self.store().await?.list(filter, cursor, limit).await })
    }

    fn delete<'a>(&'a self, id: &'a schema::SessionId) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move { self.store().await?.delete(id).await })
    }

    fn put_state<'a>(
        &'a self,
        id: &'a schema::SessionId,
        key: &'a str,
        value: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move { self.store().await?.put_state(id, key, value).await })
    }

    fn state<'a>(
        &'a self,
        id: &'a schema::SessionId,
    ) -> BoxFuture<'a, Result<HashMap<String, serde_json::Value>>> {
        Box::pin(async move { self.store().await?.state(id).await })
    }

    fn set_title<'a>(
        &'a self,
        id: &'a schema::SessionId,
        title: Option<&'a str>,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move { self.store().await?.set_title(id, title).await })
    }

    fn acquire_lease<'a>(
        &'a self,
        id: &'a schema::SessionId,
        holder: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move { self.store().await?.acquire_lease(id, holder, ttl).await })
    }

    fn release_lease<'a>(
        &'a self,
        id: &'a schema::SessionId,
        holder: &'a str,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move { self.store().await?.release_lease(id, holder).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    #[tokio::test]
    async fn operations_wait_for_the_opening_then_run_on_the_store() {
        let (release, gate) = std::sync::mpsc::channel::<()>();
        let opening = Opening::spawn(move || {
            gate.recv().ok();
            Ok(MemoryStore::new())
        });
        let id: schema::SessionId = "s".into();
        let session = StoredSession::new(id.clone(), "/w");
        let save = opening.save_session(&session);
        tokio::pin!(save);
        // Not open yet: the operation waits.
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(50), &mut save)
                .await
                .is_err()
        );
        release.send(()).unwrap();
        save.await.unwrap();
        assert!(opening.session(&id).await.unwrap().is_some());
    }

    /// A memory store whose leases are all held by someone else.
    struct Taken(MemoryStore);

    impl SessionStore for Taken {
        fn save_session<'a>(&'a self, s: &'a StoredSession) -> BoxFuture<'a, Result<()>> {
            self.0.save_session(s)
        }
        fn append<'a>(
            &'a self,
            id: &'a schema::SessionId,
            records: &'a [Record],
        ) -> BoxFuture<'a, Result<Cursor>> {
            self.0.append(id, records)
        }
        fn session<'a>(
            &'a self,
            id: &'a schema::SessionId,
        ) -> BoxFuture<'a, Result<Option<StoredSession>>> {
            self.0.session(id)
        }
        fn records<'a>(
            &'a self,
            id: &'a schema::SessionId,
            after: Option<Cursor>,
        ) -> BoxFuture<'a, Result<Vec<(Cursor, Record)>>> {
            self.0.records(id, after)
        }
        fn list<'a>(
            &'a self,
            filter: ListFilter<'a>,
            cursor: Option<&'a str>,
            limit: usize,
        ) -> BoxFuture<'a, Result<Page>> {
            self.0.list(filter, cursor, limit)
        }
        fn delete<'a>(&'a self, id: &'a schema::SessionId) -> BoxFuture<'a, Result<()>> {
            self.0.delete(id)
        }
        fn put_state<'a>(
            &'a self,
            id: &'a schema::SessionId,
            key: &'a str,
            value: &'a serde_json::Value,
        ) -> BoxFuture<'a, Result<()>> {
            self.0.put_state(id, key, value)
        }
        fn state<'a>(
            &'a self,
            id: &'a schema::SessionId,
        ) -> BoxFuture<'a, Result<HashMap<String, serde_json::Value>>> {
            self.0.state(id)
        }
        fn acquire_lease<'a>(
            &'a self,
            _: &'a schema::SessionId,
            _: &'a str,
            _: Duration,
        ) -> BoxFuture<'a, Result<bool>> {
            Box::pin(std::future::ready(Ok(false)))
        }
        fn release_lease<'a>(
            &'a self,
            _: &'a schema::SessionId,
            _: &'a str,
        ) -> BoxFuture<'a, Result<()>> {
            Box::pin(std::future::ready(Err(Error::msg("released"))))
        }
    }

    #[tokio::test]
    async fn leases_are_the_opened_stores() {
        let opening = Opening::spawn_async(async {
            Ok(Arc::new(Taken(MemoryStore::new())) as Arc<dyn SessionStore>)
        });
        let (id, ttl) = ("s".into(), Duration::from_secs(1));
        assert!(!opening.acquire_lease(&id, "me", ttl).await.unwrap());
        let e = opening.release_lease(&id, "me").await.unwrap_err();
        assert!(e.to_string().contains("released"), "{e}");
    }

    #[tokio::test]
    async fn a_store_that_did_not_open_fails_every_operation_with_the_reason() {
        let opening = Opening::spawn(|| -> Result<MemoryStore> { Err(Error::msg("disk on fire")) });
        let e = opening.list(ListFilter::all(), None, 10).await.unwrap_err();
        assert!(e.to_string().contains("disk on fire"), "{e}");
        let e = opening.append_batches(Vec::new()).await.unwrap_err();
        assert!(e.to_string().contains("disk on fire"), "{e}");
    }
}
