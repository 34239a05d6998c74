//! How MCP tools appear in a session's tool table: their names (unique across the session's
//! servers and the agent's own tools), their kind (from the tool's annotations and name) and
//! their title.

use std::collections::{HashMap, HashSet};

use rmcp::model::Tool;

use crate::schema::ToolKind;

/// The separator between a server's name and a tool's when a tool needs its server's name to
/// be unambiguous: `files__read_file`.
pub(crate) const SEPARATOR: &str = "__";

/// Names every tool of every server. `servers` is `(server name, its tools)` in the order the
/// client listed the servers; `reserved` are the agent's own tool names.
///
/// The rule: a tool keeps its own name when no other tool of the session (of any server, or the
/// agent's) has it; otherwise it is `server__tool`, with the server's name made of
/// ASCII letters, digits, `_` and `-` (anything else becomes `_`), and `_2`, `_3`, … added to
/// the server's part when two servers share a name. Names are decided once every server has
/// finished starting, so they do not depend on which one answered first.
pub(crate) fn assign<'a>(
    servers: &[(&'a str, &'a [Tool])],
    reserved: &[String],
) -> Vec<Vec<String>> {
    let mut count: HashMap<&str, usize> = HashMap::new();
    for name in reserved {
        *count.entry(name.as_str()).or_default() += 1;
    }
    for (_, tools) in servers {
        for tool in *tools {
            *count.entry(tool.name.as_ref()).or_default() += 1;
        }
    }
    let mut taken: HashSet<String> = reserved.iter().cloned().collect();
    let mut prefixes: HashSet<String> = HashSet::new();
    let mut out = Vec::with_capacity(servers.len());
    for (server, tools) in servers {
        let mut prefix = sanitize(server);
        let base = prefix.clone();
        let mut n = 1;
        while !prefixes.insert(prefix.clone()) {
            n += 1;
            prefix = format!("{base}_{n}");
        }
        let mut names = Vec::with_capacity(tools.len());
        for tool in *tools {
            let own = tool.name.as_ref();
            let mut name = if count.get(own).copied().unwrap_or(0) <= 1 {
                own.to_owned()
            } else {
                format!("{prefix}{SEPARATOR}{own}")
            };
            // The prefixed name may itself be some other tool's own name.
            let base = name.clone();
            let mut n = 1;
            while !taken.insert(name.clone()) {
                n += 1;
                name = format!("{base}_{n}");
            }
            names.push(name);
        }
        out.push(names);
    }
    out
}

fn sanitize(server: &str) -> String {
    let s: String = server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() { "mcp".to_owned() } else { s }
}

/// Whether the server says the tool does not modify its environment (`readOnlyHint`).
pub(crate) fn read_only(tool: &Tool) -> bool {
    tool.annotations
        .as_ref()
        .and_then(|a| a.read_only_hint)
        .unwrap_or(false)
}

/// The kind a client shows for the tool: from its name's first word (`read_file` → read,
/// `search_files` → search, `write_file` → edit, …), kept only when it agrees with the
/// annotations (a read-only tool is read, search or fetch; one that is not is never read,
/// search or fetch); a read-only tool whose name says nothing is read (fetch when it reaches
/// the open world); anything else is other.
pub(crate) fn kind(tool: &Tool) -> ToolKind {
    let read_only = read_only(tool);
    let open_world = tool
        .annotations
        .as_ref()
        .and_then(|a| a.open_world_hint)
        .unwrap_or(false);
    let from_name = kind_from_name(&tool.name);
    let reading = |k: &ToolKind| matches!(k, ToolKind::Read | ToolKind::Search | ToolKind::Fetch);
    match from_name {
        Some(k) if reading(&k) == read_only || tool.annotations.is_none() => k,
        _ if read_only && open_world => ToolKind::Fetch,
        _ if read_only => ToolKind::Read,
        _ => ToolKind::Other,
    }
}

