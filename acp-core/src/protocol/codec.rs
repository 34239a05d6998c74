//! The connection's protocol version as one value: the [`Codec`] a connection owns writes
//! everything the runtime sends (a session's updates, the turn's state, the end of a turn,
//! answers, requests to the client) and knows what the version does with a prompt. It is set
//! once, by `initialize`; until then the connection speaks v1.
//!
//! Everything above this module (sessions, tools, MCP, the model loop, the store, the turn)
//! hands the codec the runtime's account, the v1 types of the schema crate, and never asks
//! which version is spoken: v1 writes the account as it is, v2 translates it ([`v2`](super::v2)).

use std::ops::Range;
use std::sync::OnceLock;

use serde::Serialize;
use serde_json::value::RawValue;

use super::shown::{self, Shown};
use super::{Answer, State, Version, v1};
use crate::jsonrpc;
use crate::schema::{
    ClientCapabilities, ContentBlock, MessageId, Meta, RequestId, SessionId, SessionUpdate,
    StopReason, Usage,
};
use crate::transport::Route;
use crate::{Error, Result};

/// One connection's protocol version, and the encoder of its frames.
#[derive(Debug, Default)]
pub(crate) struct Codec {
    version: OnceLock<Version>,
    /// The unstable parts of the version its client asked for (none until `initialize`).
    unstable: OnceLock<Unstable>,
}

/// The key of `clientCapabilities._meta` by which a v1 client asks for the end-of-turn token
/// `usage` of `session/prompt`'s answer (the unstable RFD `end-turn-token-usage`, the schema
/// crate's feature of the same name): `true` asks. The RFD, the official SDKs and Zed name no
/// way to ask, so the runtime reads this one.
pub const END_TURN_USAGE: &str = "unstable_end_turn_token_usage";

/// The unstable parts of v1 that a client receives only when it asked for them in
/// `initialize`: a stable client's strict reader rejects a key its schema does not have.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Unstable {
    /// `usage` in the answer to `session/prompt` ([`END_TURN_USAGE`]).
    pub end_turn_usage: bool,
}

impl Unstable {
    /// What `client` asked for, in its capabilities' `_meta`.
    pub fn asked(client: &crate::schema::ClientCapabilities) -> Self {
        let flag = |key: &str| {
            client
                .meta
                .as_ref()
                .and_then(|meta| meta.get(key))
                .and_then(serde_json::Value::as_bool)
                == Some(true)
        };
        Unstable {
            end_turn_usage: flag(END_TURN_USAGE),
        }
    }
}

/// A `session/update` frame, and where the update's account (its v1 JSON text, which the
/// session store records whatever the wire) is.
#[derive(Debug)]
pub(crate) struct EncodedUpdate {
    /// The frame, newline-terminated; empty when the client is not shown the update.
    pub bytes: Vec<u8>,
    /// None when the update is not history (a notice).
    pub account: Option<Account>,
}

/// Where the account of an encoded update is.
#[derive(Debug)]
pub(crate) enum Account {
    /// Inside the frame, at this range of its bytes (v1: the frame carries the account as it
    /// is, so recording it costs no second serialization).
    InFrame(Range<usize>),
    /// Apart from the frame, which carries a translation of it (v2), or what the client was
    /// shown instead (see [`shown`](super::shown)).
    Apart(String),
}

/// How a turn's end is told, beside its outcome: what each version needs of it.
pub(crate) struct Ending<'a> {
    /// The turn's `session/prompt` request (v1 answers it now; v2 answered it when the prompt
    /// was accepted).
    pub id: &'a RequestId,
    /// The `_meta` the author set on the answer (v1).
    pub meta: Option<Meta>,
    /// The ids of the session's terminals still running, asked once the turn has settled
    /// (v2's `idle` lists them as its `background`).
    #[cfg_attr(not(feature = "v2"), allow(dead_code))]
    pub background: &'a (dyn Fn() -> Vec<String> + Send + Sync),
}

impl Codec {
    /// The version the connection speaks (v1 until `initialize` says otherwise).
    pub fn version(&self) -> Version {
        self.version.get().copied().unwrap_or_default()
    }

    /// The version `initialize` chose, if it ran.
    #[cfg_attr(not(feature = "v2"), allow(dead_code))]
    pub fn negotiated(&self) -> Option<Version> {
        self.version.get().copied()
    }

