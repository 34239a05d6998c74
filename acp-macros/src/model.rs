//! The plain data `parse` produces and `check` and `expand` read: the agent's options, its
//! `impl` (with the `#[acp::tool]` attributes taken off), and what each method of it is.
//!
//! Nothing here is validated: `parse` records what the author wrote, with spans, and `check`
//! judges it. `expand` runs only on a model `check` found no fault with.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::{Attribute, Expr, Ident, LitStr, Pat, Type};

use crate::methods::Method;

/// The tool kinds, as written in `kind = "…"`, and their `ToolKind` variants.
pub(crate) const KINDS: &[(&str, &str)] = &[
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

/// One `#[acp::agent]` impl.
pub(crate) struct Agent {
    pub options: Options,
    /// The author's impl block, `#[acp::tool]` attributes removed, bodies as written.
    pub imp: syn::ItemImpl,
    /// Every `fn` of the impl, in order.
    pub fns: Vec<Fn>,
    /// `#[acp::tool]` attributes on something other than a method, or repeated on one, with
    /// what is wrong.
    pub stray_tool_attrs: Vec<(Attribute, &'static str)>,
}

/// The options of `#[acp::agent(...)]`.
#[derive(Default)]
pub(crate) struct Options {
    pub name: Option<Expr>,
    pub title: Option<Expr>,
    pub version: Option<Expr>,
    pub image: bool,
    pub audio: bool,
    pub embedded_context: bool,
    /// `system_prompt` (`Some(false)`: `append`) or `system_prompt(override)` (`Some(true)`):
    /// the editor's system prompt is taken.
    pub system_prompt: Option<bool>,
    /// `modes = Type`: the session's modes.
    pub modes: Option<Type>,
    /// `config(A, B)`: the session's config options, in order.
    pub config: Vec<Type>,
    /// `crate = path`: where the facade is.
    pub krate: Option<syn::Path>,
}

impl Options {
    /// The facade's path: `::acp` unless `crate = …` says otherwise.
    pub(crate) fn krate(&self) -> TokenStream {
        self.krate
            .as_ref()
            .map_or_else(|| quote!(::acp), ToTokens::to_token_stream)
    }
}

/// One method of the impl.
pub(crate) struct Fn {
    /// Its position in `Agent::imp.items`.
    pub index: usize,
    pub sig: syn::Signature,
    /// Its `#[cfg(...)]` attributes, carried onto everything generated for it.
    pub cfgs: Vec<Attribute>,
    pub role: Role,
}

/// What a method of the impl is to the macro.
pub(crate) enum Role {
    /// Named like an entry of the table: forwarded to from `acp::Agent`.
    Recognised(&'static Method),
    /// Marked `#[acp::tool]`.
    Tool(Box<Tool>),
    /// Marked `#[acp::command]`.
    Command(Box<Command>),
    /// Marked `#[acp::ext("_…")]`.
    Ext(Box<Ext>),
    /// Anything else: left as written (`check` looks for near misses).
    Other,
}

/// A method marked `#[acp::tool]`.
pub(crate) struct Tool {
    /// The `#[acp::tool]` attribute.
    pub attr: Attribute,
    pub kind: Option<LitStr>,
    pub title: Option<LitStr>,
    pub name: Option<LitStr>,
    pub permission: bool,
    /// `check = path`: the function that may refuse a call before permission is asked.
    pub check: Option<syn::Path>,
    pub method: Ident,
    /// The doc comment, `# Arguments` left out.
    pub description: String,
    /// The first parameter after `&self`, which must be the session.
    pub cx: Option<syn::PatType>,
    /// The parameters after the session: the tool's input.
    pub params: Vec<Param>,
    /// The return type, if written.
    pub ret: Option<Type>,
    /// `requires(terminal, fs, …)`: the client capabilities it cannot run without, as
    /// written.
    pub requires: Vec<Ident>,
}

/// The client capabilities `requires(…)` accepts, and the `Requirement`s each stands for.
pub(crate) const REQUIREMENTS: &[(&str, &[&str])] = &[
    ("terminal", &["Terminal"]),
    ("fs", &["ReadTextFile", "WriteTextFile"]),
    ("fs_read", &["ReadTextFile"]),
    ("fs_write", &["WriteTextFile"]),
];

/// A method marked `#[acp::command]`: a slash command.
pub(crate) struct Command {
    /// The `#[acp::command]` attribute.
    pub attr: Attribute,
    /// `name = "…"`, else the method's name.
    pub name: Option<LitStr>,
    /// `hint = "…"`: what to type after the command, shown by the client.
    pub hint: Option<LitStr>,
    pub method: Ident,
    /// The doc comment: the command's description.
    pub description: String,
    /// The first parameter after `&self`, which must be the session.
    pub cx: Option<syn::PatType>,
    /// The parameters after the session (at most one: the input).
    pub params: Vec<Param>,
    pub ret: Option<Type>,
}

impl Command {
    /// The command's name and where to report problems with it.
    pub(crate) fn name(&self) -> (String, Span) {
        match &self.name {
            Some(lit) => (lit.value(), lit.span()),
            None => (self.method.to_string(), self.method.span()),
        }
    }
}

/// A method marked `#[acp::ext("_vendor/name")]`: an extension request or notification.
pub(crate) struct Ext {
    /// The `#[acp::ext]` attribute.
    pub attr: Attribute,
    /// The method name, e.g. `"_zed.dev/stats"` (missing: an error).
    pub name: Option<LitStr>,
    /// `notification`: a notification (never answered) rather than a request.
    pub notification: bool,
    pub method: Ident,
    /// The first parameter after `&self`, which must be the client.
    pub cx: Option<syn::PatType>,
    /// The parameters after the client (exactly one: the params).
    pub params: Vec<Param>,
    pub ret: Option<Type>,
}

/// One parameter of a tool after the session.
pub(crate) struct Param {
    pub pat: Pat,
    pub ty: Type,
    /// From the doc comment's `` - `name`: … `` item.
    pub description: String,
}

impl Tool {
    /// The tool's name (`name = "…"` or the method's) and where to report problems with it.
    pub(crate) fn name(&self) -> (String, Span) {
        match &self.name {
            Some(lit) => (lit.value(), lit.span()),
            None => (self.method.to_string(), self.method.span()),
        }
    }

    /// The `ToolKind` variant of `kind = "…"` (`Other` when not given or unknown).
    pub(crate) fn kind_variant(&self) -> &'static str {
        let kind = self.kind.as_ref().map(LitStr::value);
        KINDS
            .iter()
            .find(|(k, _)| Some(*k) == kind.as_deref())
            .map_or("Other", |(_, variant)| variant)
    }

    /// The names of the parameters that are plain identifiers.
    pub(crate) fn param_names(&self) -> Vec<String> {
        self.params
            .iter()
            .filter_map(Param::ident)
            .map(ToString::to_string)
            .collect()
    }
}

impl Param {
    /// The parameter's name, when it is a plain identifier (the only form `check` accepts).
    pub(crate) fn ident(&self) -> Option<&Ident> {
        match &self.pat {
            Pat::Ident(p) if p.subpat.is_none() && p.by_ref.is_none() => Some(&p.ident),
            _ => None,
        }
    }

    /// `PathBuf`, `Option<PathBuf>` or `Vec<PathBuf>` (any path prefix): sent as the call's
    /// locations.
    pub(crate) fn is_path(&self) -> bool {
        fn last(ty: &Type) -> Option<&syn::PathSegment> {
            match ty {
                Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
                _ => None,
            }
        }
        let is_path_buf =
            |ty: &Type| last(ty).is_some_and(|s| s.ident == "PathBuf" && s.arguments.is_none());
        let Some(seg) = last(&self.ty) else {
            return false;
        };
        if seg.ident == "Option" || seg.ident == "Vec" {
            if let syn::PathArguments::AngleBracketed(args) = &seg.arguments
                && let [syn::GenericArgument::Type(inner)] =
                    args.args.iter().collect::<Vec<_>>()[..]
            {
                return is_path_buf(inner);
            }
            return false;
        }
        is_path_buf(&self.ty)
    }
}
