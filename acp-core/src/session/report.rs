//! What a session shows the user beside the agent's messages: its plans (checklists and
//! Markdown, by id), notices, and context compactions. Each call is one update of the
//! runtime's account; the codec shows each client what it advertised, or the nearest thing it
//! understands (see `protocol::shown`).

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;

use super::Session;
use crate::Result;
use crate::schema::{
    CompactionId, CompactionStatus, CompactionSummaryChunk, CompactionUpdate, ContentBlock, Notice,
    PlanEntry, PlanId, PlanItems, PlanMarkdown, PlanRemoved, PlanUpdate, PlanUpdateContent,
    SessionUpdate,
};

/// The id of the session's plan that [`Session::plan`] and [`Session::markdown_plan`] write.
pub const SESSION_PLAN: &str = "plan";

impl Session {
    /// Sends the session's plan as a checklist: every entry with its current status, replacing
    /// the whole plan in the client.
    ///
    /// A client that advertised `plan` (every v2 client) gets a `plan_update` of the plan
    /// [`SESSION_PLAN`]; any other a legacy `plan`.
    ///
    /// ```no_run
    /// # async fn turn(cx: &acp_core::Session) -> acp_core::Result<()> {
    /// use acp_core::schema::{PlanEntry, PlanEntryPriority, PlanEntryStatus};
    /// cx.plan([
    ///     PlanEntry::new("Reproduce", PlanEntryPriority::High, PlanEntryStatus::Completed),
    ///     PlanEntry::new("Fix the parser", PlanEntryPriority::High, PlanEntryStatus::InProgress),
    /// ])
    /// .await?;
    /// # Ok(()) }
    /// ```
    pub async fn plan(&self, entries: impl IntoIterator<Item = PlanEntry>) -> Result<()> {
        let items = PlanItems::new(SESSION_PLAN, entries.into_iter().collect());
        self.update_plan(PlanUpdateContent::Items(items)).await
    }

    /// Sends the session's plan as Markdown (the whole plan, not what changed), and the file
    /// that holds it, if any (a relative `path` is taken from the session's cwd).
    ///
    /// A client that advertised `plan` (every v2 client) gets a Markdown `plan_update` of the
    /// plan [`SESSION_PLAN`]; any other a legacy `plan` with one entry per top-level list item
    /// (`- [x] …` completed), or the whole text as one entry.
    ///
    /// ```no_run
    /// # async fn turn(cx: &acp_core::Session) -> acp_core::Result<()> {
    /// cx.markdown_plan("# Plan\n\n- [x] Reproduce\n- [ ] Fix the parser", Some("PLAN.md".into()))
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn markdown_plan(
        &self,
        markdown: impl Into<String>,
        path: Option<PathBuf>,
    ) -> Result<()> {
        let plan = PlanMarkdown::new(SESSION_PLAN, markdown).path(path);
        self.update_plan(PlanUpdateContent::Markdown(plan)).await
    }

    /// Replaces the plan with `plan`'s id (`plan_update`), for an agent that keeps several
    /// plans; a client without `plan` gets this plan as its legacy checklist.
    /// A relative Markdown `path` is taken from the session's cwd.
    pub async fn update_plan(&self, mut plan: PlanUpdateContent) -> Result<()> {
        if let PlanUpdateContent::Markdown(markdown) = &mut plan
            && let Some(path) = &mut markdown.path
            && !path.is_absolute()
        {
            *path = self.cwd().join(&*path);
        }
        self.update(SessionUpdate::PlanUpdate(PlanUpdate::new(plan)))
            .await
    }

    /// Removes the plan `id` (`plan_removed`); a client without `plan` gets an empty legacy
    /// checklist.
    pub async fn remove_plan(&self, id: impl Into<PlanId>) -> Result<()> {
        self.update(SessionUpdate::PlanRemoved(PlanRemoved::new(id)))
            .await
    }

