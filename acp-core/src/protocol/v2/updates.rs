//! The account's updates (v1's `SessionUpdate`) as v2's, typed at both ends, and the one
//! request the runtime sends a v2 client that carries a tool call
//! (`session/request_permission`).
//!
//! Field by field where the two versions part: a `tool_call` is the `tool_call_update` that
//! creates it, a diff is `changes` plus a git patch, a `plan` is a `plan_update`, a command is
//! tagged `command` and its input `text`, a config option has a `configId` and a group a
//! `groupId`, a tool call location's line is 1-based. Through [`same_shape`] where the wire
//! shape is the same (content blocks, notices, compactions, subagents, session messages).

use serde_json::value::RawValue;

use super::{PLAN_ID, notification, same_shape};
use crate::Result;
use crate::schema::{self, SessionId, v2 as t};
use agent_client_protocol_schema::MaybeUndefined;

/// The id a message chunk recorded without one gets on v2, where every chunk has an id (the
/// runtime stamps the agent's chunks, and a prompt's; only a prompt recorded before ids were
/// stamped has none).
pub(crate) const UNSTAMPED_MESSAGE_ID: &str = "msg_user";

/// `update` (the account's, v1) as v2's; `None` where v2 has no counterpart:
/// `current_mode_update` (modes are the config option of category `mode` on v2, whose
/// `config_option_update` the runtime sends beside it), and an update whose content has no v2
/// form (logged).
pub(crate) fn update(update: &schema::SessionUpdate) -> Option<t::SessionUpdate> {
    use schema::SessionUpdate as V1;
    use t::SessionUpdate as V2;
    Some(match update {
        V1::UserMessageChunk(c) => V2::UserMessageChunk(chunk(c)?),
        V1::AgentMessageChunk(c) => V2::AgentMessageChunk(chunk(c)?),
        V1::AgentThoughtChunk(c) => V2::AgentThoughtChunk(chunk(c)?),
        V1::ToolCall(call) => V2::ToolCallUpdate(tool_call(call)),
        V1::ToolCallUpdate(patch) => V2::ToolCallUpdate(tool_call_update(patch)),
        V1::Plan(plan) => V2::PlanUpdate(plan_update(plan)),
        V1::AvailableCommandsUpdate(commands) => V2::AvailableCommandsUpdate(
            t::AvailableCommandsUpdate::new(
                commands.available_commands.iter().map(command).collect(),
            )
            .meta(commands.meta.clone()),
        ),
        V1::ConfigOptionUpdate(options) => V2::ConfigOptionUpdate(
            t::ConfigOptionUpdate::new(config_options(&options.config_options))
                .meta(options.meta.clone()),
        ),
        V1::SessionInfoUpdate(info) => V2::SessionInfoUpdate(
            t::SessionInfoUpdate::new()
                .title(info.title.clone())
                .updated_at(info.updated_at.clone())
                .meta(given(info.meta.clone())),
        ),
        V1::UsageUpdate(usage) => V2::UsageUpdate(
            t::UsageUpdate::new(usage.used, usage.size)
                .cost(given(usage.cost.as_ref().map(|cost| {
                    t::Cost::new(cost.amount, cost.currency.clone()).meta(cost.meta.clone())
                })))
                .meta(given(usage.meta.clone())),
        ),
        V1::CurrentModeUpdate(_) => return None,
        // The same wire shape in both versions.
        V1::PlanUpdate(plan) => V2::PlanUpdate(convert(plan)?),
        V1::PlanRemoved(plan) => V2::PlanRemoved(convert(plan)?),
        V1::Notice(notice) => V2::Notice(convert(notice)?),
        V1::CompactionUpdate(compaction) => V2::CompactionUpdate(convert(compaction)?),
        V1::CompactionSummaryChunk(chunk) => V2::CompactionSummaryChunk(convert(chunk)?),
        V1::SubagentUpdate(subagent) => V2::SubagentUpdate(convert(subagent)?),
        V1::SessionMessage(message) => V2::SessionMessage(convert(message)?),
        V1::SessionMessageChunk(chunk) => V2::SessionMessageChunk(convert(chunk)?),
        // An update of a schema feature this crate does not name (prompt suggestions,
        // cursors): the same `sessionUpdate` and shape in v2.
        other => convert(other)?,
    })
}

