//! Every check the macro can make before the compiler sees the expansion, each reported at the
//! author's span with what to write instead; all of them are collected, none stops the others.
//!
//! What only the compiler can know (a type's traits, a future's `Send`ness) is checked by the
//! expansion instead, through the facade's `__private` traits and their messages.
//!
//! Commands and extension methods are checked in `declared`.

mod declared;

use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ReturnType, Signature, Type};

use crate::errors::Errors;
use crate::methods::{GENERATED, Method, near_miss};
use crate::model::{Agent, KINDS, REQUIREMENTS, Role, Tool};

/// Checks the whole agent.
pub(crate) fn agent(agent: &Agent, errors: &mut Errors) {
    for (attr, message) in &agent.stray_tool_attrs {
        errors.at(attr, message);
    }
    let present = |name: &str| {
        agent
            .fns
            .iter()
            .find(|f| matches!(f.role, Role::Recognised(m) if m.name == name))
    };
    let mut near_prompt = false;
    for f in &agent.fns {
        match &f.role {
            Role::Recognised(method) => {
                recognised(method, &f.sig, errors);
                if let Some(other) = method.needs
                    && present(other).is_none()
                    && let Some(needed) = Method::find(other)
                {
                    errors.at(
                        &f.sig.ident,
                        format!(
                            "an agent with `{}` also needs `{other}`: add `{}`",
                            method.name,
                            needed.signature(true)
                        ),
                    );
                }
            }
            Role::Tool(tool) => {
                if let Some(method) = Method::find(&tool.method.to_string()) {
                    errors.at(
                        &tool.attr,
                        format!(
                            "`{}` is the agent's own `{}` method and cannot also be a tool; rename the tool method",
                            tool.method, method.name
                        ),
                    );
                }
                self::tool(tool, &f.sig, errors);
                tool_check(tool, agent, errors);
            }
            Role::Command(command) => {
                if let Some(method) = Method::find(&command.method.to_string()) {
                    errors.at(
                        &command.attr,
                        format!(
                            "`{}` is the agent's own `{}` method and cannot also be a command; rename the command method (and set `name = \"…\"` for the command's name)",
                            command.method, method.name
                        ),
                    );
                }
                declared::command(command, &f.sig, errors);
            }
            Role::Ext(ext) => {
                if let Some(method) = Method::find(&ext.method.to_string()) {
                    errors.at(
                        &ext.attr,
                        format!(
                            "`{}` is the agent's own `{}` method and cannot also be an extension method; rename it",
                            ext.method, method.name
                        ),
                    );
                }
                declared::ext(ext, &f.sig, errors);
            }
            Role::Other => {
                near_prompt |= other(&f.sig.ident, errors) == Some("prompt");
            }
        }
    }
    declared::duplicates(agent, errors);
    let has_prompt = agent.fns.iter().any(|f| f.sig.ident == "prompt");
    if !has_prompt
        && !near_prompt
        && let Some(prompt) = Method::find("prompt")
    {
        errors.at(
            &agent.imp.self_ty,
            format!(
                "an #[acp::agent] needs a `prompt` method, which runs each prompt turn: add `{}`",
                prompt.signature(true)
            ),
        );
    }
    duplicate_tool_names(agent, errors);
}

/// A method the macro neither recognises nor was told is a tool: an error when it looks like
/// one the macro would silently ignore. Returns the recognised method it is a near miss of.
fn other(ident: &Ident, errors: &mut Errors) -> Option<&'static str> {
    let name = ident.to_string();
    if let Some((_, instead)) = GENERATED.iter().find(|(g, _)| *g == name) {
        errors.at(ident, instead);
        return None;
    }
    let meant = near_miss(&name)?;
    let method = Method::find(meant)?;
    errors.at(
        ident,
        format!(
            "`{name}` is not a method #[acp::agent] recognises, so it would never be called; did you mean `{meant}`? Write `{}` (a helper with this name belongs in another `impl` block)",
            method.signature(true)
        ),
    );
    Some(meant)
}

/// Checks the shape of a recognised method; its types are checked by the compiler, at the
/// author's spans, through the expansion.
fn recognised(method: &Method, sig: &Signature, errors: &mut Errors) {
    let name = method.name;
    let expected = format!("expected `{}`", method.signature(true));
    if method.is_async && sig.asyncness.is_none() {
        errors.at(
            sig.fn_token,
            format!("`{name}` must be an `async fn`; {expected}"),
        );
        return;
    }
    if !method.is_async && sig.asyncness.is_some() {
        errors.at(
            sig.asyncness,
            format!("`{name}` must not be `async`; {expected}"),
        );
        return;
    }
    match sig.inputs.first() {
        Some(FnArg::Receiver(r)) if is_shared_self(r) => {}
        Some(FnArg::Receiver(r)) => {
            errors.at(
                r,
                format!(
                    "`{name}` takes `&self` (one agent serves every session at once); {expected}"
                ),
            );
            return;
        }
        _ => {
            errors.at_span(
                sig.paren_token.span.join(),
                format!("`{name}` is a method taking `&self`; {expected}"),
            );
            return;
        }
    }
    let arity = sig.inputs.len() - 1;
    if arity != method.params.len() {
        let n = method.params.len();
        errors.at_span(
            sig.paren_token.span.join(),
            format!(
                "`{name}` takes {n} parameter{} after `&self`, found {arity}; {expected}",
                if n == 1 { "" } else { "s" }
            ),
        );
    }
    if matches!(sig.output, ReturnType::Default) {
        errors.at(
            &sig.ident,
            format!(
                "`{name}` must return `{}`; {expected}",
                method.return_type(true)
            ),
        );
    }
    if let Some(p) = type_or_const_param(sig) {
        errors.at(p, format!("`{name}` cannot be generic; {expected}"));
    }
}

