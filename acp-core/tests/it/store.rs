//! The session store layer (`acp_core::store`): one contract suite run against every
//! implementation (`memory::*`, `sqlite::*` and, with feature `postgres`, `postgres::*` on a
//! real PostgreSQL server the tests start: see `pg_support`), each test named for what it
//! checks; then what only the SQLite store promises (`sqlite_only::*`): reopening, several
//! stores on one file, `kill -9`, a torn WAL, a paused clock, and two measurements (printed;
//! run with `--nocapture` to see them); what only the PostgreSQL store promises
//! (`store_pg::*`: replicas on one database, leases); and `$ACP_DATABASE_URL` (`store_url::*`).
//!
//! Every test writes only under its own temporary directory.

use std::path::Path;
use std::sync::Arc;

use acp_core::Error;
use acp_core::schema::SessionId;
use acp_core::store::{Batch, Cursor, ListFilter, Record, SessionStore, StoredSession};
use serde_json::json;

type Store = Arc<dyn SessionStore>;

/// Runs each contract test against a fresh `MemoryStore` and a fresh `SqliteStore`.
macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(std::sync::Arc::new(acp_core::store::MemoryStore::new())).await;
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    let dir = tempfile::tempdir().unwrap();
                    let path = dir.path().join("sessions.sqlite3");
                    let store = acp_core::store::SqliteStore::open(path).unwrap();
                    super::$name(std::sync::Arc::new(store)).await;
                }
            )*
        }
        /// On a real PostgreSQL server (one per test binary), a fresh database per test.
        #[cfg(feature = "postgres")]
        mod postgres {
            $(
                #[tokio::test]
                async fn $name() {
                    let url = crate::pg_support::PgServer::shared().database().await;
                    let store = acp_core::store::PostgresStore::connect(&url).await.unwrap();
                    super::$name(std::sync::Arc::new(store)).await;
                }
            )*
        }
    };
}

/// A session's owner: kept, and listed by.
mod store_owner;
/// What only the PostgreSQL store promises: replicas sharing one database, leases.
#[cfg(feature = "postgres")]
mod store_pg;
/// `$ACP_DATABASE_URL`: the store of an agent that chose none, in a child process.
mod store_url;
use store_owner::*;

contract!(
    save_creates_then_updates_keeping_created_at_and_moving_updated_at,
    append_keeps_order_and_returns_increasing_cursors,
    records_after_a_cursor_are_the_ones_after_it,
    list_is_newest_first_and_filters_on_cwd,
    pagination_covers_every_session_exactly_once,
    pagination_is_stable_under_concurrent_changes,
    a_malformed_list_cursor_is_invalid_params,
    delete_removes_records_and_state_and_is_idempotent,
    state_is_put_replaced_and_read_per_session,
    unknown_sessions_have_nothing_and_take_nothing,
    cursors_are_never_reused_after_deletions,
    a_batch_appends_what_append_does,
    batches_of_several_sessions_append_each_in_order_and_skip_unknown_ones,
    records_read_a_page_at_a_time_are_all_the_records_in_order,
    the_owner_is_kept_from_the_first_save,
    list_filters_on_owner_and_pages_exactly_under_the_filter,
    an_owners_listing_is_stable_under_concurrent_changes,
);

fn sid(id: &str) -> SessionId {
    SessionId::new(id)
}

fn chunk(text: &str) -> Record {
    let update = json!({
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": text}
    });
    Record::Update {
        update: serde_json::value::to_raw_value(&update).unwrap(),
    }
}

fn ended() -> Record {
    Record::TurnEnded {
        stop_reason: "end_turn".into(),
    }
}

async fn save(store: &Store, id: &str, cwd: &str) {
    store
        .save_session(&StoredSession::new(id.to_owned(), cwd))
        .await
        .unwrap();
}

async fn get(store: &Store, id: &str) -> StoredSession {
    store.session(&sid(id)).await.unwrap().expect("saved")
}

/// Every page of a listing, following `next_cursor`, as one list of ids.
async fn list_all(store: &Store, cwd: Option<&str>, limit: usize) -> Vec<String> {
    let filter = match cwd {
        Some(cwd) => ListFilter::all().cwd(Path::new(cwd)),
        None => ListFilter::all(),
    };
    list_filtered(store, filter, limit).await
}

/// Every page of a listing through `filter`, following `next_cursor`, as one list of ids;
/// every page but the last is full.
async fn list_filtered(store: &Store, filter: ListFilter<'_>, limit: usize) -> Vec<String> {
    let mut ids = Vec::new();
    let mut cursor = None;
    for _ in 0..10_000 {
        let page = store.list(filter, cursor.as_deref(), limit).await.unwrap();
        assert!(page.sessions.len() <= limit.max(1));
        if page.next_cursor.is_some() {
            assert_eq!(
                page.sessions.len(),
                limit.max(1),
                "only the last page is short"
            );
        }
        ids.extend(page.sessions.into_iter().map(|s| s.id.0.to_string()));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return ids,
        }
    }
    panic!("the listing never ended");
}

fn strictly_increasing(cursors: &[Cursor]) -> bool {
    cursors.windows(2).all(|w| w[0] < w[1])
}

// ---- the contract ------------------------------------------------------------------------

async fn save_creates_then_updates_keeping_created_at_and_moving_updated_at(store: Store) {
    assert_eq!(store.session(&sid("a")).await.unwrap(), None);
    let mut session = StoredSession::new("a", "/work/p");
    session.title = Some("first".into());
    session.additional_directories = vec!["/work/lib".into(), "/work/doc".into()];
    session.updated_at = "ignored".into();
    store.save_session(&session).await.unwrap();
    let first = get(&store, "a").await;
    assert_eq!(first.title.as_deref(), Some("first"));
    assert_eq!(first.cwd, Path::new("/work/p"));
    assert_eq!(first.additional_directories, session.additional_directories);
    assert_eq!(first.created_at, first.updated_at);
    assert!(
        first.updated_at.len() == 24 && first.updated_at.ends_with('Z'),
        "RFC 3339 UTC with milliseconds: {}",
        first.updated_at
    );

    session.title = Some("second".into());
    session.additional_directories.pop();
    session.created_at = "1999-01-01T00:00:00Z".into(); // not the first save: ignored
    store.save_session(&session).await.unwrap();
    let second = get(&store, "a").await;
    assert_eq!(second.title.as_deref(), Some("second"));
    assert_eq!(second.additional_directories.len(), 1);
    assert_eq!(second.created_at, first.created_at);
    assert!(second.updated_at > first.updated_at);

    store.append(&sid("a"), &[chunk("hi")]).await.unwrap();
    let third = get(&store, "a").await;
    assert!(third.updated_at > second.updated_at, "an append touches it");
    assert_eq!(third.created_at, first.created_at);
    assert_eq!(third.title.as_deref(), Some("second"));

    // A first save may bring its own created_at (an imported session).
    let mut imported = StoredSession::new("b", "/work/p");
    imported.created_at = "2020-01-01T00:00:00Z".into();
    store.save_session(&imported).await.unwrap();
    let b = get(&store, "b").await;
    assert_eq!(b.created_at, "2020-01-01T00:00:00Z");
    assert!(b.updated_at > b.created_at);
}

