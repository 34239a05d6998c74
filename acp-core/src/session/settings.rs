//! What an agent declares about its sessions' settings: the [`ConfigOption`] and [`Modes`]
//! traits its types implement (by derive), the static [`ConfigSpec`] describing each, and
//! [`Settings`], the agent's list of them. How they are shown to the client and how the
//! client's values are read are here too; the values of each session are `config`'s.

use crate::schema::{
    self, ClientCapabilities, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigSelectOption,
};
use crate::{Error, Result};

/// A setting of a session, as its type describes it: a choice among values (an `enum`) or
/// an on/off switch (a `bool` newtype). Derive it with `#[derive(acp::ConfigOption)]`, and
/// declare it with `#[acp::agent(config(MyOption))]`; the runtime offers it to the client,
/// applies the client's changes, and hands it to the agent with [`Session::config`](crate::Session::config).
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
    note = "derive it: `#[derive(acp::Modes, Default)]` on an enum of unit variants, one per mode",
    note = "a config option that is not the session's mode goes in `config(…)` instead"
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
    pub(super) fn choice(&self, id: &str) -> Option<&'static Choice> {
        match self.kind {
            ConfigKind::Select(choices) => choices.iter().find(|c| c.id == id),
            ConfigKind::Boolean => None,
        }
    }

    /// Whether the client may be offered this option.
    pub(super) fn offered_to(&self, client: &ClientCapabilities) -> bool {
        match self.kind {
            ConfigKind::Select(_) => true,
            ConfigKind::Boolean => client
                .session
                .as_ref()
                .and_then(|s| s.config_options.as_ref())
                .is_some_and(|c| c.boolean.is_some()),
        }
    }

    pub(super) fn category(&self) -> Option<SessionConfigOptionCategory> {
        self.category.map(|c| match c {
            "mode" => SessionConfigOptionCategory::Mode,
            "model" => SessionConfigOptionCategory::Model,
            "model_config" => SessionConfigOptionCategory::ModelConfig,
            "thought_level" => SessionConfigOptionCategory::ThoughtLevel,
            other => SessionConfigOptionCategory::Other(other.to_owned()),
        })
    }

    /// The option as the protocol shows it, with `value` current.
    pub(super) fn as_option(&self, value: ConfigValue) -> SessionConfigOption {
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
    pub(super) fn parse(&self, value: &schema::SessionConfigOptionValue) -> Result<ConfigValue> {
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
    pub(super) modes: Option<&'static ConfigSpec>,
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
    pub(super) fn all(&self) -> impl Iterator<Item = &'static ConfigSpec> + '_ {
        self.modes.into_iter().chain(self.options.iter().copied())
    }

    pub(super) fn index_of(&self, id: &str) -> Option<usize> {
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
