//! `#[acp::agent]`: parse the attribute and the whole inherent `impl`, validate the methods it
//! recognises and the `#[acp::tool]` methods, and expand `impl Agent` next to the author's
//! items (which stay as written, except that tool bodies are wrapped in the tool lifecycle).
//!
//! On any error the author's items are still emitted (with the inert `#[acp::tool]`
//! attributes removed) plus a stub `impl Agent`, so the rest of the crate keeps compiling and
//! the IDE keeps working; every error is reported at once.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, FnArg, ImplItem, ImplItemFn, ItemImpl, ReturnType};

use crate::tool::{self, Tool};
use crate::util::{Errors, respan};

const AGENT_OPTIONS: &str = "`name`, `title`, `version`, `prompt`, `crate`";
const PROMPT_OPTIONS: &str = "`image`, `audio`, `embedded_context`";

/// The options of `#[acp::agent(...)]`.
#[derive(Default)]
struct Args {
    name: Option<Expr>,
    title: Option<Expr>,
    version: Option<Expr>,
    image: bool,
    audio: bool,
    embedded_context: bool,
    krate: Option<syn::Path>,
}

fn parse_args(attr: TokenStream, errors: &mut Errors) -> Args {
    let mut args = Args::default();
    let mut seen = Vec::<String>::new();
    let parser = syn::meta::parser(|meta| {
        let key = meta.path.to_token_stream().to_string().replace(' ', "");
        if seen.contains(&key) {
            errors.at(&meta.path, format!("`{key}` is given twice"));
        }
        seen.push(key.clone());
        match key.as_str() {
            "name" => args.name = Some(meta.value()?.parse()?),
            "title" => args.title = Some(meta.value()?.parse()?),
            "version" => args.version = Some(meta.value()?.parse()?),
            "crate" => {
                let value = meta.value()?;
                args.krate = Some(if value.peek(syn::LitStr) {
                    value.parse::<syn::LitStr>()?.parse()?
                } else {
                    syn::Path::parse_mod_style(value)?
                });
            }
            "prompt" => meta.parse_nested_meta(|inner| {
                let flag = inner.path.to_token_stream().to_string().replace(' ', "");
                match flag.as_str() {
                    "image" => args.image = true,
                    "audio" => args.audio = true,
                    "embedded_context" => args.embedded_context = true,
                    _ => {
                        errors.at(
                            &inner.path,
                            format!("unknown prompt capability `{flag}`; expected one of {PROMPT_OPTIONS}"),
                        );
                        tool::skip_value(&inner)?;
                    }
                }
                Ok(())
            })?,
            _ => {
                errors.at(
                    &meta.path,
                    format!("unknown option `{key}` for #[acp::agent]; expected one of {AGENT_OPTIONS}"),
                );
                tool::skip_value(&meta)?;
            }
        }
        Ok(())
    });
    if let Err(e) = syn::parse::Parser::parse2(parser, attr) {
        errors.push(e);
    }
    args
}

/// A session method the agent recognises by name, and the signature it must have.
struct Known {
    name: &'static str,
    is_async: bool,
    /// Parameters after `&self`.
    arity: usize,
    signature: &'static str,
}

const KNOWN: &[Known] = &[
    Known {
        name: "prompt",
        is_async: true,
        arity: 2,
        signature: "async fn prompt(&self, cx: &acp::Session, prompt: acp::Prompt) -> acp::Result<acp::StopReason>",
    },
    Known {
        name: "new_session",
        is_async: true,
        arity: 1,
        signature: "async fn new_session(&self, cx: &acp::Session) -> acp::Result<acp::SessionSetup>",
    },
    Known {
        name: "load_session",
        is_async: true,
        arity: 1,
        signature: "async fn load_session(&self, cx: &acp::Session) -> acp::Result<acp::SessionSetup>",
    },
    Known {
        name: "authenticate",
        is_async: true,
        arity: 1,
        signature: "async fn authenticate(&self, method: acp::schema::AuthMethodId) -> acp::Result<()>",
    },
    Known {
        name: "auth_methods",
        is_async: false,
        arity: 0,
        signature: "fn auth_methods(&self) -> Vec<acp::schema::AuthMethod>",
    },
    Known {
        name: "set_mode",
        is_async: true,
        arity: 2,
        signature: "async fn set_mode(&self, cx: &acp::Session, mode: acp::schema::SessionModeId) -> acp::Result<()>",
    },
    Known {
        name: "set_config_option",
        is_async: true,
        arity: 3,
        signature: "async fn set_config_option(&self, cx: &acp::Session, option: acp::schema::SessionConfigId, value: acp::schema::SessionConfigOptionValue) -> acp::Result<Vec<acp::schema::SessionConfigOption>>",
    },
];

