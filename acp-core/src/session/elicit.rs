//! Elicitation: asking the user for structured input through the client
//! (`elicitation/create`, `elicitation/complete`).
//!
//! Owns [`Session::elicit`] (form mode: a form derived from a Rust type),
//! [`Session::elicit_url`] and [`Session::complete_elicitation`] (URL mode), [`Elicited`]
//! (what the user did), the conversion of a type's JSON Schema into the protocol's restricted
//! form schema ([`ElicitationSchema`]: one flat object of primitive fields), the reading of
//! the client's answers, and the ids of URL-mode elicitations.

use std::sync::atomic::AtomicU64;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::Session;
use crate::peer::Frame;
use crate::protocol::methods;
use crate::schema::{
    BooleanPropertySchema, CompleteElicitationNotification, CreateElicitationRequest,
    ElicitationFormMode, ElicitationId, ElicitationMode, ElicitationPropertySchema,
    ElicitationSchema, ElicitationSessionScope, ElicitationUrlMode, EnumOption,
    IntegerPropertySchema, MultiSelectPropertySchema, NumberPropertySchema, StringFormat,
    StringPropertySchema,
};
use crate::{Error, Result};

/// What the user did with an elicitation ([`Session::elicit`], [`Session::elicit_url`]).
///
/// The protocol's three actions: `accept` (with the form's content, or the URL-mode
/// elicitation's id), `decline` (the user explicitly said no) and `cancel` (the user dismissed
/// it without choosing). Agents must not assume an elicitation succeeds: handle all three.
///
/// ```no_run
/// # async fn turn(cx: &acp_core::Session) -> acp_core::Result<()> {
/// use acp_core::Elicited;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Branch {
///     /// The new branch's name.
///     name: String,
/// }
///
/// match cx.elicit::<Branch>("Which branch should I create?").await? {
///     Elicited::Accepted(branch) => cx.message(format!("Creating `{}`.", branch.name)).await?,
///     Elicited::Declined => cx.message("Not creating a branch.").await?,
///     Elicited::Cancelled => {}
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited<T> {
    /// The user accepted: the form's content, or the id of the URL-mode elicitation whose URL
    /// they consented to open.
    Accepted(T),
    /// The user explicitly declined (`decline`).
    Declined,
    /// The user dismissed the request without choosing (`cancel`).
    Cancelled,
}

