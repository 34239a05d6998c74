//! Tool-call titles: a template with `{param}` placeholders filled from the arguments.

/// Renders a title template (`{name}` → the argument; strings without quotes).
pub fn render_title(template: &str, args: &serde_json::Value) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let brace = &rest[i..];
        if brace.starts_with("{{") || brace.starts_with("}}") {
            out.push_str(&brace[..1]);
            rest = &brace[2..];
        } else if let Some(end) = brace.strip_prefix('{').and_then(|b| b.find('}')) {
            let name = &brace[1..=end];
            match args.get(name) {
                Some(serde_json::Value::String(s)) => out.push_str(s),
                Some(serde_json::Value::Null) | None => out.push('…'),
                Some(other) => out.push_str(&other.to_string()),
            }
            rest = &brace[end + 2..];
        } else {
            out.push_str(&brace[..1]);
            rest = &brace[1..];
        }
    }
    out.push_str(rest);
    out
}
