//! Code generation for what an agent declares besides tools: its settings (`modes = …`,
//! `config(…)` → `Agent::settings`), its slash commands (`#[acp::command]` →
//! `Agent::commands` and `Agent::run_command`) and its extension methods (`#[acp::ext]` →
//! `Agent::ext_methods`, `ext_notifications`, `ext_request`, `ext_notification`).
//!
//! Each author type is checked where the author wrote it: the settings' types against
//! `acp::Modes` / `acp::ConfigOption`, a command's input against `acp::CommandInput`, an
//! extension's params against `Deserialize` and each return type against a local trait
//! whose message says what to write.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::Type;

use super::{around, respan};
use crate::model::{Agent, Command, Ext, Fn, Role};

/// `fn settings`, when the agent declares modes or config options.
pub(super) fn settings(agent: &Agent, p: &TokenStream) -> Option<TokenStream> {
    let options = &agent.options;
    if options.modes.is_none() && options.config.is_empty() {
        return None;
    }
    let modes = options.modes.iter().map(|m| {
        let call = around(quote!(#p::Settings::modes::<), m, quote!(>));
        quote!(let __acp_settings = #call(__acp_settings);)
    });
    let config = options.config.iter().map(|t| {
        let call = around(quote!(#p::Settings::option::<), t, quote!(>));
        quote!(let __acp_settings = #call(__acp_settings);)
    });
    Some(quote! {
        fn settings(&self) -> #p::Settings {
            let __acp_settings = #p::Settings::new();
            #(#modes)*
            #(#config)*
            __acp_settings
        }
    })
}

/// The commands of the agent, with their `#[cfg]`s.
fn commands(agent: &Agent) -> Vec<(&Command, &Fn)> {
    agent
        .fns
        .iter()
        .filter_map(|f| match &f.role {
            Role::Command(c) => Some((&**c, f)),
            _ => None,
        })
        .collect()
}

/// The extension methods of the agent, with their `#[cfg]`s.
fn exts(agent: &Agent) -> Vec<(&Ext, &Fn)> {
    agent
        .fns
        .iter()
        .filter_map(|f| match &f.role {
            Role::Ext(e) => Some((&**e, f)),
            _ => None,
        })
        .collect()
}

/// The checks of the return types of commands and extension methods, once per agent.
pub(super) fn return_checks(agent: &Agent, p: &TokenStream) -> TokenStream {
    let mut out = TokenStream::new();
    if !commands(agent).is_empty() {
        out.extend(quote! {
            #[diagnostic::on_unimplemented(
                message = "an #[acp::command] must return `acp::Result<acp::StopReason>`, not `{Self}`",
                label = "expected `acp::Result<acp::StopReason>`",
                note = "a command is a prompt turn: it ends with why the turn stopped, e.g. `Ok(acp::StopReason::EndTurn)`",
                note = "any `Result<acp::StopReason, E>` works too when `E` has `From<acp::Error>` and `Display`, e.g. `anyhow::Result<acp::StopReason>`"
            )]
            trait __AcpCommandReturns {
                type Err;
                fn __acp_split(self) -> ::core::result::Result<#p::StopReason, Self::Err>;
            }

            #[diagnostic::do_not_recommend]
            impl<E: #p::ErrorType> __AcpCommandReturns for ::core::result::Result<#p::StopReason, E> {
                type Err = E;
                fn __acp_split(self) -> Self {
                    self
                }
            }
        });
    }
    let exts = exts(agent);
    if exts.iter().any(|(e, _)| !e.notification) {
        out.extend(quote! {
            #[diagnostic::on_unimplemented(
                message = "an #[acp::ext] request must return `acp::Result<T>` with a `T` that serializes, not `{Self}`",
                label = "expected `acp::Result<T>` where `T: serde::Serialize`",
                note = "the `Ok` value is the request's JSON result: derive `serde::Serialize` on it (or return `serde_json::Value`)"
            )]
            trait __AcpExtReturns {
                type Err;
                fn __acp_split(self) -> ::core::result::Result<#p::Result<#p::serde_json::Value>, Self::Err>;
            }

            // The result is serialized here, so that nothing else requires `T: Serialize`: a
            // `T` that is not is reported once, as this trait, at the author's return type.
            #[diagnostic::do_not_recommend]
            impl<T: #p::serde::Serialize, E: #p::ErrorType> __AcpExtReturns for ::core::result::Result<T, E> {
                type Err = E;
                fn __acp_split(self) -> ::core::result::Result<#p::Result<#p::serde_json::Value>, E> {
                    self.map(|__acp_ok| #p::ext_result(&__acp_ok))
                }
            }
        });
    }
    if exts.iter().any(|(e, _)| e.notification) {
        out.extend(quote! {
            #[diagnostic::on_unimplemented(
                message = "an #[acp::ext(…, notification)] method must return `acp::Result<()>`, not `{Self}`",
                label = "expected `acp::Result<()>`",
                note = "a notification is never answered: an error is logged"
            )]
            trait __AcpNotificationReturns {
                type Err;
                fn __acp_split(self) -> ::core::result::Result<(), Self::Err>;
            }

            #[diagnostic::do_not_recommend]
            impl<E: #p::ErrorType> __AcpNotificationReturns for ::core::result::Result<(), E> {
                type Err = E;
                fn __acp_split(self) -> Self {
                    self
                }
            }
        });
    }
    out
}

