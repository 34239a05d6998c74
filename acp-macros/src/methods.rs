//! The one table of methods `#[acp::agent]` recognises by name ([`METHODS`]), and the
//! `acp::Agent` methods it writes itself ([`GENERATED`]).
//!
//! Everything about a recognised method comes from its entry: `check` validates the author's
//! signature against it and reports near misses, `expand` writes the forwarding `Agent` method
//! and the return-type check from it, and the facade's doc table ("Methods it recognises") is
//! tested against it. Adding a protocol method to the macro is one entry here.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::visit_mut::VisitMut;

/// One method of the author's impl that `#[acp::agent]` forwards an `acp::Agent` method to.
///
/// Types are written as paths from the facade's root (`Session`, `schema::AuthMethodId`);
/// `Vec` is the standard one.
pub(crate) struct Method {
    /// The author's method name.
    pub name: &'static str,
    /// Whether it is an `async fn`.
    pub is_async: bool,
    /// The parameters after `&self`: a conventional name and the type.
    pub params: &'static [(&'static str, &'static str)],
    /// What it produces: the `T` of `acp::Result<T>` when `fallible`, else the return type.
    pub output: &'static str,
    /// Whether it returns `acp::Result<output>` (or any `Result<output, E>` with
    /// `E: From<acp::Error> + Display + Send + 'static`).
    pub fallible: bool,
    /// The `acp::Agent` method it implements.
    pub forwards_to: &'static str,
    /// Another recognised method it cannot go without.
    pub needs: Option<&'static str>,
    /// What it does, as the facade's doc table says (the test that keeps the table in sync
    /// reads it).
    #[cfg_attr(not(test), allow(dead_code))]
    pub doc: &'static str,
    /// The protocol methods (as each version names them) whose handling calls it: checked
    /// against the runtime's method table by a test, so that the two tables cannot drift.
    #[cfg_attr(not(test), allow(dead_code))]
    pub serves: &'static [&'static str],
}

/// The methods `#[acp::agent]` recognises by name, in the order of the facade's doc table.
pub(crate) const METHODS: &[Method] = &[
    Method {
        name: "prompt",
        is_async: true,
        params: &[("cx", "&Session"), ("prompt", "Prompt")],
        output: "StopReason",
        fallible: true,
        forwards_to: "prompt",
        needs: None,
        doc: "one prompt turn ([`Agent::prompt`]); required",
        serves: &["session/prompt"],
    },
    Method {
        name: "new_session",
        is_async: true,
        params: &[("cx", "&Session")],
        output: "SessionSetup",
        fallible: true,
        forwards_to: "new_session",
        needs: None,
        doc: "extra slash commands and the answer's `_meta` for a new session (modes and options are declared)",
        serves: &["session/new"],
    },
    Method {
        name: "load_session",
        is_async: true,
        params: &[("cx", "&Session")],
        output: "SessionSetup",
        fallible: true,
        forwards_to: "load_session",
        needs: None,
        doc: "the setup of a reopened session, not its history: with sessions recorded (the default) the runtime answers `session/load` (replaying the conversation) and `session/resume` itself, then calls this instead of `new_session`, so do not replay here; without a store ([`Server::no_store`], [`serve`]) it is all of `session/load`: replay through `cx`, then return; advertises `loadSession`",
        serves: &["session/load"],
    },
    Method {
        name: "auth_methods",
        is_async: false,
        params: &[],
        output: "Vec<schema::AuthMethod>",
        fallible: false,
        forwards_to: "auth_methods",
        needs: Some("authenticate"),
        doc: "the authentication methods advertised in `initialize` (terminal ones only to clients with `auth.terminal`); needs `authenticate`",
        serves: &["initialize"],
    },
    Method {
        name: "authenticate",
        is_async: true,
        params: &[("cx", "&Client"), ("method", "schema::AuthMethodId")],
        output: "()",
        fallible: true,
        forwards_to: "authenticate",
        needs: Some("auth_methods"),
        doc: "the `authenticate` request, for one of the advertised methods of type `agent`; needs `auth_methods`",
        serves: &["authenticate", "auth/login"],
    },
    Method {
        name: "authenticated",
        is_async: true,
        params: &[("cx", "&Client")],
        output: "bool",
        fallible: false,
        forwards_to: "authenticated",
        needs: Some("auth_methods"),
        doc: "whether the user is authenticated: `false` answers `session/new`, `load`, `resume`, `list` and `delete` with `-32000 Authentication required`; needs `auth_methods`",
        serves: &["session/new", "session/load", "session/resume"],
    },
    Method {
        name: "logout",
        is_async: true,
        params: &[("cx", "&Client")],
        output: "()",
        fallible: true,
        forwards_to: "logout",
        needs: Some("auth_methods"),
        doc: "the `logout` request; advertises `auth.logout`; needs `auth_methods`",
        serves: &["logout", "auth/logout"],
    },
];

