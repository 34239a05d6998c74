//! `#[derive(acp::ConfigOption)]` and `#[derive(acp::Modes)]`: a session setting from a type.
//!
//! An enum of unit variants is a choice (`type: "select"`): each variant a value, its id the
//! variant's name in snake_case, its label the name in words, its description the doc
//! comment; the `#[default]` variant (else the first) is where sessions start. A
//! `struct Name(bool)` is a switch (`type: "boolean"`). The option's id is the type's name in
//! snake_case and its label the name in words, unless `#[config(id = "…", name = "…")]` says
//! otherwise; `category = "…"` sets its category. `Modes` is a choice with id `mode` and
//! category `mode`, one variant per mode (`#[mode(id = "…", name = "…")]` on a variant).

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Data, DeriveInput, Fields, LitStr};

use crate::docs::doc_text;
use crate::errors::Errors;

/// The categories the protocol defines; a custom one starts with `_`.
const CATEGORIES: &[&str] = &["mode", "model", "model_config", "thought_level"];

/// Which derive.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Derive {
    ConfigOption,
    Modes,
}

impl Derive {
    /// The helper attribute: `config` or `mode`.
    fn helper(self) -> &'static str {
        match self {
            Derive::ConfigOption => "config",
            Derive::Modes => "mode",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Derive::ConfigOption => "acp::ConfigOption",
            Derive::Modes => "acp::Modes",
        }
    }
}

/// `id`, `name`, `category`, `default` as written in a helper attribute.
#[derive(Default)]
struct Keys {
    id: Option<LitStr>,
    name: Option<LitStr>,
    category: Option<LitStr>,
    default: Option<syn::LitBool>,
    /// `crate = path` (on the type).
    krate: Option<syn::Path>,
}

/// Reads the helper attributes among `attrs`; `allowed` lists the keys this place takes, and
/// `place` names it in errors (`on the type`, `on a variant`).
fn keys(
    attrs: &[syn::Attribute],
    derive: Derive,
    place: &str,
    allowed: &[&str],
    errors: &mut Errors,
) -> Keys {
    let mut keys = Keys::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident(derive.helper())) {
        let parsed = attr.parse_nested_meta(|meta| {
            let key = flat(&meta.path);
            if !allowed.contains(&key.as_str()) {
                let list: Vec<_> = allowed.iter().map(|k| format!("`{k}`")).collect();
                let doc = if key == "description" {
                    " (the description is the doc comment)"
                } else {
                    ""
                };
                errors.at(
                    &meta.path,
                    format!(
                        "unknown key `{key}` in #[{}(…)] {place}; expected one of {}{doc}",
                        derive.helper(),
                        list.join(", ")
                    ),
                );
                if meta.input.peek(syn::Token![=]) {
                    meta.value()?.parse::<syn::Expr>()?;
                } else if meta.input.peek(syn::token::Paren) {
                    meta.input.parse::<proc_macro2::Group>()?;
                }
                return Ok(());
            }
            match key.as_str() {
                "id" => keys.id = Some(meta.value()?.parse()?),
                "name" => keys.name = Some(meta.value()?.parse()?),
                "category" => keys.category = Some(meta.value()?.parse()?),
                "default" => keys.default = Some(meta.value()?.parse()?),
                "crate" => {
                    let value = meta.value()?;
                    keys.krate = Some(if value.peek(LitStr) {
                        value.parse::<LitStr>()?.parse()?
                    } else {
                        syn::Path::parse_mod_style(value)?
                    });
                }
                _ => {}
            }
            Ok(())
        });
        if let Err(e) = parsed {
            errors.push(e);
        }
    }
    keys
}