/// Checks a recognised method's shape; the types are checked by the compiler, at the
/// author's spans, through the forwarding calls.
fn check_known(known: &Known, f: &ImplItemFn, errors: &mut Errors) -> bool {
    let sig = &f.sig;
    let expected = format!("expected `{}`", known.signature);
    let mut ok = true;
    if known.is_async && sig.asyncness.is_none() {
        errors.at(
            sig.fn_token,
            format!("`{}` must be an `async fn`; {expected}", known.name),
        );
        ok = false;
    }
    if !known.is_async && sig.asyncness.is_some() {
        errors.at(
            sig.asyncness,
            format!("`{}` must not be `async`; {expected}", known.name),
        );
        ok = false;
    }
    match sig.inputs.first() {
        Some(FnArg::Receiver(r))
            if r.reference.is_some() && r.mutability.is_none() && r.colon_token.is_none() => {}
        Some(FnArg::Receiver(r)) => {
            errors.at(
                r,
                format!(
                    "`{}` takes `&self` (one agent serves every session at once); {expected}",
                    known.name
                ),
            );
            ok = false;
        }
        _ => {
            errors.at_span(
                sig.paren_token.span.join(),
                format!("`{}` is a method taking `&self`; {expected}", known.name),
            );
            ok = false;
        }
    }
    let arity = sig
        .inputs
        .iter()
        .filter(|a| matches!(a, FnArg::Typed(_)))
        .count();
    if ok && arity != known.arity {
        errors.at_span(
            sig.paren_token.span.join(),
            format!(
                "`{}` takes {} parameter{} after `&self`, found {arity}; {expected}",
                known.name,
                known.arity,
                if known.arity == 1 { "" } else { "s" }
            ),
        );
        ok = false;
    }
    if matches!(sig.output, ReturnType::Default) {
        errors.at(
            &sig.ident,
            format!("`{}` must return a value; {expected}", known.name),
        );
        ok = false;
    }
    if let Some(p) = crate::util::type_or_const_param(sig) {
        errors.at(p, format!("`{}` cannot be generic; {expected}", known.name));
        ok = false;
    }
    ok
}

