//! Session settings: the modes and config options an agent declares ([`ConfigOption`],
//! [`Modes`], described by a static [`ConfigSpec`]), what the runtime keeps of them per
//! session (their current values), and the [`Session`] calls that read and change them.
//!
//! The runtime owns the values: it answers `session/new`, `session/load` and
//! `session/resume` with them, validates and applies `session/set_mode` and
//! `session/set_config_option`, keeps `modes` and the `mode` config option in step, and saves
//! them with the session so they come back on load. The agent only reads them
//! ([`Session::config`], [`Session::mode`]) and changes them ([`Session::set_config`],
//! [`Session::set_mode`]), which tells the client.

use std::sync::{Arc, Mutex};

use super::Session;
use crate::schema::{
    self, ClientCapabilities, ConfigOptionUpdate, CurrentModeUpdate, SessionConfigOption,
    SessionConfigOptionCategory, SessionConfigSelectOption, SessionMode, SessionModeState,
    SessionUpdate,
};
use crate::{Error, Result};

/// The key the runtime saves a session's settings under in the session store.
pub(crate) const STORE_KEY: &str = "acp.settings";

/// A setting of a session, as its type describes it: a choice among values (an `enum`) or
/// an on/off switch (a `bool` newtype). Derive it with `#[derive(acp::ConfigOption)]`, and
/// declare it with `#[acp::agent(config(MyOption))]`; the runtime offers it to the client,
/// applies the client's changes, and hands it to the agent with [`Session::config`].
///
/// ```
/// use acp_core::{ConfigKind, ConfigOption, ConfigSpec, ConfigValue, Choice};
///
/// /// How the agent words its answers.
/// #[derive(Clone, Copy, Default, PartialEq, Debug)]
/// enum Tone { #[default] Plain, Cheerful }
///
/// impl ConfigOption for Tone {
///     fn spec() -> &'static ConfigSpec {
///         static SPEC: ConfigSpec = ConfigSpec {
///             id: "tone",
///             name: "Tone",
///             description: Some("How the agent words its answers"),
///             category: None,
///             kind: ConfigKind::Select(&[
///                 Choice { id: "plain", name: "Plain", description: None },
///                 Choice { id: "cheerful", name: "Cheerful", description: None },
///             ]),
///             default: ConfigValue::Choice("plain"),
///         };
///         &SPEC
///     }
///
///     fn to_value(&self) -> ConfigValue {
///         ConfigValue::Choice(match self { Tone::Plain => "plain", Tone::Cheerful => "cheerful" })
///     }
///
///     fn from_value(value: ConfigValue) -> Option<Self> {
///         match value {
///             ConfigValue::Choice("plain") => Some(Tone::Plain),
///             ConfigValue::Choice("cheerful") => Some(Tone::Cheerful),
///             _ => None,
///         }
///     }
/// }
///
/// assert_eq!(Tone::from_value(Tone::Cheerful.to_value()), Some(Tone::Cheerful));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a session config option",
    label = "not a config option",
    note = "derive it: `#[derive(acp::ConfigOption, Default)]` on an enum of unit variants (a choice) or on a `struct {Self}(bool)` (a switch)"
)]
pub trait ConfigOption: Default + Send + Sync + 'static {
    /// What the client is shown: id, name, description, category, the values, the default.
    fn spec() -> &'static ConfigSpec;

    /// This value, as the protocol carries it.
    fn to_value(&self) -> ConfigValue;

    /// The value `value` stands for; `None` if it is not one of this option's.
    fn from_value(value: ConfigValue) -> Option<Self>;
}

/// A [`ConfigOption`] that is the session's mode: offered to the client both as the
/// session's `modes` (the older API) and as a config option of category `mode`, kept in
/// step. Derive it with `#[derive(acp::Modes)]` and declare it with
/// `#[acp::agent(modes = MyModes)]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a set of session modes",
    label = "not a set of modes",
    note = "derive it: `#[derive(acp::Modes, Default)]` on an enum of unit variants, one per mode"
)]
pub trait Modes: ConfigOption {}

/// How a [`ConfigOption`] is shown to the client. Static: built once, by the derive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigSpec {
    /// The option's id, used by the client to set it (`configId`); unique in the agent.
    pub id: &'static str,
    /// The label shown.
    pub name: &'static str,
    /// What the option controls.
    pub description: Option<&'static str>,
    /// A semantic category (`mode`, `model`, `model_config`, `thought_level`, or a custom one
    /// starting with `_`), which clients use for placement and shortcuts.
    pub category: Option<&'static str>,
    /// A choice among values, or a switch.
    pub kind: ConfigKind,
    /// The value a session starts with.
    pub default: ConfigValue,
}