/// The v2 `session/update` frame of `session` carrying `update` (the account's); `None` when
/// v2 has no counterpart (see [`update`]).
pub(crate) fn session_update(
    session: &SessionId,
    update: &schema::SessionUpdate,
) -> Result<Option<Vec<u8>>> {
    match self::update(update) {
        Some(update) => notification(session, update).map(Some),
        None => Ok(None),
    }
}

/// The v2 frame replaying `recorded` (an update of the account, v1 JSON text, as the store
/// keeps it) of `session`; `None` when v2 has no counterpart, and for a record that no longer
/// reads as a v1 update (logged and skipped: one stale record does not end a replay).
pub(crate) fn replayed_update(session: &SessionId, recorded: &RawValue) -> Result<Option<Vec<u8>>> {
    match serde_json::from_str::<schema::SessionUpdate>(recorded.get()) {
        Ok(update) => session_update(session, &update),
        Err(e) => {
            tracing::debug!(%session, "a recorded update is not replayed on v2: {e}");
            Ok(None)
        }
    }
}

/// The `user_message` echoing a prompt: its content `blocks`, under the id `message`.
pub(crate) fn user_message(
    message: &schema::MessageId,
    blocks: &[schema::ContentBlock],
) -> t::SessionUpdate {
    let content = blocks.iter().filter_map(content_block).collect::<Vec<_>>();
    t::SessionUpdate::UserMessage(t::UserMessage::new(message.0.clone()).content(content))
}

/// A v1 `session/request_permission`'s params as v2's: the prompt's `title` (the tool call's,
/// or "Allow this tool call?"), and the tool call (its content in v2's shape) as the subject.
pub(crate) fn permission_request(
    params: schema::RequestPermissionRequest,
) -> t::RequestPermissionRequest {
    let title = params
        .tool_call
        .fields
        .title
        .clone()
        .unwrap_or_else(|| "Allow this tool call?".to_owned());
    let options = params
        .options
        .iter()
        .map(|option| {
            t::PermissionOption::new(
                option.option_id.0.clone(),
                option.name.clone(),
                permission_option_kind(option.kind),
            )
            .meta(option.meta.clone())
        })
        .collect();
    let subject = t::ToolCallPermissionSubject::new(tool_call_update(&params.tool_call));
    t::RequestPermissionRequest::new(params.session_id.0.clone(), title, options)
        .subject(t::RequestPermissionSubject::ToolCall(Box::new(subject)))
        .meta(params.meta)
}

fn permission_option_kind(kind: schema::PermissionOptionKind) -> t::PermissionOptionKind {
    use schema::PermissionOptionKind as V1;
    match kind {
        V1::AllowOnce => t::PermissionOptionKind::AllowOnce,
        V1::AllowAlways => t::PermissionOptionKind::AllowAlways,
        V1::RejectOnce => t::PermissionOptionKind::RejectOnce,
        V1::RejectAlways => t::PermissionOptionKind::RejectAlways,
        // A kind of a newer v1: its name (v2 keeps the kinds it does not know).
        other => same_shape(&other)
            .unwrap_or_else(|_| t::PermissionOptionKind::Other(format!("{other:?}"))),
    }
}

/// A v1 value as the v2 type of the same wire shape; `None` (logged) if they ever part.
fn convert<V1: serde::Serialize, V2: serde::de::DeserializeOwned>(value: &V1) -> Option<V2> {
    same_shape(value)
        .inspect_err(|e| {
            tracing::debug!(
                "no v2 {} for this v1 value: {e}",
                std::any::type_name::<V2>()
            );
        })
        .ok()
}