impl Session {
    /// Asks the user to fill in a form whose JSON Schema is derived from `T`
    /// (`elicitation/create`, form mode), scoped to this session (and to the current tool
    /// call, inside one: [`current_tool_call`](Session::current_tool_call)), and returns what
    /// they did.
    ///
    /// `T` must be a struct with named fields, each a form field: a string (`String`, `char`,
    /// … with `#[schemars(email)]`, `#[schemars(url)]`, `#[schemars(length(…))]`,
    /// `#[schemars(regex(…))]`, or `#[schemars(extend("format" = "date"))]` /
    /// `"date-time"`), a number or integer (bounds from the type and
    /// `#[schemars(range(…))]`), a `bool`, an enum of unit variants (a single select; a
    /// documented variant's doc comment becomes its option's description, its
    /// `#[schemars(title = "…")]` the option's label), a `Vec` or set of such an enum (a
    /// multi-select), or an `Option` of any of these. Fields that are not `Option` (nor
    /// `#[serde(default)]`, whose default is offered to the user) are required. Doc comments
    /// become the fields' descriptions; the type's own doc comment the form's description.
    /// Other string formats than those four are not sent (the answer is still checked by
    /// deserializing `T`).
    ///
    /// Fails, without sending anything, with [`Error::InvalidParams`] when `T` cannot be a
    /// form (a nested struct, a map, a list of free values, an enum with data, a non-string
    /// enum…: a mistake of the agent's, reported the same whatever the client), then with
    /// [`Error::Unsupported`]`("elicitation.form")` when the client did not advertise form
    /// elicitation. Accepted content that does not deserialize into `T` fails with
    /// [`Error::Protocol`] naming the field; an action other than `accept`, `decline` and
    /// `cancel` too. Fails with [`Error::Cancelled`] as soon as the turn is cancelled.
    ///
    /// Forms must not ask for secrets (passwords, API keys, tokens…): use
    /// [`elicit_url`](Session::elicit_url) for those.
    ///
    /// ```no_run
    /// # async fn turn(cx: &acp_core::Session) -> acp_core::Result<()> {
    /// use acp_core::Elicited;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// #[serde(rename_all = "snake_case")]
    /// enum Strategy {
    ///     /// Small, safe steps.
    ///     Conservative,
    ///     /// Rewrite what needs rewriting.
    ///     Aggressive,
    /// }
    ///
    /// /// How to approach the refactoring.
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Approach {
    ///     strategy: Strategy,
    ///     /// At most this many files.
    ///     #[schemars(range(min = 1, max = 50))]
    ///     max_files: u32,
    ///     /// Run the tests after each step.
    ///     run_tests: Option<bool>,
    /// }
    ///
    /// let question = "How should I approach this refactoring?";
    /// let approach = match cx.elicit::<Approach>(question).await {
    ///     Ok(Elicited::Accepted(approach)) => approach,
    ///     Ok(_) => return Ok(()), // declined or dismissed
    ///     Err(acp_core::Error::Unsupported(_)) => Approach {
    ///         strategy: Strategy::Conservative,
    ///         max_files: 5,
    ///         run_tests: None,
    ///     },
    ///     Err(e) => return Err(e),
    /// };
    /// # let _ = approach; Ok(()) }
    /// ```
    pub async fn elicit<T: schemars::JsonSchema + serde::de::DeserializeOwned>(
        &self,
        message: impl Into<String>,
    ) -> Result<Elicited<T>> {
        let schema = form_schema::<T>()?;
        if !self.elicitation_supported(|e| e.supports_form()) {
            return Err(Error::Unsupported("elicitation.form"));
        }
        let mode = ElicitationFormMode::new(self.elicitation_scope(), schema);
        Ok(match self.create_elicitation(mode.into(), message).await? {
            Action::Accept(content) => Elicited::Accepted(content_as::<T>(content)?),
            Action::Decline => Elicited::Declined,
            Action::Cancel => Elicited::Cancelled,
        })
    }

    /// Asks the user to open `url` out of band (`elicitation/create`, URL mode: for OAuth and
    /// other sensitive flows that must not go through a form or the model), scoped like
    /// [`elicit`](Session::elicit). `Accepted(id)` means they consented to open it, not that
    /// the interaction there finished; the id is unique on the connection: tell the client
    /// when the interaction finished with
    /// [`complete_elicitation`](Session::complete_elicitation).
    ///
    /// The URL must not carry credentials or personal data, and should be HTTPS outside
    /// development; whatever the user hands over there must not come back over ACP. Fails
    /// with [`Error::Unsupported`]`("elicitation.url")`, without sending anything, when the
    /// client did not advertise URL elicitation (do not fall back to a form for secrets), with
    /// [`Error::Protocol`] on an unknown action, and with [`Error::Cancelled`] as soon as the
    /// turn is cancelled.
    ///
    /// ```no_run
    /// # async fn turn(cx: &acp_core::Session) -> acp_core::Result<()> {
    /// use acp_core::Elicited;
    ///
    /// let url = "https://agent.example.com/connect/github";
    /// let why = "Authorize access to your repositories.";
    /// if let Elicited::Accepted(id) = cx.elicit_url(url, why).await? {
    ///     // … wait until the agent's server saw the OAuth callback, then:
    ///     cx.complete_elicitation(&id).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn elicit_url(
        &self,
        url: impl Into<String>,
        message: impl Into<String>,
    ) -> Result<Elicited<ElicitationId>> {
        if !self.elicitation_supported(|e| e.supports_url()) {
            return Err(Error::Unsupported("elicitation.url"));
        }
        let id = fresh_elicitation_id();
        let mode = ElicitationUrlMode::new(self.elicitation_scope(), id.clone(), url);
        Ok(match self.create_elicitation(mode.into(), message).await? {
            Action::Accept(_) => Elicited::Accepted(id),
            Action::Decline => Elicited::Declined,
            Action::Cancel => Elicited::Cancelled,
        })
    }