/// `acp::Agent` methods the macro writes itself, and what to write instead of defining them.
pub(crate) const GENERATED: &[(&str, &str)] = &[
    (
        "info",
        "`#[acp::agent]` writes `Agent::info` from its options: remove `fn info` and write `#[acp::agent(name = \"…\", title = \"…\", version = \"…\")]`",
    ),
    (
        "capabilities",
        "`#[acp::agent]` writes `Agent::capabilities` from what the impl has (`loadSession` from a `load_session` method) and its options (prompt content with `#[acp::agent(prompt(image, audio, embedded_context))]`): remove `fn capabilities`",
    ),
    (
        "tools",
        "`#[acp::agent]` writes `Agent::tools` from the `#[acp::tool]` methods: remove `fn tools` and mark each tool method `#[acp::tool]` (`cx.tools()` lists them)",
    ),
    (
        "set_mode",
        "the runtime answers `session/set_mode` from the declared modes: remove `fn set_mode`, derive `acp::Modes` on an enum of the modes and write `#[acp::agent(modes = MyModes)]`; read the mode with `cx.mode::<MyModes>()?`",
    ),
    (
        "set_config_option",
        "the runtime answers `session/set_config_option` from the declared options: remove `fn set_config_option`, derive `acp::ConfigOption` on each option's type and write `#[acp::agent(config(MyOption, …))]`; read one with `cx.config::<MyOption>()?`",
    ),
    (
        "settings",
        "`#[acp::agent]` writes `Agent::settings` from its `modes = …` and `config(…)` options: remove `fn settings`",
    ),
    (
        "commands",
        "`#[acp::agent]` writes `Agent::commands` from the `#[acp::command]` methods: remove `fn commands` and mark each command method `#[acp::command]`",
    ),
    (
        "run_command",
        "`#[acp::agent]` writes `Agent::run_command`, dispatching to the `#[acp::command]` methods: remove `fn run_command`",
    ),
    (
        "ext_request",
        "`#[acp::agent]` writes `Agent::ext_request` from the `#[acp::ext(\"_…\")]` methods: remove `fn ext_request` and mark each extension method `#[acp::ext(\"_vendor/name\")]`",
    ),
    (
        "ext_notification",
        "`#[acp::agent]` writes `Agent::ext_notification` from the `#[acp::ext(\"_…\", notification)]` methods: remove `fn ext_notification`",
    ),
    (
        "call_tool",
        "`#[acp::agent]` writes `Agent::call_tool`, dispatching by name to the `#[acp::tool]` methods: remove `fn call_tool` and call tools with `cx.call_tool(name, args)`",
    ),
];

