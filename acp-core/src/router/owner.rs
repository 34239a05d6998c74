//! Whose sessions a connection sees: a connection serving a user (the network service's, see
//! `Connection::user`) sees only the sessions of the store that user created. Another
//! user's session is answered exactly as a session the store does not have (`-32002` for
//! `session/load` and `session/resume`, done for `session/delete`, absent from
//! `session/list`): nothing tells that it exists. A connection with no user (stdio, a
//! service with one bearer token) sees every session, as before users existed.

use crate::Result;
use crate::schema::SessionId;
use crate::session::Connection;
use crate::store::{ListFilter, SessionStore};

/// `filter` narrowed to the connection's user's sessions, if it serves one.
pub(super) fn listed<'a>(conn: &'a Connection, filter: ListFilter<'a>) -> ListFilter<'a> {
    match conn.user() {
        Some(user) => filter.owner(user),
        None => filter,
    }
}

/// Whether the connection may see session `id`: always without a user (whether the session
/// exists is not looked at: the caller finds out as before); with one, when the session
/// exists and is that user's.
pub(super) async fn sees(
    store: &dyn SessionStore,
    conn: &Connection,
    id: &SessionId,
) -> Result<bool> {
    let Some(user) = conn.user() else {
        return Ok(true);
    };
    let session = store.session(id).await?;
    Ok(session.is_some_and(|s| s.owner.as_deref() == Some(user)))
}
