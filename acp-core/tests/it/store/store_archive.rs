//! What every store does for the Unstable session methods: the `archived` flag (set, kept by
//! later saves, filtered on by `list`) and copying a session (`session/fork`).

use std::path::Path;

use acp_core::store::{ListFilter, StoredSession};
use serde_json::json;

use super::{Store, chunk, ended, get, list_all, list_filtered, save, sid};

pub async fn the_archived_flag_is_set_kept_and_filtered_on(store: Store) {
    save(&store, "a", "/p").await;
    save(&store, "b", "/p").await;
    store.set_archived(&sid("a"), true).await.unwrap();
    // Setting the flag it has succeeds; a later save keeps it.
    store.set_archived(&sid("a"), true).await.unwrap();
    save(&store, "a", "/p").await;
    assert!(get(&store, "a").await.archived);
    assert!(!get(&store, "b").await.archived);
    let only = |archived| list_filtered(&store, ListFilter::all().archived(archived), 10);
    assert_eq!(only(true).await, ["a"]);
    assert_eq!(only(false).await, ["b"]);
    assert_eq!(list_all(&store, None, 10).await.len(), 2);
    store.set_archived(&sid("a"), false).await.unwrap();
    assert_eq!(only(true).await, Vec::<String>::new());
    let unknown = store.set_archived(&sid("nobody"), true).await.unwrap_err();
    assert!(unknown.is_not_found(), "{unknown}");
}

pub async fn a_copy_has_the_records_and_state_and_then_its_own(store: Store) {
    save(&store, "from", "/p").await;
    store
        .append(&sid("from"), &[chunk("one"), chunk("two"), ended()])
        .await
        .unwrap();
    store
        .put_state(&sid("from"), "todo", &json!(["a"]))
        .await
        .unwrap();
    let mut to = StoredSession::new("to", "/q");
    to.title = Some("fork".into());
    store.copy_session(&sid("from"), &to).await.unwrap();
    let records = |id: &'static str| {
        let store = store.clone();
        async move { store.records(&sid(id), None).await.unwrap().len() }
    };
    assert_eq!(records("to").await, 3);
    assert_eq!(store.state(&sid("to")).await.unwrap()["todo"], json!(["a"]));
    assert_eq!(get(&store, "to").await.cwd, Path::new("/q"));
    // They diverge: each keeps its own.
    store.append(&sid("to"), &[chunk("three")]).await.unwrap();
    assert_eq!((records("from").await, records("to").await), (3, 4));
    let unknown = store
        .copy_session(&sid("nobody"), &StoredSession::new("x", "/p"))
        .await
        .unwrap_err();
    assert!(unknown.is_not_found(), "{unknown}");
    assert!(store.session(&sid("x")).await.unwrap().is_none());
}