    /// Tells the client that the out-of-band interaction of the URL-mode elicitation `id`
    /// (from [`elicit_url`](Session::elicit_url)) finished (`elicitation/complete`), e.g. so
    /// that it closes its prompt. Clients ignore ids they do not know.
    ///
    /// Fails with [`Error::Unsupported`]`("elicitation.url")`, without sending anything, when
    /// the client did not advertise URL elicitation (no such id can exist then).
    ///
    /// ```no_run
    /// # use acp_core::schema::ElicitationId;
    /// # async fn demo(cx: &acp_core::Session, id: ElicitationId) -> acp_core::Result<()> {
    /// cx.complete_elicitation(&id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn complete_elicitation(&self, id: &ElicitationId) -> Result<()> {
        if !self.elicitation_supported(|e| e.supports_url()) {
            return Err(Error::Unsupported("elicitation.url"));
        }
        let params = CompleteElicitationNotification::new(id.clone());
        let bytes = crate::jsonrpc::encode_notification(methods::ELICITATION_COMPLETE, &params)?;
        self.connection().peer().send(Frame::new(bytes, None)).await
    }

    fn elicitation_supported(
        &self,
        mode: impl Fn(&crate::schema::ElicitationCapabilities) -> bool,
    ) -> bool {
        self.client_capabilities()
            .elicitation
            .as_ref()
            .is_some_and(mode)
    }

    /// This session, and the tool call running, if any.
    fn elicitation_scope(&self) -> ElicitationSessionScope {
        ElicitationSessionScope::new(self.client_session().id().clone())
            .tool_call_id(self.current_tool_call())
    }

    /// Sends `elicitation/create` and reads the action of the answer.
    async fn create_elicitation(
        &self,
        mode: ElicitationMode,
        message: impl Into<String>,
    ) -> Result<Action> {
        let params = CreateElicitationRequest::new(mode, message);
        let answer: Answer = self
            .waiting_on_user(self.request(methods::ELICITATION_CREATE, &params))
            .await?;
        match answer.action.as_str() {
            "accept" => Ok(Action::Accept(answer.content)),
            "decline" => Ok(Action::Decline),
            "cancel" => Ok(Action::Cancel),
            other => Err(Error::Protocol(format!(
                "its answer to `{}` has the unknown action `{other}` (expected `accept`, \
                 `decline` or `cancel`)",
                methods::ELICITATION_CREATE
            ))),
        }
    }
}

/// The client's answer to `elicitation/create`, read loosely: the content is checked by
/// deserializing the form's type, which names the field that does not fit.
#[derive(Deserialize)]
struct Answer {
    action: String,
    #[serde(default)]
    content: Option<Value>,
}

enum Action {
    Accept(Option<Value>),
    Decline,
    Cancel,
}

/// The accepted `content` as a `T` (absent or `null`: `{}`).
fn content_as<T: serde::de::DeserializeOwned>(content: Option<Value>) -> Result<T> {
    let content = match content {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(object @ Value::Object(_)) => object,
        Some(other) => {
            return Err(Error::Protocol(format!(
                "its answer to `{}` accepts with a `content` that is not an object: {other}",
                methods::ELICITATION_CREATE
            )));
        }
    };
    serde_path_to_error::deserialize(content).map_err(|e| {
        let at = match e.path().to_string() {
            path if path == "." => String::new(),
            path => format!(" at `{path}`"),
        };
        Error::Protocol(format!(
            "its answer to `{}` does not fit the form{at}: {}",
            methods::ELICITATION_CREATE,
            e.inner()
        ))
    })
}

/// An elicitation id unique across processes.
fn fresh_elicitation_id() -> ElicitationId {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    ElicitationId::new(super::registry::process_unique("elicit", &NEXT))
}

/// What a form can hold, for the error naming what it cannot.
const FORM_HOLDS: &str = "a form is one struct of named fields, each a string (formats email, \
     uri, date, date-time), a number, an integer, a bool, an enum of unit variants (a single \
     select), a Vec or set of such an enum (a multi-select), or an Option of one of these";

