//! Code generation for an agent `check` found no fault with: `impl acp::Agent` (info,
//! capabilities, one forwarding method per recognised method, the tool table and by-name
//! dispatch), each recognised method's return-type check, and, per tool, one constant and a
//! wrapped body (see [`tool`]). Also the stand-in impl emitted next to errors.
//!
//! Everything generated names `<crate>::__private::…` only, sits in a `const _: () = { … }`
//! scope, and uses `__acp`-prefixed names. The checks that need the compiler are spanned at
//! the author's code, so each mistake is reported there, once.

mod handlers;
mod tool;

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, ImplItem, ReturnType};

use crate::methods::Method;
use crate::model::{Agent, Fn, Role};

/// The whole expansion of a valid agent.
pub(crate) fn agent(mut agent: Agent) -> TokenStream {
    let krate = agent.options.krate();
    let p = quote!(#krate::__private);

    let mut consts = Vec::new();
    let mut defs = Vec::new();
    let mut arms = Vec::new();
    let mut names = Vec::new();
    let mut check_arms = Vec::new();
    for f in &agent.fns {
        let Role::Tool(t) = &f.role else { continue };
        let cfgs = &f.cfgs;
        consts.push(tool::constant(t, cfgs, &p));
        consts.extend(tool::check_method(t, cfgs, &p));
        check_arms.extend(tool::check_arm(t, cfgs));
        defs.push(tool::def(t, cfgs, &p));
        arms.push(tool::dispatch_arm(t, cfgs, &p));
        let name = t.name().0;
        names.push(quote!(#(#cfgs)* #name));
        if let Some(ImplItem::Fn(method)) = agent.imp.items.get_mut(f.index) {
            tool::wrap_body(t, method, &p);
        }
    }

    let mut checks = Vec::new();
    let mut forwards = Vec::new();
    let mut present = Vec::new();
    for f in &agent.fns {
        let Role::Recognised(method) = f.role else {
            continue;
        };
        let (check, forward) = recognised(method, f, &p);
        checks.push(check);
        forwards.push(forward);
        let name = method.name;
        present.push(if f.cfgs.is_empty() {
            quote!(#name)
        } else {
            let predicates = f
                .cfgs
                .iter()
                .filter_map(|a| a.meta.require_list().ok())
                .map(|l| &l.tokens);
            quote!(if ::core::cfg!(all(#(#predicates),*)) { #name } else { "" })
        });
    }

    let options = &agent.options;
    let name = options.name.as_ref().map_or_else(
        || quote!(::core::env!("CARGO_PKG_NAME")),
        ToTokens::to_token_stream,
    );
    let version = options.version.as_ref().map_or_else(
        || quote!(::core::env!("CARGO_PKG_VERSION")),
        ToTokens::to_token_stream,
    );
    let title = match &options.title {
        Some(t) => quote!(::core::option::Option::Some(::core::convert::Into::into(#t))),
        None => quote!(::core::option::Option::None),
    };
    let (image, audio, embedded) = (options.image, options.audio, options.embedded_context);
    let system_prompt = match options.system_prompt {
        None => quote!(::core::option::Option::None),
        Some(takes_override) => quote!(::core::option::Option::Some(#takes_override)),
    };

    let tool_methods = (!defs.is_empty()).then(|| {
        quote! {
            fn tools(&self) -> #p::Vec<#p::ToolDef> {
                #p::Vec::from([#(#defs),*])
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

            fn check_tool(
                &self,
                __acp_cx: &#p::Session,
                __acp_name: &str,
            ) -> impl ::core::future::Future<Output = #p::Result<()>> + ::core::marker::Send {
                async move {
                    match __acp_name {
                        #(#check_arms)*
                        _ => ::core::result::Result::Ok(()),
                    }
                }
            }
        }
    });

    let imp = &agent.imp;
    let (impl_generics, _, where_clause) = imp.generics.split_for_impl();
    let self_ty = &imp.self_ty;
    let consts = (!consts.is_empty()).then(|| {
        quote! {
            #[automatically_derived]
            impl #impl_generics #self_ty #where_clause {
                #(#consts)*
            }
        }
    });
    let settings = handlers::settings(&agent, &p);
    let commands = handlers::command_methods(&agent, &p);
    let exts = handlers::ext_methods(&agent, &p);
    let return_checks = handlers::return_checks(&agent, &p);
    let error_conversions = (!checks.is_empty() || commands.is_some() || exts.is_some()).then(
        || quote!(use #p::{ViaDisplay as _, ViaErrorRef as _, ViaRejected as _, ViaStdError as _};),
    );

    quote! {
        #imp

        const _: () = {
            #error_conversions
            #(#checks)*
            #return_checks
            #consts

            #[automatically_derived]
            impl #impl_generics #p::Agent for #self_ty #where_clause {
                fn info(&self) -> #p::Implementation {
                    #p::info(#name, #title, #version)
                }

                fn capabilities(&self) -> #p::AgentCapabilities {
                    #p::capabilities(&[#(#present),*], #image, #audio, #embedded, #system_prompt)
                }

                #(#forwards)*

                #tool_methods

                #settings

                #commands

                #exts
            }
        };
    }
}

/// For one recognised method: its return-type check (a local trait whose message comes from
/// the table, implemented only for the return types the method may have) and the `Agent`
/// method forwarding to it.
///
/// The forwarding call passes each argument spanned at the author's parameter type, so a
/// wrong one is reported there; types the return value through the check, spanned at the
/// author's return type, so a wrong one is one error there, saying what to write; turns the
/// author's error back into `acp::Error` (see `__private::ErrWrap`); and, when `async`,
/// asserts the future is `Send` spanned at the method's name.
fn recognised(method: &Method, f: &Fn, p: &TokenStream) -> (TokenStream, TokenStream) {
    let sig = &f.sig;
    let cfgs = &f.cfgs;
    let ident = &sig.ident;
    let forwards_to = format_ident!("{}", method.forwards_to);
    let check = format_ident!("__AcpReturns_{}", method.name);
    let output = method.output_tokens(p);

    let returns = method.return_type(true);
    let message = format!("`{}` must return `{returns}`, not `{{Self}}`", method.name);
    let label = format!("expected `{returns}`");
    let signature = format!("the signature is `{}`", method.signature(true));
    let check_trait = if method.fallible {
        let any_error = format!(
            "any `Result<{}, E>` works too when `E` has `From<acp::Error>` and `Display`, e.g. `anyhow::Result<{0}>`",
            method.output_display()
        );
        quote! {
            #(#cfgs)*
            #[diagnostic::on_unimplemented(message = #message, label = #label, note = #signature, note = #any_error)]
            #[allow(non_camel_case_types)]
            trait #check {
                type Err;
                fn __acp_split(self) -> ::core::result::Result<#output, Self::Err>;
            }

            #(#cfgs)*
            #[diagnostic::do_not_recommend]
            impl<E: #p::ErrorType> #check for ::core::result::Result<#output, E> {
                type Err = E;
                fn __acp_split(self) -> Self {
                    self
                }
            }
        }
    } else {
        quote! {
            #(#cfgs)*
            #[diagnostic::on_unimplemented(message = #message, label = #label, note = #signature)]
            #[allow(non_camel_case_types)]
            trait #check {
                fn __acp_split(self) -> #output;
            }

            #(#cfgs)*
            #[diagnostic::do_not_recommend]
            impl #check for #output {
                fn __acp_split(self) -> Self {
                    self
                }
            }
        }
    };

    let user_types: Vec<Span> = sig
        .inputs
        .iter()
        .filter_map(|a| match a {
            FnArg::Typed(pt) => Some(pt.ty.span()),
            FnArg::Receiver(_) => None,
        })
        .collect();
    let vars: Vec<_> = (0..method.params.len())
        .map(|i| format_ident!("__acp_{}", i))
        .collect();
    let params = (0..method.params.len()).map(|i| method.param_tokens(i, p));
    let args = vars.iter().zip(&user_types).map(|(v, span)| {
        let mut v = v.clone();
        v.set_span(*span);
        v
    });
    let call = quote_spanned!(ident.span()=> Self::#ident(self #(, #args)*));
    let call = if sig.asyncness.is_some() {
        quote!(#call.await)
    } else {
        call
    };
    // The author's value goes through `<R as Check>::__acp_split`, the whole call spanned at
    // their return type `R`: every obligation it makes is `R: Check` at that one span, so a
    // wrong `R` is one error there, and its output's type does not depend on `R`.
    let returned = match &sig.output {
        ReturnType::Type(_, ty) => (**ty).clone(),
        ReturnType::Default => syn::parse_quote!(()),
    };
    let split = around(
        quote!(<),
        &returned,
        quote!(as #check>::__acp_split(__acp_value)),
    );
    let value = quote!({
        let __acp_value = #call;
        #split
    });
    let body = if method.fallible {
        quote! {
            #value.map_err(|__acp_err| (&&&&#p::ErrWrap::new(__acp_err)).__acp_error())
        }
    } else {
        value
    };
    let output = if method.fallible {
        quote!(#p::Result<#output>)
    } else {
        output
    };
    let forward = if method.is_async {
        // The call, the `async` block and its braces spanned at the method's name: a future
        // that is not `Send` is reported there, once (the box is `Send` to the runtime).
        let send = respan(quote!(#p::send_boxed), ident.span());
        let mut block = Group::new(Delimiter::Brace, body);
        block.set_span(ident.span());
        let boxed = quote_spanned!(ident.span()=> #send(async move #block));
        // Awaited in an outer block: a boxed `dyn Future + 'a` needs one lifetime, the trait's
        // `impl Future` captures each of the parameters' own.
        let future = quote!(async move { #boxed.await });
        quote! {
            #(#cfgs)*
            fn #forwards_to(&self #(, #vars: #params)*) -> impl ::core::future::Future<Output = #output> + ::core::marker::Send {
                #future
            }
        }
    } else {
        quote! {
            #(#cfgs)*
            fn #forwards_to(&self #(, #vars: #params)*) -> #output {
                #body
            }
        }
    };
    (check_trait, forward)
}

/// Gives every token of `tokens` this span, so that an error about the expression they form
/// (a failed trait bound, a type mismatch) is reported at the author's code it stands for.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|tt| match tt {
            TokenTree::Group(g) => {
                let mut group = Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                TokenTree::Group(group)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}

/// `before #ty after`, with `before` spanned at the start of `ty` and `after` at its end, and
/// `ty` as the author wrote it: an error about the expression underlines exactly `ty`.
fn around(before: TokenStream, ty: &impl ToTokens, after: TokenStream) -> TokenStream {
    let (first, last) = span_range(ty);
    let before = respan(before, first);
    let after = respan(after, last);
    quote!(#before #ty #after)
}

/// The spans of the first and last tokens of `tokens`.
fn span_range(tokens: &impl ToTokens) -> (Span, Span) {
    let mut iter = tokens.to_token_stream().into_iter();
    let first = iter.next().map_or_else(Span::call_site, |t| t.span());
    let last = iter.last().map_or(first, |t| t.span());
    (first, last)
}

/// The stand-in output next to macro errors: the author's impl (tool attributes removed, bodies
/// as written) and an `Agent` impl whose `prompt` never runs, so the rest of the crate and the
/// IDE keep working.
pub(crate) fn stub(agent: &Agent, errors: TokenStream) -> TokenStream {
    let krate = agent.options.krate();
    let p = quote!(#krate::__private);
    let imp = &agent.imp;
    let (impl_generics, _, where_clause) = imp.generics.split_for_impl();
    let self_ty = &imp.self_ty;
    quote! {
        #errors
        #imp
        const _: () = {
            #[automatically_derived]
            impl #impl_generics #p::Agent for #self_ty #where_clause {
                fn prompt(
                    &self,
                    _: &#p::Session,
                    _: #p::Prompt,
                ) -> impl ::core::future::Future<Output = #p::Result<#p::StopReason>> + ::core::marker::Send {
                    #p::stub()
                }
            }
        };
    }
}
