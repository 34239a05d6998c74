//! Parsing: the options of `#[acp::agent(...)]` and `#[acp::tool(...)]`, and the `impl` block
//! into a [`model::Agent`](crate::model::Agent).
//!
//! Parsing judges only syntax: an option that is unknown, given twice or whose value does not
//! parse is an error here; whether the values and signatures make sense is `check`'s job.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::{Attribute, FnArg, ImplItem, LitStr};

use crate::docs::{doc_text, split_tool_doc};
use crate::errors::Errors;
use crate::methods::Method;
use crate::model::{Agent, Fn, Options, Param, Role, Tool};

/// The options of `#[acp::agent]`, as listed in its errors.
const AGENT_OPTIONS: &str = "`name`, `title`, `version`, `prompt`, `crate`";
/// The flags of `prompt(...)`.
const PROMPT_OPTIONS: &str = "`image`, `audio`, `embedded_context`";
/// The options of `#[acp::tool]`.
const TOOL_OPTIONS: &str = "`kind`, `title`, `permission`, `name`";

/// Parses `#[acp::agent(attr)] item`. `None` when `item` is not an inherent impl (the error is
/// in `errors`; the caller emits `item` unchanged).
pub(crate) fn agent(attr: TokenStream, item: TokenStream, errors: &mut Errors) -> Option<Agent> {
    let options = agent_options(attr, errors);
    let Ok(mut imp) = syn::parse2::<syn::ItemImpl>(item) else {
        errors.at_span(
            Span::call_site(),
            "#[acp::agent] goes on an inherent impl block holding the agent's methods: `#[acp::agent] impl MyAgent { async fn prompt(…) … }`",
        );
        return None;
    };
    if let Some((_, path, _)) = &imp.trait_ {
        errors.at(
            path,
            "#[acp::agent] goes on an inherent impl (`impl MyAgent { … }`), not on a trait impl: it writes the `acp::Agent` impl for you",
        );
        return None;
    }

    let mut fns = Vec::new();
    let mut stray_tool_attrs = Vec::new();
    for (index, item) in imp.items.iter_mut().enumerate() {
        let attrs = match item {
            ImplItem::Fn(f) => &mut f.attrs,
            ImplItem::Const(c) => &mut c.attrs,
            ImplItem::Type(t) => &mut t.attrs,
            ImplItem::Macro(m) => &mut m.attrs,
            _ => continue,
        };
        let mut tool_attrs = Vec::new();
        attrs.retain(|a| {
            let is_tool = is_tool_attr(a, options.krate.as_ref());
            if is_tool {
                tool_attrs.push(a.clone());
            }
            !is_tool
        });
        let mut tool_attrs = tool_attrs.into_iter();
        let tool_attr = tool_attrs.next();
        stray_tool_attrs
            .extend(tool_attrs.map(|a| (a, "#[acp::tool] is given twice on this method")));
        let ImplItem::Fn(f) = item else {
            if let Some(a) = tool_attr {
                stray_tool_attrs.push((a, "#[acp::tool] goes on an `async fn` method"));
            }
            continue;
        };
        let cfgs = f
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("cfg"))
            .cloned()
            .collect();
        let role = match tool_attr {
            Some(attr) => Role::Tool(Box::new(tool(attr, f, errors))),
            None => Method::find(&f.sig.ident.to_string()).map_or(Role::Other, Role::Recognised),
        };
        fns.push(Fn {
            index,
            sig: f.sig.clone(),
            cfgs,
            role,
        });
    }
    Some(Agent {
        options,
        imp,
        fns,
        stray_tool_attrs,
    })
}

/// Whether `attr` is `#[acp::tool]` under one of the paths the agent recognises: `tool`,
/// `acp::tool`, `::acp::tool`, or `<crate>::tool` for the `crate = …` option.
fn is_tool_attr(attr: &Attribute, krate: Option<&syn::Path>) -> bool {
    let path = flat(attr.path());
    let path = path.strip_prefix("::").unwrap_or(&path);
    if path == "tool" || path == "acp::tool" {
        return true;
    }
    krate.is_some_and(|k| {
        let k = flat(k);
        path == format!("{}::tool", k.strip_prefix("::").unwrap_or(&k))
    })
}

/// A path as text without spaces: `acp::tool`.
fn flat(path: &impl ToTokens) -> String {
    path.to_token_stream().to_string().replace(' ', "")
}