/// The form schema of `T`, or [`Error::InvalidParams`] naming the field that cannot be one.
fn form_schema<T: schemars::JsonSchema>() -> Result<ElicitationSchema> {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    // A subschema, not a root one: no `title` made up from the Rust type's name.
    let schema = settings.into_generator().subschema_for::<T>().to_value();
    let name = T::schema_name();
    let fail = |why: String| {
        Error::InvalidParams(format!(
            "`{name}` cannot be asked for with an elicitation form: {why}; {FORM_HOLDS}"
        ))
    };
    let Value::Object(root) = schema else {
        return Err(fail("it accepts any JSON value".into()));
    };
    if root.get("type").and_then(Value::as_str) != Some("object")
        || ["oneOf", "anyOf", "allOf", "$ref"]
            .iter()
            .any(|k| root.contains_key(*k))
    {
        return Err(fail("it is not a struct with named fields".into()));
    }
    if root
        .get("additionalProperties")
        .is_some_and(|extra| extra != &Value::Bool(false))
    {
        return Err(fail("it holds a map (fields not known in advance)".into()));
    }
    let mut form = ElicitationSchema::new()
        .title(text(&root, "title"))
        .description(text(&root, "description"));
    let required: Vec<&str> = root
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let properties = root.get("properties").and_then(Value::as_object);
    for (field, schema) in properties.into_iter().flatten() {
        let property =
            property(schema).map_err(|what| fail(format!("its field `{field}` is {what}")))?;
        form = form.property(field.clone(), property, required.contains(&field.as_str()));
    }
    Ok(form)
}

/// One field's form schema, or what it is instead.
fn property(schema: &Value) -> Result<ElicitationPropertySchema, &'static str> {
    let Value::Object(schema) = schema else {
        return Err("any JSON value");
    };
    let s = without_null(schema)?;
    if s.contains_key("$ref") {
        return Err("a recursive type");
    }
    let (title, description) = (text(&s, "title"), text(&s, "description"));
    let ty = s.get("type").and_then(Value::as_str);
    if let Some(choices) = choices(&s)? {
        if !matches!(ty, Some("string") | None) {
            return Err("an enum of non-string values");
        }
        let string = StringPropertySchema::new()
            .title(title)
            .description(description)
            .default_value(text(&s, "default"));
        return Ok(match choices {
            Choices::Plain(values) => string.enum_values(values),
            Choices::Titled(options) => string.one_of(options),
        }
        .into());
    }
    let length = |key| number(&s, key, Value::as_u64).and_then(|n| u32::try_from(n).ok());
    Ok(match ty {
        Some("string") => StringPropertySchema::new()
            .title(title)
            .description(description)
            .min_length(length("minLength"))
            .max_length(length("maxLength"))
            .pattern(text(&s, "pattern"))
            .format(
                s.get("format")
                    .and_then(|f| serde_json::from_value::<StringFormat>(f.clone()).ok()),
            )
            .default_value(text(&s, "default"))
            .into(),
        Some("integer") => IntegerPropertySchema::new()
            .title(title)
            .description(description)
            .minimum(number(&s, "minimum", Value::as_i64))
            .maximum(number(&s, "maximum", Value::as_i64))
            .default_value(number(&s, "default", Value::as_i64))
            .into(),
        Some("number") => NumberPropertySchema::new()
            .title(title)
            .description(description)
            .minimum(number(&s, "minimum", Value::as_f64))
            .maximum(number(&s, "maximum", Value::as_f64))
            .default_value(number(&s, "default", Value::as_f64))
            .into(),
        Some("boolean") => BooleanPropertySchema::new()
            .title(title)
            .description(description)
            .default_value(s.get("default").and_then(Value::as_bool))
            .into(),
        Some("array") => multi_select(&s)?
            .title(title)
            .description(description)
            .into(),
        Some("object") if s.get("additionalProperties").is_some_and(|v| v != false) => {
            return Err("a map");
        }
        Some("object") => return Err("a nested struct"),
        Some("null") => return Err("always null (a unit type)"),
        None => return Err("any JSON value"),
        Some(_) => return Err("of a type no form field has"),
    })
}

/// A `Vec` (or set) of an enum of unit variants: a multi-select.
fn multi_select(s: &Map<String, Value>) -> Result<MultiSelectPropertySchema, &'static str> {
    const NOT_CHOICES: &str = "a list of something other than an enum of unit variants (a \
         form's lists are multi-selects)";
    let items = match s.get("items") {
        Some(Value::Object(items)) => without_null(items).map_err(|_| NOT_CHOICES)?,
        _ => return Err(NOT_CHOICES),
    };
    if items.get("type").is_some_and(|t| t != "string") {
        return Err(NOT_CHOICES);
    }
    let select = match choices(&items).map_err(|_| NOT_CHOICES)? {
        Some(Choices::Plain(values)) => MultiSelectPropertySchema::new(values),
        Some(Choices::Titled(options)) => MultiSelectPropertySchema::titled(options),
        None => return Err(NOT_CHOICES),
    };
    let default = s.get("default").and_then(Value::as_array).map(|values| {
        values
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect::<Vec<_>>()
    });
    Ok(select
        .min_items(number(s, "minItems", Value::as_u64))
        .max_items(number(s, "maxItems", Value::as_u64))
        .default_value(default))
}