/// Whether `attr` is `#[acp::tool]` under one of the paths the agent recognises.
fn is_tool_attr(attr: &syn::Attribute, krate: Option<&syn::Path>) -> bool {
    let path = attr.path().to_token_stream().to_string().replace(' ', "");
    let path = path.strip_prefix("::").unwrap_or(&path);
    if path == "tool" || path == "acp::tool" {
        return true;
    }
    krate.is_some_and(|k| {
        let k = k.to_token_stream().to_string().replace(' ', "");
        let k = k.strip_prefix("::").unwrap_or(&k);
        path == format!("{k}::tool")
    })
}

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let args = parse_args(attr, &mut errors);
    let krate = args
        .krate
        .as_ref()
        .map_or_else(|| quote!(::acp), ToTokens::to_token_stream);

    let mut imp: ItemImpl = match syn::parse2(item.clone()) {
        Ok(imp) => imp,
        Err(_) => {
            errors.at_span(
                Span::call_site(),
                "#[acp::agent] goes on an inherent impl block holding the agent's methods: `#[acp::agent] impl MyAgent { async fn prompt(…) … }`",
            );
            let errors = errors.to_compile_errors();
            return quote!(#errors #item);
        }
    };
    if let Some((_, path, _)) = &imp.trait_ {
        errors.at(
            path,
            "#[acp::agent] goes on an inherent impl (`impl MyAgent { … }`), not on a trait impl: it writes the `acp::Agent` impl for you",
        );
        let errors = errors.to_compile_errors();
        return quote!(#errors #item);
    }

    // Scan the items: take the tool attributes off, validate tools and recognised methods.
    let mut tools: Vec<(usize, Tool)> = Vec::new();
    let mut known: Vec<(&'static Known, usize)> = Vec::new();
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
            let is_tool = is_tool_attr(a, args.krate.as_ref());
            if is_tool {
                tool_attrs.push(a.clone());
            }
            !is_tool
        });
        for extra in tool_attrs.iter().skip(1) {
            errors.at(extra, "#[acp::tool] is given twice on this method");
        }
        let ImplItem::Fn(f) = item else {
            if let Some(a) = tool_attrs.first() {
                errors.at(a, "#[acp::tool] goes on an `async fn` method");
            }
            continue;
        };
        let name = f.sig.ident.to_string();
        let recognised = KNOWN.iter().find(|k| k.name == name);
        match (tool_attrs.first(), recognised) {
            (Some(a), Some(k)) => errors.at(
                a,
                format!(
                    "`{}` is the agent's own `{}` method and cannot also be a tool; rename the tool method",
                    name, k.name
                ),
            ),
            (Some(a), None) => {
                if let Some(tool) = tool::parse(a, f, &mut errors) {
                    tools.push((index, tool));
                }
            }
            (None, Some(k)) => {
                if check_known(k, f, &mut errors) {
                    known.push((k, index));
                }
            }
            (None, None) => {}
        }
    }

    for (i, (_, tool)) in tools.iter().enumerate() {
        if let Some((_, first)) = tools[..i].iter().find(|(_, t)| t.name == tool.name) {
            errors.at_span(
                tool.name_span,
                format!(
                    "duplicate tool name `{}`: `fn {}` already uses it; tool names must be unique (rename the method or set `name = \"…\"`)",
                    tool.name, first.method
                ),
            );
        }
    }

    let method = |name: &str| {
        known
            .iter()
            .find(|(k, _)| k.name == name)
            .map(|(_, i)| match &imp.items[*i] {
                ImplItem::Fn(f) => f.clone(),
                _ => unreachable!("known methods are functions"),
            })
    };
    let has_prompt = imp
        .items
        .iter()
        .any(|i| matches!(i, ImplItem::Fn(f) if f.sig.ident == "prompt"));
    if !has_prompt {
        errors.at_span(
            imp.self_ty.span(),
            "an #[acp::agent] needs a `prompt` method, which runs each prompt turn: add `async fn prompt(&self, cx: &acp::Session, prompt: acp::Prompt) -> acp::Result<acp::StopReason>`",
        );
    }
    let has = |name: &str| {
        imp.items
            .iter()
            .any(|i| matches!(i, ImplItem::Fn(f) if f.sig.ident == name))
    };
    if has("authenticate") && !has("auth_methods") {
        let f = method("authenticate");
        errors.at_span(
            f.map_or_else(Span::call_site, |f| f.sig.ident.span()),
            "an agent with `authenticate` must say which methods it offers: add `fn auth_methods(&self) -> Vec<acp::schema::AuthMethod>`",
        );
    }
    if has("auth_methods") && !has("authenticate") {
        let f = method("auth_methods");
        errors.at_span(
            f.map_or_else(Span::call_site, |f| f.sig.ident.span()),
            "an agent with `auth_methods` must handle the client's choice: add `async fn authenticate(&self, method: acp::schema::AuthMethodId) -> acp::Result<()>`",
        );
    }

    let (impl_generics, _, where_clause) = imp.generics.split_for_impl();
    let self_ty = &imp.self_ty;

    if !errors.is_empty() {
        let errors = errors.to_compile_errors();
        return quote! {
            #errors
            #imp
            const _: () = {
                #[automatically_derived]
                impl #impl_generics #krate::__private::Agent for #self_ty #where_clause {
                    fn prompt(
                        &self,
                        _: &#krate::__private::Session,
                        _: #krate::__private::Prompt,
                    ) -> impl ::core::future::Future<
                        Output = #krate::__private::Result<#krate::__private::StopReason>,
                    > + ::core::marker::Send {
                        #krate::__private::stub()
                    }
                }
            };
        };
    }

    for (index, tool) in &tools {
        if let ImplItem::Fn(f) = &mut imp.items[*index] {
            tool.wrap_body(f, &krate);
        }
    }

    let p = quote!(#krate::__private);
    let name = args.name.as_ref().map_or_else(
        || quote!(::core::env!("CARGO_PKG_NAME")),
        ToTokens::to_token_stream,
    );
    let version = args.version.as_ref().map_or_else(
        || quote!(::core::env!("CARGO_PKG_VERSION")),
        ToTokens::to_token_stream,
    );
    let title = match &args.title {
        Some(t) => quote!(::core::option::Option::Some(::core::convert::Into::into(#t))),
        None => quote!(::core::option::Option::None),
    };
    let load_session = known.iter().any(|(k, _)| k.name == "load_session");
    let (image, audio, embedded) = (args.image, args.audio, args.embedded_context);

    let mut methods = Vec::new();
    for (k, index) in &known {
        let ImplItem::Fn(f) = &imp.items[*index] else {
            continue;
        };
        methods.push(forward(k, f, &p));
    }

    let specs = tools.iter().map(|(_, t)| t.spec(&krate));
    let tool_methods = (!tools.is_empty()).then(|| {
        let defs = tools.iter().map(|(_, t)| t.def(&krate));
        let arms = tools.iter().map(|(_, t)| t.dispatch_arm(&krate));
        let names = tools.iter().map(|(_, t)| &t.name);
        quote! {
            fn tools(&self) -> ::std::vec::Vec<#p::ToolDef> {
                ::std::vec![#(#defs),*]
            }

            fn call_tool(
                &self,
                __acp_cx: &#p::Session,
                __acp_name: &str,
                __acp_json: #p::serde_json::Value,
            ) -> impl ::core::future::Future<Output = #p::Result<#p::ToolOutput>> + ::core::marker::Send {
                async move {
                    match __acp_name {
                        #(#arms)*
                        _ => ::core::result::Result::Err(#p::unknown_tool(__acp_name, &[#(#names),*])),
                    }
                }
            }
        }
    });

    quote! {
        #imp

        const _: () = {
            #[automatically_derived]
            impl #impl_generics #self_ty #where_clause {
                #(#specs)*
            }

            #[automatically_derived]
            impl #impl_generics #p::Agent for #self_ty #where_clause {
                fn info(&self) -> #p::Implementation {
                    #p::info(#name, #title, #version)
                }

                fn capabilities(&self) -> #p::AgentCapabilities {
                    #p::capabilities(#load_session, #image, #audio, #embedded)
                }

                #(#methods)*

                #tool_methods
            }
        };
    }
}

