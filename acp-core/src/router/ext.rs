//! Extension methods (names starting with `_`): requests the agent declares are answered by
//! its `ext_request` with typed params, any other `-32601`; notifications it declares go to
//! its `ext_notification`, any other is ignored.

use serde_json::value::RawValue;
use tracing::{Instrument, debug, debug_span, warn};

use super::{Router, answer};
use crate::agent::Agent;
use crate::peer::Admission;
use crate::schema::{Meta, RequestId};
use crate::session::{Client, Request};

/// The params of an extension message as JSON (`null` when absent), and their `_meta`.
fn split(params: Option<&RawValue>) -> Result<(serde_json::Value, Option<Meta>), String> {
    let value: serde_json::Value = match params {
        Some(raw) => serde_json::from_str(raw.get()).map_err(|e| e.to_string())?,
        None => serde_json::Value::Null,
    };
    let meta = value.get("_meta").and_then(|m| m.as_object()).cloned();
    Ok((value, meta))
}

impl<A: Agent> Router<A> {
    /// Answers the extension request `method`, one of the agent's.
    pub(super) fn ext_request(
        &self,
        id: RequestId,
        method: &'static str,
        params: Option<&RawValue>,
        admission: Admission,
    ) {
        let (params, meta) = match split(params) {
            Ok(split) => split,
            Err(e) => {
                let error =
                    crate::Error::InvalidParams(format!("invalid params for `{method}`: {e}"));
                return self.conn.peer().reply_error(&id, error.to_rpc(), admission);
            }
        };
        let (agent, conn) = (self.agent.clone(), self.conn.clone());
        let span = debug_span!("ext", method);
        let answered = id.clone();
        let answering = async move {
            let request = Request::new(meta);
            let client = Client::new(conn.clone(), Some(request));
            let result = agent.ext_request(&client, method, params).await;
            answer(&conn, &answered, result).await;
        };
        self.spawn(id, Box::pin(answering.instrument(span)), admission);
    }

    /// Routes the extension notification `method`; `false` if the agent has none of that name.
    pub(super) fn ext_notification(&self, method: &str, params: Option<&RawValue>) -> bool {
        let Some(&method) = self
            .agent
            .ext_notifications()
            .iter()
            .find(|m| **m == method)
        else {
            return false;
        };
        let (params, meta) = match split(params) {
            Ok(split) => split,
            Err(e) => {
                debug!(method, "ignored a malformed extension notification: {e}");
                return true;
            }
        };
        let (agent, conn) = (self.agent.clone(), self.conn.clone());
        self.spawn_notification(async move {
            let client = Client::new(conn, Some(Request::new(meta)));
            if let Err(e) = agent.ext_notification(&client, method, params).await {
                warn!(method, "the extension notification failed: {e}");
            }
        });
        true
    }
}
