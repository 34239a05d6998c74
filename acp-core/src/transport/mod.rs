//! What the runtime reads and writes, whatever carries it: messages in ([`Source`]: lines of a
//! byte stream, or messages a network connection hands over one by one) and messages out
//! ([`Sink`]: newline-terminated onto a byte stream, or handed over each with its [`Route`],
//! for a network connection to deliver where it belongs without reading it). stdio is a byte
//! stream ([`stdio`]); the network service (`net`, feature `http`) is the other side of a
//! message [`Source`] and [`Sink`] pair.

pub(crate) mod lines;
// The message side of both is the network service's (feature `http`).
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) mod messages;
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) mod sink;
pub(crate) mod stdio;

pub(crate) use lines::{Line, LineReader};
pub(crate) use messages::Source;
pub(crate) use sink::{Route, Sink};
