//! Code generation for one `#[acp::tool]`: its constant (the static spec, plus the operations
//! on its return and parameter types, which is where those types are checked), its wrapped
//! body, its entry in `Agent::tools` and its arm in `Agent::call_tool`. Each piece carries the
//! method's `#[cfg(...)]` attributes.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, ImplItemFn, Pat, Type};

use super::{around, respan};
use crate::model::Tool;

/// The name of the tool's constant.
fn const_ident(tool: &Tool) -> Ident {
    format_ident!("__ACP_TOOL_{}", tool.method)
}

fn ret(tool: &Tool) -> Type {
    tool.ret.clone().unwrap_or_else(|| syn::parse_quote!(()))
}

/// The parameters' identifiers (`check` made sure they are plain names).
fn param_idents(tool: &Tool) -> Vec<Ident> {
    tool.params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            p.ident()
                .cloned()
                .unwrap_or_else(|| format_ident!("__acp_arg{}", i))
        })
        .collect()
}

/// `const __ACP_TOOL_x: ToolConst<R, (ArgFns<T1>, …)> = …;`, in a hidden inherent impl.
///
/// The only place the expansion requires anything of the author's types: `tool_ret` at the
/// return type (`ToolResult`: a `Result` whose `Ok` can be shown and whose `Err` can hold an
/// `acp::Error`) and `arg_fns` at each parameter type (`ToolArg`), each spanned there.
pub(super) fn constant(tool: &Tool, cfgs: &[Attribute], p: &TokenStream) -> TokenStream {
    let ident = const_ident(tool);
    let (name, _) = tool.name();
    let description = &tool.description;
    let kind = format_ident!("{}", tool.kind_variant());
    let title = tool
        .title
        .as_ref()
        .map_or_else(|| name.clone(), syn::LitStr::value);
    let permission = tool.permission;
    let requires = tool
        .requires
        .iter()
        .filter_map(|r| {
            crate::model::REQUIREMENTS
                .iter()
                .find(|(name, _)| r == name)
        })
        .flat_map(|(_, variants)| variants.iter())
        .map(|v| {
            let v = format_ident!("{}", v);
            quote!(#p::Requirement::#v)
        });
    let params = tool
        .params
        .iter()
        .zip(param_idents(tool))
        .map(|(param, ident)| {
            let name = ident.to_string();
            let description = &param.description;
            quote!(#p::Param { name: #name, description: #description })
        });
    let ret = ret(tool);
    let ret_ops = around(quote!(#p::tool_ret::<), &ret, quote!(>()));
    let types: Vec<&Type> = tool.params.iter().map(|p| &p.ty).collect();
    let arg_ops = types
        .iter()
        .map(|ty| around(quote!(#p::arg_fns::<), ty, quote!(>())));
    quote! {
        #(#cfgs)*
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        const #ident: #p::ToolConst<#ret, (#(#p::ArgFns<#types>,)*)> = #p::ToolConst {
            spec: #p::ToolSpec {
                name: #name,
                description: #description,
                kind: #p::ToolKind::#kind,
                title: #title,
                params: &[#(#params),*],
                permission: #permission,
                requires: &[#(#requires),*],
            },
            ret: #ret_ops,
            args: (#(#arg_ops,)*),
        };
    }
}

/// Replaces the method's body with the lifecycle around it. The signature is left alone, so a
/// typed call (`self.read(cx, …).await`) and a call by name run the same lifecycle.
pub(super) fn wrap_body(tool: &Tool, method: &mut ImplItemFn, p: &TokenStream) {
    let constant = const_ident(tool);
    let ret = ret(tool);
    // The session parameter may be written `_`; give it a name the body cannot see.
    let cx = match method.sig.inputs.iter_mut().nth(1) {
        Some(FnArg::Typed(pt)) => match &*pt.pat {
            Pat::Ident(pi) => pi.ident.clone(),
            _ => {
                let cx = format_ident!("__acp_cx");
                *pt.pat = syn::parse_quote!(#cx);
                cx
            }
        },
        _ => format_ident!("__acp_cx"),
    };
    let inputs =
        tool.params
            .iter()
            .zip(param_idents(tool))
            .enumerate()
            .map(|(i, (param, ident))| {
                let index = syn::Index::from(i);
                let name = ident.to_string();
                let location = param
                    .is_path()
                    .then(|| quote!(let __acp_input = __acp_input.location(&#ident);));
                quote! {
                    let __acp_input = __acp_tool.args.#index.arg(__acp_input, #name, &#ident);
                    #location
                }
            });
    let body = &method.block;
    let check = match &tool.check {
        Some(_) => {
            let check_fn = check_ident(tool);
            quote!(Self::#check_fn(self, #cx))
        }
        None => quote!(#p::no_check()),
    };
    // Spanned at the tool's name: a body whose future is not `Send` is reported there.
    let boxed = respan(quote!(#p::send_boxed), tool.method.span());
    let boxed = quote_spanned!(tool.method.span()=> #boxed::<#ret, _>(async move #body));
    method.block = syn::parse_quote!({
        let __acp_tool = Self::#constant;
        let __acp_input = #p::ToolInput::new();
        #(#inputs)*
        let __acp_check = #check;
        #p::run_tool(#cx, &__acp_tool.spec, __acp_tool.ret, __acp_input, __acp_check, #boxed).await
    });
}

/// The name of the hidden method running the tool's check.
fn check_ident(tool: &Tool) -> Ident {
    format_ident!("__acp_check_{}", tool.method)
}

/// For a tool with `check = …`: a hidden method running the check, the one place that
/// requires the author's function to be a check (spanned at the author's `check = …` path, so
/// a function that does not fit is reported there, once). Both the tool's lifecycle and
/// `Agent::check_tool` (which decides whether the tool is offered) call it.
pub(super) fn check_method(
    tool: &Tool,
    cfgs: &[Attribute],
    p: &TokenStream,
) -> Option<TokenStream> {
    let path = tool.check.as_ref()?;
    let ident = check_ident(tool);
    let run = respan(quote!(#p::run_check), path.span());
    let call = quote_spanned!(path.span()=> #run(&#path, self, __acp_cx));
    Some(quote! {
        #(#cfgs)*
        #[doc(hidden)]
        #[allow(non_snake_case)]
        fn #ident<'__acp>(
            &'__acp self,
            __acp_cx: &'__acp #p::Session,
        ) -> #p::CheckFuture<'__acp> {
            #call
        }
    })
}

/// The tool's arm in `Agent::check_tool`, for a tool with `check = …`.
pub(super) fn check_arm(tool: &Tool, cfgs: &[Attribute]) -> Option<TokenStream> {
    tool.check.as_ref()?;
    let (name, _) = tool.name();
    let ident = check_ident(tool);
    Some(quote! {
        #(#cfgs)*
        #name => Self::#ident(self, __acp_cx).await,
    })
}

/// The tool's definition (name, description, JSON Schema of the parameters), an element of
/// `Agent::tools`.
pub(super) fn def(tool: &Tool, cfgs: &[Attribute], p: &TokenStream) -> TokenStream {
    let constant = const_ident(tool);
    let params = (0..tool.params.len()).map(syn::Index::from);
    quote! {
        #(#cfgs)*
        {
            let __acp_tool = Self::#constant;
            let __acp_def = #p::def(__acp_tool.spec);
            #(let __acp_def = __acp_tool.args.#params.param(__acp_def);)*
            __acp_def.finish()
        }
    }
}

/// The tool's arm in `Agent::call_tool`: parse every argument (all problems reported
/// together), then make the typed call.
pub(super) fn dispatch_arm(tool: &Tool, cfgs: &[Attribute], p: &TokenStream) -> TokenStream {
    let (name, _) = tool.name();
    let constant = const_ident(tool);
    let method = &tool.method;
    let vars: Vec<Ident> = (0..tool.params.len())
        .map(|i| format_ident!("__acp_{}", i))
        .collect();
    let takes = vars.iter().enumerate().map(|(i, var)| {
        let index = syn::Index::from(i);
        quote!(let #var = __acp_tool.args.#index.take(&mut __acp_args);)
    });
    let box_send = respan(quote!(#p::box_send), method.span());
    let call =
        quote_spanned!(method.span()=> #box_send(Self::#method(self, __acp_cx, #(#vars?),*)));
    quote! {
        #(#cfgs)*
        #name => {
            let __acp_tool = Self::#constant;
            let mut __acp_args = #p::Args::new(__acp_tool.spec, __acp_json);
            #(#takes)*
            __acp_args.finish(__acp_cx).await?;
            #p::by_name(__acp_tool.ret, #call).await
        }
    }
}
