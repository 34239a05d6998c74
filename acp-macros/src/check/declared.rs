//! The checks of what an agent declares by attribute besides tools: slash commands
//! (`#[acp::command]`) and extension methods (`#[acp::ext]`), each error at the author's span
//! with the signature or name to write, keeping the author's method and parameter names.

use quote::{ToTokens, quote};
use syn::{FnArg, Ident, Signature, Type};

use super::{is_client_ref, is_session_ref, is_shared_self, owned, type_or_const_param};
use crate::errors::Errors;
use crate::model::{Agent, Command, Ext, Param, Role};

/// What the first parameter after `&self` of a command or an extension method must be.
struct Context {
    /// How errors name it: `the session, `cx: &acp::Session``.
    described: &'static str,
    /// How it is written: `cx: &acp::Session`.
    written: &'static str,
    is_context: fn(&Type) -> bool,
}

const SESSION: Context = Context {
    described: "the session, `cx: &acp::Session` (a command runs as a turn of the session)",
    written: "cx: &acp::Session",
    is_context: is_session_ref,
};

const CLIENT: Context = Context {
    described: "the client, `cx: &acp::Client` (an extension method belongs to the connection, not to a session)",
    written: "cx: &acp::Client",
    is_context: is_client_ref,
};

/// Checks the receiver and the context parameter of a command or an extension method;
/// `false` if the parameters are too far off to check further.
fn receiver_and_context(
    sig: &Signature,
    what: &str,
    context: &Context,
    example: &str,
    cx: Option<&syn::PatType>,
    errors: &mut Errors,
) -> bool {
    if sig.asyncness.is_none() {
        errors.at(
            sig.fn_token,
            format!("{what} must be an `async fn`; write `{example}`"),
        );
    }
    if let Some(p) = type_or_const_param(sig) {
        errors.at(p, format!("{what} cannot be generic; write `{example}`"));
    }
    match sig.inputs.first() {
        Some(FnArg::Receiver(r)) if is_shared_self(r) => {}
        Some(FnArg::Receiver(r)) => {
            errors.at(r, format!("{what} takes `&self`; write `{example}`"));
            return false;
        }
        _ => {
            errors.at_span(
                sig.paren_token.span.join(),
                format!(
                    "{what} is a method: its parameters start with `&self, {}`; write `{example}`",
                    context.written
                ),
            );
            return false;
        }
    }
    match cx {
        Some(cx) if (context.is_context)(&cx.ty) => true,
        Some(cx) => {
            errors.at(
                cx,
                format!(
                    "the first parameter of {what} after `&self` must be {}; write `{example}`",
                    context.described
                ),
            );
            false
        }
        None => {
            errors.at_span(
                sig.paren_token.span.join(),
                format!(
                    "{what} takes {} after `&self`; write `{example}`",
                    context.described
                ),
            );
            false
        }
    }
}

