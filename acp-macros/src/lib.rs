//! The procedural macros of [`acp`](https://docs.rs/acp): `#[acp::agent]` and `#[acp::tool]`.
//!
//! Use them through the `acp` crate, which documents them; this crate is an implementation
//! detail whose expansion only names `::acp::__private::…`.
//!
//! Layout: `agent` parses the attribute and the whole `impl`, validates it and expands the
//! `Agent` impl; `tool` does the same for each `#[acp::tool]` method inside it (the
//! standalone `#[acp::tool]` only reports that it must be inside an agent impl); `util`
//! holds the error collector and doc-comment helpers.

mod agent;
mod tool;
mod util;

use proc_macro::TokenStream;

/// Turns an inherent `impl` block into an ACP agent. Documented in the `acp` crate.
#[proc_macro_attribute]
pub fn agent(attr: TokenStream, item: TokenStream) -> TokenStream {
    agent::expand(attr.into(), item.into()).into()
}

/// Marks a method of an `#[acp::agent]` impl as a tool. Documented in the `acp` crate.
///
/// `#[acp::agent]` consumes these attributes; one that reaches this macro was not inside an
/// `#[acp::agent]` impl (or the agent did not recognise its path), which is an error.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    tool::standalone(attr.into(), item.into()).into()
}
