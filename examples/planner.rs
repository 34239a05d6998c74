//! # planner — a multi-step turn that plans, revises its plan, and stops when told to
//!
//! Shows: publishing a plan and updating it as steps start and finish, revising the plan when
//! something unexpected turns up, thoughts between steps, several tool calls in one turn, and
//! honouring cancellation between steps (`cx.check_cancelled()?`).
//!
//! The prompt names a file to review (default `README.md`): the agent reads it through the
//! editor, measures it, and reports. A missing file changes the plan; an editor that does not
//! let agents read files gets a message saying so.
//!
//! Run it: `./scripts/demo planner "Cargo.toml"`, or point your editor's agent server setting
//! at `target/debug/examples/planner` (see the README).

use std::path::PathBuf;

use acp::{Json, PlanEntry, PlanEntryPriority, PlanEntryStatus, Prompt, Session, StopReason};
use serde::Serialize;

/// The agent: no state of its own.
#[derive(Default)]
pub struct Planner;

/// What the `measure` tool finds.
#[derive(Debug, Serialize)]
pub struct Stats {
    lines: usize,
    words: usize,
    headings: usize,
    todos: usize,
}

/// The plan as the user sees it: each step with its status.
struct Plan(Vec<(String, PlanEntryStatus)>);

impl Plan {
    fn new(steps: &[&str]) -> Self {
        Plan(
            steps
                .iter()
                .map(|s| ((*s).to_owned(), PlanEntryStatus::Pending))
                .collect(),
        )
    }

    /// Marks step `i` and publishes the whole plan (each update replaces the previous one).
    async fn mark(&mut self, cx: &Session, i: usize, status: PlanEntryStatus) -> acp::Result<()> {
        self.0[i].1 = status;
        self.publish(cx).await
    }

    /// Replaces the steps from `i` on.
    async fn revise(&mut self, cx: &Session, i: usize, steps: &[&str]) -> acp::Result<()> {
        self.0.truncate(i);
        self.0.extend(
            steps
                .iter()
                .map(|s| ((*s).to_owned(), PlanEntryStatus::Pending)),
        );
        self.publish(cx).await
    }

    async fn publish(&self, cx: &Session) -> acp::Result<()> {
        cx.plan(self.0.iter().map(|(step, status)| {
            PlanEntry::new(step.clone(), PlanEntryPriority::Medium, status.clone())
        }))
        .await
    }
}

#[acp::agent(name = "planner", title = "Planner")]
impl Planner {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        // An @-mentioned file (a resource link) is the one to review; else the text names it.
        let mentioned = prompt
            .links()
            .find_map(|link| link.uri.strip_prefix("file://").map(str::to_owned));
        let text = prompt.text();
        let target = match (mentioned, text.lines().next().unwrap_or_default().trim()) {
            (Some(path), _) => path,
            (None, "") => "README.md".to_owned(),
            (None, other) => other.to_owned(),
        };
        // Without the editor's file system there is nothing to review: say why, end normally.
        if !cx.fs().can_read() {
            cx.message(format!(
                "This editor does not let agents read files (no fs.readTextFile capability), \
                 so I can't review `{target}`."
            ))
            .await?;
            return Ok(StopReason::EndTurn);
        }
        let mut plan = Plan::new(&[
            &format!("Read {target}"),
            "Measure it",
            "Report what I found",
        ]);
        cx.thought(format!("I'll review {target} in three steps."))
            .await?;
        plan.publish(cx).await?;

        plan.mark(cx, 0, PlanEntryStatus::InProgress).await?;
        let text = match self.read(cx, PathBuf::from(&target)).await {
            Ok(text) => text,
            Err(e) if e.is_not_found() => {
                // Something unexpected: revise the rest of the plan.
                cx.thought(format!("{target} does not exist; I'll say so instead."))
                    .await?;
                plan.mark(cx, 0, PlanEntryStatus::Completed).await?;
                plan.revise(cx, 1, &["Explain that the file is missing"])
                    .await?;
                cx.check_cancelled()?;
                plan.mark(cx, 1, PlanEntryStatus::InProgress).await?;
                cx.message(format!("There is no `{target}` in this workspace."))
                    .await?;
                plan.mark(cx, 1, PlanEntryStatus::Completed).await?;
                return Ok(StopReason::EndTurn);
            }
            Err(e) => return Err(e),
        };
        plan.mark(cx, 0, PlanEntryStatus::Completed).await?;

        // Between steps: stop here if the user cancelled.
        cx.check_cancelled()?;
        plan.mark(cx, 1, PlanEntryStatus::InProgress).await?;
        let Json(stats) = self.measure(cx, text).await?;
        plan.mark(cx, 1, PlanEntryStatus::Completed).await?;

        cx.check_cancelled()?;
        plan.mark(cx, 2, PlanEntryStatus::InProgress).await?;
        cx.message(format!(
            "`{target}` has {} lines, {} words, {} headings and {} TODOs.",
            stats.lines, stats.words, stats.headings, stats.todos
        ))
        .await?;
        plan.mark(cx, 2, PlanEntryStatus::Completed).await?;
        Ok(StopReason::EndTurn)
    }

    /// Reads a text file through the editor.
    #[acp::tool(kind = "read", title = "Read {path}")]
    async fn read(&self, cx: &Session, path: PathBuf) -> acp::Result<String> {
        cx.fs().read_text_file(&path).await
    }

    /// Counts lines, words, Markdown headings and TODO markers in a text.
    #[acp::tool(kind = "think", title = "Measure the text")]
    async fn measure(&self, _cx: &Session, text: String) -> acp::Result<Json<Stats>> {
        Ok(Json(Stats {
            lines: text.lines().count(),
            words: text.split_whitespace().count(),
            headings: text.lines().filter(|l| l.starts_with('#')).count(),
            todos: text.matches("TODO").count(),
        }))
    }
}

#[tokio::main]
async fn main() -> acp::Result<()> {
    acp::init_logging();
    acp::serve_main(Planner).await
}
