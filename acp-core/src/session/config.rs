//! The values of a session's settings (its modes and config options, declared as
//! `settings` describes): what the runtime keeps of them per session, and the [`Session`]
//! calls that read and change them.
//!
//! The runtime owns the values: it answers `session/new`, `session/load` and
//! `session/resume` with them, validates and applies `session/set_mode` and
//! `session/set_config_option`, keeps `modes` and the `mode` config option in step, and saves
//! them with the session so they come back on load. The agent only reads them
//! ([`Session::config`], [`Session::mode`]) and changes them ([`Session::set_config`],
//! [`Session::set_mode`]), which tells the client.

use std::sync::{Arc, Mutex};

use super::Session;
use super::settings::{ConfigKind, ConfigOption, ConfigValue, Modes, Settings, list};
use crate::schema::{
    self, ClientCapabilities, ConfigOptionUpdate, CurrentModeUpdate, SessionConfigOption,
    SessionMode, SessionModeState, SessionUpdate,
};
use crate::sync::lock;
use crate::{Error, Result};

/// The key the runtime saves a session's settings under in the session store.
pub(crate) const STORE_KEY: &str = "acp.settings";

/// The current values of a session's settings, in the order of [`Settings::all`].
#[derive(Debug, Default)]
pub(crate) struct Values(Mutex<Option<Vec<ConfigValue>>>);

impl Values {
    fn with<R>(&self, settings: &Settings, f: impl FnOnce(&mut Vec<ConfigValue>) -> R) -> R {
        let mut values = lock(&self.0);
        let values = values.get_or_insert_with(|| settings.all().map(|s| s.default).collect());
        f(values)
    }

    /// Takes back values saved with the session (unknown ids and invalid values are skipped:
    /// the declarations may have changed since).
    pub(crate) fn restore(&self, settings: &Settings, saved: &serde_json::Value) {
        let Some(saved) = saved.as_object() else {
            return;
        };
        self.with(settings, |values| {
            for (spec, value) in settings.all().zip(values.iter_mut()) {
                let restored = match (spec.kind, saved.get(spec.id)) {
                    (ConfigKind::Boolean, Some(serde_json::Value::Bool(on))) => {
                        Some(ConfigValue::Bool(*on))
                    }
                    (ConfigKind::Select(_), Some(serde_json::Value::String(id))) => {
                        spec.choice(id).map(|c| ConfigValue::Choice(c.id))
                    }
                    _ => None,
                };
                if let Some(restored) = restored {
                    *value = restored;
                }
            }
        });
    }

    /// The values as saved with the session.
    fn saved(&self, settings: &Settings) -> serde_json::Value {
        self.with(settings, |values| {
            let map = settings
                .all()
                .zip(values.iter())
                .map(|(spec, value)| {
                    let value = match value {
                        ConfigValue::Choice(id) => serde_json::Value::from(*id),
                        ConfigValue::Bool(on) => serde_json::Value::from(*on),
                    };
                    (spec.id.to_owned(), value)
                })
                .collect();
            serde_json::Value::Object(map)
        })
    }

    fn get(&self, settings: &Settings, index: usize) -> Option<ConfigValue> {
        self.with(settings, |values| values.get(index).copied())
    }

    fn set(&self, settings: &Settings, index: usize, value: ConfigValue) {
        self.with(settings, |values| {
            if let Some(slot) = values.get_mut(index) {
                *slot = value;
            }
        });
    }

    /// The session's modes, as `session/new` answers them.
    pub(crate) fn mode_state(&self, settings: &Settings) -> Option<SessionModeState> {
        let spec = settings.modes?;
        let ConfigKind::Select(choices) = spec.kind else {
            return None;
        };
        let current = match self.get(settings, 0) {
            Some(ConfigValue::Choice(id)) => id,
            _ => choices.first()?.id,
        };
        let modes = choices
            .iter()
            .map(|c| SessionMode::new(c.id, c.name).description(c.description.map(str::to_owned)))
            .collect();
        Some(SessionModeState::new(current, modes))
    }

    /// The config options offered to `client`, with their current values; `None` if the
    /// agent declares none.
    pub(crate) fn options(
        &self,
        settings: &Settings,
        client: &ClientCapabilities,
    ) -> Option<Vec<SessionConfigOption>> {
        if settings.is_empty() {
            return None;
        }
        self.with(settings, |values| {
            Some(
                settings
                    .all()
                    .zip(values.iter())
                    .filter(|(spec, _)| spec.offered_to(client))
                    .map(|(spec, value)| spec.as_option(*value))
                    .collect(),
            )
        })
    }
}

