//! What a client is shown of the runtime's account: an update the client did not advertise
//! the capability for is written as the nearest update it understands, or not at all, as the
//! schema crate's doc comments require (`plan`, `session.notices`, `session.compaction`,
//! `subagents`, and a tool call's reference to a subagent's session). The account itself is recorded whole whatever one client was shown, so a
//! client with the capability sees it all when it loads the session; only notices, which are
//! live events and not history, are never recorded.
//!
//! v2 has these updates in its baseline: a v2 connection's client is given every capability
//! here when it initializes.

use serde_json::value::RawValue;

use crate::schema::{
    ClientCapabilities, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, PlanUpdateContent,
    SessionUpdate, ToolCallContent,
};

/// How one client is shown an update.
#[derive(Debug)]
pub(crate) enum Shown {
    /// As it is.
    AsIs,
    /// As this update instead (a legacy `plan` for a plan operation).
    Instead(Box<SessionUpdate>),
    /// Not at all.
    Hidden,
}

/// How a client with `client`'s capabilities is shown `update`.
pub(crate) fn shown(update: &SessionUpdate, client: &ClientCapabilities) -> Shown {
    let session = client.session.as_ref();
    let allowed = match update {
        SessionUpdate::PlanUpdate(update) if client.plan.is_none() => {
            return Shown::Instead(Box::new(SessionUpdate::Plan(legacy_plan(&update.plan))));
        }
        // The legacy checklist is one per session: a removed plan leaves it empty.
        SessionUpdate::PlanRemoved(_) if client.plan.is_none() => {
            return Shown::Instead(Box::new(SessionUpdate::Plan(Plan::new(Vec::new()))));
        }
        SessionUpdate::Notice(_) => session.is_some_and(|s| s.notices.is_some()),
        SessionUpdate::CompactionUpdate(_) | SessionUpdate::CompactionSummaryChunk(_) => {
            session.is_some_and(|s| s.compaction.is_some())
        }
        SessionUpdate::SubagentUpdate(_)
        | SessionUpdate::SessionMessage(_)
        | SessionUpdate::SessionMessageChunk(_) => client.subagents.is_some(),
        // A reference to a session the client does not know (a subagent's) is left out.
        SessionUpdate::ToolCall(call)
            if client.subagents.is_none() && refers_to_sessions(&call.content) =>
        {
            let mut call = call.clone();
            call.content
                .retain(|c| !matches!(c, ToolCallContent::Session(_)));
            return Shown::Instead(Box::new(SessionUpdate::ToolCall(call)));
        }
        SessionUpdate::ToolCallUpdate(update)
            if client.subagents.is_none()
                && update
                    .fields
                    .content
                    .as_deref()
                    .is_some_and(refers_to_sessions) =>
        {
            let mut update = update.clone();
            if let Some(content) = &mut update.fields.content {
                content.retain(|c| !matches!(c, ToolCallContent::Session(_)));
            }
            return Shown::Instead(Box::new(SessionUpdate::ToolCallUpdate(update)));
        }
        _ => true,
    };
    if allowed { Shown::AsIs } else { Shown::Hidden }
}

/// Whether a tool call's `content` refers to another session.
fn refers_to_sessions(content: &[ToolCallContent]) -> bool {
    content
        .iter()
        .any(|c| matches!(c, ToolCallContent::Session(_)))
}

/// Whether `update` belongs in the session's history (everything but notices, which the
/// protocol calls live events).
pub(crate) fn kept(update: &SessionUpdate) -> bool {
    !matches!(update, SessionUpdate::Notice(_))
}

/// The kinds of update [`shown`] may change, as the recorded account's tag names them.
const GATED: [&str; 8] = [
    "plan_update",
    "plan_removed",
    "notice",
    "compaction_update",
    "compaction_summary_chunk",
    "subagent_update",
    "session_message",
    "session_message_chunk",
];

