//! The contract of a session's owner (`StoredSession::owner`, `ListFilter::owner`): kept from
//! the first save, and a filter of `list` applied in the store's query, so that paging stays
//! exact under it. Run on every store by `contract!` in `store.rs`.

use std::path::Path;

use acp_core::store::{ListFilter, StoredSession};

use super::{Store, chunk, get, list_filtered, sid};

async fn save_owned(store: &Store, id: &str, cwd: &str, owner: Option<&str>) {
    let mut session = StoredSession::new(id.to_owned(), cwd);
    session.owner = owner.map(str::to_owned);
    store.save_session(&session).await.unwrap();
}

pub async fn the_owner_is_kept_from_the_first_save(store: Store) {
    let alices = StoredSession::new("a", "/p").owned_by("alice");
    store.save_session(&alices).await.unwrap();
    assert_eq!(get(&store, "a").await.owner.as_deref(), Some("alice"));
    // Neither a save without an owner (stdio reopening it) nor one naming another changes it.
    for owner in [None, Some("bob")] {
        let mut again = StoredSession::new("a", "/p2");
        again.title = Some("renamed".into());
        again.owner = owner.map(str::to_owned);
        store.save_session(&again).await.unwrap();
        let a = get(&store, "a").await;
        assert_eq!(
            a.owner.as_deref(),
            Some("alice"),
            "after a save as {owner:?}"
        );
        assert_eq!(a.cwd, Path::new("/p2"), "the rest is saved");
    }
    store.set_title(&sid("a"), Some("t")).await.unwrap();
    store.append(&sid("a"), &[chunk("hi")]).await.unwrap();
    assert_eq!(get(&store, "a").await.owner.as_deref(), Some("alice"));
    // A session saved with no owner keeps having none.
    save_owned(&store, "b", "/p", None).await;
    save_owned(&store, "b", "/p", Some("bob")).await;
    assert_eq!(get(&store, "b").await.owner, None);
    // Metadata written before owners existed reads as no owner.
    let old = serde_json::json!({"id": "c", "cwd": "/p", "additional_directories": [],
        "title": null, "updated_at": "", "created_at": ""});
    let old: StoredSession = serde_json::from_value(old).unwrap();
    assert_eq!(old.owner, None);
}

pub async fn list_filters_on_owner_and_pages_exactly_under_the_filter(store: Store) {
    // 40 sessions: alice's every third, bob's every third, the rest nobody's; two cwds.
    let owner_of = |i: usize| match i % 3 {
        0 => Some("alice"),
        1 => Some("bob"),
        _ => None,
    };
    let cwd_of = |i: usize| if i.is_multiple_of(2) { "/even" } else { "/odd" };
    let mut newest_first: Vec<(String, usize)> = Vec::new();
    for i in 0..40 {
        let id = format!("s{i:02}");
        save_owned(&store, &id, cwd_of(i), owner_of(i)).await;
        newest_first.insert(0, (id, i));
    }
    let expected = |keep: &dyn Fn(usize) -> bool| -> Vec<String> {
        newest_first
            .iter()
            .filter(|(_, i)| keep(*i))
            .map(|(id, _)| id.clone())
            .collect()
    };
    let alices = expected(&|i| owner_of(i) == Some("alice"));
    assert_eq!(alices.len(), 14);
    // `list_filtered` checks that every page but the last is full: the filter is applied in
    // the query, not to a page after it was taken.
    for limit in [1, 2, 3, 5, 13, 14, 15, 100] {
        let listed = list_filtered(&store, ListFilter::all().owner("alice"), limit).await;
        assert_eq!(listed, alices, "alice's, pages of {limit}");
    }
    let bobs_odd = expected(&|i| owner_of(i) == Some("bob") && i % 2 == 1);
    let filter = ListFilter::all().owner("bob").cwd(Path::new("/odd"));
    for limit in [1, 2, 6, 7, 100] {
        assert_eq!(
            list_filtered(&store, filter, limit).await,
            bobs_odd,
            "pages of {limit}"
        );
    }
    assert!(
        list_filtered(&store, ListFilter::all().owner("carol"), 5)
            .await
            .is_empty()
    );
    // Without an owner filter: everyone's, the unowned included.
    assert_eq!(list_filtered(&store, ListFilter::all(), 7).await.len(), 40);
}

pub async fn an_owners_listing_is_stable_under_concurrent_changes(store: Store) {
    for i in 0..12usize {
        let owner = if i.is_multiple_of(2) { "alice" } else { "bob" };
        save_owned(&store, &format!("s{i:02}"), "/p", Some(owner)).await;
    }
    let alice = ListFilter::all().owner("alice");
    let first = store.list(alice, None, 2).await.unwrap();
    let mut seen: Vec<String> = first.sessions.iter().map(|s| s.id.0.to_string()).collect();
    assert_eq!(seen, ["s10", "s08"]);
    // Meanwhile: one of alice's later sessions and one of bob's are touched, a new one of
    // alice's is created.
    store.append(&sid("s02"), &[chunk("later")]).await.unwrap();
    store.append(&sid("s05"), &[chunk("later")]).await.unwrap();
    save_owned(&store, "s99", "/p", Some("alice")).await;
    let mut cursor = first.next_cursor;
    while let Some(c) = cursor {
        let page = store.list(alice, Some(&c), 2).await.unwrap();
        seen.extend(page.sessions.iter().map(|s| s.id.0.to_string()));
        cursor = page.next_cursor;
    }
    assert_eq!(seen, ["s10", "s08", "s06", "s04", "s02", "s00"]);
}