/// An optional v1 field as a v2 field that may be left out: absent when v1 has none (not
/// `null`, which would clear it).
fn given<T>(value: Option<T>) -> MaybeUndefined<T> {
    value.map_or(MaybeUndefined::Undefined, MaybeUndefined::Value)
}

/// A message or thought chunk: every one has an id on v2 ([`UNSTAMPED_MESSAGE_ID`] for one
/// recorded without).
fn chunk(chunk: &schema::ContentChunk) -> Option<t::ContentChunk> {
    let id = chunk
        .message_id
        .as_ref()
        .map_or_else(|| UNSTAMPED_MESSAGE_ID.into(), |id| id.0.clone());
    Some(t::ContentChunk::new(content_block(&chunk.content)?, id).meta(chunk.meta.clone()))
}

/// A content block: the same shape in both versions but for a resource link's `size`, unsigned
/// on v2 (a negative one, meaningless, is left out).
pub(super) fn content_block(block: &schema::ContentBlock) -> Option<t::ContentBlock> {
    if let schema::ContentBlock::ResourceLink(link) = block
        && link.size.is_some_and(|size| size < 0)
    {
        let mut link = link.clone();
        link.size = None;
        return convert(&schema::ContentBlock::ResourceLink(link));
    }
    convert(block)
}

/// A v1 `tool_call` as the v2 `tool_call_update` that creates it. As v1 writes it, a kind
/// `other`, a status `pending` and empty lists are left out (what a client assumes of a new
/// tool call).
fn tool_call(call: &schema::ToolCall) -> t::ToolCallUpdate {
    let mut update = t::ToolCallUpdate::new(call.tool_call_id.0.clone())
        .title(call.title.clone())
        .name(given(call.name.clone()))
        .raw_input(given(call.raw_input.clone()))
        .raw_output(given(call.raw_output.clone()))
        .meta(given(call.meta.clone()));
    if call.kind != schema::ToolKind::Other {
        update = update.kind(tool_kind(call.kind));
    }
    if call.status != schema::ToolCallStatus::Pending {
        update = update.status(tool_status(call.status));
    }
    if !call.content.is_empty() {
        update = update.content(tool_content(&call.content));
    }
    if !call.locations.is_empty() {
        update = update.locations(locations(&call.locations));
    }
    update
}

/// A v1 `tool_call_update`: the fields it gives, in v2's shape.
fn tool_call_update(patch: &schema::ToolCallUpdate) -> t::ToolCallUpdate {
    let fields = &patch.fields;
    t::ToolCallUpdate::new(patch.tool_call_id.0.clone())
        .title(given(fields.title.clone()))
        .name(given(fields.name.clone()))
        .kind(given(fields.kind.map(tool_kind)))
        .status(given(fields.status.map(tool_status)))
        .content(given(fields.content.as_deref().map(tool_content)))
        .locations(given(fields.locations.as_deref().map(locations)))
        .raw_input(given(fields.raw_input.clone()))
        .raw_output(given(fields.raw_output.clone()))
        .meta(given(patch.meta.clone()))
}

fn tool_kind(kind: schema::ToolKind) -> t::ToolKind {
    use schema::ToolKind as V1;
    match kind {
        V1::Read => t::ToolKind::Read,
        V1::Edit => t::ToolKind::Edit,
        V1::Delete => t::ToolKind::Delete,
        V1::Move => t::ToolKind::Move,
        V1::Search => t::ToolKind::Search,
        V1::Execute => t::ToolKind::Execute,
        V1::Think => t::ToolKind::Think,
        V1::Fetch => t::ToolKind::Fetch,
        V1::SwitchMode => t::ToolKind::SwitchMode,
        // `other`, and a kind of a newer v1 (v2 names every kind v1 does).
        other => same_shape(&other).unwrap_or(t::ToolKind::Other),
    }
}