/// Checks a tool's options and signature.
fn tool(tool: &Tool, sig: &Signature, errors: &mut Errors) {
    if let Some(kind) = &tool.kind
        && !KINDS.iter().any(|(k, _)| *k == kind.value())
    {
        let valid: Vec<_> = KINDS.iter().map(|(k, _)| format!("`{k}`")).collect();
        errors.at(
            kind,
            format!(
                "unknown tool kind `{}`; expected one of {}",
                kind.value(),
                valid.join(", ")
            ),
        );
    }
    let method = &tool.method;
    if sig.asyncness.is_none() {
        errors.at(
            sig.fn_token,
            format!("an #[acp::tool] must be an `async fn`: write `async fn {method}(…)`"),
        );
    }
    if let Some(p) = type_or_const_param(sig) {
        errors.at(
            p,
            "an #[acp::tool] cannot have type or const parameters: a call by name needs concrete argument types",
        );
    }
    let example = format!("e.g. `async fn {method}(&self, cx: &acp::Session, …)`");
    match sig.inputs.first() {
        Some(FnArg::Receiver(r)) if is_shared_self(r) => {}
        Some(FnArg::Receiver(r)) if r.mutability.is_some() && r.reference.is_some() => errors.at(
            r,
            "an #[acp::tool] takes `&self`, not `&mut self`: one agent serves every session at once, so keep mutable state behind a `Mutex` or an atomic",
        ),
        Some(FnArg::Receiver(r)) => errors.at(r, format!("an #[acp::tool] takes `&self`; {example}")),
        _ => {
            errors.at_span(
                sig.paren_token.span.join(),
                format!("an #[acp::tool] is a method: its parameters start with `&self, cx: &acp::Session`, {example}"),
            );
            return;
        }
    }
    match &tool.cx {
        Some(cx) if is_session_ref(&cx.ty) => {}
        other => {
            let span = other
                .as_ref()
                .map_or_else(|| sig.paren_token.span.join(), |a| a.span());
            errors.at_span(
                span,
                format!("the first parameter of an #[acp::tool] after `&self` must be the session, `cx: &acp::Session`, {example}"),
            );
            return;
        }
    }
    for param in &tool.params {
        if param.ident().is_none() {
            errors.at(
                &param.pat,
                "a tool parameter must be a plain name (it is the name of the JSON argument), e.g. `path: PathBuf`",
            );
        }
        if let Type::Reference(r) = &param.ty {
            let name = param
                .ident()
                .map_or_else(|| "…".to_owned(), ToString::to_string);
            errors.at(
                &param.ty,
                format!(
                    "a tool parameter cannot be a reference: arguments are parsed from the call's JSON into values the tool owns; write `{name}: {}`",
                    owned(&r.elem)
                ),
            );
        }
    }
    if tool.ret.is_none() {
        errors.at(
            method,
            format!(
                "an #[acp::tool] must return a `Result`: write `async fn {method}(…) -> acp::Result<T>`, where `T` is shown as the tool call's output (`String`, `acp::Diff`, `acp::Json<…>`, `()`, …)"
            ),
        );
    }
    let (name, name_span) = tool.name();
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
    }
    if let Some(title) = &tool.title
        && let Err(message) = title_placeholders(&title.value(), &tool.param_names(), method)
    {
        errors.at(title, message);
    }
    for requirement in &tool.requires {
        if !REQUIREMENTS.iter().any(|(name, _)| requirement == name) {
            let valid: Vec<_> = REQUIREMENTS.iter().map(|(k, _)| format!("`{k}`")).collect();
            errors.at(
                requirement,
                format!(
                    "unknown client capability `{requirement}`; expected one of {}",
                    valid.join(", ")
                ),
            );
        }
    }
}

/// `check = Self::name` must name a method of this impl (any other path is the compiler's to
/// resolve); its signature is checked by the compiler, through the expansion.
fn tool_check(tool: &Tool, agent: &Agent, errors: &mut Errors) {
    let Some(path) = &tool.check else {
        return;
    };
    let segments: Vec<_> = path.segments.iter().collect();
    let [first, name] = segments[..] else {
        return;
    };
    if path.leading_colon.is_some() || first.ident != "Self" || !name.arguments.is_none() {
        return;
    }
    let name = &name.ident;
    if agent.fns.iter().any(|f| f.sig.ident == *name) {
        return;
    }
    errors.at(
        path,
        format!(
            "`{name}` is not a method of this impl: add `fn {name}(&self, cx: &acp::Session) -> acp::Result<()>` (or `async fn`) to it; it runs before the permission request, and an `Err` refuses the call"
        ),
    );
}