/// The kind of a [`ConfigSpec`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigKind {
    /// One of these values (`type: "select"`).
    Select(&'static [Choice]),
    /// On or off (`type: "boolean"`); offered only to clients that advertise boolean
    /// config options (`session.configOptions.boolean`).
    Boolean,
}

/// One value of a [`ConfigKind::Select`] option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choice {
    /// The value's id, as the client sends it.
    pub id: &'static str,
    /// The label shown.
    pub name: &'static str,
    /// What the value does.
    pub description: Option<&'static str>,
}

/// The value of a config option, as the protocol carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConfigValue {
    /// The id of one of a select option's [`Choice`]s.
    Choice(&'static str),
    /// A boolean option's value.
    Bool(bool),
}

impl ConfigSpec {
    /// The choice `id` of this select option, if it has one.
    fn choice(&self, id: &str) -> Option<&'static Choice> {
        match self.kind {
            ConfigKind::Select(choices) => choices.iter().find(|c| c.id == id),
            ConfigKind::Boolean => None,
        }
    }

    /// Whether the client may be offered this option.
    fn offered_to(&self, client: &ClientCapabilities) -> bool {
        match self.kind {
            ConfigKind::Select(_) => true,
            ConfigKind::Boolean => client
                .session
                .as_ref()
                .and_then(|s| s.config_options.as_ref())
                .is_some_and(|c| c.boolean.is_some()),
        }
    }

    fn category(&self) -> Option<SessionConfigOptionCategory> {
        self.category.map(|c| match c {
            "mode" => SessionConfigOptionCategory::Mode,
            "model" => SessionConfigOptionCategory::Model,
            "model_config" => SessionConfigOptionCategory::ModelConfig,
            "thought_level" => SessionConfigOptionCategory::ThoughtLevel,
            other => SessionConfigOptionCategory::Other(other.to_owned()),
        })
    }

    /// The option as the protocol shows it, with `value` current.
    fn as_option(&self, value: ConfigValue) -> SessionConfigOption {
        let option = match (self.kind, value) {
            (ConfigKind::Boolean, ConfigValue::Bool(on)) => {
                SessionConfigOption::boolean(self.id, self.name, on)
            }
            (ConfigKind::Boolean, ConfigValue::Choice(_)) => {
                SessionConfigOption::boolean(self.id, self.name, false)
            }
            (ConfigKind::Select(choices), value) => {
                let current = match value {
                    ConfigValue::Choice(id) => id,
                    ConfigValue::Bool(_) => choices.first().map_or("", |c| c.id),
                };
                let values = choices
                    .iter()
                    .map(|c| {
                        SessionConfigSelectOption::new(c.id, c.name)
                            .description(c.description.map(str::to_owned))
                    })
                    .collect::<Vec<_>>();
                SessionConfigOption::select(self.id, self.name, current, values)
            }
        };
        option
            .description(self.description.map(str::to_owned))
            .category(self.category())
    }

    /// Reads the client's `value` for this option, or says what is wrong with it.
    fn parse(&self, value: &schema::SessionConfigOptionValue) -> Result<ConfigValue> {
        match (self.kind, value) {
            (ConfigKind::Boolean, schema::SessionConfigOptionValue::Boolean { value }) => {
                Ok(ConfigValue::Bool(*value))
            }
            (ConfigKind::Select(choices), schema::SessionConfigOptionValue::ValueId { value }) => {
                match self.choice(&value.0) {
                    Some(choice) => Ok(ConfigValue::Choice(choice.id)),
                    None => Err(Error::InvalidParams(format!(
                        "`{value}` is not a value of the config option `{}`; expected one of {}",
                        self.id,
                        list(choices.iter().map(|c| c.id))
                    ))),
                }
            }
            (ConfigKind::Boolean, _) => Err(Error::InvalidParams(format!(
                "the config option `{}` is a boolean: send `\"type\": \"boolean\"` with `true` or `false`",
                self.id
            ))),
            (ConfigKind::Select(choices), _) => Err(Error::InvalidParams(format!(
                "the config option `{}` takes one of {}, not a boolean",
                self.id,
                list(choices.iter().map(|c| c.id))
            ))),
        }
    }
}

/// `` `a`, `b`, `c` ``.
pub(crate) fn list<'a>(items: impl Iterator<Item = &'a str>) -> String {
    items
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What an agent declares: its modes (if any) and its config options, in the order the
/// client should show them. Kept on the connection by the runtime.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    modes: Option<&'static ConfigSpec>,
    options: Vec<&'static ConfigSpec>,
}

impl Settings {
    /// No modes, no config options.
    pub fn new() -> Self {
        Settings::default()
    }