/// The index of `T` among the agent's declared settings, or the error saying how to declare
/// it.
fn declared<T: ConfigOption>(settings: &Settings, modes: bool) -> Result<usize> {
    let spec = T::spec();
    if let Some(index) = settings.index_of(spec.id)
        && settings.all().nth(index) == Some(spec)
    {
        return Ok(index);
    }
    let name = std::any::type_name::<T>();
    let short = name.rsplit("::").next().unwrap_or(name);
    let declare = if modes || spec.category == Some("mode") {
        format!("modes = {short}")
    } else {
        format!("config({short})")
    };
    Err(Error::msg(format!(
        "`{name}` is not one of this agent's settings, so the session has no value for it: declare it with `#[acp::agent({declare})]`"
    )))
}

/// What a change of a setting tells the client.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Notify {
    /// Both the mode (`current_mode_update`) and the config options (`config_option_update`).
    Both,
    /// Only `current_mode_update` (the client set it with `session/set_config_option`,
    /// whose answer carries the options).
    ModeOnly,
    /// Only `config_option_update` (the client set it with `session/set_mode`).
    OptionsOnly,
    /// Nothing (initial values, answered with the session's setup).
    #[cfg_attr(not(feature = "unstable-session-options"), allow(dead_code))]
    Nothing,
}

/// The initial config option values a request that opens a session carries (`configOptions`;
/// Unstable, feature `unstable-session-options`): checked when the request is read, applied
/// once the session is set up ([`Session::apply_initial_options`]).
#[derive(Debug, Default)]
pub(crate) struct InitialOptions(
    #[cfg(feature = "unstable-session-options")] Vec<schema::InitialSessionConfigOption>,
);

#[cfg(feature = "unstable-session-options")]
impl InitialOptions {
    /// The entries of a `method` request, or `-32602` for two entries of one option.
    pub fn checked(
        method: &str,
        entries: Vec<schema::InitialSessionConfigOption>,
    ) -> std::result::Result<Self, schema::Error> {
        let mut seen = std::collections::HashSet::new();
        if let Some(twice) = entries.iter().find(|e| !seen.insert(e.config_id.0.clone())) {
            return Err(schema::Error::new(
                schema::ErrorCode::InvalidParams.into(),
                format!(
                    "{method}: `configOptions` sets `{}` twice; give each option once",
                    twice.config_id
                ),
            ));
        }
        Ok(InitialOptions(entries))
    }
}

impl Session {
    fn settings(&self) -> Arc<Settings> {
        self.connection()
            .services()
            .get::<Settings>()
            .unwrap_or_default()
    }

    /// The session's current value of the config option `T` (its default until the user or
    /// the agent changes it).
    ///
    /// Fails when the agent does not declare `T` (`#[acp::agent(config(T))]`, or
    /// `modes = T`): the error names the type and says what to write, and a turn that
    /// passes it on with `?` fails with it (`-32603`), so a forgotten declaration shows up
    /// the first time the code runs instead of reading as the default for ever.
    ///
    /// ```no_run
    /// # #[derive(Default)] struct Tone;
    /// # impl acp_core::ConfigOption for Tone {
    /// #     fn spec() -> &'static acp_core::ConfigSpec { unimplemented!() }
    /// #     fn to_value(&self) -> acp_core::ConfigValue { unimplemented!() }
    /// #     fn from_value(_: acp_core::ConfigValue) -> Option<Self> { None }
    /// # }
    /// # fn turn(cx: &acp_core::Session) -> acp_core::Result<()> {
    /// let tone: Tone = cx.config()?;
    /// # Ok(()) }
    /// ```
    pub fn config<T: ConfigOption>(&self) -> Result<T> {
        self.value(false)
    }

    /// The session's current mode. Fails, like [`config`](Self::config), when the agent does
    /// not declare `M` (`#[acp::agent(modes = M)]`).
    pub fn mode<M: Modes>(&self) -> Result<M> {
        self.value(true)
    }

    fn value<T: ConfigOption>(&self, modes: bool) -> Result<T> {
        let settings = self.settings();
        let index = declared::<T>(&settings, modes)?;
        Ok(self
            .state
            .settings
            .get(&settings, index)
            .and_then(T::from_value)
            .unwrap_or_default())
    }

    /// Changes the config option `T` to `value` and tells the client
    /// (`config_option_update` with every option; for the modes also
    /// `current_mode_update`). Fails, like [`config`](Self::config), if the agent does not
    /// declare `T`.
    pub async fn set_config<T: ConfigOption>(&self, value: T) -> Result<()> {
        let settings = self.settings();
        let index = declared::<T>(&settings, false)?;
        self.apply_setting(&settings, index, value.to_value(), Notify::Both)
            .await
    }

    /// Switches the session to `mode` and tells the client (`current_mode_update`, and
    /// `config_option_update` for clients that use config options).
    pub async fn set_mode<M: Modes>(&self, mode: M) -> Result<()> {
        self.set_config(mode).await
    }

