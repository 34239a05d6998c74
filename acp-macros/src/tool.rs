//! `#[acp::tool]`: parse the attribute and the method, validate them, and expand the pieces
//! `#[acp::agent]` assembles (the static spec, the wrapped body, the by-name dispatch arm and
//! the schema builder). The standalone attribute only reports that it must be inside an agent.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ImplItemFn, LitStr, Pat, ReturnType, Type};

use crate::util::{Errors, doc_text, respan, split_tool_doc};

/// The options of `#[acp::tool(...)]`.
pub(crate) const TOOL_OPTIONS: &str = "`kind`, `title`, `permission`, `name`";

/// The kinds, as written in `kind = "…"`, and their `ToolKind` variants.
const KINDS: &[(&str, &str)] = &[
    ("read", "Read"),
    ("edit", "Edit"),
    ("delete", "Delete"),
    ("move", "Move"),
    ("search", "Search"),
    ("execute", "Execute"),
    ("think", "Think"),
    ("fetch", "Fetch"),
    ("switch_mode", "SwitchMode"),
    ("other", "Other"),
];

/// One `#[acp::tool]` method, validated.
pub(crate) struct Tool {
    pub method: Ident,
    pub name: String,
    /// Where to point errors about the name (the `name = "…"` literal or the method name).
    pub name_span: Span,
    kind: &'static str,
    title: String,
    permission: bool,
    description: String,
    cx: Ident,
    params: Vec<Param>,
    ret: Type,
}

struct Param {
    ident: Ident,
    ty: Type,
    description: String,
    /// `PathBuf`, `Option<PathBuf>` or `Vec<PathBuf>`: sent as the call's locations.
    is_path: bool,
}