/// Records an option's key, reporting it when it was already given.
fn first_time(seen: &mut Vec<String>, meta: &ParseNestedMeta, errors: &mut Errors) -> String {
    let key = flat(&meta.path);
    if seen.contains(&key) {
        errors.at(&meta.path, format!("`{key}` is given twice; keep one"));
    }
    seen.push(key.clone());
    key
}

fn agent_options(attr: TokenStream, errors: &mut Errors) -> Options {
    let mut options = Options::default();
    let mut seen = Vec::new();
    let parser = syn::meta::parser(|meta| {
        match first_time(&mut seen, &meta, errors).as_str() {
            "name" => options.name = Some(meta.value()?.parse()?),
            "title" => options.title = Some(meta.value()?.parse()?),
            "version" => options.version = Some(meta.value()?.parse()?),
            "crate" => {
                let value = meta.value()?;
                options.krate = Some(if value.peek(LitStr) {
                    value.parse::<LitStr>()?.parse()?
                } else {
                    syn::Path::parse_mod_style(value)?
                });
            }
            "prompt" => {
                let mut flags = Vec::new();
                meta.parse_nested_meta(|inner| {
                    match first_time(&mut flags, &inner, errors).as_str() {
                        "image" => options.image = true,
                        "audio" => options.audio = true,
                        "embedded_context" => options.embedded_context = true,
                        flag => {
                            errors.at(
                                &inner.path,
                                format!("unknown prompt capability `{flag}`; expected one of {PROMPT_OPTIONS}"),
                            );
                            skip_value(&inner)?;
                        }
                    }
                    Ok(())
                })?;
            }
            key => {
                errors.at(
                    &meta.path,
                    format!(
                        "unknown option `{key}` for #[acp::agent]; expected one of {AGENT_OPTIONS}"
                    ),
                );
                skip_value(&meta)?;
            }
        }
        Ok(())
    });
    if let Err(e) = syn::parse::Parser::parse2(parser, attr) {
        errors.push(e);
    }
    options
}

/// Parses one `#[acp::tool(...)]` attribute and the method it is on.
fn tool(attr: Attribute, f: &syn::ImplItemFn, errors: &mut Errors) -> Tool {
    let mut kind = None;
    let mut title = None;
    let mut name = None;
    let mut permission = false;
    if !matches!(attr.meta, syn::Meta::Path(_)) {
        let mut seen = Vec::new();
        let parsed = attr.parse_nested_meta(|meta| {
            match first_time(&mut seen, &meta, errors).as_str() {
                "kind" => kind = Some(meta.value()?.parse()?),
                "title" => title = Some(meta.value()?.parse()?),
                "name" => name = Some(meta.value()?.parse()?),
                "permission" => {
                    permission = !meta.input.peek(syn::Token![=])
                        || meta.value()?.parse::<syn::LitBool>()?.value;
                }
                key => {
                    errors.at(
                        &meta.path,
                        format!("unknown option `{key}` for #[acp::tool]; expected one of {TOOL_OPTIONS}"),
                    );
                    skip_value(&meta)?;
                }
            }
            Ok(())
        });
        if let Err(e) = parsed {
            errors.push(e);
        }
    }

    let mut inputs = f
        .sig
        .inputs
        .iter()
        .skip_while(|a| matches!(a, FnArg::Receiver(_)));
    let cx = match inputs.next() {
        Some(FnArg::Typed(pt)) => Some(pt.clone()),
        _ => None,
    };
    let mut params: Vec<Param> = inputs
        .filter_map(|a| match a {
            FnArg::Typed(pt) => Some(Param {
                pat: (*pt.pat).clone(),
                ty: (*pt.ty).clone(),
                description: String::new(),
            }),
            FnArg::Receiver(_) => None,
        })
        .collect();
    let names: Vec<String> = params
        .iter()
        .map(|p| p.ident().map(ToString::to_string).unwrap_or_default())
        .collect();
    let (description, described) = split_tool_doc(&doc_text(&f.attrs), &names);
    for (param, text) in params.iter_mut().zip(described) {
        param.description = text;
    }
    Tool {
        attr,
        kind,
        title,
        name,
        permission,
        method: f.sig.ident.clone(),
        description,
        cx,
        params,
        ret: match &f.sig.output {
            syn::ReturnType::Type(_, ty) => Some((**ty).clone()),
            syn::ReturnType::Default => None,
        },
    }
}

/// Consumes the value of an unknown option so that parsing can go on.
fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _: TokenStream = meta.input.parse::<proc_macro2::Group>()?.stream();
    }
    Ok(())
}