    /// Sets the setting at `index` to `value`, saves it with the session, and sends what
    /// `notify` says.
    pub(crate) async fn apply_setting(
        &self,
        settings: &Settings,
        index: usize,
        value: ConfigValue,
        notify: Notify,
    ) -> Result<()> {
        self.state.settings.set(settings, index, value);
        self.save_settings(settings).await;
        let is_mode = settings.has_modes() && index == 0;
        let (mode, options) = match notify {
            Notify::Both => (is_mode, true),
            Notify::ModeOnly => (is_mode, false),
            Notify::OptionsOnly => (false, true),
            Notify::Nothing => (false, false),
        };
        if mode && let ConfigValue::Choice(id) = value {
            self.update(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(id)))
                .await?;
        }
        if options
            && let Some(list) = self
                .state
                .settings
                .options(settings, self.client_capabilities())
        {
            self.update(SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(
                list,
            )))
            .await?;
        }
        Ok(())
    }

    /// Saves the session's settings in the session store, if there is one.
    async fn save_settings(&self, settings: &Settings) {
        let Some(store) = self.connection().peer().journal.store() else {
            return;
        };
        let saved = self.state.settings.saved(settings);
        if let Err(e) = store.put_state(self.id(), STORE_KEY, &saved).await {
            tracing::warn!(session = %self.id(), "could not save the session's settings: {e}");
        }
    }

    /// Applies the initial values a request that opened the session carried, in order, as
    /// `session/set_config_option` would but quietly (no update: the answer carries them),
    /// ignoring an unknown option or a value it does not allow, as the protocol says.
    pub(crate) async fn apply_initial_options(&self, initial: InitialOptions) {
        #[cfg(feature = "unstable-session-options")]
        {
            let settings = self.settings();
            let client = self.client_capabilities();
            for entry in initial.0 {
                let id = &entry.config_id.0;
                let Some(spec) = settings
                    .all()
                    .find(|s| s.id == &**id && s.offered_to(client))
                else {
                    tracing::debug!(option = %id, "ignored an initial value of an unknown option");
                    continue;
                };
                let Ok(value) = spec.parse(&entry.value) else {
                    tracing::debug!(option = %id, "ignored an initial value the option does not allow");
                    continue;
                };
                let index = settings.index_of(id).unwrap_or_default();
                let _ = self
                    .apply_setting(&settings, index, value, Notify::Nothing)
                    .await;
            }
        }
        #[cfg(not(feature = "unstable-session-options"))]
        let InitialOptions() = initial;
    }

    /// Applies the client's `session/set_config_option`: the option must be one offered to
    /// this client and the value one of its values.
    pub(crate) async fn client_sets_option(
        &self,
        id: &str,
        value: &schema::SessionConfigOptionValue,
    ) -> Result<Vec<SessionConfigOption>> {
        let settings = self.settings();
        let client = self.client_capabilities();
        let offered: Vec<_> = settings.all().filter(|s| s.offered_to(client)).collect();
        let Some(spec) = offered.iter().find(|s| s.id == id) else {
            return Err(Error::InvalidParams(format!(
                "unknown config option `{id}`; the options are {}",
                list(offered.iter().map(|s| s.id))
            )));
        };
        let value = spec.parse(value)?;
        let index = settings.index_of(id).unwrap_or_default();
        self.apply_setting(&settings, index, value, Notify::ModeOnly)
            .await?;
        Ok(self
            .state
            .settings
            .options(&settings, client)
            .unwrap_or_default())
    }

    /// Applies the client's `session/set_mode`: the mode must be one of the declared modes.
    pub(crate) async fn client_sets_mode(&self, mode: &str) -> Result<()> {
        let settings = self.settings();
        let Some(spec) = settings.modes else {
            return Err(Error::method_not_found(
                crate::protocol::methods::SESSION_SET_MODE,
            ));
        };
        let Some(choice) = spec.choice(mode) else {
            let ConfigKind::Select(choices) = spec.kind else {
                return Err(Error::InvalidParams(format!("unknown mode `{mode}`")));
            };
            return Err(Error::InvalidParams(format!(
                "unknown mode `{mode}`; the modes are {}",
                list(choices.iter().map(|c| c.id))
            )));
        };
        self.apply_setting(
            &settings,
            0,
            ConfigValue::Choice(choice.id),
            Notify::OptionsOnly,
        )
        .await
    }

    /// The session's modes and config options for the answer to `session/new`, `load` or
    /// `resume`.
    pub(crate) fn settings_state(
        &self,
    ) -> (Option<SessionModeState>, Option<Vec<SessionConfigOption>>) {
        let settings = self.settings();
        (
            self.state.settings.mode_state(&settings),
            self.state
                .settings
                .options(&settings, self.client_capabilities()),
        )
    }

    /// Takes back the settings saved with a reopened session.
    pub(crate) fn restore_settings(&self, saved: Option<&serde_json::Value>) {
        if let Some(saved) = saved {
            let settings = self.settings();
            self.state.settings.restore(&settings, saved);
        }
    }
}