/// Two tools with one name, unless their `#[cfg(...)]`s differ (`#[cfg(unix)]` and
/// `#[cfg(windows)]` versions of one tool are fine; the compiler keeps at most one).
fn duplicate_tool_names(agent: &Agent, errors: &mut Errors) {
    let tools: Vec<(&Tool, String)> = agent
        .fns
        .iter()
        .filter_map(|f| match &f.role {
            Role::Tool(t) => {
                let cfgs = f.cfgs.iter().map(|a| a.to_token_stream().to_string());
                Some((&**t, cfgs.collect::<Vec<_>>().join(" ")))
            }
            _ => None,
        })
        .collect();
    for (i, (tool, cfgs)) in tools.iter().enumerate() {
        let (name, span) = tool.name();
        let same = |(t, c): &&(&Tool, String)| t.name().0 == name && c == cfgs;
        if let Some((first, _)) = tools[..i].iter().find(same) {
            errors.at_span(
                span,
                format!(
                    "duplicate tool name `{name}`: `fn {}` already uses it; tool names must be unique (rename the method or set `name = \"…\"`)",
                    first.method
                ),
            );
        }
    }
}

/// The owned type to write instead of a reference to `elem`: `&str` → `String`, `&Path` →
/// `PathBuf`, `&[T]` → `Vec<T>`, `&T` → `T`.
fn owned(elem: &Type) -> String {
    match elem {
        Type::Slice(s) => format!("Vec<{}>", type_text(&s.elem)),
        Type::Path(p) if p.path.is_ident("str") => "String".into(),
        Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Path") => {
            "std::path::PathBuf".into()
        }
        _ => type_text(elem),
    }
}

/// A type as the author would write it: `Vec<Option<u8>>`, not `Vec < Option < u8 > >`.
fn type_text(ty: &Type) -> String {
    let text = ty.to_token_stream().to_string();
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    for (i, c) in chars.iter().enumerate() {
        let keep = *c != ' '
            || (word(i.checked_sub(1).map(|p| chars[p])) && word(chars.get(i + 1).copied()))
            || chars.get(i.wrapping_sub(1)) == Some(&',');
        if keep {
            out.push(*c);
        }
    }
    out
}

/// `&self`, not `&mut self`, `self` or `self: Box<Self>`.
fn is_shared_self(r: &syn::Receiver) -> bool {
    r.reference.is_some() && r.mutability.is_none() && r.colon_token.is_none()
}

/// `&Session`, `&acp::Session`, `&'a Session`, …
fn is_session_ref(ty: &Type) -> bool {
    is_ref_to(ty, "Session")
}

/// `&Client`, `&acp::Client`, …
fn is_client_ref(ty: &Type) -> bool {
    is_ref_to(ty, "Client")
}

fn is_ref_to(ty: &Type, name: &str) -> bool {
    match ty {
        Type::Reference(r) if r.mutability.is_none() => {
            matches!(&*r.elem, Type::Path(p) if p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == name))
        }
        _ => false,
    }
}

/// The first type or const parameter of a method, if any (lifetimes are fine everywhere).
fn type_or_const_param(sig: &Signature) -> Option<&syn::GenericParam> {
    sig.generics
        .params
        .iter()
        .find(|p| !matches!(p, syn::GenericParam::Lifetime(_)))
}

/// Checks a title template: `{name}` placeholders must name parameters; `{{`/`}}` escape.
fn title_placeholders(template: &str, params: &[String], method: &Ident) -> Result<(), String> {
    let mut chars = template.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '{' | '}' if chars.peek().is_some_and(|(_, n)| *n == c) => {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_suggest_the_owned_type() {
        let ty = |s: &str| syn::parse_str::<Type>(s).unwrap();
        assert_eq!(owned(&ty("str")), "String");
        assert_eq!(owned(&ty("std::path::Path")), "std::path::PathBuf");
        assert_eq!(owned(&ty("[u8]")), "Vec<u8>");
        assert_eq!(owned(&ty("Options")), "Options");
        assert_eq!(owned(&ty("[Option<u8>]")), "Vec<Option<u8>>");
        assert_eq!(owned(&ty("HashMap<String, u8>")), "HashMap<String, u8>");
        assert_eq!(owned(&ty("dyn Send")), "dyn Send");
    }

    #[test]
    fn title_placeholders_must_name_parameters() {
        let m = syn::parse_str::<Ident>("read").unwrap();
        let params = ["path".to_owned()];
        assert!(title_placeholders("Read {path} {{x}}", &params, &m).is_ok());
        assert!(title_placeholders("Read {file}", &params, &m).is_err());
        assert!(title_placeholders("Read {path", &params, &m).is_err());
        assert!(title_placeholders("Read }", &params, &m).is_err());
    }
}
