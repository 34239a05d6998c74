//! The procedural macros of [`acp-framework`](https://docs.rs/acp-framework) (the `acp`
//! library): `#[acp::agent]`, `#[acp::tool]` and `#[derive(acp::JsonSchema)]`.
//!
//! Use them through the `acp` library, which documents them; this crate is an implementation
//! detail whose expansions only name `::acp::__private::…`.
//!
//! `#[acp::agent]` runs in four stages, one module each:
//!
//! | module | owns |
//! | --- | --- |
//! | `parse` | the attribute options and the `impl` block, into the `model` |
//! | `model` | plain data: the options, the impl, each method's role (recognised, tool, other) |
//! | `check` | every check that needs no compiler, each error at the author's span |
//! | `expand` | `impl acp::Agent`, each tool's constant and wrapped body (`expand::tool`) |
//!
//! Beside them: `methods`, the one table of methods the macro recognises (it drives the
//! checks, the forwarding and the facade's docs); `errors`, the collector that reports every
//! error at once; `docs`, doc-comment helpers; `json_schema`, the derive.
#![forbid(unsafe_code)]

mod check;
mod config;
mod docs;
mod errors;
mod expand;
mod json_schema;
mod methods;
mod model;
mod parse;

use proc_macro::TokenStream;

/// Turns an inherent `impl` block into an ACP agent. Documented in the `acp` crate.
#[proc_macro_attribute]
pub fn agent(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let mut errors = errors::Errors::default();
    let Some(agent) = parse::agent(attr.into(), item.clone(), &mut errors) else {
        let errors = errors.to_compile_errors();
        return quote::quote!(#errors #item).into();
    };
    check::agent(&agent, &mut errors);
    if errors.is_empty() {
        expand::agent(agent).into()
    } else {
        expand::stub(&agent, errors.to_compile_errors()).into()
    }
}

/// Marks a method of an `#[acp::agent]` impl as a tool. Documented in the `acp` crate.
///
/// `#[acp::agent]` consumes these attributes; one that reaches this macro was not inside an
/// `#[acp::agent]` impl (or the agent did not recognise its path), which is an error.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let _ = attr;
    let item = proc_macro2::TokenStream::from(item);
    let error = syn::Error::new(
        proc_macro2::Span::call_site(),
        "#[acp::tool] only works on a method inside an `#[acp::agent]` impl block; put `#[acp::agent]` on the `impl` (if you renamed the `acp` dependency, tell the agent with `#[renamed::agent(crate = renamed)]`)",
    )
    .to_compile_error();
    quote::quote!(#error #item).into()
}

/// Marks a method of an `#[acp::agent]` impl as a slash command. Documented in the `acp`
/// crate; outside an `#[acp::agent]` impl it is an error.
#[proc_macro_attribute]
pub fn command(attr: TokenStream, item: TokenStream) -> TokenStream {
    outside_agent("command", attr, item)
}

/// Marks a method of an `#[acp::agent]` impl as an extension method. Documented in the `acp`
/// crate; outside an `#[acp::agent]` impl it is an error.
#[proc_macro_attribute]
pub fn ext(attr: TokenStream, item: TokenStream) -> TokenStream {
    outside_agent("ext", attr, item)
}

fn outside_agent(name: &str, attr: TokenStream, item: TokenStream) -> TokenStream {
    let _ = attr;
    let item = proc_macro2::TokenStream::from(item);
    let error = syn::Error::new(
        proc_macro2::Span::call_site(),
        format!("#[acp::{name}] only works on a method inside an `#[acp::agent]` impl block; put `#[acp::agent]` on the `impl` (if you renamed the `acp` dependency, tell the agent with `#[renamed::agent(crate = renamed)]`)"),
    )
    .to_compile_error();
    quote::quote!(#error #item).into()
}

/// Derives `acp::ConfigOption`: a session config option from an enum of unit variants or a
/// `struct Name(bool)`. Documented in the `acp` crate.
#[proc_macro_derive(ConfigOption, attributes(config))]
pub fn config_option(item: TokenStream) -> TokenStream {
    config::derive(item.into(), config::Derive::ConfigOption).into()
}

/// Derives `acp::Modes`: the session's modes from an enum of unit variants. Documented in the
/// `acp` crate.
#[proc_macro_derive(Modes, attributes(mode))]
pub fn modes(item: TokenStream) -> TokenStream {
    config::derive(item.into(), config::Derive::Modes).into()
}

/// Derives `schemars::JsonSchema` through the `acp` facade. Documented in the `acp` crate.
#[proc_macro_derive(JsonSchema, attributes(schemars, serde, validate, garde))]
pub fn json_schema(item: TokenStream) -> TokenStream {
    json_schema::derive(item.into()).into()
}

/// Removes the item it is on. `#[derive(acp::JsonSchema)]` puts it on the copy of the item it
/// hands to schemars' derive. Not for direct use.
#[doc(hidden)]
#[proc_macro_attribute]
pub fn erase(attr: TokenStream, item: TokenStream) -> TokenStream {
    let _ = (attr, item);
    TokenStream::new()
}