/// `name: Type` of each of `params`, spanned as written: an error at it underlines them all.
fn written(params: &[Param]) -> proc_macro2::TokenStream {
    let params = params.iter().map(|p| {
        let (pat, ty) = (&p.pat, &p.ty);
        quote!(#pat: #ty)
    });
    quote!(#(#params),*)
}

/// The name of a parameter as the author wrote it, else `fallback`.
fn name_of(param: &Param, fallback: &str) -> String {
    param
        .ident()
        .map_or_else(|| fallback.to_owned(), ToString::to_string)
}

/// The signature to write for a command: the author's method name and input name, the input
/// typed `acp::Prompt` if the author's is a `Prompt`, else `String`.
fn command_example(command: &Command) -> String {
    let input = command.params.first().map_or_else(String::new, |p| {
        let ty = match &p.ty {
            Type::Reference(r) => &*r.elem,
            ty => ty,
        };
        let is_prompt = matches!(ty, Type::Path(t) if t.path.segments.last().is_some_and(|s| s.ident == "Prompt"));
        let ty = if is_prompt { "acp::Prompt" } else { "String" };
        format!(", {}: {ty}", name_of(p, "input"))
    });
    format!(
        "async fn {}(&self, cx: &acp::Session{input}) -> acp::Result<acp::StopReason>",
        command.method
    )
}

/// Checks a slash command's options and signature.
pub(super) fn command(command: &Command, sig: &Signature, errors: &mut Errors) {
    let method = &command.method;
    let example = command_example(command);
    let what = "an #[acp::command]";
    if !receiver_and_context(sig, what, &SESSION, &example, command.cx.as_ref(), errors) {
        return;
    }
    let (name, span) = command.name();
    if let Some(problem) = command_name_problem(&name) {
        errors.at_span(span, format!("invalid command name `{name}`: {problem}"));
    }
    if command.params.len() > 1 {
        errors.at(
            written(&command.params[1..]),
            format!("{what} takes at most one input after the session: the text after `/{name}` as a `String`, or the rest of the prompt as an `acp::Prompt`; write `{example}`"),
        );
    }
    if let Some(input) = command.params.first()
        && let Type::Reference(r) = &input.ty
    {
        let input = name_of(input, "input");
        let owned = match owned(&r.elem).as_str() {
            "Prompt" | "acp::Prompt" => "acp::Prompt".to_owned(),
            _ => "String".to_owned(),
        };
        errors.at(
            r,
            format!("a command's input cannot be a reference: it is taken out of the prompt, and the command owns it; write `{input}: {owned}`"),
        );
    }
    if command.ret.is_none() {
        errors.at(
            method,
            format!("{what} ends the turn like `prompt`: it must return `acp::Result<acp::StopReason>`; write `{example}`"),
        );
    }
}

/// What is wrong with a command name, and the name to write instead.
fn command_name_problem(name: &str) -> Option<String> {
    let slash = name.starts_with('/');
    let spaces = name.chars().any(char::is_whitespace);
    if !name.is_empty() && !slash && !spaces {
        return None;
    }
    let words: Vec<&str> = name.trim_start_matches('/').split_whitespace().collect();
    if words.is_empty() {
        return Some(
            "a command needs the name the user types after `/`, e.g. `name = \"clear\"`".into(),
        );
    }
    let instead = words.join("-");
    let why = if slash {
        "the `/` is not part of the name (the user types it)"
    } else {
        "a command name is one word, typed after `/`"
    };
    Some(format!("{why}; write `name = \"{instead}\"`"))
}

/// Checks an extension method's name and signature.
pub(super) fn ext(ext: &Ext, sig: &Signature, errors: &mut Errors) {
    let method = &ext.method;
    let params = match ext.params.as_slice() {
        [param] => format!(
            "{}: {}",
            name_of(param, "params"),
            super::type_text(&param.ty)
        ),
        _ => "params: MyParams".to_owned(),
    };
    let example = if ext.notification {
        format!("async fn {method}(&self, cx: &acp::Client, {params}) -> acp::Result<()>")
    } else {
        let returns = match &ext.ret {
            Some(ty @ Type::Path(p))
                if p.path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident.to_string().ends_with("Result")) =>
            {
                super::type_text(ty)
            }
            _ => "acp::Result<MyResult>".to_owned(),
        };
        format!("async fn {method}(&self, cx: &acp::Client, {params}) -> {returns}")
    };
    let what = "an #[acp::ext] method";
    if let Some(name) = &ext.name {
        let value = name.value();
        let rest = value.trim_start_matches('_');
        if rest.is_empty() {
            errors.at(
                name,
                "an extension method needs a name after its `_`, e.g. `\"_my-agent/stats\"`",
            );
        } else if !value.starts_with('_') {
            errors.at(
                name,
                format!("extension method names start with `_` (the protocol reserves every other name): write `\"_{value}\"`"),
            );
        }
    }
    if !receiver_and_context(sig, what, &CLIENT, &example, ext.cx.as_ref(), errors) {
        return;
    }
    match ext.params.as_slice() {
        [param] => {
            if let Type::Reference(r) = &param.ty {
                errors.at(
                    r,
                    format!(
                        "the params of an extension method cannot be a reference: they are read from the JSON into a value the method owns; write `{}: {}`",
                        name_of(param, "params"),
                        owned(&r.elem)
                    ),
                );
            }
        }
        [] => errors.at_span(
            sig.paren_token.span.join(),
            format!("{what} takes its params after the client: any `Deserialize` type, or `serde_json::Value` to take them as they are; write `{example}`"),
        ),
        [_, _, ..] => {
            let names: Vec<_> = ext
                .params
                .iter()
                .map(|p| format!("`{}`", name_of(p, "…")))
                .collect();
            errors.at(
                written(&ext.params),
                format!(
                    "{what} takes one params value after the client, the request's JSON `params`: put {} in the fields of one `Deserialize` struct (or take `serde_json::Value`); write `{example}`",
                    names.join(" and ")
                ),
            );
        }
    }
    if ext.ret.is_none() {
        let returns = if ext.notification {
            "`acp::Result<()>`"
        } else {
            "`acp::Result<T>`, where `T` is the result, serialized"
        };
        errors.at(
            method,
            format!("{what} must return {returns}; write `{example}`"),
        );
    }
}

/// Two commands or two extension methods with one name (their `#[cfg]`s equal): an error at
/// the second.
pub(super) fn duplicates(agent: &Agent, errors: &mut Errors) {
    let mut commands: Vec<(String, String, &Ident)> = Vec::new();
    let mut exts: Vec<(String, String, &Ident)> = Vec::new();
    for f in &agent.fns {
        let cfgs: Vec<_> = f
            .cfgs
            .iter()
            .map(|a| a.to_token_stream().to_string())
            .collect();
        let cfgs = cfgs.join(" ");
        let (seen, (name, span), method, shown, rename) = match &f.role {
            Role::Command(c) => {
                let (name, span) = c.name();
                let rename = if c.name.is_some() {
                    "give this one another `name = \"…\"`"
                } else {
                    "rename this method, or give the command another name with `#[acp::command(name = \"…\")]`"
                };
                let shown = format!("command `/{name}`");
                (&mut commands, (name, span), &c.method, shown, rename)
            }
            Role::Ext(e) => match &e.name {
                Some(n) => (
                    &mut exts,
                    (n.value(), n.span()),
                    &e.method,
                    format!("extension method `{}`", n.value()),
                    "give this one another name",
                ),
                None => continue,
            },
            _ => continue,
        };
        if let Some((_, _, first)) = seen.iter().find(|(n, c, _)| *n == name && *c == cfgs) {
            errors.at_span(
                span,
                format!("duplicate {shown}: `fn {first}` already handles it; {rename}"),
            );
        }
        seen.push((name, cfgs, method));
    }
}

#[cfg(test)]
mod tests {
    use super::command_name_problem;

    #[test]
    fn command_names_are_one_word_without_the_slash() {
        assert_eq!(command_name_problem("clear"), None);
        assert_eq!(command_name_problem("create_plan"), None);
        let fix = |name| command_name_problem(name).unwrap();
        assert!(fix("/x").ends_with("write `name = \"x\"`"));
        assert!(fix("two words").ends_with("write `name = \"two-words\"`"));
        assert!(fix("/two  words").ends_with("write `name = \"two-words\"`"));
        assert!(fix("").contains("e.g. `name = \"clear\"`"));
        assert!(fix("/").contains("e.g. `name = \"clear\"`"));
    }
}
