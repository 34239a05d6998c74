//! Shared helpers: the error collector and doc-comment extraction.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::ToTokens;

/// Collects every error so they are all reported together.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub(crate) fn at(&mut self, tokens: impl ToTokens, message: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    pub(crate) fn at_span(&mut self, span: Span, message: impl std::fmt::Display) {
        self.push(syn::Error::new(span, message));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    pub(crate) fn to_compile_errors(&self) -> TokenStream {
        self.0
            .as_ref()
            .map(syn::Error::to_compile_error)
            .unwrap_or_default()
    }
}

/// The first type or const parameter of a method, if any (lifetimes are fine everywhere).
pub(crate) fn type_or_const_param(sig: &syn::Signature) -> Option<&syn::GenericParam> {
    sig.generics
        .params
        .iter()
        .find(|p| !matches!(p, syn::GenericParam::Lifetime(_)))
}

/// Gives every token of `tokens` this span, so that an error about the expression they form
/// (a failed trait bound, a type mismatch) is reported at the author's code it stands for.
pub(crate) fn respan(tokens: TokenStream, span: Span) -> TokenStream {
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

/// The text of an item's `///` comments: one leading space stripped per line, trimmed.
pub(crate) fn doc_text(attrs: &[syn::Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let syn::Meta::NameValue(nv) = &attr.meta
            && let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
        {
            for line in s.value().split('\n') {
                lines.push(line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned());
            }
        }
    }
    lines.join("\n").trim().to_owned()
}

/// Splits a tool's doc comment into the description and per-parameter descriptions.
///
/// Parameters are documented rustdoc-style, in a list item that starts with the name in
/// backticks (`` - `path`: the file to read ``); an `# Arguments` (or `# Parameters`) section
/// holding them is left out of the description.
pub(crate) fn split_tool_doc(doc: &str, params: &[String]) -> (String, Vec<String>) {
    let mut described = vec![String::new(); params.len()];
    let mut description = Vec::new();
    let mut in_args = false;
    for line in doc.lines() {
        let trimmed = line.trim();
        if let Some(heading) = trimmed.strip_prefix('#') {
            let heading = heading.trim_start_matches('#').trim().to_ascii_lowercase();
            in_args = heading == "arguments" || heading == "parameters";
            if in_args {
                continue;
            }
        }
        let item = trimmed
            .strip_prefix("- ")
            .or_else(|| trimmed.strip_prefix("* "))
            .and_then(|rest| rest.strip_prefix('`'))
            .and_then(|rest| rest.split_once('`'));
        if let Some((name, rest)) = item
            && let Some(i) = params.iter().position(|p| p == name)
        {
            let text = rest.trim_start_matches([' ', ':', '-', '—', '–']).trim();
            described[i] = text.to_owned();
            if in_args {
                continue;
            }
        }
        if !in_args {
            description.push(line);
        }
    }
    (description.join("\n").trim().to_owned(), described)
}

#[cfg(test)]
mod tests {
    use super::split_tool_doc;

    #[test]
    fn arguments_section_becomes_parameter_descriptions() {
        let doc = "Writes a file.\n\n# Arguments\n- `path`: where\n* `content` - what\n\n# Notes\nSee also.";
        let (desc, params) = split_tool_doc(doc, &["path".into(), "content".into()]);
        assert_eq!(desc, "Writes a file.\n\n# Notes\nSee also.");
        assert_eq!(params, ["where", "what"]);
    }
}
