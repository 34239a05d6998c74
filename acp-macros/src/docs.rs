//! Doc comments: the text of an item's `///` lines, and a tool's doc split into its
//! description and the descriptions of its parameters.

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
