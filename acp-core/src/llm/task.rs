//! Sub-agents from the loop: [`Model::task`] hands a self-contained task to the model in a
//! child session ([`Session::subagent`]), with a context of its own and the tools the author
//! allows it (read-only by default), and gives back its final answer: what an agent's `task`
//! tool (Claude Code's `Task`: a description and a prompt) returns to the model.

use super::{Conversation, Model, Role};
use crate::schema::ToolKind;
use crate::{Prompt, Result, Session, Subagent, ToolDef};

/// The tools a task's subagent is offered unless the author says otherwise
/// ([`Model::task_with`]): those that only look (read, search, fetch, think).
pub fn read_only(tool: &ToolDef) -> bool {
    matches!(
        tool.kind,
        ToolKind::Read | ToolKind::Search | ToolKind::Fetch | ToolKind::Think
    )
}

impl Model {
    /// Runs `prompt` as a subagent titled `description`: the model, in a child session with
    /// a context of its own, with the session's [read-only](read_only) tools (never the
    /// `task` tool itself), until it answers; returns its final answer. The child's work is
    /// shown as a subagent (or inside the calling tool call, to an editor without subagents);
    /// its failure is this call's.
    ///
    /// An agent offers it to its model as a tool:
    ///
    /// ```
    /// # struct Coder { model: acp_core::llm::Model }
    /// # impl Coder {
    /// /// Hands a self-contained task (research, a review) to a subagent with a fresh
    /// /// context; returns its findings.
    /// // #[acp::tool(kind = "think", title = "{description}")]
    /// async fn task(
    ///     &self,
    ///     cx: &acp_core::Session,
    ///     description: String,
    ///     prompt: String,
    /// ) -> acp_core::Result<String> {
    ///     self.model.task(cx, &description, &prompt).await
    /// }
    /// # }
    /// ```
    pub async fn task(&self, cx: &Session, description: &str, prompt: &str) -> Result<String> {
        self.task_with(cx, description, prompt, read_only).await
    }

    /// [`task`](Self::task), with the tools `allow` holds for (never the `task` tool itself).
    pub async fn task_with(
        &self,
        cx: &Session,
        description: &str,
        prompt: &str,
        allow: impl Fn(&ToolDef) -> bool + Send + Sync + 'static,
    ) -> Result<String> {
        let model = self
            .clone()
            .allow_tools(move |tool| tool.name != "task" && allow(tool));
        let subagent = Subagent::new(description).instructions(prompt.to_owned());
        let prompt = Prompt::from(prompt);
        cx.subagent(subagent, |child| async move {
            model.run(&child, &prompt).await?;
            Ok(final_answer(&child))
        })
        .await
    }
}

/// The text of the model's last answer in `child`'s conversation.
fn final_answer(child: &Session) -> String {
    let conversation = child.persisted::<Conversation>();
    let conversation = conversation.lock();
    conversation
        .messages()
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant && !m.text().is_empty())
        .map(super::Message::text)
        .unwrap_or_default()
}
