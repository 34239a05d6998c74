//! ACP over JSON-RPC: the names of the methods the runtime answers and sends ([`methods`], from
//! the schema crate's constants), the runtime's account of what happens in a session
//! ([`account`]: the v1 update types, whatever the connection speaks), and the one place that
//! turns it into frames of the connection's protocol version: [`v1`], and [`v2`] (feature
//! `v2`), chosen per connection at `initialize` ([`Version`]).

pub(crate) mod account;
pub(crate) mod methods;
pub(crate) mod v1;
#[cfg(feature = "v2")]
pub(crate) mod v2;

/// An answer of the runtime's handlers, and what a v2 connection gets instead
/// ([`v2::Answer`]); without feature `v2`, any answer.
#[cfg(feature = "v2")]
pub(crate) use v2::Answer;

/// An answer of the runtime's handlers (without feature `v2`, any serializable value).
#[cfg(not(feature = "v2"))]
pub(crate) trait Answer: serde::Serialize {}
#[cfg(not(feature = "v2"))]
impl<T: serde::Serialize> Answer for T {}

/// The protocol version a connection negotiated at `initialize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Version {
    /// Protocol v1 (also before `initialize`).
    #[default]
    V1,
    /// Protocol v2 (Preview).
    #[cfg(feature = "v2")]
    V2,
}

/// The foreground state of a turn while it runs, which v2 reports (`state_update`) and v1
/// leaves implicit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Foreground work is running.
    Running,
    /// Foreground work waits on the user (a permission request or a form).
    RequiresAction,
}

/// The frame reporting `state` of `session` on a connection speaking `version`; `None` on v1.
pub(crate) fn state_update(
    version: Version,
    session: &crate::schema::SessionId,
    state: State,
) -> Option<Vec<u8>> {
    match version {
        Version::V1 => {
            let _ = (session, state);
            None
        }
        #[cfg(feature = "v2")]
        Version::V2 => v2::state_update(session, state).ok(),
    }
}

/// The frame replaying a recorded update (the account's JSON text) of `session` on a
/// connection speaking `version`; `None` when that version has no counterpart.
pub(crate) fn replayed_update(
    version: Version,
    session: &crate::schema::SessionId,
    update: &serde_json::value::RawValue,
) -> crate::Result<Option<Vec<u8>>> {
    match version {
        Version::V1 => v1::raw_update(session, update).map(Some),
        #[cfg(feature = "v2")]
        Version::V2 => v2::replayed_update(session, update),
    }
}
