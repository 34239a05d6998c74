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
use crate::model::{Agent, Command, Ext, Fn, Options, Param, Role, Tool};

/// The options of `#[acp::agent]`, as listed in its errors.
const AGENT_OPTIONS: &str =
    "`name`, `title`, `version`, `prompt`, `system_prompt`, `modes`, `config`, `crate`";
/// The flags of `prompt(...)`.
const PROMPT_OPTIONS: &str = "`image`, `audio`, `embedded_context`";
/// The options of `#[acp::tool]`.
const TOOL_OPTIONS: &str = "`kind`, `title`, `permission`, `check`, `name`, `requires`";
/// The options of `#[acp::command]`.
const COMMAND_OPTIONS: &str = "`name`, `hint`";

/// The inert attributes `#[acp::agent]` reads off its methods.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Helper {
    Tool,
    Command,
    Ext,
}

impl Helper {
    const ALL: [(Helper, &'static str); 3] = [
        (Helper::Tool, "tool"),
        (Helper::Command, "command"),
        (Helper::Ext, "ext"),
    ];
}

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
        let mut helpers = Vec::new();
        attrs.retain(|a| match helper(a, options.krate.as_ref()) {
            Some(kind) => {
                helpers.push((kind, a.clone()));
                false
            }
            None => true,
        });
        let mut helpers = helpers.into_iter();
        let first = helpers.next();
        stray_tool_attrs.extend(helpers.map(|(_, a)| {
            (
                a,
                "a method takes one of #[acp::tool], #[acp::command] and #[acp::ext], once",
            )
        }));
        let ImplItem::Fn(f) = item else {
            if let Some((_, a)) = first {
                stray_tool_attrs.push((
                    a,
                    "#[acp::tool], #[acp::command] and #[acp::ext] go on an `async fn` method",
                ));
            }
            continue;
        };
        let cfgs = f
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("cfg"))
            .cloned()
            .collect();
        let role = match first {
            Some((Helper::Tool, attr)) => Role::Tool(Box::new(tool(attr, f, errors))),
            Some((Helper::Command, attr)) => Role::Command(Box::new(command(attr, f, errors))),
            Some((Helper::Ext, attr)) => Role::Ext(Box::new(ext(attr, f, errors))),
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

/// Which of the agent's helper attributes `attr` is, under one of the paths the agent
/// recognises: `tool`, `acp::tool`, `::acp::tool`, or `<crate>::tool` for the `crate = …`
/// option (and the same for `command` and `ext`).
fn helper(attr: &Attribute, krate: Option<&syn::Path>) -> Option<Helper> {
    let path = flat(attr.path());
    let path = path.strip_prefix("::").unwrap_or(&path);
    let krate = krate.map(|k| {
        let k = flat(k);
        k.strip_prefix("::").unwrap_or(&k).to_owned()
    });
    Helper::ALL.iter().find_map(|(kind, name)| {
        let matches = path == *name
            || path == format!("acp::{name}")
            || krate
                .as_ref()
                .is_some_and(|k| path == format!("{k}::{name}"));
        matches.then_some(*kind)
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
            "modes" => options.modes = Some(meta.value()?.parse()?),
            "config" => {
                let content;
                syn::parenthesized!(content in meta.input);
                let types =
                    syn::punctuated::Punctuated::<syn::Type, syn::Token![,]>::parse_terminated(
                        &content,
                    )?;
                options.config.extend(types);
            }
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
            "system_prompt" => {
                let mut takes_override = false;
                if meta.input.peek(syn::token::Paren) {
                    let mut flags = Vec::new();
                    meta.parse_nested_meta(|inner| {
                        match first_time(&mut flags, &inner, errors).as_str() {
                            "override" => takes_override = true,
                            flag => {
                                errors.at(
                                    &inner.path,
                                    format!(
                                        "unknown system prompt mode `{flag}`; `append` is always \
                                         taken, write `system_prompt` or `system_prompt(override)`"
                                    ),
                                );
                                skip_value(&inner)?;
                            }
                        }
                        Ok(())
                    })?;
                }
                options.system_prompt = Some(takes_override);
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
    let mut check = None;
    let mut requires = Vec::new();
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
                "check" => check = Some(meta.value()?.parse()?),
                "requires" => {
                    meta.parse_nested_meta(|inner| {
                        match inner.path.get_ident() {
                            Some(ident) => requires.push(ident.clone()),
                            None => errors.at(&inner.path, "expected a capability name, e.g. `requires(terminal)`"),
                        }
                        Ok(())
                    })?;
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

    let (cx, mut params) = context_and_params(f);
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
        check,
        method: f.sig.ident.clone(),
        description,
        cx,
        params,
        ret: return_type(f),
        requires,
    }
}

/// The first parameter after `&self` (the context), and the ones after it.
fn context_and_params(f: &syn::ImplItemFn) -> (Option<syn::PatType>, Vec<Param>) {
    let mut inputs = f
        .sig
        .inputs
        .iter()
        .skip_while(|a| matches!(a, FnArg::Receiver(_)));
    let cx = match inputs.next() {
        Some(FnArg::Typed(pt)) => Some(pt.clone()),
        _ => None,
    };
    let params = inputs
        .filter_map(|a| match a {
            FnArg::Typed(pt) => Some(Param {
                pat: (*pt.pat).clone(),
                ty: (*pt.ty).clone(),
                description: String::new(),
            }),
            FnArg::Receiver(_) => None,
        })
        .collect();
    (cx, params)
}

fn return_type(f: &syn::ImplItemFn) -> Option<syn::Type> {
    match &f.sig.output {
        syn::ReturnType::Type(_, ty) => Some((**ty).clone()),
        syn::ReturnType::Default => None,
    }
}

/// Parses one `#[acp::command(...)]` attribute and the method it is on.
fn command(attr: Attribute, f: &syn::ImplItemFn, errors: &mut Errors) -> Command {
    let mut name = None;
    let mut hint = None;
    if !matches!(attr.meta, syn::Meta::Path(_)) {
        let mut seen = Vec::new();
        let parsed = attr.parse_nested_meta(|meta| {
            match first_time(&mut seen, &meta, errors).as_str() {
                "name" => name = Some(meta.value()?.parse()?),
                "hint" => hint = Some(meta.value()?.parse()?),
                key => {
                    let doc = if key == "description" {
                        " (the description is the method's doc comment)"
                    } else {
                        ""
                    };
                    errors.at(
                        &meta.path,
                        format!("unknown option `{key}` for #[acp::command]; expected one of {COMMAND_OPTIONS}{doc}"),
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
    let (cx, params) = context_and_params(f);
    Command {
        attr,
        name,
        hint,
        method: f.sig.ident.clone(),
        description: doc_text(&f.attrs),
        cx,
        params,
        ret: return_type(f),
    }
}

/// Parses one `#[acp::ext("_vendor/name")]` (or `#[acp::ext("_vendor/name", notification)]`)
/// attribute and the method it is on.
fn ext(attr: Attribute, f: &syn::ImplItemFn, errors: &mut Errors) -> Ext {
    let mut name = None;
    let mut notification = false;
    match &attr.meta {
        syn::Meta::List(list) => {
            let parsed = list.parse_args_with(|input: syn::parse::ParseStream<'_>| {
                let lit = input.parse::<LitStr>()?;
                let written = lit.value();
                name = Some(lit);
                if input.parse::<Option<syn::Token![,]>>()?.is_some() && !input.is_empty() {
                    let flag: syn::Ident = input.parse()?;
                    if flag == "notification" {
                        notification = true;
                    } else {
                        errors.at(
                            &flag,
                            format!("unknown option `{flag}` for #[acp::ext]; the only one is `notification`, for a notification (never answered): `#[acp::ext({written:?}, notification)]`"),
                        );
                    }
                    let _ = input.parse::<Option<syn::Token![,]>>()?;
                }
                Ok(())
            });
            if let Err(e) = parsed {
                errors.push(syn::Error::new(
                    e.span(),
                    format!("{e}; write `#[acp::ext(\"_vendor/name\")]` (a request) or `#[acp::ext(\"_vendor/name\", notification)]`"),
                ));
            }
        }
        _ => {
            let example = format!("\"_my-agent/{}\"", f.sig.ident);
            errors.at(
                &attr,
                format!("#[acp::ext] needs the name of the extension method, starting with `_`: `#[acp::ext({example})]` (a request) or `#[acp::ext({example}, notification)]`"),
            );
        }
    }
    let (cx, params) = context_and_params(f);
    Ext {
        attr,
        name,
        notification,
        method: f.sig.ident.clone(),
        cx,
        params,
        ret: return_type(f),
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
