//! A tool's [`ToolDef`]: its JSON Schema (draft 2020-12) built one parameter type at a time.

use super::ToolDef;
use super::checks::ArgSchema;
use super::spec::ToolSpec;

/// Builds a tool's [`ToolDef`], one parameter type at a time.
#[derive(Debug)]
pub struct Def {
    spec: ToolSpec,
    generator: schemars::SchemaGenerator,
    properties: serde_json::Map<String, serde_json::Value>,
    required: Vec<serde_json::Value>,
    next: usize,
}

/// Starts the definition of the tool described by `spec`.
pub fn def(spec: ToolSpec) -> Def {
    Def {
        spec,
        generator: schemars::generate::SchemaSettings::draft2020_12().into_generator(),
        properties: serde_json::Map::new(),
        required: Vec::new(),
        next: 0,
    }
}

impl Def {
    /// Adds the next parameter, of type `T`. It is required unless its schema accepts
    /// `null` (as `Option`'s does; a missing argument is parsed from `null`).
    #[must_use]
    pub fn param<T: ArgSchema>(mut self) -> Self {
        let Some(param) = self.spec.params.get(self.next) else {
            return self;
        };
        self.next += 1;
        let mut schema = self.generator.subschema_for::<T>().to_value();
        if !accepts_null(&schema) {
            self.required.push(param.name.into());
        }
        if !param.description.is_empty()
            && let serde_json::Value::Object(map) = &mut schema
        {
            map.insert("description".into(), param.description.into());
        }
        self.properties.insert(param.name.to_owned(), schema);
        self
    }

    /// The finished definition.
    pub fn finish(mut self) -> ToolDef {
        let mut schema = serde_json::Map::new();
        schema.insert("type".into(), "object".into());
        schema.insert("properties".into(), self.properties.into());
        if !self.required.is_empty() {
            schema.insert("required".into(), self.required.into());
        }
        schema.insert("additionalProperties".into(), false.into());
        let defs = self.generator.take_definitions(true);
        if !defs.is_empty() {
            schema.insert("$defs".into(), defs.into());
        }
        ToolDef {
            name: self.spec.name.into(),
            description: self.spec.description.into(),
            kind: self.spec.kind,
            title: self.spec.title.into(),
            permission: self.spec.permission,
            input_schema: schema.into(),
            requires: self.spec.requires.into(),
        }
    }
}

/// Whether a (sub)schema accepts `null`: `true`, `{}`, `"type": "null"`,
/// `"type": [.., "null"]`, or an `anyOf`/`oneOf` branch that does.
fn accepts_null(schema: &serde_json::Value) -> bool {
    use serde_json::Value;
    match schema {
        Value::Bool(b) => *b,
        Value::Object(map) if map.is_empty() => true,
        Value::Object(map) => match map.get("type") {
            Some(Value::String(t)) => t == "null",
            Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
            _ => ["anyOf", "oneOf"].iter().any(|k| {
                map.get(*k)
                    .and_then(Value::as_array)
                    .is_some_and(|branches| branches.iter().any(accepts_null))
            }),
        },
        _ => false,
    }
}
