//! The editor's system prompt for a session (`systemPrompt` of `session/new`, `load`,
//! `resume`): checked against what the agent advertised before the session opens, kept with
//! the session (and its store), and given to the author ([`Session::system_prompt`]).

use serde::{Deserialize, Serialize};

use super::{Persist, Session};
use crate::schema::{
    self, ContentBlock, ErrorCode, SessionSystemPromptCapabilities, SystemPrompt, SystemPromptMode,
};

/// The session's system prompt from the editor, kept in the session store so that a load or
/// resume without one keeps it (the protocol lets the agent do so).
#[derive(Debug, Default, Serialize, Deserialize)]
struct EditorSystemPrompt(Option<SystemPrompt>);

impl Persist for EditorSystemPrompt {
    const KEY: &'static str = "acp.system_prompt";
}

/// `prompt`, the `systemPrompt` of a `method` request, if the agent can apply it as
/// `offered` (its `sessionCapabilities.systemPrompt`); else the `-32602` error that refuses
/// the request before any session is created, loaded or resumed: an agent that does not
/// advertise it, a mode it does not advertise (`override` without `mode.override`, or one
/// the protocol does not know), no content, or content other than text.
pub(crate) fn check(
    method: &str,
    offered: Option<&SessionSystemPromptCapabilities>,
    prompt: Option<SystemPrompt>,
) -> Result<Option<SystemPrompt>, schema::Error> {
    let Some(prompt) = prompt else {
        return Ok(None);
    };
    let refuse = |why: String| {
        Err(schema::Error::new(
            ErrorCode::InvalidParams.into(),
            format!("{method}: `systemPrompt` {why}"),
        ))
    };
    let Some(offered) = offered else {
        return refuse(
            "is not taken by this agent (it does not advertise \
             `sessionCapabilities.systemPrompt`)"
                .into(),
        );
    };
    match &prompt.mode {
        SystemPromptMode::Append => {}
        SystemPromptMode::Override
            if offered
                .mode
                .as_ref()
                .is_some_and(|mode| mode.override_.is_some()) => {}
        SystemPromptMode::Override => {
            return refuse(
                "mode `override` is not supported by this agent (it does not advertise \
                 `sessionCapabilities.systemPrompt.mode.override`): use `append`"
                    .into(),
            );
        }
        other => {
            let mode = serde_json::to_string(other).unwrap_or_default();
            return refuse(format!(
                "mode {mode} is not supported by this agent: use `append`"
            ));
        }
    }
    if prompt.content.is_empty() {
        return refuse("has no content: send text blocks, or no `systemPrompt`".into());
    }
    if let Some(block) = prompt
        .content
        .iter()
        .find(|block| !matches!(block, ContentBlock::Text(_)))
    {
        let kind = serde_json::to_value(block)
            .ok()
            .and_then(|v| v["type"].as_str().map(str::to_owned))
            .unwrap_or_default();
        return refuse(format!(
            "has a `{kind}` block: this agent takes text blocks only"
        ));
    }
    Ok(Some(prompt))
}

impl Session {
    /// The system prompt the editor gave this session, if any (`systemPrompt` of
    /// `session/new`, `load` or `resume`; a load or resume without one keeps the session's),
    /// in a mode the agent advertised (see [`Agent::capabilities`](crate::Agent::capabilities):
    /// `#[acp::agent(system_prompt)]`, or `system_prompt(override)`) and with text content
    /// only (anything else was refused before the session opened).
    ///
    /// `acp::llm`'s `Model::run` applies it by itself; an agent with a model of its own
    /// applies it as the mode says: [`append`](SystemPromptMode::Append) after its own
    /// instructions, [`override`](SystemPromptMode::Override) instead of them.
    pub fn system_prompt(&self) -> Option<SystemPrompt> {
        self.persisted::<EditorSystemPrompt>().lock().0.clone()
    }

    /// The instructions for a model in this session: the agent's own (`own`, if any) with the
    /// editor's [`system_prompt`](Session::system_prompt) applied (after them for `append`,
    /// instead of them for `override`), its text blocks joined by blank lines.
    pub fn instructions(&self, own: Option<&str>) -> Option<String> {
        let Some(prompt) = self.system_prompt() else {
            return own.map(str::to_owned);
        };
        let editor = prompt
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(text) => Some(text.text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n\n");
        Some(match (prompt.mode, own) {
            (SystemPromptMode::Append, Some(own)) => format!("{own}\n\n{editor}"),
            _ => editor,
        })
    }

    /// Gives the session the editor's system prompt (already [`check`]ed); none keeps the one
    /// it has.
    pub(crate) fn set_system_prompt(&self, prompt: Option<SystemPrompt>) {
        if let Some(prompt) = prompt {
            self.persisted::<EditorSystemPrompt>().lock().0 = Some(prompt);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{
        ImageContent, SessionSystemPromptModeCapabilities, SessionSystemPromptOverrideCapabilities,
    };

    fn text(mode: SystemPromptMode) -> SystemPrompt {
        SystemPrompt::new(vec!["Be brief.".into()]).mode(mode)
    }

    #[test]
    fn append_is_taken_where_advertised_and_override_only_where_its_mode_is() {
        let append = SessionSystemPromptCapabilities::new();
        let both = SessionSystemPromptCapabilities::new().mode(
            SessionSystemPromptModeCapabilities::new()
                .override_(SessionSystemPromptOverrideCapabilities::new()),
        );
        let m = crate::protocol::methods::SESSION_NEW;
        assert!(check(m, None, None).unwrap().is_none());
        assert!(check(m, Some(&append), Some(text(SystemPromptMode::Append))).is_ok());
        assert!(check(m, Some(&both), Some(text(SystemPromptMode::Override))).is_ok());
        for (offered, prompt, says) in [
            (None, text(SystemPromptMode::Append), "does not advertise"),
            (
                Some(&append),
                text(SystemPromptMode::Override),
                "mode.override",
            ),
            (
                Some(&both),
                text(SystemPromptMode::Other("_strict".into())),
                "\"_strict\"",
            ),
            (Some(&both), SystemPrompt::new(vec![]), "no content"),
            (
                Some(&both),
                SystemPrompt::new(vec![ContentBlock::Image(ImageContent::new(
                    "AA",
                    "image/png",
                ))]),
                "`image` block",
            ),
        ] {
            let e = check(m, offered, Some(prompt)).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidParams);
            assert!(e.message.contains(says), "{}", e.message);
        }
    }
}