fn tool_status(status: schema::ToolCallStatus) -> t::ToolCallStatus {
    use schema::ToolCallStatus as V1;
    match status {
        V1::Pending => t::ToolCallStatus::Pending,
        V1::InProgress => t::ToolCallStatus::InProgress,
        V1::Completed => t::ToolCallStatus::Completed,
        V1::Failed => t::ToolCallStatus::Failed,
        // A status of a newer v1: its name (v2 keeps the statuses it does not know).
        other => {
            same_shape(&other).unwrap_or_else(|_| t::ToolCallStatus::Other(format!("{other:?}")))
        }
    }
}

/// A tool call's content in v2's shape: diffs become `changes` plus a patch; an item with no v2
/// form is left out (logged).
fn tool_content(items: &[schema::ToolCallContent]) -> Vec<t::ToolCallContent> {
    items
        .iter()
        .filter_map(|item| {
            Some(match item {
                schema::ToolCallContent::Content(c) => t::ToolCallContent::Content(Box::new(
                    t::Content::new(content_block(&c.content)?).meta(c.meta.clone()),
                )),
                schema::ToolCallContent::Diff(diff) => t::ToolCallContent::Diff(self::diff(diff)),
                schema::ToolCallContent::Terminal(terminal) => t::ToolCallContent::Terminal(
                    t::Terminal::new(terminal.terminal_id.0.clone()).meta(terminal.meta.clone()),
                ),
                schema::ToolCallContent::Session(session) => t::ToolCallContent::Session(
                    t::SessionReference::new(session.session_id.0.clone())
                        .meta(session.meta.clone()),
                ),
                other => convert(other)?,
            })
        })
        .collect()
}

/// A v1 diff (a whole file's old and new text) as v2's: one text change (`modify`, or `add`
/// without old text) and its git patch.
fn diff(diff: &schema::Diff) -> t::Diff {
    let path = diff.path.clone();
    let change = match diff.old_text {
        Some(_) => t::DiffChange::modify(path),
        None => t::DiffChange::add(path),
    }
    .file_type(t::DiffFileType::Text);
    let patch = diff
        .path
        .to_str()
        .map(|path| t::DiffPatch::new(git_patch(path, diff.old_text.as_deref(), &diff.new_text)));
    t::Diff::new(vec![change])
        .with_patch(patch)
        .meta(diff.meta.clone())
}

/// Tool call locations; v2's lines are 1-based, so v1's line 0 (no line) is left out.
fn locations(locations: &[schema::ToolCallLocation]) -> Vec<t::ToolCallLocation> {
    locations
        .iter()
        .map(|location| {
            t::ToolCallLocation::new(location.path.clone())
                .line(location.line)
                .meta(location.meta.clone())
        })
        .collect()
}

/// A `diff --git` section for a whole-file change of `path` from `old` (none: a new file) to
/// `new`: one hunk replacing every old line with every new one (what v1's `oldText` /
/// `newText` say; a client renders it as a diff).
pub(super) fn git_patch(path: &str, old: Option<&str>, new: &str) -> String {
    fn lines(text: &str) -> Vec<&str> {
        if text.is_empty() {
            Vec::new()
        } else {
            text.split_inclusive('\n').collect()
        }
    }
    let (old_lines, new_lines) = (lines(old.unwrap_or("")), lines(new));
    let mut out = format!("diff --git {path} {path}\n");
    if old.is_none() {
        out.push_str("new file mode 100644\n--- /dev/null\n");
    } else {
        out.push_str(&format!("--- {path}\n"));
    }
    out.push_str(&format!("+++ {path}\n"));
    let range = |n: usize| match n {
        0 => "0,0".to_owned(),
        1 => "1".to_owned(),
        n => format!("1,{n}"),
    };
    out.push_str(&format!(
        "@@ -{} +{} @@\n",
        range(old_lines.len()),
        range(new_lines.len())
    ));
    for (sign, line) in old_lines
        .iter()
        .map(|l| ('-', l))
        .chain(new_lines.iter().map(|l| ('+', l)))
    {
        out.push(sign);
        out.push_str(line);
        if !line.ends_with('\n') {
            out.push_str("\n\\ No newline at end of file\n");
        }
    }
    out
}

