//! Bytes in and out: the newline-delimited framing of the input ([`lines`]) and the process's
//! stdio as async streams ([`stdio`]). Later transports (WebSocket, HTTP) sit beside these.

pub(crate) mod lines;
pub(crate) mod stdio;

pub(crate) use lines::{Line, LineReader};