/// Whether the recorded update `raw` (its JSON text) may be shown otherwise than as it is:
/// read cheaply from its tag, which serde writes first; text written otherwise is assumed to.
pub(crate) fn may_differ(raw: &RawValue) -> bool {
    const TAG: &str = r#"{"sessionUpdate":""#;
    let Some(rest) = raw.get().strip_prefix(TAG) else {
        return true;
    };
    let kind = rest.split('"').next().unwrap_or_default();
    GATED.contains(&kind)
        || (matches!(kind, "tool_call" | "tool_call_update")
            && raw.get().contains(r#""type":"session""#))
}

/// The legacy checklist standing for a plan: its entries, or for a Markdown plan one entry
/// per list item (`- [x] done` is completed, `- [ ] todo` pending), or the whole text as one
/// entry when it has no list.
fn legacy_plan(plan: &PlanUpdateContent) -> Plan {
    match plan {
        PlanUpdateContent::Items(items) => Plan::new(items.entries.clone()),
        PlanUpdateContent::Markdown(markdown) => Plan::new(markdown_entries(&markdown.content)),
        // A kind of plan this build does not know: nothing it could show.
        _ => Plan::new(Vec::new()),
    }
}

/// The top-level list items of Markdown `text` as checklist entries.
fn markdown_entries(text: &str) -> Vec<PlanEntry> {
    let entries: Vec<PlanEntry> = text
        .lines()
        .filter_map(list_item)
        .map(|(content, status)| PlanEntry::new(content, PlanEntryPriority::Medium, status))
        .collect();
    if entries.is_empty() && !text.trim().is_empty() {
        return vec![PlanEntry::new(
            text.trim(),
            PlanEntryPriority::Medium,
            PlanEntryStatus::Pending,
        )];
    }
    entries
}

/// A top-level Markdown list item (`- `, `* `, `+ `, `1. `, `1) `), with its checkbox's status.
fn list_item(line: &str) -> Option<(&str, PlanEntryStatus)> {
    let item = ["- ", "* ", "+ "]
        .iter()
        .find_map(|bullet| line.strip_prefix(bullet))
        .or_else(|| {
            let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let rest = &line[digits..];
            (digits > 0)
                .then(|| rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")))
                .flatten()
        })?
        .trim();
    let (status, item) = if let Some(done) = item
        .strip_prefix("[x] ")
        .or_else(|| item.strip_prefix("[X] "))
    {
        (PlanEntryStatus::Completed, done)
    } else if let Some(todo) = item.strip_prefix("[ ] ") {
        (PlanEntryStatus::Pending, todo)
    } else {
        (PlanEntryStatus::Pending, item)
    };
    (!item.is_empty()).then(|| (item.trim(), status))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{
        ClientSessionCapabilities, CompactionCapabilities, Notice, NoticeCapabilities,
        NoticeSeverity, PlanCapabilities, PlanItems, PlanMarkdown, PlanRemoved, PlanUpdate,
    };

    fn markdown(text: &str) -> SessionUpdate {
        SessionUpdate::PlanUpdate(PlanUpdate::new(PlanUpdateContent::Markdown(
            PlanMarkdown::new("p", text),
        )))
    }

    fn legacy(shown: Shown) -> Vec<(String, PlanEntryStatus)> {
        match shown {
            Shown::Instead(update) => match *update {
                SessionUpdate::Plan(plan) => plan
                    .entries
                    .into_iter()
                    .map(|e| (e.content, e.status))
                    .collect(),
                other => panic!("expected a legacy plan, got {other:?}"),
            },
            other => panic!("expected a legacy plan, got {other:?}"),
        }
    }

    #[test]
    fn a_markdown_plan_is_a_checklist_to_a_client_without_plan_operations() {
        let text = "# Plan\n\n1. Reproduce\n- [x] Read the code\n  - nested detail\n* [ ] Fix\n";
        let none = ClientCapabilities::new();
        assert_eq!(
            legacy(shown(&markdown(text), &none)),
            [
                ("Reproduce".into(), PlanEntryStatus::Pending),
                ("Read the code".into(), PlanEntryStatus::Completed),
                ("Fix".into(), PlanEntryStatus::Pending),
            ]
        );
        assert_eq!(
            legacy(shown(&markdown(" Just do it. "), &none)),
            [("Just do it.".into(), PlanEntryStatus::Pending)]
        );
        let with = ClientCapabilities::new().plan(PlanCapabilities::new());
        assert!(matches!(shown(&markdown(text), &with), Shown::AsIs));
    }

    #[test]
    fn items_and_removal_fall_back_to_the_legacy_plan() {
        let none = ClientCapabilities::new();
        let entry = PlanEntry::new("a", PlanEntryPriority::High, PlanEntryStatus::InProgress);
        let items = SessionUpdate::PlanUpdate(PlanUpdate::new(PlanUpdateContent::Items(
            PlanItems::new("p", vec![entry]),
        )));
        assert_eq!(
            legacy(shown(&items, &none)),
            [("a".into(), PlanEntryStatus::InProgress)]
        );
        let removed = SessionUpdate::PlanRemoved(PlanRemoved::new("p"));
        assert!(legacy(shown(&removed, &none)).is_empty());
    }

    #[test]
    fn notices_and_compaction_only_to_clients_that_asked() {
        let notice = SessionUpdate::Notice(Notice::new(NoticeSeverity::Info, "hi"));
        let none = ClientCapabilities::new();
        assert!(matches!(shown(&notice, &none), Shown::Hidden));
        let compaction = ClientCapabilities::new()
            .session(ClientSessionCapabilities::new().compaction(CompactionCapabilities::new()));
        assert!(matches!(shown(&notice, &compaction), Shown::Hidden));
        let notices = ClientCapabilities::new()
            .session(ClientSessionCapabilities::new().notices(NoticeCapabilities::new()));
        assert!(matches!(shown(&notice, &notices), Shown::AsIs));
        assert!(!kept(&notice));
    }

    #[test]
    fn the_tag_tells_which_records_may_differ() {
        let raw = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        assert!(may_differ(&raw(
            r#"{"sessionUpdate":"plan_update","plan":{}}"#
        )));
        assert!(!may_differ(&raw(
            r#"{"sessionUpdate":"plan","entries":[]}"#
        )));
        assert!(!may_differ(&raw(
            r#"{"sessionUpdate":"agent_message_chunk","content":{}}"#
        )));
        assert!(may_differ(&raw(r#"{ "sessionUpdate": "plan" }"#)));
    }
}
