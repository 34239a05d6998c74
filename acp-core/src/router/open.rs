//! Opening a session on the connection, for `session/new` and for a session reopened from the
//! store: the sign-in check, the client's MCP servers connected, the session's metadata saved,
//! and the answer with the agent's setup (modes, config options, slash commands).

use std::sync::Arc;

use tracing::warn;

use super::answer;
use crate::agent::{Agent, SessionSetup};
use crate::mcp;
use crate::peer::Frame;
use crate::schema::{
    self, AvailableCommand, Meta, RequestId, SessionConfigOption, SessionId, SessionModeState,
};
use crate::session::{Client, Connection, Session, SessionState};
use crate::store::StoredSession;
use crate::{Error, Result};

/// What the answer to an opened session carries.
pub(super) struct Opened {
    pub id: SessionId,
    pub modes: Option<SessionModeState>,
    pub config_options: Option<Vec<SessionConfigOption>>,
    pub meta: Option<Meta>,
}

/// `Err(AuthRequired)` unless the agent, which has authentication methods, says the user
/// is authenticated.
pub(super) async fn authenticated<A: Agent>(agent: &A, conn: &Arc<Connection>) -> Result<()> {
    if agent.auth_methods().is_empty() {
        return Ok(());
    }
    if agent.authenticated(&Client::new(conn.clone(), None)).await {
        Ok(())
    } else {
        Err(Error::AuthRequired)
    }
}

/// The editor's `systemPrompt` of a `method` request if the agent can apply it, else the
/// `-32602` that refuses the request before any session opens (see
/// [`check_system_prompt`](crate::session::check_system_prompt)).
pub(super) fn system_prompt<A: Agent>(
    agent: &A,
    method: &str,
    prompt: Option<schema::SystemPrompt>,
) -> Result<Option<schema::SystemPrompt>, schema::Error> {
    if prompt.is_none() {
        return Ok(None);
    }
    let offered = agent.capabilities().session_capabilities.system_prompt;
    crate::session::check_system_prompt(method, offered.as_ref(), prompt)
}

/// Starts connecting the session's MCP servers in the background (their tools named around
/// the agent's own).
pub(super) fn connect_mcp<A: Agent>(agent: &A, state: &Arc<SessionState>) {
    let reserved = agent
        .tools()
        .into_iter()
        .map(|t| t.name.into_owned())
        .collect();
    mcp::attach(state, reserved);
}

/// The answer to a request that opens a session, and where the session's slash commands
/// (`available_commands_update`) go relative to it.
pub(super) trait OpenAnswer: crate::protocol::Answer {
    /// Whether the commands are sent before the answer rather than after it.
    const COMMANDS_FIRST: bool = false;
}

/// The client learns the session's id from the answer: updates for it come after.
impl OpenAnswer for schema::NewSessionResponse {}

/// The spec: a `session/resume` sends no `session/update` before its answer.
impl OpenAnswer for schema::ResumeSessionResponse {}

/// The client learns the new session's id from the answer, as for `session/new`.
#[cfg(feature = "unstable-session-fork")]
impl OpenAnswer for schema::ForkSessionResponse {}

/// The answer ends the replay and nothing may follow it for the session: the client knows the
/// session (it named it), so the commands close the replay instead.
impl OpenAnswer for schema::LoadSessionResponse {
    const COMMANDS_FIRST: bool = true;
}

/// Answers a `session/new`, `load` or `resume` from the author's setup: the session is
/// registered and answered with `response` (its modes and config options as they are now),
/// and told its slash commands — after the answer for `new` (the client must know the session
/// before it gets updates for it) and `resume` (nothing goes before its answer), before it
/// for `load` (nothing may follow its answer): see [`OpenAnswer`]. An error of the author's is
/// answered instead, and the session dropped. `title` is the one the store keeps for a
/// reopened session.
pub(super) async fn open_session<A: Agent, T: OpenAnswer>(
    agent: &A,
    conn: &Connection,
    id: &RequestId,
    (state, title): (Arc<SessionState>, Option<String>),
    setup: Result<SessionSetup>,
    response: impl FnOnce(Opened) -> T,
) {
    let setup = match setup {
        Ok(setup) => setup,
        Err(e) => return answer(conn, id, Err::<(), _>(e)).await,
    };
    let mut commands = agent.commands();
    commands.extend(setup.commands);
    state.set_commands(commands.clone());
    let cx = Session::new(state.clone(), None);
    let (modes, config_options) = cx.settings_state();
    let opened = Opened {
        id: state.id().clone(),
        modes,
        config_options,
        meta: setup.meta,
    };
    let session_id = state.id().clone();
    if conn.peer().journal.store().is_none()
        && let Some(user) = conn.user()
    {
        conn.owners().record(&session_id, user);
    }
    save(conn, &state, title).await;
    if let Some(store) = conn.peer().journal.store() {
        super::lease::keep(store.clone(), &state);
    }
    conn.sessions().insert(state);
    if T::COMMANDS_FIRST {
        send_commands(conn, &session_id, commands).await;
        answer(conn, id, Ok(response(opened))).await;
    } else {
        answer(conn, id, Ok(response(opened))).await;
        send_commands(conn, &session_id, commands).await;
    }
}

/// Tells the client the session's slash commands, if it has any (not recorded: a reload sends
/// the commands of its own time).
async fn send_commands(conn: &Connection, session: &SessionId, commands: Vec<AvailableCommand>) {
    if commands.is_empty() {
        return;
    }
    let update = schema::SessionUpdate::AvailableCommandsUpdate(
        schema::AvailableCommandsUpdate::new(commands),
    );
    // Written in the connection's version; not recorded.
    if let Ok((frame, _)) = conn.update_frame(session, &update)
        && !frame.is_empty()
    {
        let frame = Frame::new(frame, None).of_session(session);
        let _ = conn.peer().send(frame).await;
    }
}

/// What the store keeps of a session besides its records (timestamps are the store's).
fn stored(state: &SessionState) -> StoredSession {
    StoredSession {
        id: state.id().clone(),
        cwd: state.roots().cwd.clone(),
        additional_directories: state.roots().additional.clone(),
        title: None,
        updated_at: String::new(),
        created_at: String::new(),
        owner: state.conn().user().map(str::to_owned),
        archived: false,
    }
}

/// Saves a new (or reopened) session's metadata; a failure is logged, the session goes on.
pub(super) async fn save(conn: &Connection, state: &SessionState, title: Option<String>) {
    if let Some(store) = conn.peer().journal.store() {
        let mut session = stored(state);
        session.title = title;
        if let Err(e) = store.save_session(&session).await {
            warn!(session = %state.id(), "could not save the session in the store: {e}");
        }
    }
}