/// v1's plan as v2's one plan of the session ([`PLAN_ID`]), a checklist; the plan's `_meta` is
/// the checklist's.
fn plan_update(plan: &schema::Plan) -> t::PlanUpdate {
    let entries = plan.entries.iter().filter_map(convert).collect();
    t::PlanUpdate::new(t::PlanUpdateContent::Items(
        t::PlanItems::new(PLAN_ID, entries).meta(plan.meta.clone()),
    ))
}

/// A slash command: v2's commands are a tagged union (`command`, and other kinds), and an
/// input is tagged too (`text`: v1's unstructured input).
fn command(command: &schema::AvailableCommand) -> t::AvailableCommand {
    let input = command.input.as_ref().and_then(|input| match input {
        schema::AvailableCommandInput::Unstructured(text) => Some(t::AvailableCommandInput::Text(
            t::TextCommandInput::new(text.hint.clone()).meta(text.meta.clone()),
        )),
        other => convert(other),
    });
    t::AvailableCommand::Command(
        t::Command::new(command.name.clone(), command.description.clone())
            .input(input)
            .meta(command.meta.clone()),
    )
}

/// Config options in v2's shape: `id` is `configId`, a group's `group` is `groupId`; an option
/// of a kind v2 has no form for is left out (logged).
pub(super) fn config_options(
    options: &[schema::SessionConfigOption],
) -> Vec<t::SessionConfigOption> {
    options.iter().filter_map(config_option).collect()
}

fn config_option(option: &schema::SessionConfigOption) -> Option<t::SessionConfigOption> {
    let kind = match &option.kind {
        schema::SessionConfigKind::Select(select) => {
            let options = match &select.options {
                schema::SessionConfigSelectOptions::Ungrouped(values) => {
                    t::SessionConfigSelectOptions::Ungrouped(select_values(values))
                }
                schema::SessionConfigSelectOptions::Grouped(groups) => {
                    t::SessionConfigSelectOptions::Grouped(
                        groups
                            .iter()
                            .map(|group| {
                                t::SessionConfigSelectGroup::new(
                                    group.group.0.clone(),
                                    group.name.clone(),
                                    select_values(&group.options),
                                )
                                .meta(group.meta.clone())
                            })
                            .collect(),
                    )
                }
                other => convert(other)?,
            };
            t::SessionConfigKind::Select(t::SessionConfigSelect::new(
                select.current_value.0.clone(),
                options,
            ))
        }
        schema::SessionConfigKind::Boolean(boolean) => {
            t::SessionConfigKind::Boolean(t::SessionConfigBoolean::new(boolean.current_value))
        }
        other => convert(other)?,
    };
    let category = option.category.as_ref().and_then(|category| {
        use schema::SessionConfigOptionCategory as V1;
        Some(match category {
            V1::Mode => t::SessionConfigOptionCategory::Mode,
            V1::Model => t::SessionConfigOptionCategory::Model,
            V1::ModelConfig => t::SessionConfigOptionCategory::ModelConfig,
            V1::ThoughtLevel => t::SessionConfigOptionCategory::ThoughtLevel,
            V1::Other(name) => t::SessionConfigOptionCategory::Other(name.clone()),
            other => convert(other)?,
        })
    });
    Some(
        t::SessionConfigOption::new(option.id.0.clone(), option.name.clone(), kind)
            .description(option.description.clone())
            .category(category)
            .meta(option.meta.clone()),
    )
}

fn select_values(
    values: &[schema::SessionConfigSelectOption],
) -> Vec<t::SessionConfigSelectOption> {
    values
        .iter()
        .map(|value| {
            t::SessionConfigSelectOption::new(value.value.0.clone(), value.name.clone())
                .description(value.description.clone())
                .meta(value.meta.clone())
        })
        .collect()
}
