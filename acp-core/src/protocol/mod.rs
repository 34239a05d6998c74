//! ACP over JSON-RPC: the names of the methods the runtime answers and sends ([`methods`], from
//! the schema crate's constants), and the one place that turns what the runtime sends —
//! session updates, tool-call changes, the end of a turn — into protocol v1 frames ([`v1`]), so
//! that a v2 encoder can later sit beside it.

pub(crate) mod methods;
pub(crate) mod v1;
