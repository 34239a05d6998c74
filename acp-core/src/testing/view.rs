//! What the client knows of a session so far ([`SessionView`]): its current mode, config
//! options, slash commands, title and usage, as an editor would show them, worked out from the
//! transcript (the answers to `session/new`, `load`, `resume`, `set_mode` and
//! `set_config_option`, and every session-level update).

use std::collections::HashMap;

use serde_json::Value;

use super::trace::{Direction, Frame};
use crate::protocol::methods;
use crate::schema::{
    AvailableCommand, SessionConfigKind, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigSelectOptions, SessionId, SessionUpdate, UsageUpdate,
};

/// A session as the client sees it after the frames so far; see
/// [`TestSession::view`](super::TestSession::view).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SessionView {
    /// The current mode's id, if the session has modes.
    pub mode: Option<String>,
    /// The ids of the session's modes, in order.
    pub modes: Vec<String>,
    /// The config options with their current values, as last sent.
    pub config_options: Vec<SessionConfigOption>,
    /// The slash commands, as last advertised.
    pub commands: Vec<AvailableCommand>,
    /// The title the agent set, if any.
    pub title: Option<String>,
    /// The last usage reported, if any.
    pub usage: Option<UsageUpdate>,
}

impl SessionView {
    /// The current value of the config option `id`: the value id of a select option, or
    /// `true`/`false` for a boolean one (as JSON).
    pub fn config(&self, id: &str) -> Option<Value> {
        self.config_options
            .iter()
            .find(|o| &*o.id.0 == id)
            .map(|o| match &o.kind {
                SessionConfigKind::Select(select) => Value::from(&*select.current_value.0),
                SessionConfigKind::Boolean(boolean) => Value::from(boolean.current_value),
                _ => Value::Null,
            })
    }

    /// The names of the slash commands.
    pub fn command_names(&self) -> Vec<String> {
        self.commands.iter().map(|c| c.name.clone()).collect()
    }

    fn set_options(&mut self, options: Vec<SessionConfigOption>) {
        // The mode option, kept in step with the modes.
        if let Some(select) = options.iter().find_map(|o| match (&o.category, &o.kind) {
            (Some(SessionConfigOptionCategory::Mode), SessionConfigKind::Select(s)) => Some(s),
            _ => None,
        }) {
            self.mode = Some(select.current_value.0.to_string());
            // Protocol v2 has no `modes`: the mode option is all there is of them.
            if let (true, SessionConfigSelectOptions::Ungrouped(all)) =
                (self.modes.is_empty(), &select.options)
            {
                self.modes = all.iter().map(|o| o.value.0.to_string()).collect();
            }
        }
        self.config_options = options;
    }

    /// Takes in an answer to a session-opening request, or to a settings change.
    fn answer(&mut self, method: &str, request: &Value, result: &Value) {
        match method {
            methods::SESSION_NEW | methods::SESSION_LOAD | methods::SESSION_RESUME => {
                if let Some(modes) = result.get("modes").filter(|m| !m.is_null()) {
                    self.mode = modes["currentModeId"].as_str().map(str::to_owned);
                    self.modes = modes["availableModes"]
                        .as_array()
                        .map(|all| {
                            all.iter()
                                .filter_map(|m| m["id"].as_str().map(str::to_owned))
                                .collect()
                        })
                        .unwrap_or_default();
                }
                if let Some(options) = options(result) {
                    self.set_options(options);
                }
            }
            methods::SESSION_SET_MODE => {
                self.mode = request["modeId"].as_str().map(str::to_owned);
            }
            methods::SESSION_SET_CONFIG_OPTION => {
                if let Some(options) = options(result) {
                    self.set_options(options);
                }
            }
            _ => {}
        }
    }

    fn update(&mut self, update: SessionUpdate) {
        match update {
            SessionUpdate::CurrentModeUpdate(m) => {
                self.mode = Some(m.current_mode_id.0.to_string())
            }
            SessionUpdate::ConfigOptionUpdate(c) => self.set_options(c.config_options),
            SessionUpdate::AvailableCommandsUpdate(c) => self.commands = c.available_commands,
            SessionUpdate::SessionInfoUpdate(info) => {
                if let Some(title) = info.title.as_opt_ref() {
                    self.title = title.cloned();
                }
            }
            SessionUpdate::UsageUpdate(usage) => self.usage = Some(usage),
            _ => {}
        }
    }
}

fn options(result: &Value) -> Option<Vec<SessionConfigOption>> {
    let options = result.get("configOptions").filter(|o| !o.is_null())?;
    serde_json::from_value(options.clone()).ok()
}

/// Builds a [`SessionView`] one frame at a time, in transcript order.
#[derive(Debug)]
pub(super) struct Builder {
    session: SessionId,
    pub view: SessionView,
    /// The client's requests by id, to read their answers.
    requests: HashMap<String, (String, Value)>,
}

impl Builder {
    pub fn new(session: SessionId) -> Self {
        Builder {
            session,
            view: SessionView::default(),
            requests: HashMap::new(),
        }
    }

    /// Takes in the next frame of the transcript.
    pub fn feed(&mut self, frame: &Frame) {
        let message = frame.as_v1();
        match frame.direction {
            Direction::ToAgent => {
                if let (Some(id), Some(method)) = (message.get("id"), frame.method()) {
                    self.requests.insert(
                        id.to_string(),
                        (method.to_owned(), message["params"].clone()),
                    );
                }
            }
            Direction::FromAgent => {
                if let Some(notification) = frame.session_update() {
                    if notification.session_id == self.session {
                        self.view.update(notification.update);
                    }
                    return;
                }
                let (Some(id), Some(result)) = (message.get("id"), message.get("result")) else {
                    return;
                };
                let Some((method, params)) = self.requests.get(&id.to_string()) else {
                    return;
                };
                let session = &*self.session.0;
                let own = params["sessionId"].as_str() == Some(session)
                    || result["sessionId"].as_str() == Some(session);
                if own {
                    self.view.answer(method, params, result);
                }
            }
        }
    }
}

/// The view of `session` after `frames`.
pub(super) fn view(session: &SessionId, frames: &[Frame]) -> SessionView {
    let mut builder = Builder::new(session.clone());
    for frame in frames {
        builder.feed(frame);
    }
    builder.view
}
