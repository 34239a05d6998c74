//! ACP over JSON-RPC: the names of the methods the runtime answers and sends ([`methods`], from
//! the schema crate's constants), the runtime's account of what happens in a session
//! ([`account`]: the v1 update types, whatever the connection speaks), and the one place that
//! turns it into frames of the connection's protocol version: the connection's [`Codec`],
//! which writes [`v1`] or [`v2`] (feature `v2`) as `initialize` chose ([`Version`]).

pub(crate) mod account;
mod codec;
pub(crate) mod methods;
pub(crate) mod shown;
pub(crate) mod v1;
#[cfg(feature = "v2")]
pub(crate) mod v2;

#[cfg(feature = "testing")]
pub(crate) use codec::END_TURN_USAGE;
pub(crate) use codec::{Account, Codec, Ending, Unstable};

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

impl Version {
    /// Where the agent's accepted prompt content is advertised, for the error that refuses
    /// content it does not accept.
    pub fn prompt_capabilities(self) -> &'static str {
        match self {
            Version::V1 => "promptCapabilities",
            #[cfg(feature = "v2")]
            Version::V2 => "session.prompt",
        }
    }
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
