//! Requests of the agent that the test answers by hand: [`HeldRequest`], taken with
//! [`TestClient::next_request`](super::TestClient::next_request) for the methods named with
//! [`TestClientBuilder::hold`](super::TestClientBuilder::hold).

use std::sync::Arc;

use serde_json::{Value, json};

use super::wire::{Outgoing, Wire};

/// A request the agent sent and the client holds unanswered until the test answers it.
///
/// Answer it with [`respond`](Self::respond), [`respond_error`](Self::respond_error) or
/// [`select`](Self::select); dropping it unanswered leaves the agent waiting (as an editor
/// that never answers would), which is what a test of cancellation may want.
#[must_use = "the agent waits until the request is answered"]
pub struct HeldRequest {
    wire: Arc<Wire>,
    message: Value,
}

impl std::fmt::Debug for HeldRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldRequest")
            .field("message", &self.message)
            .finish_non_exhaustive()
    }
}

impl HeldRequest {
    pub(super) fn new(wire: Arc<Wire>, message: Value) -> Self {
        HeldRequest { wire, message }
    }

    /// The request's method.
    pub fn method(&self) -> &str {
        self.message["method"].as_str().unwrap_or_default()
    }

    /// The request's id, as the agent sent it.
    pub fn id(&self) -> &Value {
        &self.message["id"]
    }

    /// The request's params (`null` if it had none).
    pub fn params(&self) -> &Value {
        &self.message["params"]
    }

    /// The whole frame, as the agent sent it.
    pub fn message(&self) -> &Value {
        &self.message
    }

    /// Answers with this `result`.
    pub fn respond(self, result: Value) {
        let frame = json!({"jsonrpc": "2.0", "id": self.id(), "result": result});
        self.wire.send(Outgoing::json(frame));
    }

    /// Answers with a JSON-RPC error.
    pub fn respond_error(self, code: i32, message: impl Into<String>) {
        let error = json!({"code": code, "message": message.into()});
        let frame = json!({"jsonrpc": "2.0", "id": self.id(), "error": error});
        self.wire.send(Outgoing::json(frame));
    }

    /// Answers a `session/request_permission` with the option `option_id` selected.
    pub fn select(self, option_id: &str) {
        self.respond(json!({"outcome": {"outcome": "selected", "optionId": option_id}}));
    }
}