/// The trait method forwarding to the author's method of the same name. The forwarding call
/// carries the author's spans, so a wrong parameter type, return type or a future that is not
/// `Send` is reported at the author's method.
fn forward(known: &Known, f: &ImplItemFn, p: &TokenStream) -> TokenStream {
    let ident = &f.sig.ident;
    let user_types: Vec<_> = f
        .sig
        .inputs
        .iter()
        .filter_map(|a| match a {
            FnArg::Typed(pt) => Some(pt.ty.span()),
            FnArg::Receiver(_) => None,
        })
        .collect();
    let (params, output): (Vec<TokenStream>, TokenStream) = match known.name {
        "prompt" => (
            vec![quote!(&#p::Session), quote!(#p::Prompt)],
            quote!(#p::Result<#p::StopReason>),
        ),
        "new_session" | "load_session" => (
            vec![quote!(&#p::Session)],
            quote!(#p::Result<#p::SessionSetup>),
        ),
        "authenticate" => (vec![quote!(#p::AuthMethodId)], quote!(#p::Result<()>)),
        "auth_methods" => (vec![], quote!(::std::vec::Vec<#p::AuthMethod>)),
        "set_mode" => (
            vec![quote!(&#p::Session), quote!(#p::SessionModeId)],
            quote!(#p::Result<()>),
        ),
        _ => (
            vec![
                quote!(&#p::Session),
                quote!(#p::SessionConfigId),
                quote!(#p::SessionConfigOptionValue),
            ],
            quote!(#p::Result<::std::vec::Vec<#p::SessionConfigOption>>),
        ),
    };
    let vars: Vec<_> = (0..params.len())
        .map(|i| format_ident!("__acp_{}", i))
        .collect();
    let args = vars.iter().zip(&user_types).map(|(v, span)| {
        let mut v = v.clone();
        v.set_span(*span);
        v
    });
    let ret_span = match &f.sig.output {
        ReturnType::Type(_, ty) => ty.span(),
        ReturnType::Default => ident.span(),
    };
    if !known.is_async {
        let call = quote_spanned!(ret_span=> Self::#ident(self #(, #args)*));
        let call = respan(call, ret_span);
        return quote! {
            fn #ident(&self) -> #output {
                #call
            }
        };
    }
    let call = quote_spanned!(ret_span=> #p::returns::<#output, _>(Self::#ident(self #(, #args)*)));
    let call = quote_spanned!(ident.span()=> #p::send(#call));
    quote! {
        fn #ident(&self #(, #vars: #params)*) -> impl ::core::future::Future<Output = #output> + ::core::marker::Send {
            #call
        }
    }
}