async fn append_keeps_order_and_returns_increasing_cursors(store: Store) {
    save(&store, "a", "/p").await;
    save(&store, "b", "/p").await;
    let c1 = store
        .append(&sid("a"), &[chunk("1"), chunk("2"), chunk("3")])
        .await
        .unwrap();
    let c2 = store.append(&sid("b"), &[chunk("x")]).await.unwrap();
    let c3 = store
        .append(&sid("a"), &[chunk("4"), ended()])
        .await
        .unwrap();
    assert!(c1 < c2 && c2 < c3, "{c1} {c2} {c3}");

    let a = store.records(&sid("a"), None).await.unwrap();
    let records: Vec<_> = a.iter().map(|(_, r)| r.clone()).collect();
    assert_eq!(
        records,
        [chunk("1"), chunk("2"), chunk("3"), chunk("4"), ended()]
    );
    let cursors: Vec<_> = a.iter().map(|&(c, _)| c).collect();
    assert!(strictly_increasing(&cursors), "{cursors:?}");
    assert_eq!(cursors[2], c1);
    assert_eq!(cursors[4], c3);
    assert_eq!(
        store.records(&sid("b"), None).await.unwrap(),
        [(c2, chunk("x"))]
    );

    // Appending nothing changes nothing and answers the last cursor.
    let before = get(&store, "a").await;
    assert_eq!(store.append(&sid("a"), &[]).await.unwrap(), c3);
    assert_eq!(get(&store, "a").await, before);
    save(&store, "empty", "/p").await;
    assert_eq!(store.append(&sid("empty"), &[]).await.unwrap(), 0);
}

async fn a_batch_appends_what_append_does(store: Store) {
    save(&store, "a", "/w").await;
    let mut batch = Batch::new();
    for record in [chunk("one"), ended(), chunk("two\nlines")] {
        batch.push(&record).unwrap();
    }
    let last = store.append_batch(&sid("a"), batch).await.unwrap();
    let got = store.records(&sid("a"), None).await.unwrap();
    assert_eq!(got.last().map(|(c, _)| *c), Some(last));
    let records: Vec<Record> = got.into_iter().map(|(_, r)| r).collect();
    assert_eq!(records, vec![chunk("one"), ended(), chunk("two\nlines")]);
    let empty = store.append_batch(&sid("a"), Batch::new()).await.unwrap();
    assert_eq!(empty, last, "an empty batch changes nothing");
    let unknown = store.append_batch(&sid("nobody"), Batch::new()).await;
    assert!(unknown.unwrap_err().is_not_found());
}

/// `append_batches`, what the runtime's writer calls: each session gets its batches in
/// order, an unknown session gets nothing (and says so), cursors keep increasing.
async fn batches_of_several_sessions_append_each_in_order_and_skip_unknown_ones(store: Store) {
    save(&store, "a", "/w").await;
    save(&store, "b", "/w").await;
    let batch = |texts: &[&str]| {
        let mut batch = Batch::new();
        for text in texts {
            batch.push(&chunk(text)).unwrap();
        }
        batch
    };
    let before = get(&store, "a").await.updated_at;
    let cursors = store
        .append_batches(vec![
            (sid("a"), batch(&["a1", "a2"])),
            (sid("nobody"), batch(&["lost"])),
            (sid("b"), batch(&["b1"])),
            (sid("a"), batch(&["a3"])),
            (sid("b"), Batch::new()),
        ])
        .await
        .unwrap();
    assert_eq!(cursors.len(), 5);
    assert_eq!(cursors[1], None, "an unknown session");
    let (a1, b1, a2, b_empty) = (
        cursors[0].unwrap(),
        cursors[2].unwrap(),
        cursors[3].unwrap(),
        cursors[4].unwrap(),
    );
    assert!(a1 < b1 && b1 < a2, "{cursors:?}");
    assert_eq!(
        b_empty, b1,
        "an empty batch returns the session's last cursor"
    );
    let texts = |records: Vec<(Cursor, Record)>| -> Vec<String> {
        records
            .into_iter()
            .map(|(_, r)| match r.to_update() {
                Some(Ok(acp_core::schema::SessionUpdate::AgentMessageChunk(c))) => {
                    match c.content {
                        acp_core::schema::ContentBlock::Text(t) => t.text,
                        other => panic!("{other:?}"),
                    }
                }
                other => panic!("{other:?}"),
            })
            .collect()
    };
    assert_eq!(
        texts(store.records(&sid("a"), None).await.unwrap()),
        ["a1", "a2", "a3"]
    );
    assert_eq!(texts(store.records(&sid("b"), None).await.unwrap()), ["b1"]);
    assert!(store.session(&sid("nobody")).await.unwrap().is_none());
    assert!(
        get(&store, "a").await.updated_at > before,
        "appending touches the session"
    );
    let first = store.list(ListFilter::all(), None, 1).await.unwrap();
    assert_eq!(
        first.sessions[0].id,
        sid("a"),
        "the last touched is listed first"
    );
    assert_eq!(
        store.append_batches(Vec::new()).await.unwrap(),
        Vec::<Option<Cursor>>::new()
    );
}

