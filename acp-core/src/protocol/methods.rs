//! Method names, from the schema crate's constants: never typed by hand.

use crate::schema::{AGENT_METHOD_NAMES, CLIENT_METHOD_NAMES, PROTOCOL_LEVEL_METHOD_NAMES};

// Answered by the agent.
pub(crate) const INITIALIZE: &str = AGENT_METHOD_NAMES.initialize;
pub(crate) const AUTHENTICATE: &str = AGENT_METHOD_NAMES.authenticate;
pub(crate) const LOGOUT: &str = AGENT_METHOD_NAMES.logout;
pub(crate) const SESSION_NEW: &str = AGENT_METHOD_NAMES.session_new;
pub(crate) const SESSION_LOAD: &str = AGENT_METHOD_NAMES.session_load;
pub(crate) const SESSION_PROMPT: &str = AGENT_METHOD_NAMES.session_prompt;
pub(crate) const SESSION_SET_MODE: &str = AGENT_METHOD_NAMES.session_set_mode;
pub(crate) const SESSION_SET_CONFIG_OPTION: &str = AGENT_METHOD_NAMES.session_set_config_option;
pub(crate) const SESSION_CANCEL: &str = AGENT_METHOD_NAMES.session_cancel;
pub(crate) const SESSION_CLOSE: &str = AGENT_METHOD_NAMES.session_close;
pub(crate) const SESSION_LIST: &str = AGENT_METHOD_NAMES.session_list;
pub(crate) const SESSION_RESUME: &str = AGENT_METHOD_NAMES.session_resume;
pub(crate) const SESSION_DELETE: &str = AGENT_METHOD_NAMES.session_delete;
// Answered by the agent, Unstable (each behind its feature).
#[cfg(feature = "unstable-session-fork")]
pub(crate) const SESSION_FORK: &str = AGENT_METHOD_NAMES.session_fork;
#[cfg(feature = "unstable-session-status")]
pub(crate) const SESSION_STATUS: &str = AGENT_METHOD_NAMES.session_status;
#[cfg(feature = "unstable-session-set-title")]
pub(crate) const SESSION_SET_TITLE: &str = AGENT_METHOD_NAMES.session_set_title;
#[cfg(feature = "unstable-session-archive")]
pub(crate) const SESSION_ARCHIVE: &str = AGENT_METHOD_NAMES.session_archive;
#[cfg(feature = "unstable-session-archive")]
pub(crate) const SESSION_UNARCHIVE: &str = AGENT_METHOD_NAMES.session_unarchive;
#[cfg(feature = "unstable-session-options")]
pub(crate) const SESSION_OPTIONS: &str = AGENT_METHOD_NAMES.session_options;
pub(crate) const CANCEL_REQUEST: &str = PROTOCOL_LEVEL_METHOD_NAMES.cancel_request;

// Answered by the agent, v2's own.
#[cfg(feature = "v2")]
pub(crate) const AUTH_LOGIN: &str = crate::schema::v2::AGENT_METHOD_NAMES.auth_login;
#[cfg(feature = "v2")]
pub(crate) const AUTH_LOGOUT: &str = crate::schema::v2::AGENT_METHOD_NAMES.auth_logout;
#[cfg(feature = "v2")]
pub(crate) const TOOL_CALL_CANCEL: &str = crate::schema::v2::AGENT_METHOD_NAMES.tool_call_cancel;
#[cfg(feature = "v2")]
pub(crate) const TERMINAL_CANCEL: &str = crate::schema::v2::AGENT_METHOD_NAMES.terminal_cancel;

// Sent to the client.
pub(crate) const SESSION_UPDATE: &str = CLIENT_METHOD_NAMES.session_update;
pub(crate) const REQUEST_PERMISSION: &str = CLIENT_METHOD_NAMES.session_request_permission;
pub(crate) const FS_READ_TEXT_FILE: &str = CLIENT_METHOD_NAMES.fs_read_text_file;
pub(crate) const FS_WRITE_TEXT_FILE: &str = CLIENT_METHOD_NAMES.fs_write_text_file;
pub(crate) const TERMINAL_CREATE: &str = CLIENT_METHOD_NAMES.terminal_create;
pub(crate) const TERMINAL_OUTPUT: &str = CLIENT_METHOD_NAMES.terminal_output;
pub(crate) const TERMINAL_WAIT_FOR_EXIT: &str = CLIENT_METHOD_NAMES.terminal_wait_for_exit;
pub(crate) const TERMINAL_KILL: &str = CLIENT_METHOD_NAMES.terminal_kill;
pub(crate) const TERMINAL_RELEASE: &str = CLIENT_METHOD_NAMES.terminal_release;
pub(crate) const ELICITATION_CREATE: &str = CLIENT_METHOD_NAMES.elicitation_create;
pub(crate) const ELICITATION_COMPLETE: &str = CLIENT_METHOD_NAMES.elicitation_complete;