/// The author's call `Self::method(self, cx, args…)`, boxed as `Send` (a future that is not
/// is reported at the method's name), awaited, its value split by `check` spanned at the
/// author's return type, and its error turned back into `acp::Error`.
fn call(
    method: &syn::Ident,
    args: TokenStream,
    ret: Option<&Type>,
    check: TokenStream,
    p: &TokenStream,
) -> TokenStream {
    let send = respan(quote!(#p::send_boxed), method.span());
    let call = quote_spanned!(method.span()=> #send(Self::#method(self, #args)));
    let unit: Type = syn::parse_quote!(());
    let ret = ret.unwrap_or(&unit);
    let split = around(quote!(<), ret, quote!(as #check>::__acp_split(__acp_value)));
    quote! {{
        let __acp_value = #call.await;
        #split.map_err(|__acp_err| (&&&&#p::ErrWrap::new(__acp_err)).__acp_error())
    }}
}

/// `fn commands` and `fn run_command`, when the agent has commands.
pub(super) fn command_methods(agent: &Agent, p: &TokenStream) -> Option<TokenStream> {
    let commands = commands(agent);
    if commands.is_empty() {
        return None;
    }
    let mut defs = Vec::new();
    let mut arms = Vec::new();
    for (command, f) in commands {
        let cfgs = &f.cfgs;
        let (name, _) = command.name();
        let description = &command.description;
        let hint = match &command.hint {
            Some(h) => quote!(::core::option::Option::Some(#h)),
            None => quote!(::core::option::Option::None),
        };
        defs.push(quote!(#(#cfgs)* #p::command(#name, #description, #hint)));
        let args = match command.params.first() {
            Some(input) => {
                let from = around(
                    quote!(<),
                    &input.ty,
                    quote!(as #p::CommandInput>::from_prompt(__acp_input)),
                );
                quote!(__acp_cx, #from)
            }
            None => quote!(__acp_cx),
        };
        let body = call(
            &command.method,
            args,
            command.ret.as_ref(),
            quote!(__AcpCommandReturns),
            p,
        );
        let unused = command
            .params
            .is_empty()
            .then(|| quote!(let _ = __acp_input;));
        arms.push(quote! {
            #(#cfgs)*
            #name => {
                #unused
                #body
            }
        });
    }
    Some(quote! {
        fn commands(&self) -> #p::Vec<#p::schema::AvailableCommand> {
            #p::Vec::from([#(#defs),*])
        }

        fn run_command(
            &self,
            __acp_cx: &#p::Session,
            __acp_name: &str,
            __acp_input: #p::Prompt,
        ) -> impl ::core::future::Future<Output = #p::Result<#p::StopReason>> + ::core::marker::Send {
            async move {
                match __acp_name {
                    #(#arms)*
                    _ => ::core::result::Result::Err(#p::unknown_command(__acp_name)),
                }
            }
        }
    })
}

/// `fn ext_methods`, `ext_notifications`, `ext_request` and `ext_notification`, when the
/// agent has extension methods.
pub(super) fn ext_methods(agent: &Agent, p: &TokenStream) -> Option<TokenStream> {
    let exts = exts(agent);
    if exts.is_empty() {
        return None;
    }
    let mut requests = Vec::new();
    let mut notifications = Vec::new();
    let mut request_arms = Vec::new();
    let mut notification_arms = Vec::new();
    for (ext, f) in exts {
        let Some(name) = &ext.name else { continue };
        let cfgs = &f.cfgs;
        let Some(param) = ext.params.first() else {
            continue;
        };
        let params = around(
            quote!(#p::ext_params::<),
            &param.ty,
            quote!(>(#name, __acp_params)),
        );
        let check = if ext.notification {
            quote!(__AcpNotificationReturns)
        } else {
            quote!(__AcpExtReturns)
        };
        let body = call(
            &ext.method,
            quote!(__acp_cx, #params?),
            ext.ret.as_ref(),
            check,
            p,
        );
        if ext.notification {
            notifications.push(quote!(#(#cfgs)* #name));
            notification_arms.push(quote!(#(#cfgs)* #name => #body,));
        } else {
            requests.push(quote!(#(#cfgs)* #name));
            request_arms.push(quote! {
                #(#cfgs)*
                #name => #body?,
            });
        }
    }
    Some(quote! {
        fn ext_methods(&self) -> &'static [&'static str] {
            &[#(#requests),*]
        }

        fn ext_notifications(&self) -> &'static [&'static str] {
            &[#(#notifications),*]
        }

        fn ext_request(
            &self,
            __acp_cx: &#p::Client,
            __acp_method: &str,
            __acp_params: #p::serde_json::Value,
        ) -> impl ::core::future::Future<Output = #p::Result<#p::serde_json::Value>> + ::core::marker::Send {
            async move {
                match __acp_method {
                    #(#request_arms)*
                    _ => {
                        let _ = (__acp_cx, __acp_params);
                        ::core::result::Result::Err(#p::Error::method_not_found(__acp_method))
                    }
                }
            }
        }

        fn ext_notification(
            &self,
            __acp_cx: &#p::Client,
            __acp_method: &str,
            __acp_params: #p::serde_json::Value,
        ) -> impl ::core::future::Future<Output = #p::Result<()>> + ::core::marker::Send {
            async move {
                match __acp_method {
                    #(#notification_arms)*
                    _ => {
                        let _ = (__acp_cx, __acp_params);
                        ::core::result::Result::Ok(())
                    }
                }
            }
        }
    })
}