/// A path as written, without spaces: `crate`, `a::b`.
fn flat(path: &syn::Path) -> String {
    quote!(#path).to_string().replace(' ', "")
}

/// `ThoughtLevel` → `thought_level`.
fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `ThoughtLevel` → `Thought level`.
fn words(name: &str) -> String {
    let snake = snake(name);
    let mut out = String::new();
    for (i, part) in snake.split('_').filter(|p| !p.is_empty()).enumerate() {
        if i > 0 {
            out.push(' ');
            out.push_str(part);
        } else {
            let mut chars = part.chars();
            if let Some(first) = chars.next() {
                out.extend(first.to_uppercase());
                out.push_str(chars.as_str());
            }
        }
    }
    out
}

/// A description for the spec: `None` when empty.
fn description(doc: String) -> TokenStream {
    if doc.is_empty() {
        quote!(::core::option::Option::None)
    } else {
        quote!(::core::option::Option::Some(#doc))
    }
}

/// The whole derive.
pub(crate) fn derive(input: TokenStream, derive: Derive) -> TokenStream {
    let mut errors = Errors::default();
    let input: DeriveInput = match syn::parse2(input) {
        Ok(input) => input,
        Err(e) => return e.to_compile_error(),
    };
    let expanded = expand(&input, derive, &mut errors);
    if errors.is_empty() {
        expanded
    } else {
        errors.to_compile_errors()
    }
}

fn expand(input: &DeriveInput, derive: Derive, errors: &mut Errors) -> TokenStream {
    let ident = &input.ident;
    if !input.generics.params.is_empty() {
        errors.at(
            &input.generics,
            format!("#[derive({})] needs a type without generics: its values are fixed when it is declared", derive.name()),
        );
    }
    let type_keys: &[&str] = match derive {
        Derive::ConfigOption => &["id", "name", "category", "default", "crate"],
        Derive::Modes => &["name", "crate"],
    };
    let keys = keys(&input.attrs, derive, "on the type", type_keys, errors);
    let krate = keys
        .krate
        .as_ref()
        .map_or_else(|| quote!(::acp), |k| quote!(#k));
    let p = quote!(#krate::__private);
    let (id, name, category) = match derive {
        Derive::ConfigOption => (
            keys.id
                .as_ref()
                .map_or_else(|| snake(&ident.to_string()), LitStr::value),
            keys.name
                .as_ref()
                .map_or_else(|| words(&ident.to_string()), LitStr::value),
            keys.category.as_ref().map(|c| (c.value(), c.span())),
        ),
        Derive::Modes => (
            "mode".to_owned(),
            keys.name
                .as_ref()
                .map_or_else(|| "Mode".to_owned(), LitStr::value),
            Some(("mode".to_owned(), Span::call_site())),
        ),
    };
    if let Some((category, span)) = &category
        && !category.starts_with('_')
        && !CATEGORIES.contains(&category.as_str())
    {
        let list: Vec<_> = CATEGORIES.iter().map(|c| format!("`{c}`")).collect();
        errors.at_span(
            *span,
            format!(
                "unknown category `{category}`; expected one of {}, or a custom one starting with `_`",
                list.join(", ")
            ),
        );
    }
    let category = match category {
        Some((c, _)) => quote!(::core::option::Option::Some(#c)),
        None => quote!(::core::option::Option::None),
    };
    let doc = description(doc_text(&input.attrs));
    let body = match &input.data {
        Data::Enum(data) => {
            if let Some(default) = &keys.default {
                errors.at(
                    default,
                    "`default = …` is for a switch (`struct Name(bool)`); a choice starts at its `#[default]` variant: remove `default` and put `#[default]` on that variant",
                );
            }
            select(input, data, derive, errors, &p)
        }
        Data::Struct(data) if derive == Derive::ConfigOption => {
            boolean(input, &data.fields, keys.default.as_ref(), errors, &p)
        }
        _ => {
            let what = match derive {
                Derive::ConfigOption => {
                    "an enum of unit variants (a choice among values) or a `struct Name(bool)` (a switch)"
                }
                Derive::Modes => "an enum of unit variants, one per mode",
            };
            errors.at(
                ident,
                format!("#[derive({})] goes on {what}", derive.name()),
            );
            return TokenStream::new();
        }
    };
    let Some((kind, default, to_value, from_value)) = body else {
        return TokenStream::new();
    };
    let modes = (derive == Derive::Modes).then(|| {
        quote! {
            #[automatically_derived]
            impl #p::Modes for #ident {}
        }
    });
    quote! {
        const _: () = {
            #[automatically_derived]
            impl #p::ConfigOption for #ident {
                fn spec() -> &'static #p::ConfigSpec {
                    static SPEC: #p::ConfigSpec = #p::ConfigSpec {
                        id: #id,
                        name: #name,
                        description: #doc,
                        category: #category,
                        kind: #kind,
                        default: #default,
                    };
                    &SPEC
                }

                fn to_value(&self) -> #p::ConfigValue {
                    #to_value
                }

                fn from_value(__acp_value: #p::ConfigValue) -> ::core::option::Option<Self> {
                    #from_value
                }
            }

            #modes
        };
    }
}

/// `(kind, default, to_value body, from_value body)` of a spec.
type Parts = (TokenStream, TokenStream, TokenStream, TokenStream);

/// A choice among the variants of an enum.
fn select(
    input: &DeriveInput,
    data: &syn::DataEnum,
    derive: Derive,
    errors: &mut Errors,
    p: &TokenStream,
) -> Option<Parts> {
    let ident = &input.ident;
    if data.variants.is_empty() {
        errors.at(
            ident,
            format!(
                "#[derive({})] needs at least one variant: the values to choose from",
                derive.name()
            ),
        );
        return None;
    }
    let mut choices = Vec::new();
    let mut to = Vec::new();
    let mut from = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    let mut idents: Vec<&syn::Ident> = Vec::new();
    let mut default = None;
    for variant in &data.variants {
        if !matches!(variant.fields, Fields::Unit) {
            errors.at(
                &variant.fields,
                format!(
                    "the values of #[derive({})] are unit variants: write `{}` without fields",
                    derive.name(),
                    variant.ident
                ),
            );
            continue;
        }
        let keys = keys(
            &variant.attrs,
            derive,
            "on a variant",
            &["id", "name"],
            errors,
        );
        let v = &variant.ident;
        let id = keys
            .id
            .as_ref()
            .map_or_else(|| snake(&v.to_string()), LitStr::value);
        if let Some(i) = ids.iter().position(|other| *other == id) {
            let at = keys.id.as_ref().map_or_else(|| v.span(), LitStr::span);
            errors.at_span(
                at,
                format!(
                    "`{v}` has the id `{id}`, like `{}`; give it another with `#[{}(id = \"…\")]`",
                    idents[i],
                    derive.helper()
                ),
            );
        }
        ids.push(id.clone());
        idents.push(v);
        let name = keys
            .name
            .as_ref()
            .map_or_else(|| words(&v.to_string()), LitStr::value);
        let doc = description(doc_text(&variant.attrs));
        choices.push(quote!(#p::Choice { id: #id, name: #name, description: #doc }));
        to.push(quote!(#ident::#v => #id,));
        from.push(quote!(#id => ::core::option::Option::Some(#ident::#v),));
        if variant.attrs.iter().any(|a| a.path().is_ident("default")) {
            default = Some(id.clone());
        }
    }
    let default = default.or_else(|| ids.first().cloned())?;
    Some((
        quote!(#p::ConfigKind::Select(&[#(#choices),*])),
        quote!(#p::ConfigValue::Choice(#default)),
        quote!(#p::ConfigValue::Choice(match self { #(#to)* })),
        quote! {
            match __acp_value {
                #p::ConfigValue::Choice(__acp_id) => match __acp_id {
                    #(#from)*
                    _ => ::core::option::Option::None,
                },
                #p::ConfigValue::Bool(_) => ::core::option::Option::None,
            }
        },
    ))
}

/// A switch: `struct Name(bool)`.
fn boolean(
    input: &DeriveInput,
    fields: &Fields,
    default: Option<&syn::LitBool>,
    errors: &mut Errors,
    p: &TokenStream,
) -> Option<Parts> {
    let ident = &input.ident;
    let one_bool = match fields {
        Fields::Unnamed(f) if f.unnamed.len() == 1 => {
            matches!(&f.unnamed[0].ty, syn::Type::Path(t) if t.path.is_ident("bool"))
        }
        _ => false,
    };
    if !one_bool {
        let message = format!(
            "#[derive(acp::ConfigOption)] on a struct makes a switch, which holds one `bool`: write `struct {ident}(bool)` (for a choice among values, derive it on an enum of unit variants)"
        );
        match fields {
            Fields::Unit => errors.at(ident, message),
            fields => errors.at(fields, message),
        }
        return None;
    }
    let default = default.is_some_and(|d| d.value);
    Some((
        quote!(#p::ConfigKind::Boolean),
        quote!(#p::ConfigValue::Bool(#default)),
        quote!(#p::ConfigValue::Bool(self.0)),
        quote! {
            match __acp_value {
                #p::ConfigValue::Bool(__acp_on) => ::core::option::Option::Some(#ident(__acp_on)),
                #p::ConfigValue::Choice(_) => ::core::option::Option::None,
            }
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_ids_and_labels() {
        assert_eq!(snake("ThoughtLevel"), "thought_level");
        assert_eq!(snake("Ask"), "ask");
        assert_eq!(words("ThoughtLevel"), "Thought level");
        assert_eq!(words("ReadOnly"), "Read only");
        assert_eq!(words("Code"), "Code");
    }
}