impl Method {
    /// The entry named `name`.
    pub(crate) fn find(name: &str) -> Option<&'static Method> {
        METHODS.iter().find(|m| m.name == name)
    }

    /// The signature, with types qualified by `acp::` (for error messages) or not (for the
    /// facade's doc table, where they are imported).
    pub(crate) fn signature(&self, qualified: bool) -> String {
        let mut out = String::new();
        if self.is_async {
            out.push_str("async ");
        }
        out.push_str("fn ");
        out.push_str(self.name);
        out.push_str("(&self");
        for (name, ty) in self.params {
            out.push_str(&format!(", {name}: {}", display_type(ty, qualified)));
        }
        out.push_str(") -> ");
        out.push_str(&self.return_type(qualified));
        out
    }

    /// The return type as the author writes it, e.g. `acp::Result<acp::StopReason>`.
    pub(crate) fn return_type(&self, qualified: bool) -> String {
        let output = display_type(self.output, qualified);
        if self.fallible {
            format!("acp::Result<{output}>")
        } else {
            output
        }
    }

    /// The output type as the author writes it, qualified by `acp::`.
    pub(crate) fn output_display(&self) -> String {
        display_type(self.output, true)
    }

    /// The type of the parameter at `index` (after `&self`), qualified by `prefix` (the
    /// facade's `__private` path) for the expansion.
    pub(crate) fn param_tokens(&self, index: usize, prefix: &TokenStream) -> TokenStream {
        type_tokens(self.params[index].1, prefix)
    }

    /// The output type, qualified by `prefix`.
    pub(crate) fn output_tokens(&self, prefix: &TokenStream) -> TokenStream {
        type_tokens(self.output, prefix)
    }
}

/// The recognised or generated method whose name `name` is a near miss of (edit distance 1 or
/// 2), if any; exact matches are not near misses.
pub(crate) fn near_miss(name: &str) -> Option<&'static str> {
    let known = METHODS.iter().map(|m| m.name);
    known
        .filter(|k| *k != name)
        .map(|k| (edit_distance(name, k), k))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Optimal string alignment distance: insertions, deletions, substitutions and swaps of
/// neighbours each count one.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

/// A facade-relative type as the author reads it: `&acp::Session`, `Vec<acp::schema::X>`.
fn display_type(ty: &str, qualified: bool) -> String {
    if !qualified {
        return ty.to_owned();
    }
    let mut out = String::new();
    let mut path_start = true;
    let mut chars = ty.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphabetic() && path_start {
            let mut ident = c.to_string();
            while let Some(&n) = chars.peek().filter(|n| n.is_alphanumeric() || **n == '_') {
                ident.push(n);
                chars.next();
            }
            if ident != "Vec" && ident != "bool" {
                out.push_str("acp::");
            }
            out.push_str(&ident);
            path_start = false;
            continue;
        }
        path_start = matches!(c, '&' | '<' | '(' | ',' | ' ');
        out.push(c);
    }
    out
}