/// Parses the options of one `#[acp::tool(...)]` attribute and the method it is on.
///
/// Returns `None` when the method cannot be used as a tool at all; every problem is pushed to
/// `errors`.
pub(crate) fn parse(
    attr: &syn::Attribute,
    method: &ImplItemFn,
    errors: &mut Errors,
) -> Option<Tool> {
    let mut kind = "Other";
    let mut title: Option<LitStr> = None;
    let mut permission = false;
    let mut name: Option<LitStr> = None;
    if !matches!(attr.meta, syn::Meta::Path(_)) {
        let parsed = attr.parse_nested_meta(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            match key.as_str() {
                "kind" => {
                    let lit: LitStr = meta.value()?.parse()?;
                    let value = lit.value();
                    match KINDS.iter().find(|(k, _)| *k == value) {
                        Some((_, variant)) => kind = variant,
                        None => {
                            let valid: Vec<_> =
                                KINDS.iter().map(|(k, _)| format!("`{k}`")).collect();
                            errors.at(
                                &lit,
                                format!(
                                    "unknown tool kind `{value}`; expected one of {}",
                                    valid.join(", ")
                                ),
                            );
                        }
                    }
                }
                "title" => title = Some(meta.value()?.parse()?),
                "name" => name = Some(meta.value()?.parse()?),
                "permission" => {
                    permission = if meta.input.peek(syn::Token![=]) {
                        meta.value()?.parse::<syn::LitBool>()?.value
                    } else {
                        true
                    };
                }
                _ => {
                    errors.at(
                        &meta.path,
                        format!(
                            "unknown option `{}` for #[acp::tool]; expected one of {TOOL_OPTIONS}",
                            meta.path.to_token_stream().to_string().replace(' ', "")
                        ),
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

    let sig = &method.sig;
    let mut ok = true;
    if sig.asyncness.is_none() {
        errors.at(
            sig.fn_token,
            format!(
                "an #[acp::tool] must be an `async fn`: write `async fn {}(…)`",
                sig.ident
            ),
        );
        ok = false;
    }
    if let Some(p) = crate::util::type_or_const_param(sig) {
        errors.at(
            p,
            "an #[acp::tool] cannot have type or const parameters: a call by name needs concrete argument types",
        );
        ok = false;
    }

    let mut inputs = sig.inputs.iter();
    match inputs.next() {
        Some(FnArg::Receiver(r))
            if r.reference.is_some() && r.mutability.is_none() && r.colon_token.is_none() => {}
        Some(FnArg::Receiver(r)) if r.mutability.is_some() && r.reference.is_some() => {
            errors.at(
                r,
                "an #[acp::tool] takes `&self`, not `&mut self`: one agent serves every session at once, so keep mutable state behind a `Mutex` or an atomic",
            );
            ok = false;
        }
        Some(FnArg::Receiver(r)) => {
            errors.at(r, "an #[acp::tool] takes `&self`");
            ok = false;
        }
        _ => {
            errors.at_span(
                sig.paren_token.span.join(),
                format!(
                    "an #[acp::tool] is a method: its parameters start with `&self, cx: &acp::Session`, e.g. `async fn {}(&self, cx: &acp::Session, …)`",
                    sig.ident
                ),
            );
            return None;
        }
    }

    let cx = match inputs.next() {
        Some(FnArg::Typed(pt)) if is_session_ref(&pt.ty) => match &*pt.pat {
            Pat::Ident(p) => p.ident.clone(),
            _ => format_ident!("__acp_cx", span = pt.pat.span()),
        },
        other => {
            let span = other.map_or_else(|| sig.paren_token.span.join(), |a| a.span());
            errors.at_span(
                span,
                format!(
                    "the first parameter of an #[acp::tool] after `&self` must be the session, `cx: &acp::Session`, e.g. `async fn {}(&self, cx: &acp::Session, …)`",
                    sig.ident
                ),
            );
            return None;
        }
    };

    let mut params = Vec::new();
    for input in inputs {
        let FnArg::Typed(pt) = input else { continue };
        match &*pt.pat {
            Pat::Ident(p) if p.subpat.is_none() && p.by_ref.is_none() => params.push(Param {
                ident: p.ident.clone(),
                ty: (*pt.ty).clone(),
                description: String::new(),
                is_path: is_path_type(&pt.ty),
            }),
            other => {
                errors.at(
                    other,
                    "a tool parameter must be a plain name (it is the name of the JSON argument), e.g. `path: PathBuf`",
                );
                ok = false;
            }
        }
    }

    let ret = match &sig.output {
        ReturnType::Type(_, ty) => (**ty).clone(),
        ReturnType::Default => {
            errors.at(
                &sig.ident,
                format!(
                    "an #[acp::tool] must return a `Result`: write `async fn {}(…) -> acp::Result<T>`, where `T` is shown as the tool call's output (`String`, `acp::Diff`, `acp::Json<…>`, `()`, …)",
                    sig.ident
                ),
            );
            return None;
        }
    };

    let (name, name_span) = match &name {
        Some(lit) => (lit.value(), lit.span()),
        None => (sig.ident.to_string(), sig.ident.span()),
    };
    let valid_name = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !valid_name {
        errors.at_span(
            name_span,
            format!("invalid tool name `{name}`: use 1 to 64 ASCII letters, digits, `_` or `-` (model APIs require it)"),
        );
        ok = false;
    }

    let names: Vec<String> = params.iter().map(|p| p.ident.to_string()).collect();
    let title_text = match &title {
        Some(lit) => {
            if let Err(message) = check_title(&lit.value(), &names, &sig.ident) {
                errors.at(lit, message);
                ok = false;
            }
            lit.value()
        }
        None => name.clone(),
    };

    let (description, param_docs) = split_tool_doc(&doc_text(&method.attrs), &names);
    for (param, doc) in params.iter_mut().zip(param_docs) {
        param.description = doc;
    }

    ok.then_some(Tool {
        method: sig.ident.clone(),
        name,
        name_span,
        kind,
        title: title_text,
        permission,
        description,
        cx,
        params,
        ret,
    })
}

/// The spans of the first and last tokens of `tokens`: an expression spanned from the first to
/// the last covers all of it in the error message.
fn span_range(tokens: &impl ToTokens) -> (Span, Span) {
    let mut iter = tokens.to_token_stream().into_iter();
    let first = iter.next().map_or_else(Span::call_site, |t| t.span());
    let last = iter.last().map_or(first, |t| t.span());
    (first, last)
}

/// Consumes the value of an unknown option so that parsing can go on.
pub(crate) fn skip_value(meta: &syn::meta::ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _: TokenStream = meta.input.parse::<proc_macro2::Group>()?.stream();
    }
    Ok(())
}

/// Checks a title template: `{name}` placeholders must name parameters; `{{`/`}}` escape.
fn check_title(template: &str, params: &[String], method: &Ident) -> Result<(), String> {
    let mut chars = template.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '{' if chars.peek().is_some_and(|(_, n)| *n == '{') => {
                chars.next();
            }
            '}' if chars.peek().is_some_and(|(_, n)| *n == '}') => {
                chars.next();
            }
            '{' => {
                let rest = &template[i + 1..];
                let Some(end) = rest.find('}') else {
                    return Err("unclosed `{` in the title; write `{{` for a literal brace".into());
                };
                let name = &rest[..end];
                if !params.iter().any(|p| p == name) {
                    let list = if params.is_empty() {
                        format!("`{method}` has no parameters to show")
                    } else {
                        let names: Vec<_> = params.iter().map(|p| format!("`{p}`")).collect();
                        format!("the parameters of `{method}` are {}", names.join(", "))
                    };
                    return Err(format!(
                        "`{{{name}}}` in the title is not a parameter of this tool; {list} (write `{{{{` for a literal brace)"
                    ));
                }
                for _ in 0..=name.chars().count() {
                    chars.next();
                }
            }
            '}' => return Err("unmatched `}` in the title; write `}}` for a literal brace".into()),
            _ => {}
        }
    }
    Ok(())
}

/// `&Session`, `&acp::Session`, `&'a Session`, …
fn is_session_ref(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) if r.mutability.is_none() => {
            matches!(&*r.elem, Type::Path(p) if p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Session"))
        }
        _ => false,
    }
}

fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        _ => None,
    }
}