    /// The session's modes: the values of `M`.
    #[must_use]
    pub fn modes<M: Modes>(mut self) -> Self {
        self.modes = Some(M::spec());
        self
    }

    /// One more config option, `T`, shown after those before it.
    #[must_use]
    pub fn option<T: ConfigOption>(mut self) -> Self {
        self.options.push(T::spec());
        self
    }

    /// Whether the agent declares anything.
    pub fn is_empty(&self) -> bool {
        self.modes.is_none() && self.options.is_empty()
    }

    /// Whether the agent declares modes.
    pub(crate) fn has_modes(&self) -> bool {
        self.modes.is_some()
    }

    /// Every declared spec: the modes first (as the `mode` option), then the options.
    fn all(&self) -> impl Iterator<Item = &'static ConfigSpec> + '_ {
        self.modes.into_iter().chain(self.options.iter().copied())
    }

    fn index_of(&self, id: &str) -> Option<usize> {
        self.all().position(|s| s.id == id)
    }

    /// Checks the declarations: ids unique, defaults among the values, modes a select.
    pub(crate) fn check(&self) -> std::result::Result<(), String> {
        let mut seen = Vec::new();
        for spec in self.all() {
            if seen.contains(&spec.id) {
                return Err(format!("two config options have the id `{}`", spec.id));
            }
            seen.push(spec.id);
            let fits = match (spec.kind, spec.default) {
                (ConfigKind::Boolean, ConfigValue::Bool(_)) => true,
                (ConfigKind::Select(_), ConfigValue::Choice(id)) => spec.choice(id).is_some(),
                _ => false,
            };
            if !fits {
                return Err(format!(
                    "the default of config option `{}` is not one of its values",
                    spec.id
                ));
            }
        }
        if let Some(modes) = self.modes
            && !matches!(modes.kind, ConfigKind::Select(c) if !c.is_empty())
        {
            return Err("the modes must be a choice among at least one mode".into());
        }
        Ok(())
    }
}

/// The current values of a session's settings, in the order of [`Settings::all`].
#[derive(Debug, Default)]
pub(crate) struct Values(Mutex<Option<Vec<ConfigValue>>>);

impl Values {
    fn with<R>(&self, settings: &Settings, f: impl FnOnce(&mut Vec<ConfigValue>) -> R) -> R {
        let mut values = self.0.lock().unwrap_or_else(|e| e.into_inner());
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
}

impl Session {
    fn settings(&self) -> Arc<Settings> {
        self.connection()
            .extensions
            .get::<Settings>()
            .unwrap_or_default()
    }

    /// The session's current value of the config option `T` (its default until the user or
    /// the agent changes it). A type the agent does not declare reads as its default.
    ///
    /// ```no_run
    /// # #[derive(Default)] struct Tone;
    /// # impl acp_core::ConfigOption for Tone {
    /// #     fn spec() -> &'static acp_core::ConfigSpec { unimplemented!() }
    /// #     fn to_value(&self) -> acp_core::ConfigValue { unimplemented!() }
    /// #     fn from_value(_: acp_core::ConfigValue) -> Option<Self> { None }
    /// # }
    /// # fn turn(cx: &acp_core::Session) {
    /// let tone: Tone = cx.config();
    /// # }
    /// ```
    pub fn config<T: ConfigOption>(&self) -> T {
        let settings = self.settings();
        settings
            .index_of(T::spec().id)
            .and_then(|i| self.state.settings.get(&settings, i))
            .and_then(T::from_value)
            .unwrap_or_default()
    }

    /// The session's current mode.
    pub fn mode<M: Modes>(&self) -> M {
        self.config()
    }

    /// Changes the config option `T` to `value` and tells the client
    /// (`config_option_update` with every option; for the modes also
    /// `current_mode_update`). Fails with [`Error::InvalidParams`] if the agent does not
    /// declare `T`.
    pub async fn set_config<T: ConfigOption>(&self, value: T) -> Result<()> {
        let settings = self.settings();
        let id = T::spec().id;
        let index = settings.index_of(id).ok_or_else(|| {
            Error::InvalidParams(format!(
                "`{}` is not one of this agent's config options (declare it with `#[acp::agent(config({0}))]`)",
                std::any::type_name::<T>()
            ))
        })?;
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
        let Some(store) = self.connection().peer.journal.store() else {
            return;
        };
        let saved = self.state.settings.saved(settings);
        if let Err(e) = store.put_state(self.id(), STORE_KEY, &saved).await {
            tracing::warn!(session = %self.id(), "could not save the session's settings: {e}");
        }
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
            return Err(Error::method_not_found("session/set_mode"));
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