/// A facade-relative type as tokens for the expansion: every path is prefixed with `prefix`
/// (which re-exports `Vec` too).
fn type_tokens(ty: &str, prefix: &TokenStream) -> TokenStream {
    struct Qualify<'a>(&'a TokenStream);
    impl VisitMut for Qualify<'_> {
        fn visit_type_path_mut(&mut self, ty: &mut syn::TypePath) {
            syn::visit_mut::visit_type_path_mut(self, ty);
            if ty.path.is_ident("bool") {
                return;
            }
            let path = &ty.path;
            let prefix = self.0;
            ty.path = syn::parse_quote!(#prefix::#path);
        }
    }
    let mut ty: syn::Type = match syn::parse_str(ty) {
        Ok(ty) => ty,
        Err(e) => return e.to_compile_error(),
    };
    Qualify(prefix).visit_type_mut(&mut ty);
    ty.to_token_stream()
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::*;

    #[test]
    fn every_protocol_method_a_recognised_method_serves_is_in_the_runtime_s_method_table() {
        let answered = acp_core::__private::answered_methods();
        for method in METHODS {
            for served in method.serves {
                assert!(
                    answered.contains(served),
                    "`{}` serves `{served}`, which the runtime's method table does not answer \
                     (it answers {answered:?})",
                    method.name,
                );
            }
        }
    }

    /// The rows of the "Methods it recognises" table in the facade's docs.
    fn doc_rows() -> Vec<(String, String, String)> {
        let lib = include_str!("../../src/lib.rs");
        let section = lib
            .split("/// # Methods it recognises")
            .nth(1)
            .expect("the facade documents the methods `#[acp::agent]` recognises");
        section
            .lines()
            .map(|l| l.trim_start_matches("///").trim())
            .skip_while(|l| !l.starts_with("| method |"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(|row| {
                let cells: Vec<_> = row
                    .trim_matches('|')
                    .split(" | ")
                    .map(|c| c.trim().to_owned())
                    .collect();
                assert_eq!(cells.len(), 3, "a row of three cells: {row}");
                (cells[0].clone(), cells[1].clone(), cells[2].clone())
            })
            .collect()
    }

    #[test]
    fn the_facade_doc_table_lists_exactly_the_recognised_methods() {
        let documented = doc_rows();
        let expected: Vec<_> = METHODS
            .iter()
            .map(|m| {
                (
                    format!("`{}`", m.name),
                    format!("`{}`", m.signature(false)),
                    m.doc.to_owned(),
                )
            })
            .collect();
        assert_eq!(
            documented, expected,
            "src/lib.rs's \"Methods it recognises\" table must match acp-macros' METHODS, row for row"
        );
    }

    #[test]
    fn every_method_forwards_to_an_agent_method_and_needs_a_recognised_one() {
        for m in METHODS {
            assert!(!m.forwards_to.is_empty());
            if let Some(other) = m.needs {
                assert!(Method::find(other).is_some(), "{} needs {other}", m.name);
            }
            assert!(
                GENERATED.iter().all(|(g, _)| *g != m.name),
                "{} is both forwarded and generated",
                m.name
            );
        }
    }

    #[test]
    fn signatures_read_as_the_author_writes_them() {
        let prompt = Method::find("prompt").unwrap();
        assert_eq!(
            prompt.signature(true),
            "async fn prompt(&self, cx: &acp::Session, prompt: acp::Prompt) -> acp::Result<acp::StopReason>"
        );
        let auth = Method::find("auth_methods").unwrap();
        assert_eq!(
            auth.signature(true),
            "fn auth_methods(&self) -> Vec<acp::schema::AuthMethod>"
        );
        assert_eq!(
            Method::find("authenticate").unwrap().return_type(true),
            "acp::Result<()>"
        );
    }

    #[test]
    fn types_are_qualified_by_the_facade_path_in_the_expansion() {
        let p = quote!(::acp::__private);
        let auth = Method::find("auth_methods").unwrap();
        assert_eq!(
            auth.output_tokens(&p).to_string(),
            quote!(::acp::__private::Vec<::acp::__private::schema::AuthMethod>).to_string()
        );
        let prompt = Method::find("prompt").unwrap();
        assert_eq!(
            prompt.param_tokens(0, &p).to_string(),
            quote!(&::acp::__private::Session).to_string()
        );
        assert_eq!(
            Method::find("logout")
                .unwrap()
                .output_tokens(&p)
                .to_string(),
            quote!(()).to_string()
        );
        assert_eq!(
            Method::find("authenticated")
                .unwrap()
                .output_tokens(&p)
                .to_string(),
            quote!(bool).to_string()
        );
    }

    #[test]
    fn near_misses_are_within_two_edits() {
        assert_eq!(near_miss("promt"), Some("prompt"));
        assert_eq!(near_miss("new_sesion"), Some("new_session"));
        assert_eq!(near_miss("lgout"), Some("logout"));
        assert_eq!(near_miss("prompt"), None);
        assert_eq!(near_miss("helper"), None);
        assert_eq!(near_miss("read"), None);
    }
}