/// `PathBuf`, `Option<PathBuf>`, `Vec<PathBuf>` (any path prefix).
fn is_path_type(ty: &Type) -> bool {
    let Some(seg) = last_segment(ty) else {
        return false;
    };
    if seg.ident == "PathBuf" {
        return seg.arguments.is_none();
    }
    if (seg.ident == "Option" || seg.ident == "Vec")
        && let syn::PathArguments::AngleBracketed(args) = &seg.arguments
        && let Some(syn::GenericArgument::Type(inner)) = args.args.first()
        && args.args.len() == 1
    {
        return last_segment(inner).is_some_and(|s| s.ident == "PathBuf" && s.arguments.is_none());
    }
    false
}

impl Tool {
    /// The associated const holding this tool's spec.
    pub(crate) fn spec_ident(&self) -> Ident {
        format_ident!("__ACP_TOOL_{}", self.method)
    }

    /// The associated const holding the operations on this tool's return type.
    fn ret_ident(&self) -> Ident {
        format_ident!("__ACP_RET_{}", self.method)
    }

    /// `const __ACP_TOOL_x: ToolSpec = …;`, inside a hidden inherent impl.
    pub(crate) fn spec(&self, krate: &TokenStream) -> TokenStream {
        let ident = self.spec_ident();
        let name = &self.name;
        let description = &self.description;
        let kind = format_ident!("{}", self.kind);
        let title = &self.title;
        let permission = self.permission;
        let params = self.params.iter().map(|p| {
            let name = p.ident.to_string();
            let description = &p.description;
            quote!(#krate::__private::Param { name: #name, description: #description })
        });
        // The one place that requires the return type to fit: reported at it, once.
        let ret_ident = self.ret_ident();
        let ret = &self.ret;
        let (first, last) = span_range(ret);
        let ret_ops = quote!(#krate::__private::ret::<#ret>());
        let ret_ops = {
            let mut tokens: Vec<_> = ret_ops.into_iter().collect();
            let n = tokens.len();
            let head = respan(tokens.drain(..n - 3).collect(), first);
            let tail = respan(tokens.drain(1..).collect(), last);
            let ty = tokens.pop();
            quote!(#head #ty #tail)
        };
        quote! {
            #[doc(hidden)]
            #[allow(non_upper_case_globals)]
            const #ident: #krate::__private::ToolSpec = #krate::__private::ToolSpec {
                name: #name,
                description: #description,
                kind: #krate::__private::ToolKind::#kind,
                title: #title,
                params: &[#(#params),*],
                permission: #permission,
            };
            #[doc(hidden)]
            #[allow(non_upper_case_globals)]
            const #ret_ident: #krate::__private::Ret<#ret> = #ret_ops;
        }
    }

    /// Replaces the method's body with the lifecycle around the original body.
    pub(crate) fn wrap_body(&self, method: &mut ImplItemFn, krate: &TokenStream) {
        let spec = self.spec_ident();
        let cx = &self.cx;
        let ret = &self.ret;
        let body = &method.block;
        // Each use of a parameter's type is spanned at it, and the return type's at it, so
        // that a type that does not fit is reported there.
        let args = self.params.iter().map(|p| {
            let ident = &p.ident;
            let name = ident.to_string();
            let location = p.is_path.then(|| quote!(.location(&#ident)));
            let arg = quote_spanned!(p.ty.span()=> .arg(#name, &#ident));
            quote!(#arg #location)
        });
        let ret_ops = self.ret_ident();
        let run = quote!(#krate::__private::run_tool::<#ret, _>);
        // The session parameter may be written `_`; give it a name the body cannot see.
        if let Some(FnArg::Typed(pt)) = method.sig.inputs.iter_mut().nth(1)
            && !matches!(&*pt.pat, Pat::Ident(_))
        {
            *pt.pat = syn::parse_quote!(#cx);
        }
        let block: syn::Block = syn::parse_quote!({
            #run(
                #cx,
                &Self::#spec,
                Self::#ret_ops,
                #krate::__private::ToolInput::new() #(#args)*,
                async move #body,
            )
            .await
        });
        method.block = block;
    }

    /// The `match` arm of `call_tool` for this tool.
    pub(crate) fn dispatch_arm(&self, krate: &TokenStream) -> TokenStream {
        let name = &self.name;
        let spec = self.spec_ident();
        let ret_ops = self.ret_ident();
        let method = &self.method;
        let vars: Vec<Ident> = (0..self.params.len())
            .map(|i| format_ident!("__acp_{}", i))
            .collect();
        let takes = self.params.iter().zip(&vars).map(|(p, var)| {
            let ty = &p.ty;
            let next = quote_spanned!(ty.span()=> __acp_args.take::<#ty>());
            quote!(let #var = #next;)
        });
        let box_send = respan(quote!(#krate::__private::box_send), method.span());
        let call =
            quote_spanned!(method.span()=> #box_send(Self::#method(self, __acp_cx, #(#vars?),*)));

        quote! {
            #name => {
                let mut __acp_args = #krate::__private::Args::new(Self::#spec, __acp_json);
                #(#takes)*
                __acp_args.finish(__acp_cx).await?;
                #krate::__private::by_name(Self::#ret_ops, #call).await
            }
        }
    }

    /// The expression building this tool's `ToolDef`.
    pub(crate) fn def(&self, krate: &TokenStream) -> TokenStream {
        let spec = self.spec_ident();
        let params = self.params.iter().map(|p| {
            let ty = &p.ty;
            quote_spanned!(ty.span()=> .param::<#ty>())
        });
        quote!(#krate::__private::def(Self::#spec) #(#params)* .finish())
    }
}

/// `#[acp::tool]` outside an `#[acp::agent]` impl: an error, with the item kept as written.
pub(crate) fn standalone(attr: TokenStream, item: TokenStream) -> TokenStream {
    let _ = attr;
    let error = syn::Error::new(
        Span::call_site(),
        "#[acp::tool] only works on a method inside an `#[acp::agent]` impl block; put `#[acp::agent]` on the `impl` (if you renamed the `acp` dependency, tell the agent with `#[renamed::agent(crate = renamed)]`)",
    )
    .to_compile_error();
    quote!(#error #item)
}
