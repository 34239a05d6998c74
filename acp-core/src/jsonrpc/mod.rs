//! JSON-RPC 2.0 as ACP frames it, with no knowledge of ACP itself: classifying incoming lines
//! ([`parse`]), encoding outgoing frames ([`encode`]), and the table of our requests awaiting
//! an answer ([`pending`]).

pub(crate) mod encode;
pub(crate) mod parse;
pub(crate) mod pending;

pub(crate) use encode::{encode_error, encode_notification, encode_request, encode_result};
pub(crate) use parse::{Incoming, params, parse};
pub(crate) use pending::{Answer, Failed, Pending};
