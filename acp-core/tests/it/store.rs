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

/// The archived flag and copies (the Unstable session methods).
mod store_archive;
/// A session's owner: kept, and listed by.
mod store_owner;
/// What only the PostgreSQL store promises: replicas sharing one database, leases.
#[cfg(feature = "postgres")]
mod store_pg;
/// `$ACP_DATABASE_URL`: the store of an agent that chose none, in a child process.
mod store_url;
use store_archive::*;
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
    the_archived_flag_is_set_kept_and_filtered_on,
    a_copy_has_the_records_and_state_and_then_its_own,
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

/// What only the SQLite store promises.
mod sqlite_only;