    /// Sets the version, once: `false` if `initialize` had chosen another one already (a
    /// connection speaks one version).
    pub fn negotiate(&self, version: Version) -> bool {
        self.version.set(version).is_ok() || self.version() == version
    }

    /// Sets the unstable parts the client asked for in `initialize`, once (the first stays).
    pub fn opt_in(&self, unstable: Unstable) {
        let _ = self.unstable.set(unstable);
    }

    /// The unstable parts the client asked for (none before `initialize`).
    pub fn unstable(&self) -> Unstable {
        self.unstable.get().copied().unwrap_or_default()
    }

    /// Whether a prompt sent while the session's turn runs waits for its turn (v2), rather
    /// than being refused (v1); and whether a prompt is answered when accepted (v2) rather
    /// than at the end of its turn (v1).
    pub fn queues_prompts(&self) -> bool {
        self.version() != Version::V1
    }

    /// The `session/update` frame carrying `update` of `session` to a client with `client`'s
    /// capabilities: the nearest update it understands, or none, where it lacks one
    /// ([`shown`](super::shown)).
    pub fn update(
        &self,
        session: &SessionId,
        update: &SessionUpdate,
        client: &ClientCapabilities,
    ) -> Result<EncodedUpdate> {
        let kept = shown::kept(update);
        let account = |update: &SessionUpdate| -> Result<Option<Account>> {
            Ok(kept
                .then(|| serde_json::to_string(update))
                .transpose()?
                .map(Account::Apart))
        };
        match shown::shown(update, client) {
            Shown::AsIs => {}
            Shown::Instead(instead) => {
                let bytes = self.update_frame(session, &instead)?;
                return Ok(EncodedUpdate {
                    bytes,
                    account: account(update)?,
                });
            }
            Shown::Hidden => {
                return Ok(EncodedUpdate {
                    bytes: Vec::new(),
                    account: account(update)?,
                });
            }
        }
        #[cfg(feature = "v2")]
        if self.version() == Version::V2 && !super::v2::same_as_v1(update) {
            let bytes = super::v2::session_update(session, update)?.unwrap_or_default();
            return Ok(EncodedUpdate {
                bytes,
                account: account(update)?,
            });
        }
        let (bytes, range) = v1::session_update_located(session, update)?;
        Ok(EncodedUpdate {
            bytes,
            account: kept.then_some(Account::InFrame(range)),
        })
    }

    /// The frame carrying `update` of `session` in the connection's version (empty where the
    /// version has no counterpart).
    fn update_frame(&self, session: &SessionId, update: &SessionUpdate) -> Result<Vec<u8>> {
        match self.version() {
            Version::V1 => Ok(v1::session_update_located(session, update)?.0),
            #[cfg(feature = "v2")]
            Version::V2 => Ok(super::v2::session_update(session, update)?.unwrap_or_default()),
        }
    }

    /// The frame replaying a recorded update (its account's JSON text) of `session` to a
    /// client with `client`'s capabilities; `None` when the version has no counterpart or the
    /// client is not shown it.
    pub fn replayed(
        &self,
        session: &SessionId,
        update: &RawValue,
        client: &ClientCapabilities,
    ) -> Result<Option<Vec<u8>>> {
        if shown::may_differ(update) {
            let account: SessionUpdate = serde_json::from_str(update.get())?;
            match shown::shown(&account, client) {
                Shown::AsIs => {}
                Shown::Instead(instead) => return self.update_frame(session, &instead).map(Some),
                Shown::Hidden => return Ok(None),
            }
        }
        match self.version() {
            Version::V1 => v1::raw_update(session, update).map(Some),
            #[cfg(feature = "v2")]
            Version::V2 => super::v2::replayed_update(session, update),
        }
    }

    /// The frame reporting the running turn's `state`; `None` where the version leaves it
    /// implicit (v1).
    pub fn state(&self, session: &SessionId, state: State) -> Option<Vec<u8>> {
        match self.version() {
            Version::V1 => {
                let _ = (session, state);
                None
            }
            #[cfg(feature = "v2")]
            Version::V2 => super::v2::state_update(session, state).ok(),
        }
    }

    /// The frame that acknowledges the accepted prompt `id` whose user message is `message`,
    /// before its turn runs; `None` where the answer ends the turn instead (v1).
    pub fn accepted(&self, id: &RequestId, message: &str) -> Option<Vec<u8>> {
        match self.version() {
            Version::V1 => {
                let _ = (id, message);
                None
            }
            #[cfg(feature = "v2")]
            Version::V2 => Some(super::v2::prompt_answer(id, message)),
        }
    }