fn kind_from_name(name: &str) -> Option<ToolKind> {
    let lower = name.to_ascii_lowercase();
    let first = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| !w.is_empty())
        .unwrap_or("");
    // camelCase: the first word ends at the first capital.
    let first = match name.find(|c: char| c.is_ascii_uppercase()) {
        Some(i) if i > 0 && i < first.len() => &first[..i],
        _ => first,
    };
    Some(match first {
        "read" | "get" | "list" | "view" | "show" | "cat" | "stat" | "describe" => ToolKind::Read,
        "search" | "find" | "grep" | "glob" | "query" | "lookup" => ToolKind::Search,
        "fetch" | "download" | "browse" | "http" | "curl" => ToolKind::Fetch,
        "write" | "edit" | "create" | "update" | "set" | "patch" | "append" | "replace"
        | "insert" | "add" | "save" | "mkdir" => ToolKind::Edit,
        "delete" | "remove" | "rm" | "drop" | "unlink" => ToolKind::Delete,
        "move" | "rename" | "mv" => ToolKind::Move,
        "run" | "exec" | "execute" | "shell" | "bash" | "command" => ToolKind::Execute,
        "think" | "reason" | "plan" => ToolKind::Think,
        _ => return None,
    })
}

/// The title a client shows: the server's title for the tool (the annotations', then the
/// tool's), else its name.
pub(crate) fn title(tool: &Tool) -> String {
    tool.annotations
        .as_ref()
        .and_then(|a| a.title.clone())
        .or_else(|| tool.title.clone())
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| tool.name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> Tool {
        serde_json::from_value(serde_json::json!({
            "name": name,
            "inputSchema": {"type": "object"}
        }))
        .unwrap()
    }

    fn annotated(name: &str, read_only: bool) -> Tool {
        serde_json::from_value(serde_json::json!({
            "name": name,
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": read_only}
        }))
        .unwrap()
    }

    #[test]
    fn unique_names_are_kept_and_shared_ones_get_their_server() {
        let a = [tool("echo"), tool("read_file")];
        let b = [tool("echo"), tool("add")];
        let names = assign(&[("one", &a), ("two words", &b)], &["add".to_owned()]);
        assert_eq!(names[0], ["one__echo", "read_file"]);
        assert_eq!(names[1], ["two_words__echo", "two_words__add"]);
    }

    #[test]
    fn servers_with_the_same_name_are_told_apart() {
        let a = [tool("echo")];
        let names = assign(&[("s", &a), ("s", &a)], &[]);
        assert_eq!(names, [vec!["s__echo"], vec!["s_2__echo"]]);
    }

    #[test]
    fn a_prefixed_name_never_takes_another_tools_own_name() {
        let a = [tool("x"), tool("s__x")];
        let b = [tool("x")];
        let names = assign(&[("s", &a), ("t", &b)], &[]);
        let all: HashSet<_> = names.iter().flatten().collect();
        assert_eq!(all.len(), 3, "{names:?}");
    }

    #[test]
    fn kinds_follow_names_unless_the_annotations_disagree() {
        assert_eq!(kind(&tool("read_file")), ToolKind::Read);
        assert_eq!(kind(&tool("searchFiles")), ToolKind::Search);
        assert_eq!(kind(&tool("write_file")), ToolKind::Edit);
        assert_eq!(kind(&tool("echo")), ToolKind::Other);
        assert_eq!(kind(&annotated("echo", true)), ToolKind::Read);
        assert_eq!(kind(&annotated("get_weather", false)), ToolKind::Other);
        assert_eq!(kind(&annotated("delete_file", false)), ToolKind::Delete);
    }

    #[test]
    fn titles_come_from_the_server_else_the_name() {
        let t: Tool = serde_json::from_value(serde_json::json!({
            "name": "x", "inputSchema": {"type": "object"},
            "annotations": {"title": "Do {x}"}
        }))
        .unwrap();
        assert_eq!(title(&t), "Do {x}");
        assert_eq!(title(&tool("echo")), "echo");
    }
}