    /// Tells the user something that is not part of the conversation (`notice`): a rate
    /// limit waited out, a model switched, a setting ignored. Sent only to a client that
    /// advertised `session.notices` (every v2 client), and never recorded in the session's
    /// history. Returns whether the client was sent it; where it matters that the user sees
    /// it, send an agent message when it was not.
    ///
    /// ```no_run
    /// # async fn turn(cx: &acp_core::Session) -> acp_core::Result<()> {
    /// use acp_core::schema::{Notice, NoticeSeverity};
    /// let notice = Notice::new(NoticeSeverity::Warning, "Rate limited: retrying in 4 s");
    /// if !cx.notice(notice).await? {
    ///     cx.message("(waiting out a rate limit)\n").await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn notice(&self, notice: Notice) -> Result<bool> {
        if !self.takes_notices() {
            return Ok(false);
        }
        self.update(SessionUpdate::Notice(notice)).await?;
        Ok(true)
    }

    /// Whether the client takes notices ([`notice`](Session::notice)).
    pub fn takes_notices(&self) -> bool {
        self.client_capabilities()
            .session
            .as_ref()
            .is_some_and(|s| s.notices.is_some())
    }

    /// Whether the client shows compactions ([`compaction`](Session::compaction)); they are
    /// recorded either way.
    pub fn shows_compaction(&self) -> bool {
        self.client_capabilities()
            .session
            .as_ref()
            .is_some_and(|s| s.compaction.is_some())
    }

    /// Starts a context compaction (`compaction_update`, `in_progress`): the agent is
    /// replacing older turns of its context with a summary. Stream the summary with
    /// [`Compaction::summary`] and end it with [`Compaction::completed`] (or
    /// [`failed`](Compaction::failed), [`cancelled`](Compaction::cancelled)).
    ///
    /// A client that advertised `session.compaction` (every v2 client) is shown it; it is
    /// recorded in the session's history either way, so such a client loading the session
    /// later sees it. `acp::llm` compacts with this.
    ///
    /// ```no_run
    /// # async fn turn(cx: &acp_core::Session) -> acp_core::Result<()> {
    /// let compaction = cx.compaction().await?;
    /// compaction.summary("The user is fixing the parser; tests in parser_tests.rs.").await?;
    /// compaction.completed().await?;
    /// # Ok(()) }
    /// ```
    pub async fn compaction(&self) -> Result<Compaction> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let id = CompactionId::new(super::registry::process_unique("compaction", &NEXT));
        self.update(SessionUpdate::CompactionUpdate(CompactionUpdate::new(
            id.clone(),
            CompactionStatus::InProgress,
        )))
        .await?;
        Ok(Compaction {
            cx: self.clone(),
            id,
        })
    }
}

/// A context compaction in progress, from [`Session::compaction`].
#[derive(Debug, Clone)]
pub struct Compaction {
    cx: Session,
    id: CompactionId,
}

impl Compaction {
    /// The compaction's id, unique within the session.
    pub fn id(&self) -> &CompactionId {
        &self.id
    }

    /// Appends `content` to the summary the compaction keeps (`compaction_summary_chunk`).
    pub async fn summary(&self, content: impl Into<ContentBlock>) -> Result<()> {
        self.cx
            .update(SessionUpdate::CompactionSummaryChunk(
                CompactionSummaryChunk::new(self.id.clone(), content.into()),
            ))
            .await
    }

    /// Ends the compaction: done, the summary stands for the older turns.
    pub async fn completed(self) -> Result<()> {
        self.status(CompactionUpdate::new(
            self.id.clone(),
            CompactionStatus::Completed,
        ))
        .await
    }

    /// Ends the compaction: it failed (`error` says why), the context is as it was.
    pub async fn failed(self, error: impl Into<String>) -> Result<()> {
        self.status(
            CompactionUpdate::new(self.id.clone(), CompactionStatus::Failed).error(error.into()),
        )
        .await
    }

    /// Ends the compaction: it was cancelled before it finished.
    pub async fn cancelled(self) -> Result<()> {
        self.status(CompactionUpdate::new(
            self.id.clone(),
            CompactionStatus::Cancelled,
        ))
        .await
    }

    async fn status(&self, update: CompactionUpdate) -> Result<()> {
        self.cx
            .update(SessionUpdate::CompactionUpdate(update))
            .await
    }
}