    /// The frame that echoes the user's prompt (`blocks`, its message `message`) to the
    /// client, in the turn; `None` where the client shows what it sent itself (v1).
    pub fn user_message(
        &self,
        session: &SessionId,
        message: &MessageId,
        blocks: &[ContentBlock],
    ) -> Option<Vec<u8>> {
        match self.version() {
            Version::V1 => {
                let _ = (session, message, blocks);
                None
            }
            #[cfg(feature = "v2")]
            Version::V2 => {
                super::v2::notification(session, super::v2::user_message(message, blocks)).ok()
            }
        }
    }

    /// The frame that tells the client a turn of `session` ended (`cancelled`: it was
    /// cancelled, whatever its outcome), the stop reason it tells (none: the turn failed), and
    /// where it goes (the answer to the prompt in v1; the session's state in v2).
    pub fn turn_end(
        &self,
        session: &SessionId,
        ending: Ending<'_>,
        outcome: Result<StopReason>,
        cancelled: bool,
        usage: Option<Usage>,
    ) -> (Vec<u8>, Option<StopReason>, Route) {
        match self.version() {
            Version::V1 => {
                let _ = session;
                // Unstable in v1: only to a client that asked for it.
                let usage = usage.filter(|_| self.unstable().end_turn_usage);
                let (bytes, stop) =
                    v1::prompt_answer(ending.id, outcome, cancelled, ending.meta, usage);
                (bytes, stop, Route::Answer(ending.id.clone()))
            }
            #[cfg(feature = "v2")]
            Version::V2 => {
                let background = (ending.background)();
                let (bytes, stop) =
                    super::v2::idle(session, outcome, cancelled, &background, usage);
                (bytes, stop, Route::Session(session.clone()))
            }
        }
    }

    /// The frame that tells the client a subagent's work in `session` ended (its own `idle`,
    /// v2); none where the version reports it on the parent only (v1).
    pub fn child_ended(
        &self,
        session: &SessionId,
        outcome: Result<StopReason>,
        usage: Option<Usage>,
    ) -> Option<Vec<u8>> {
        match self.version() {
            Version::V1 => {
                let _ = (session, outcome, usage);
                None
            }
            #[cfg(feature = "v2")]
            Version::V2 => Some(super::v2::idle(session, outcome, false, &[], usage).0),
        }
    }

    /// The frame that says the replay a reopening asked for is over, and the session's state
    /// then (its running `background` terminals); none where the version says neither (v1).
    pub fn replayed_to_end(
        &self,
        session: &SessionId,
        replayed: bool,
        background: &[String],
    ) -> Vec<Vec<u8>> {
        match self.version() {
            Version::V1 => {
                let _ = (session, replayed, background);
                Vec::new()
            }
            #[cfg(feature = "v2")]
            Version::V2 => replayed
                .then(|| super::v2::replay_complete(session).ok())
                .flatten()
                .into_iter()
                .chain(super::v2::idle_snapshot(session, background))
                .collect(),
        }
    }

    /// The answer to request `id`: its result, or its error.
    pub fn answer<T: Answer>(&self, id: &RequestId, result: Result<T>) -> Vec<u8> {
        match self.version() {
            Version::V1 => v1::answer(id, result),
            #[cfg(feature = "v2")]
            Version::V2 => v1::answer(id, result.map(Answer::into_v2)),
        }
    }

    /// The request `id` to the client, of `method` with `params` (the runtime's, v1's).
    pub fn request<P: Serialize>(&self, id: i64, method: &str, params: &P) -> Result<Vec<u8>> {
        #[cfg(feature = "v2")]
        if self.version() == Version::V2 && method == super::methods::REQUEST_PERMISSION {
            // The runtime's permission request, read back as the type it is, as v2 asks it.
            let v1: crate::schema::RequestPermissionRequest =
                serde_json::from_value(serde_json::to_value(params)?)?;
            let params = super::v2::permission_request(v1);
            return Ok(jsonrpc::encode_request(id, method, &params)?);
        }
        Ok(jsonrpc::encode_request(id, method, params)?)
    }

    /// The error answer to request `id`.
    pub fn error(&self, id: &RequestId, error: &Error) -> Vec<u8> {
        jsonrpc::encode_error(id, &error.to_rpc())
    }
}