/// The values of an enum: plain (`enum`, `const`), or titled (`oneOf` / `anyOf` branches of
/// `const` with a title or description, as schemars writes documented unit variants).
enum Choices {
    Plain(Vec<String>),
    Titled(Vec<EnumOption>),
}

fn choices(s: &Map<String, Value>) -> Result<Option<Choices>, &'static str> {
    const NOT_UNIT: &str = "an enum whose variants are not all unit variants";
    let strings = |values: &[Value]| -> Result<Vec<String>, &'static str> {
        values
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or("an enum of non-string values")
    };
    if let Some(values) = s.get("enum") {
        let values = values.as_array().ok_or("an enum of non-string values")?;
        return Ok(Some(Choices::Plain(strings(values)?)));
    }
    if let Some(value) = s.get("const") {
        return Ok(Some(Choices::Plain(strings(std::slice::from_ref(value))?)));
    }
    let Some(branches) = ["oneOf", "anyOf"]
        .iter()
        .find_map(|k| s.get(*k).and_then(Value::as_array))
    else {
        return Ok(None);
    };
    let mut options = Vec::new();
    for branch in branches {
        let branch = branch.as_object().ok_or(NOT_UNIT)?;
        if branch.get("type").is_some_and(|t| t != "string") {
            return Err(NOT_UNIT);
        }
        let labelled = |value: String| {
            let title = text(branch, "title").unwrap_or_else(|| value.clone());
            EnumOption::new(value, title).description(text(branch, "description"))
        };
        match choices(branch).map_err(|_| NOT_UNIT)? {
            Some(Choices::Plain(values)) if branch.contains_key("const") => {
                options.extend(values.into_iter().map(labelled));
            }
            // Undocumented variants among documented ones: `{"enum": [...]}`.
            Some(Choices::Plain(values)) => {
                options.extend(values.into_iter().map(|v| EnumOption::new(v.clone(), v)));
            }
            _ => return Err(NOT_UNIT),
        }
    }
    Ok(Some(Choices::Titled(options)))
}

/// `schema` without the `null` an `Option` adds: `"type": [T, "null"]`, a `null` in `enum`,
/// or an `anyOf` / `oneOf` of `T` and `{"type": "null"}` (whose `T` is merged in, under the
/// outer schema's own title, description and default).
fn without_null(schema: &Map<String, Value>) -> Result<Map<String, Value>, &'static str> {
    fn is_null(schema: &Value) -> bool {
        schema.get("type").is_some_and(|t| t == "null")
            || schema.get("const").is_some_and(Value::is_null)
    }
    let mut s = schema.clone();
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = s.get(key) else {
            continue;
        };
        let rest: Vec<Value> = branches.iter().filter(|b| !is_null(b)).cloned().collect();
        if rest.len() == branches.len() {
            continue;
        }
        match <[Value; 1]>::try_from(rest) {
            Ok([Value::Object(inner)]) => {
                s.remove(key);
                for (k, v) in inner {
                    s.entry(k).or_insert(v);
                }
            }
            Ok(_) => return Err("any JSON value"),
            Err(rest) if rest.is_empty() => return Err("always null (a unit type)"),
            Err(rest) => {
                s.insert(key.into(), rest.into());
            }
        }
    }
    if let Some(Value::Array(types)) = s.get("type") {
        let types: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
        let only = match types.as_slice() {
            [] => Value::from("null"),
            [only] => (*only).clone(),
            _ => return Err("a value of several types"),
        };
        s.insert("type".into(), only);
    }
    if let Some(Value::Array(values)) = s.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    Ok(s)
}

fn text(s: &Map<String, Value>, key: &str) -> Option<String> {
    s.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn number<N>(s: &Map<String, Value>, key: &str, as_n: fn(&Value) -> Option<N>) -> Option<N> {
    s.get(key).and_then(as_n)
}