/// `records_page`, what replay reads: pages in order, each starting after the last cursor of
/// the one before, covering every record exactly once, and an empty page at the end.
async fn records_read_a_page_at_a_time_are_all_the_records_in_order(store: Store) {
    save(&store, "a", "/p").await;
    save(&store, "other", "/p").await;
    for i in 0..50 {
        let mut batch = Batch::new();
        for j in 0..(i % 7 + 1) {
            batch.push(&chunk(&format!("{i}.{j}"))).unwrap();
        }
        store.append_batch(&sid("a"), batch).await.unwrap();
        store
            .append(&sid("other"), &[chunk("noise")])
            .await
            .unwrap();
    }
    let all = store.records(&sid("a"), None).await.unwrap();
    for limit in [1, 5, 16, 1000] {
        let mut read = Vec::new();
        let mut after = None;
        loop {
            let page = store.records_page(&sid("a"), after, limit).await.unwrap();
            let Some(&(last, _)) = page.last() else { break };
            // At most one stored batch (up to 7 records here) past the limit.
            assert!(
                page.len() < limit + 7,
                "a page of {} for {limit}",
                page.len()
            );
            after = Some(last);
            read.extend(page);
        }
        assert_eq!(read, all, "pages of {limit}");
    }
    assert!(
        store
            .records_page(&sid("nobody"), None, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn records_after_a_cursor_are_the_ones_after_it(store: Store) {
    save(&store, "a", "/p").await;
    save(&store, "other", "/p").await;
    let mut cursors = Vec::new();
    for i in 0..10 {
        cursors.push(
            store
                .append(&sid("a"), &[chunk(&i.to_string())])
                .await
                .unwrap(),
        );
        store
            .append(&sid("other"), &[chunk("noise")])
            .await
            .unwrap();
    }
    let all = store.records(&sid("a"), None).await.unwrap();
    assert_eq!(all.len(), 10);
    assert_eq!(store.records(&sid("a"), Some(0)).await.unwrap(), all);
    for (i, &cursor) in cursors.iter().enumerate() {
        let after = store.records(&sid("a"), Some(cursor)).await.unwrap();
        assert_eq!(after, all[i + 1..], "after {cursor}");
    }
    // Between two of the session's cursors (another session's): the ones after it.
    let between = store
        .records(&sid("a"), Some(cursors[4] + 1))
        .await
        .unwrap();
    assert_eq!(between, all[5..]);
    assert!(
        store
            .records(&sid("a"), Some(u64::MAX))
            .await
            .unwrap()
            .is_empty()
    );
}

async fn list_is_newest_first_and_filters_on_cwd(store: Store) {
    let empty = store.list(ListFilter::all(), None, 10).await.unwrap();
    assert!(empty.sessions.is_empty() && empty.next_cursor.is_none());
    save(&store, "s1", "/p").await;
    save(&store, "s2", "/q").await;
    save(&store, "s3", "/p").await;
    store.append(&sid("s1"), &[chunk("later")]).await.unwrap();

    let page = store.list(ListFilter::all(), None, 10).await.unwrap();
    let ids: Vec<_> = page.sessions.iter().map(|s| s.id.0.as_ref()).collect();
    assert_eq!(ids, ["s1", "s3", "s2"]);
    assert_eq!(page.next_cursor, None);
    assert!(
        page.sessions
            .windows(2)
            .all(|w| w[0].updated_at >= w[1].updated_at),
        "the order of updated_at"
    );
    assert_eq!(page.sessions[0], get(&store, "s1").await);

    assert_eq!(list_all(&store, Some("/p"), 10).await, ["s1", "s3"]);
    assert_eq!(list_all(&store, Some("/p/"), 10).await, ["s1", "s3"]);
    assert_eq!(list_all(&store, Some("/q"), 10).await, ["s2"]);
    assert!(list_all(&store, Some("/p/sub"), 10).await.is_empty());
    assert!(list_all(&store, Some("/P"), 10).await.is_empty());
}

async fn pagination_covers_every_session_exactly_once(store: Store) {
    let mut newest_first = Vec::new();
    for i in 0..23 {
        let id = format!("s{i:02}");
        save(&store, &id, if i % 2 == 0 { "/even" } else { "/odd" }).await;
        newest_first.insert(0, id);
    }
    for limit in [0, 1, 2, 4, 22, 23, 24, 100] {
        assert_eq!(
            list_all(&store, None, limit).await,
            newest_first,
            "pages of {limit}"
        );
    }
    let even: Vec<_> = newest_first
        .iter()
        .filter(|id| id[1..].parse::<u32>().unwrap() % 2 == 0)
        .cloned()
        .collect();
    for limit in [1, 3, 12, 13] {
        assert_eq!(list_all(&store, Some("/even"), limit).await, even);
    }
}

async fn pagination_is_stable_under_concurrent_changes(store: Store) {
    for i in 0..20 {
        save(&store, &format!("s{i:02}"), "/p").await;
    }
    let first = store.list(ListFilter::all(), None, 5).await.unwrap();
    let mut seen: Vec<String> = first.sessions.iter().map(|s| s.id.0.to_string()).collect();
    assert_eq!(seen, ["s19", "s18", "s17", "s16", "s15"]);

    // While the client reads: a session on a later page moves to the top, one already shown
    // moves too, one is created, one is deleted, one is renamed.
    store.append(&sid("s02"), &[chunk("moved")]).await.unwrap();
    store.append(&sid("s17"), &[chunk("moved")]).await.unwrap();
    save(&store, "late", "/p").await;
    store.delete(&sid("s10")).await.unwrap();
    let mut renamed = get(&store, "s05").await;
    renamed.title = Some("renamed".into());
    store.save_session(&renamed).await.unwrap();

    let mut cursor = first.next_cursor;
    while let Some(c) = cursor {
        let page = store.list(ListFilter::all(), Some(&c), 5).await.unwrap();
        for s in &page.sessions {
            if s.id.0.as_ref() == "s05" {
                assert_eq!(s.title.as_deref(), Some("renamed"), "metadata is current");
            }
        }
        seen.extend(page.sessions.iter().map(|s| s.id.0.to_string()));
        cursor = page.next_cursor;
    }
    let expected: Vec<String> = (0..20)
        .rev()
        .filter(|&i| i != 10)
        .map(|i| format!("s{i:02}"))
        .collect();
    assert_eq!(
        seen, expected,
        "in the order of the first page's moment, once each"
    );

    // A new listing shows the changes.
    let fresh = list_all(&store, None, 3).await;
    assert_eq!(fresh[..5], ["s05", "late", "s17", "s02", "s19"]);
    assert_eq!(fresh.len(), 20);
}

async fn a_malformed_list_cursor_is_invalid_params(store: Store) {
    for i in 0..3 {
        save(&store, &format!("s{i}"), "/p").await;
    }
    let page = store.list(ListFilter::all(), None, 1).await.unwrap();
    let good = page.next_cursor.unwrap();
    let mut tampered = good.clone().into_bytes();
    *tampered.last_mut().unwrap() = b'g';
    let tampered = String::from_utf8(tampered).unwrap();
    let longer = format!("{good}0");
    for bad in ["", "garbage", "eyJwYWdlIjogMn0=", "0", &tampered, &longer] {
        match store.list(ListFilter::all(), Some(bad), 10).await {
            Err(Error::InvalidParams(message)) => assert!(message.contains("cursor"), "{message}"),
            other => panic!("{bad:?}: {other:?}"),
        }
    }
    // The good one still works, also once the session it stopped at is gone.
    store.delete(&sid("s2")).await.unwrap();
    let rest = store
        .list(ListFilter::all(), Some(&good), 10)
        .await
        .unwrap();
    let ids: Vec<_> = rest.sessions.iter().map(|s| s.id.0.as_ref()).collect();
    assert_eq!(ids, ["s1", "s0"]);
}

async fn delete_removes_records_and_state_and_is_idempotent(store: Store) {
    save(&store, "a", "/p").await;
    save(&store, "b", "/p").await;
    store
        .append(&sid("a"), &[chunk("a1"), ended()])
        .await
        .unwrap();
    let b_cursor = store.append(&sid("b"), &[chunk("b1")]).await.unwrap();
    store.put_state(&sid("a"), "k", &json!(1)).await.unwrap();
    store.put_state(&sid("b"), "k", &json!(2)).await.unwrap();

    store.delete(&sid("a")).await.unwrap();
    assert_eq!(store.session(&sid("a")).await.unwrap(), None);
    assert!(store.records(&sid("a"), None).await.unwrap().is_empty());
    assert!(store.state(&sid("a")).await.unwrap().is_empty());
    assert_eq!(list_all(&store, None, 10).await, ["b"]);
    // The other session is untouched.
    assert_eq!(
        store.records(&sid("b"), None).await.unwrap(),
        [(b_cursor, chunk("b1"))]
    );
    assert_eq!(store.state(&sid("b")).await.unwrap()["k"], json!(2));

    store.delete(&sid("a")).await.unwrap();
    store.delete(&sid("never")).await.unwrap();

    // The same id again is a new, empty session.
    save(&store, "a", "/p").await;
    assert!(store.records(&sid("a"), None).await.unwrap().is_empty());
    assert!(store.state(&sid("a")).await.unwrap().is_empty());
}

async fn state_is_put_replaced_and_read_per_session(store: Store) {
    save(&store, "a", "/p").await;
    save(&store, "b", "/p").await;
    assert!(store.state(&sid("a")).await.unwrap().is_empty());
    let before = get(&store, "a").await;
    store.put_state(&sid("a"), "k1", &json!(1)).await.unwrap();
    let conversation = json!({"messages": [{"role": "user", "content": "hi ✓"}], "n": 1.5});
    store
        .put_state(&sid("a"), "conversation", &conversation)
        .await
        .unwrap();
    let state = store.state(&sid("a")).await.unwrap();
    assert_eq!(state.len(), 2);
    assert_eq!(state["k1"], json!(1));
    assert_eq!(state["conversation"], conversation);

    store
        .put_state(&sid("a"), "k1", &json!("replaced"))
        .await
        .unwrap();
    let state = store.state(&sid("a")).await.unwrap();
    assert_eq!(state.len(), 2);
    assert_eq!(state["k1"], json!("replaced"));
    assert!(store.state(&sid("b")).await.unwrap().is_empty());
    assert_eq!(
        get(&store, "a").await,
        before,
        "state does not touch updated_at"
    );
}

async fn unknown_sessions_have_nothing_and_take_nothing(store: Store) {
    let nobody = sid("nobody");
    let e = store.append(&nobody, &[chunk("x")]).await.unwrap_err();
    assert!(e.is_not_found(), "{e:?}");
    assert!(e.to_string().contains("nobody"), "{e}");
    assert!(store.append(&nobody, &[]).await.unwrap_err().is_not_found());
    let e = store.put_state(&nobody, "k", &json!(1)).await.unwrap_err();
    assert!(e.is_not_found(), "{e:?}");
    assert_eq!(store.session(&nobody).await.unwrap(), None);
    assert!(store.records(&nobody, None).await.unwrap().is_empty());
    assert!(store.state(&nobody).await.unwrap().is_empty());
    assert!(
        list_all(&store, None, 10).await.is_empty(),
        "nothing was created"
    );
}

async fn cursors_are_never_reused_after_deletions(store: Store) {
    save(&store, "a", "/p").await;
    let last_a = store
        .append(&sid("a"), &[chunk("1"), chunk("2")])
        .await
        .unwrap();
    store.delete(&sid("a")).await.unwrap();
    save(&store, "a", "/p").await;
    save(&store, "b", "/p").await;
    let b = store.append(&sid("b"), &[chunk("b")]).await.unwrap();
    let a = store.append(&sid("a"), &[chunk("again")]).await.unwrap();
    assert!(last_a < b && b < a, "{last_a} {b} {a}");
}

// ---- the memory store only ---------------------------------------------------------------

#[tokio::test]
async fn memory_store_clones_share_the_same_sessions() {
    use acp_core::store::MemoryStore;
    let store = MemoryStore::new();
    let restarted: Store = Arc::new(store.clone());
    let store: Store = Arc::new(store);
    save(&store, "a", "/p").await;
    let cursor = store.append(&sid("a"), &[chunk("1")]).await.unwrap();
    assert_eq!(
        restarted.records(&sid("a"), None).await.unwrap(),
        [(cursor, chunk("1"))]
    );
    restarted.delete(&sid("a")).await.unwrap();
    assert_eq!(store.session(&sid("a")).await.unwrap(), None);
}

/// The stores of one process grant every lease (the trait's default): there is no other
/// replica to keep out.
#[tokio::test]
async fn single_process_stores_grant_every_lease() {
    let dir = tempfile::tempdir().unwrap();
    let stores: [Store; 2] = [
        Arc::new(acp_core::store::MemoryStore::new()),
        Arc::new(acp_core::store::SqliteStore::open(dir.path().join("s.sqlite3")).unwrap()),
    ];
    let ttl = std::time::Duration::from_secs(30);
    for store in stores {
        assert!(store.acquire_lease(&sid("s"), "a", ttl).await.unwrap());
        assert!(store.acquire_lease(&sid("s"), "b", ttl).await.unwrap());
        store.release_lease(&sid("s"), "a").await.unwrap();
    }
}

// ---- the SQLite store only ---------------------------------------------------------------

mod sqlite_only {
    use std::io::{BufRead, BufReader};
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use acp_core::store::{Batch, ListFilter, Record, SqliteStore, StoredSession};

    use super::{Store, chunk, ended, get, list_all, save, sid, strictly_increasing};

    fn open(path: &Path) -> Store {
        Arc::new(SqliteStore::open(path).unwrap())
    }

    /// A record of `size` bytes or so, naming its writer, batch and place in the batch.
    fn tagged(writer: usize, batch: usize, i: usize, size: usize) -> Record {
        chunk(&format!("{writer}/{batch}/{i}/{}", "x".repeat(size)))
    }

    fn tag(record: &Record) -> (usize, usize, usize) {
        let Record::Update { update } = record else {
            panic!("not a chunk: {record:?}")
        };
        let update: serde_json::Value = serde_json::from_str(update.get()).unwrap();
        let text = update["content"]["text"].as_str().unwrap();
        let mut parts = text.split('/').map(|p| p.parse().unwrap_or(0));
        (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        )
    }

    #[tokio::test]
    async fn reopening_the_file_finds_everything() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("deep/er/sessions.sqlite3");
        let store = open(&path);
        let mut a = StoredSession::new("a", "/p");
        a.title = Some("Title ✓".into());
        a.additional_directories = vec!["/lib".into()];
        store.save_session(&a).await.unwrap();
        save(&store, "b", "/q").await;
        let last = store
            .append(&sid("a"), &[chunk("1"), chunk("2"), ended()])
            .await
            .unwrap();
        store
            .put_state(&sid("b"), "todo", &serde_json::json!(["x"]))
            .await
            .unwrap();
        let (a_before, b_before) = (get(&store, "a").await, get(&store, "b").await);
        drop(store);

        let store = open(&path);
        assert_eq!(get(&store, "a").await, a_before);
        assert_eq!(get(&store, "b").await, b_before);
        let records = store.records(&sid("a"), None).await.unwrap();
        assert_eq!(records.len(), 3);
        assert_eq!(records[2], (last, ended()));
        assert_eq!(
            store.state(&sid("b")).await.unwrap()["todo"],
            serde_json::json!(["x"])
        );
        assert_eq!(list_all(&store, None, 1).await, ["a", "b"]);
        let next = store.append(&sid("b"), &[chunk("3")]).await.unwrap();
        assert!(next > last, "cursors go on after a reopen");
    }

    #[tokio::test]
    async fn opening_something_else_fails_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("garbage.sqlite3");
        std::fs::write(&garbage, vec![0x5a; 10_000]).unwrap();
        let e = SqliteStore::open(&garbage).unwrap_err().to_string();
        assert!(
            e.contains("session store") && e.contains("garbage.sqlite3"),
            "{e}"
        );

        let newer = dir.path().join("newer.sqlite3");
        drop(SqliteStore::open(&newer).unwrap());
        let conn = rusqlite::Connection::open(&newer).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
        drop(conn);
        let e = SqliteStore::open(&newer).unwrap_err().to_string();
        assert!(
            e.contains("schema version 99") && e.contains("newer"),
            "{e}"
        );

        let store = SqliteStore::open(dir.path().join("x.sqlite3")).unwrap();
        assert!(store.path().is_absolute());
        assert!(format!("{store:?}").contains("x.sqlite3"));
    }

    /// A file written by the first version of the format (one record per row) opens, reads
    /// with the same cursors, and takes batches after them.
    #[tokio::test]
    async fn a_version_1_file_is_read_and_extended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.sqlite3");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             CREATE TABLE sessions (pk INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
                 cwd TEXT NOT NULL, cwd_key TEXT NOT NULL, additional_directories TEXT NOT NULL,
                 title TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
                 touch INTEGER NOT NULL);
             CREATE INDEX sessions_by_touch ON sessions (touch);
             CREATE INDEX sessions_by_cwd ON sessions (cwd_key, touch);
             CREATE TABLE touches (seq INTEGER PRIMARY KEY AUTOINCREMENT,
                 session INTEGER NOT NULL);
             CREATE INDEX touches_by_session ON touches (session, seq);
             CREATE TABLE records (cursor INTEGER PRIMARY KEY AUTOINCREMENT,
                 session INTEGER NOT NULL, record TEXT NOT NULL);
             CREATE INDEX records_by_session ON records (session, cursor);
             CREATE TABLE state (session INTEGER NOT NULL, key TEXT NOT NULL,
                 value TEXT NOT NULL, PRIMARY KEY (session, key)) WITHOUT ROWID;
             INSERT INTO sessions VALUES (1, 'old', '/p', '/p', '[]', 'Old one',
                 '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 1);
             INSERT INTO touches (session) VALUES (1);
             INSERT INTO records (session, record) VALUES
                 (1, '{\"kind\":\"update\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"one\"}}}'),
                 (1, '{\"kind\":\"turn_ended\",\"stop_reason\":\"end_turn\"}');
             PRAGMA user_version = 1;",
        )
        .unwrap();
        drop(conn);

        let store = open(&path);
        let old = sid("old");
        let records = store.records(&old, None).await.unwrap();
        assert_eq!(records, vec![(1, chunk("one")), (2, ended())]);
        let last = store
            .append(&old, &[chunk("two"), chunk("three")])
            .await
            .unwrap();
        assert_eq!(last, 4);
        let after = store.records(&old, Some(1)).await.unwrap();
        assert_eq!(
            after,
            vec![(2, ended()), (3, chunk("two")), (4, chunk("three"))]
        );
        let listed = store.list(ListFilter::all(), None, 10).await.unwrap();
        assert_eq!(listed.sessions[0].title.as_deref(), Some("Old one"));
        // Sessions from before owners (version 4) have none: nobody's listing shows them.
        assert_eq!(listed.sessions[0].owner, None);
        let alices = store.list(ListFilter::all().owner("alice"), None, 10);
        assert!(alices.await.unwrap().sessions.is_empty());
    }

    /// Past 32 Ki rows, a store moves its index of rows by session into sorted runs: the
    /// records of sessions whose rows are partly moved and partly not read back whole and in
    /// order, a page at a time and after a cursor, and deleting a session leaves the others
    /// whole.
    #[tokio::test]
    async fn records_read_back_whole_across_the_settling_of_the_index() {
        const SESSIONS: usize = 40;
        const COMMITS: usize = 900; // 36,000 rows: one settling, and rows after it
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.sqlite3");
        let store = open(&path);
        for s in 0..SESSIONS {
            save(&store, &format!("s{s}"), "/p").await;
        }
        for c in 0..COMMITS {
            let batches = (0..SESSIONS)
                .map(|s| {
                    let mut batch = Batch::new();
                    // Session 0 gets two records a row: cursors are records, not rows.
                    for i in 0..1 + usize::from(s == 0) {
                        batch.push(&tagged(s, c, i, 8)).unwrap();
                    }
                    (sid(&format!("s{s}")), batch)
                })
                .collect();
            store.append_batches(batches).await.unwrap();
        }
        // The index was settled at least once (the test would prove nothing otherwise).
        let settled: i64 = rusqlite::Connection::open(&path)
            .unwrap()
            .query_row("SELECT count(*) FROM settled", [], |r| r.get(0))
            .unwrap();
        assert!(settled >= 32 * 1024, "{settled} rows settled");

        for s in [0, 7, SESSIONS - 1] {
            let id = sid(&format!("s{s}"));
            let per_row = 1 + usize::from(s == 0);
            let mut read = Vec::new();
            let mut after = None;
            loop {
                let page = store.records_page(&id, after, 100).await.unwrap();
                let Some(&(last, _)) = page.last() else { break };
                after = Some(last);
                read.extend(page);
            }
            let tags: Vec<_> = read.iter().map(|(_, r)| tag(r)).collect();
            let expected: Vec<_> = (0..COMMITS)
                .flat_map(|c| (0..per_row).map(move |i| (s, c, i)))
                .collect();
            assert_eq!(tags, expected, "session s{s}");
            let cursors: Vec<_> = read.iter().map(|(c, _)| *c).collect();
            assert!(strictly_increasing(&cursors));
            // After a cursor in the middle: the rest, exactly.
            let (middle, _) = read[read.len() / 2];
            let rest = store.records(&id, Some(middle)).await.unwrap();
            assert_eq!(rest, read[read.len() / 2 + 1..].to_vec(), "session s{s}");
        }

        store.delete(&sid("s7")).await.unwrap();
        assert!(store.records(&sid("s7"), None).await.unwrap().is_empty());
        let eight = store.records(&sid("s8"), None).await.unwrap();
        assert_eq!(eight.len(), COMMITS);
        // The next append of another session continues after the largest cursor.
        let before = eight.last().unwrap().0;
        let next = store.append(&sid("s8"), &[chunk("more")]).await.unwrap();
        assert!(next > before);
    }

    /// Records are kept one per line in a batch: an update given as pretty-printed JSON text
    /// still reads back whole, beside its neighbours.
    #[tokio::test]
    async fn a_multi_line_update_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir.path().join("s.sqlite3"));
        save(&store, "s", "/p").await;
        let pretty = serde_json::to_string_pretty(&serde_json::json!({
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "line 1\nline 2"}
        }))
        .unwrap();
        assert!(pretty.contains('\n'));
        let record = Record::Update {
            update: serde_json::value::RawValue::from_string(pretty).unwrap(),
        };
        let records = [chunk("before"), record.clone(), chunk("after")];
        store.append(&sid("s"), &records).await.unwrap();
        let read = store.records(&sid("s"), None).await.unwrap();
        assert_eq!(read.len(), 3);
        assert_eq!((&read[0].1, &read[2].1), (&records[0], &records[2]));
        let update = |r: &Record| r.to_update().unwrap().unwrap();
        assert_eq!(update(&read[1].1), update(&record));
    }

    #[tokio::test]
    async fn deleting_a_session_gives_its_space_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.sqlite3");
        let store = open(&path);
        save(&store, "big", "/p").await;
        save(&store, "small", "/p").await;
        store.append(&sid("small"), &[chunk("kept")]).await.unwrap();
        for batch in 0..20 {
            let records: Vec<_> = (0..100).map(|i| tagged(0, batch, i, 500)).collect();
            store.append(&sid("big"), &records).await.unwrap();
        }
        let pages = || {
            let conn = rusqlite::Connection::open(&path).unwrap();
            let count = |pragma: &str| -> i64 {
                conn.query_row(&format!("PRAGMA {pragma}"), [], |r| r.get(0))
                    .unwrap()
            };
            (count("page_count"), count("freelist_count"))
        };
        let (before, _) = pages();
        store.delete(&sid("big")).await.unwrap();
        let (after, free) = pages();
        assert!(after * 4 < before, "{before} pages → {after}");
        assert_eq!(free, 0);
        assert_eq!(store.records(&sid("small"), None).await.unwrap().len(), 1);
    }

    #[test]
    fn the_default_path_is_per_agent() {
        // Reads the environment; writes nothing.
        if let Some(path) = SqliteStore::default_path("scribe") {
            assert!(
                path.ends_with("scribe/sessions.sqlite3"),
                "{}",
                path.display()
            );
            assert!(path.is_absolute() || std::env::var_os("ACP_DATA_DIR").is_some());
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_stores_on_one_file_append_concurrently() {
        const WRITERS: usize = 8;
        const BATCHES: usize = 100;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared.sqlite3");
        let (a, b) = (open(&path), open(&path));
        save(&a, "shared", "/p").await;
        let mut tasks = tokio::task::JoinSet::<acp_core::Result<()>>::new();
        for writer in 0..WRITERS {
            let store = if writer % 2 == 0 {
                a.clone()
            } else {
                b.clone()
            };
            tasks.spawn(async move {
                let own = format!("own{writer}");
                save(&store, &own, "/p").await;
                for batch in 0..BATCHES {
                    let records = [tagged(writer, batch, 0, 10), tagged(writer, batch, 1, 10)];
                    store.append(&sid("shared"), &records).await?;
                    store.append(&sid(&own), &records[..1]).await?;
                }
                Ok(())
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.unwrap()
                .expect("no append failed (no `database is locked`)");
        }

        for store in [&a, &b] {
            let shared = store.records(&sid("shared"), None).await.unwrap();
            assert_eq!(shared.len(), WRITERS * BATCHES * 2, "no record lost");
            let cursors: Vec<_> = shared.iter().map(|&(c, _)| c).collect();
            assert!(strictly_increasing(&cursors));
            // Each append is contiguous, and each writer's appends are in its order.
            let mut next_batch = [0; WRITERS];
            for pair in shared.chunks(2) {
                let (w0, b0, i0) = tag(&pair[0].1);
                assert_eq!(
                    (i0, tag(&pair[1].1)),
                    (0, (w0, b0, 1)),
                    "an append is whole"
                );
                assert_eq!(b0, next_batch[w0]);
                next_batch[w0] += 1;
            }
            for writer in 0..WRITERS {
                let own = store.records(&sid(&format!("own{writer}")), None).await;
                assert_eq!(own.unwrap().len(), BATCHES);
            }
        }
    }

    /// What the file holds, copied aside while a store has it open (its WAL not checkpointed).
    struct Snapshot {
        db: Vec<u8>,
        wal: Vec<u8>,
    }

    impl Snapshot {
        fn restore(&self, dir: &Path, wal: &[u8]) -> PathBuf {
            std::fs::create_dir_all(dir).unwrap();
            let path = dir.join("sessions.sqlite3");
            std::fs::write(&path, &self.db).unwrap();
            std::fs::write(dir.join("sessions.sqlite3-wal"), wal).unwrap();
            path
        }
    }

    #[tokio::test]
    async fn a_torn_or_garbage_wal_tail_never_stops_the_store_from_opening() {
        const BATCHES: usize = 10;
        let dir = tempfile::tempdir().unwrap();
        let live = dir.path().join("live/sessions.sqlite3");
        let store = open(&live);
        save(&store, "s", "/p").await;
        let mut written = Vec::new();
        for batch in 0..BATCHES {
            let records: Vec<_> = (0..5).map(|i| tagged(0, batch, i, 1500)).collect();
            store.append(&sid("s"), &records).await.unwrap();
            written.extend(records);
        }
        let snapshot = Snapshot {
            db: std::fs::read(&live).unwrap(),
            wal: std::fs::read(live.with_file_name("sessions.sqlite3-wal")).unwrap(),
        };
        let wal = &snapshot.wal;
        assert!(
            wal.len() > 50 * 1500,
            "the records are in the WAL: {}",
            wal.len()
        );

        let garbage: Vec<u8> = (0..10_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let mut overwritten = wal.clone();
        let n = overwritten.len();
        overwritten[n - 3000..].copy_from_slice(&garbage[..3000]);
        let cases: Vec<(&str, Vec<u8>, usize)> = vec![
            (
                "garbage appended",
                [&wal[..], &garbage[..]].concat(),
                BATCHES,
            ),
            (
                "last frame torn",
                wal[..wal.len() - 100].to_vec(),
                BATCHES - 1,
            ),
            ("tail overwritten with garbage", overwritten, BATCHES - 1),
            ("cut in half", wal[..wal.len() / 2].to_vec(), 0),
            ("header torn", wal[..20].to_vec(), 0),
            ("all garbage", garbage.clone(), 0),
            ("empty", Vec::new(), 0),
        ];
        for (i, (case, wal, at_least)) in cases.into_iter().enumerate() {
            let path = snapshot.restore(&dir.path().join(format!("case{i}")), &wal);
            let store = SqliteStore::open(&path).unwrap_or_else(|e| panic!("{case}: {e}"));
            let store: Store = Arc::new(store);
            let records = store.records(&sid("s"), None).await.unwrap();
            assert_eq!(records.len() % 5, 0, "{case}: appends are whole");
            assert!(
                records.len() >= at_least * 5,
                "{case}: {} records",
                records.len()
            );
            for (j, (_, record)) in records.iter().enumerate() {
                assert_eq!(record, &written[j], "{case}: what was written, in order");
            }
            // And it goes on working.
            save(&store, "after", "/p").await;
            let cursor = store.append(&sid("after"), &[chunk("ok")]).await.unwrap();
            assert!(
                records.last().is_none_or(|&(last, _)| cursor > last),
                "{case}"
            );
        }
        drop(store);
    }

    const CHILD_VAR: &str = "ACP_STORE_TEST_CHILD";
    const AGENT: &str = "kill -9 test agent";

    /// The process `killed_process_loses_no_committed_append` kills: appends batches of three
    /// records through `SqliteStore::open_default` (under the `ACP_DATA_DIR` its parent set),
    /// printing each committed batch, until killed (or a minute has passed).
    #[test]
    #[ignore = "the child process of killed_process_loses_no_committed_append"]
    fn child_appending_until_killed() {
        let Some(round) = std::env::var_os(CHILD_VAR) else {
            return;
        };
        let round: usize = round.to_str().unwrap().parse().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let store: Store = Arc::new(SqliteStore::open_default(AGENT).unwrap());
            save(&store, "child", "/p").await;
            let deadline = Instant::now() + Duration::from_secs(60);
            let mut batch = 0;
            while Instant::now() < deadline {
                let records: Vec<_> = (0..3).map(|i| tagged(round, batch, i, 2000)).collect();
                let cursor = store.append(&sid("child"), &records).await.unwrap();
                println!("committed {round} {batch} {cursor}");
                batch += 1;
            }
        });
    }

    #[test]
    fn killed_process_loses_no_committed_append() {
        let dir = tempfile::tempdir().unwrap();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let mut parent_appends = 0;
        let mut parent_store: Option<Store> = None;
        let mut committed = Vec::new();
        for round in 0..3 {
            let mut child = Command::new(std::env::current_exe().unwrap())
                .args([
                    "store::sqlite_only::child_appending_until_killed",
                    "--exact",
                ])
                .args(["--ignored", "--nocapture", "--test-threads=1"])
                .env(CHILD_VAR, round.to_string())
                .env("ACP_DATA_DIR", dir.path())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let stdout = child.stdout.take().unwrap();
            let (lines, from_child) = std::sync::mpsc::channel();
            let reader = std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    if line.starts_with("committed ") && lines.send(line).is_err() {
                        break;
                    }
                }
            });
            // Meanwhile this process appends to the same file, through its own store.
            let deadline = Instant::now() + Duration::from_secs(60);
            let mut seen = 0;
            while seen < 100 + 70 * round {
                assert!(Instant::now() < deadline, "the child committed only {seen}");
                match from_child.recv_timeout(Duration::from_millis(5)) {
                    Ok(line) => {
                        committed.push(line);
                        seen += 1;
                    }
                    Err(_) if parent_store.is_none() => {}
                    Err(e) => assert!(matches!(e, std::sync::mpsc::RecvTimeoutError::Timeout)),
                }
                if parent_store.is_none() && seen > 0 {
                    // The child made the file: `$ACP_DATA_DIR/<agent as a directory name>/`.
                    let agent_dir = std::fs::read_dir(dir.path()).unwrap().next().unwrap();
                    let agent_dir = agent_dir.unwrap().file_name().into_string().unwrap();
                    assert!(agent_dir.starts_with("kill_-9_test_agent-"), "{agent_dir}");
                    let path = dir.path().join(agent_dir).join("sessions.sqlite3");
                    let store = open(&path);
                    runtime.block_on(save(&store, "parent", "/p"));
                    parent_store = Some(store);
                }
                if let Some(store) = &parent_store {
                    let record = [tagged(9, parent_appends, 0, 100)];
                    runtime
                        .block_on(store.append(&sid("parent"), &record))
                        .unwrap();
                    parent_appends += 1;
                }
            }
            child.kill().unwrap(); // SIGKILL: mid-append, most likely
            child.wait().unwrap();
            reader.join().unwrap();
            committed.extend(from_child.try_iter());
        }

        let store = parent_store.unwrap();
        let records = runtime
            .block_on(store.records(&sid("child"), None))
            .unwrap();
        let stored: std::collections::HashMap<_, _> = records.iter().cloned().collect();
        for line in &committed {
            let mut parts = line.split(' ').skip(1).map(|p| p.parse::<usize>().unwrap());
            let (round, batch, cursor) = (
                parts.next().unwrap(),
                parts.next().unwrap(),
                parts.next().unwrap(),
            );
            let record = stored.get(&(cursor as u64));
            assert_eq!(
                record.map(tag),
                Some((round, batch, 2)),
                "committed: {line}"
            );
        }
        assert_eq!(records.len() % 3, 0, "no append is torn");
        for three in records.chunks(3) {
            let tags: Vec<_> = three.iter().map(|(_, r)| tag(r)).collect();
            let (round, batch, _) = tags[0];
            assert_eq!(
                tags,
                [(round, batch, 0), (round, batch, 1), (round, batch, 2)]
            );
        }
        let parent = runtime
            .block_on(store.records(&sid("parent"), None))
            .unwrap();
        assert_eq!(parent.len(), parent_appends);
        eprintln!(
            "kill -9: {} batches committed by 3 killed children, all there; {parent_appends} \
             appends by this process beside them",
            committed.len()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn works_on_a_current_thread_runtime_with_a_paused_clock() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir.path().join("sessions.sqlite3"));
        let work = async {
            save(&store, "a", "/p").await;
            let records: Vec<_> = (0..2000).map(|i| tagged(0, 0, i, 100)).collect();
            store.append(&sid("a"), &records).await.unwrap();
            assert_eq!(store.records(&sid("a"), None).await.unwrap().len(), 2000);
            list_all(&store, None, 10).await
        };
        // Tokio does not auto-advance a paused clock while a blocking task runs, so the store's
        // work never looks slow to a timeout on such a clock.
        let listed = tokio::time::timeout(Duration::from_millis(1), work)
            .await
            .expect("the paused clock moved while the store worked");
        assert_eq!(listed, ["a"]);
    }

    #[tokio::test]
    async fn listing_1000_sessions_is_fast() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir.path().join("sessions.sqlite3"));
        for i in 0..1000 {
            let mut session = StoredSession::new(format!("sess_{i:04}"), format!("/p{}", i % 10));
            session.title = Some(format!("Session number {i}"));
            store.save_session(&session).await.unwrap();
        }
        let started = Instant::now();
        let one_page = store.list(ListFilter::all(), None, 1000).await.unwrap();
        let one_page_time = started.elapsed();
        assert_eq!(one_page.sessions.len(), 1000);

        let started = Instant::now();
        let paged = list_all(&store, None, 50).await;
        let paged_time = started.elapsed();
        assert_eq!(paged.len(), 1000);

        let started = Instant::now();
        let filtered = list_all(&store, Some("/p3"), 50).await;
        let filtered_time = started.elapsed();
        assert_eq!(filtered.len(), 100);

        // Pages after 100 of the sessions were touched since the first page.
        let first = store.list(ListFilter::all(), None, 50).await.unwrap();
        for i in (0..1000).step_by(10) {
            store
                .append(&sid(&format!("sess_{i:04}")), &[chunk("x")])
                .await
                .unwrap();
        }
        let started = Instant::now();
        let mut cursor = first.next_cursor;
        let mut count = first.sessions.len();
        while let Some(c) = cursor {
            let page = store.list(ListFilter::all(), Some(&c), 50).await.unwrap();
            count += page.sessions.len();
            cursor = page.next_cursor;
        }
        let touched_time = started.elapsed();
        assert_eq!(count, 1000);

        eprintln!(
            "list 1,000 sessions: one page {one_page_time:?}; 20 pages of 50 {paged_time:?}; \
             cwd filter (100 of them, 2 pages) {filtered_time:?}; 19 pages with 100 sessions \
             touched since the first {touched_time:?}"
        );
        let total = one_page_time + paged_time + filtered_time + touched_time;
        assert!(
            total < Duration::from_secs(2),
            "a hang guard, not a benchmark: {total:?}"
        );
    }

    #[tokio::test]
    async fn appending_100_000_small_records_in_batches_of_256() {
        const TOTAL: usize = 100_000;
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir.path().join("sessions.sqlite3"));
        save(&store, "a", "/p").await;
        let records: Vec<_> = (0..TOTAL)
            .map(|i| tagged(0, i / 256, i % 256, 40))
            .collect();
        let started = Instant::now();
        for batch in records.chunks(256) {
            store.append(&sid("a"), batch).await.unwrap();
        }
        let append_time = started.elapsed();
        let started = Instant::now();
        let read = store.records(&sid("a"), None).await.unwrap();
        let read_time = started.elapsed();
        assert_eq!(read.len(), TOTAL);
        eprintln!(
            "append {TOTAL} records of ~90 bytes in batches of 256: {append_time:?}, {:.0} \
             records/s; read them all back: {read_time:?}, {:.0} records/s",
            TOTAL as f64 / append_time.as_secs_f64(),
            TOTAL as f64 / read_time.as_secs_f64(),
        );
        // One record per append: the cost of a transaction.
        let started = Instant::now();
        for i in 0..2000 {
            store
                .append(&sid("a"), &[tagged(1, i, 0, 40)])
                .await
                .unwrap();
        }
        let single_time = started.elapsed();
        eprintln!(
            "2,000 appends of one record each: {single_time:?}, {:.0} appends/s",
            2000.0 / single_time.as_secs_f64()
        );
        assert!(
            append_time < Duration::from_secs(120),
            "a hang guard: {append_time:?}"
        );
    }

    /// What the runtime's writer does with 1,000 sessions streaming at once: each commit holds
    /// a few records of every session. Printed, not asserted (but for a hang guard).
    #[tokio::test]
    async fn appending_for_1000_sessions_at_once() {
        const SESSIONS: usize = 1000;
        const PER_COMMIT: usize = 8;
        const COMMITS: usize = 50;
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir.path().join("sessions.sqlite3"));
        for s in 0..SESSIONS {
            save(&store, &format!("s{s}"), "/p").await;
        }
        let started = Instant::now();
        for c in 0..COMMITS {
            let batches = (0..SESSIONS)
                .map(|s| {
                    let mut batch = Batch::new();
                    for i in 0..PER_COMMIT {
                        batch.push(&tagged(s, c, i, 160)).unwrap();
                    }
                    (sid(&format!("s{s}")), batch)
                })
                .collect();
            store.append_batches(batches).await.unwrap();
        }
        let elapsed = started.elapsed();
        let records = SESSIONS * PER_COMMIT * COMMITS;
        eprintln!(
            "{COMMITS} commits of {PER_COMMIT} records of ~210 bytes for each of {SESSIONS} \
             sessions: {elapsed:?}, {:.0} records/s, {:.1} µs per session per commit",
            records as f64 / elapsed.as_secs_f64(),
            elapsed.as_secs_f64() * 1e6 / (SESSIONS * COMMITS) as f64,
        );
        assert!(
            elapsed < Duration::from_secs(120),
            "a hang guard: {elapsed:?}"
        );
    }
}
