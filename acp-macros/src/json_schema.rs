//! `#[derive(acp::JsonSchema)]`: schemars' derive, for a crate that depends on `acp` only.
//!
//! schemars' derive finds its crate by the name `schemars` unless told otherwise with
//! `#[schemars(crate = "…")]`. This derive re-emits the item with schemars' derive and that
//! attribute pointing into the facade, plus `#[acp::__private::erase]`, which removes the copy
//! once schemars has seen it: what remains is schemars' `impl JsonSchema` for the author's
//! type, exactly as if they had written the two attributes themselves.

use proc_macro2::TokenStream;
use quote::quote;

/// Expands `#[derive(acp::JsonSchema)]` on `item`.
pub(crate) fn derive(item: TokenStream) -> TokenStream {
    let mut item: syn::DeriveInput = match syn::parse2(item) {
        Ok(item) => item,
        Err(e) => return e.to_compile_error(),
    };
    // Only the attributes schemars reads (and docs) go on the copy.
    item.attrs.retain(|a| !a.path().is_ident("derive"));
    let krate = quote!(::acp::__private);
    let krate_str = "::acp::__private::schemars";
    quote! {
        #[derive(#krate::schemars::JsonSchema)]
        #[schemars(crate = #krate_str)]
        #[#krate::erase]
        #item
    }
}
