//! The params of a v2 client's requests (the schema crate's v2 types, read by
//! `jsonrpc::params`) as the v1 requests the runtime's handlers read.
//!
//! What v2 leaves out and v1 requires is filled in (a stdio MCP server's `args` and `env`, an
//! HTTP one's `headers`, a session's `mcpServers`); what only v2 has is returned beside the v1
//! request (`session/resume`'s `replayFrom`, `session/prompt`'s `idempotencyKey`). What has no
//! v1 form is `-32602`, naming the field as `jsonrpc::params` does.

use std::fmt::Display;

use super::same_shape;
use crate::protocol::methods;
use crate::schema::{self, ErrorCode, v2 as t};

/// `-32602` for the field `field` of the params of `method`, worded as `jsonrpc::params`
/// words it.
fn invalid(method: &str, field: &str, what: impl Display) -> schema::Error {
    schema::Error::new(
        ErrorCode::InvalidParams.into(),
        format!("invalid params for `{method}`: field `{field}`: {what}"),
    )
}

/// The MCP servers of a v2 `method`: v1 requires every list (`args`, `env`, `headers`).
fn mcp_servers(
    method: &str,
    servers: Vec<t::McpServer>,
) -> Result<Vec<schema::McpServer>, schema::Error> {
    servers
        .into_iter()
        .enumerate()
        .map(|(i, server)| {
            Ok(match server {
                t::McpServer::Stdio(stdio) => schema::McpServer::Stdio(
                    schema::McpServerStdio::new(stdio.name, stdio.command.0)
                        .args(stdio.args)
                        .env(
                            stdio
                                .env
                                .into_iter()
                                .map(|var| {
                                    schema::EnvVariable::new(var.name, var.value).meta(var.meta)
                                })
                                .collect::<Vec<_>>(),
                        )
                        .meta(stdio.meta),
                ),
                t::McpServer::Http(http) => schema::McpServer::Http(
                    schema::McpServerHttp::new(http.name, http.url)
                        .headers(
                            http.headers
                                .into_iter()
                                .map(|header| {
                                    schema::HttpHeader::new(header.name, header.value)
                                        .meta(header.meta)
                                })
                                .collect::<Vec<_>>(),
                        )
                        .meta(http.meta),
                ),
                t::McpServer::Other(other) => {
                    return Err(invalid(
                        method,
                        &format!("mcpServers[{i}].type"),
                        format_args!(
                            "MCP server type `{}` is not one v2 defines (`stdio`, `http`)",
                            other.type_
                        ),
                    ));
                }
                // A transport of a schema feature this crate does not name: the same shape
                // in v1.
                other => same_shape(&other)
                    .map_err(|e| invalid(method, &format!("mcpServers[{i}]"), e))?,
            })
        })
        .collect()
}

/// v2's and v1's system prompt have the same shape.
fn system_prompt(
    method: &str,
    prompt: Option<t::SystemPrompt>,
) -> Result<Option<schema::SystemPrompt>, schema::Error> {
    prompt
        .map(|prompt| same_shape(&prompt).map_err(|e| invalid(method, "systemPrompt", e)))
        .transpose()
}

/// v2's absolute paths as the plain paths v1 reads (the runtime checks them itself).
fn paths(dirs: Vec<t::AbsolutePath>) -> Vec<std::path::PathBuf> {
    dirs.into_iter().map(|dir| dir.0).collect()
}

/// `session/new`.
pub(crate) fn new_session(
    req: t::NewSessionRequest,
) -> Result<schema::NewSessionRequest, schema::Error> {
    const METHOD: &str = methods::SESSION_NEW;
    let new = schema::NewSessionRequest::new(req.cwd.0)
        .additional_directories(paths(req.additional_directories))
        .mcp_servers(mcp_servers(METHOD, req.mcp_servers)?)
        .system_prompt(system_prompt(METHOD, req.system_prompt)?)
        .meta(req.meta);
    #[cfg(feature = "unstable-session-options")]
    let new = new.config_options(initial_options(METHOD, req.config_options)?);
    Ok(new)
}

/// `session/resume`, and whether its `replayFrom` asks for the conversation replayed (from
/// the start: the only replay point the runtime knows; any other is `-32602`).
pub(crate) fn resume_session(
    req: t::ResumeSessionRequest,
) -> Result<(schema::ResumeSessionRequest, bool), schema::Error> {
    const METHOD: &str = methods::SESSION_RESUME;
    let replay = match req.replay_from {
        None => false,
        Some(t::ReplayFrom::Start(_)) => true,
        Some(from) => {
            // Written as the client sent it (its JSON).
            let from = serde_json::to_value(&from).unwrap_or_default();
            return Err(schema::Error::new(
                ErrorCode::InvalidParams.into(),
                format!(
                    "`replayFrom` {from} is not supported; replay from `{{\"type\": \"start\"}}`"
                ),
            ));
        }
    };
    let resume = schema::ResumeSessionRequest::new(req.session_id.0, req.cwd.0)
        .additional_directories(paths(req.additional_directories))
        .mcp_servers(mcp_servers(METHOD, req.mcp_servers)?)
        .system_prompt(system_prompt(METHOD, req.system_prompt)?)
        .meta(req.meta);
    #[cfg(feature = "unstable-session-options")]
    let resume = resume.config_options(initial_options(METHOD, req.config_options)?);
    Ok((resume, replay))
}

/// A config option's value: v2 tags a value id `type: "id"`, v1 leaves it untagged.
fn config_value(
    method: &str,
    value: t::SessionConfigOptionValue,
) -> Result<schema::SessionConfigOptionValue, schema::Error> {
    Ok(match value {
        t::SessionConfigOptionValue::Id { value } => {
            schema::SessionConfigOptionValue::value_id(value.0)
        }
        t::SessionConfigOptionValue::Boolean { value } => {
            schema::SessionConfigOptionValue::boolean(value)
        }
        other => {
            return Err(invalid(
                method,
                "type",
                format_args!(
                    "a config option's value is `id` or `boolean`, not {}",
                    serde_json::to_value(&other).unwrap_or_default()
                ),
            ));
        }
    })
}

/// The initial config option values of a request that opens a session (Unstable).
#[cfg(feature = "unstable-session-options")]
fn initial_options(
    method: &str,
    entries: Vec<t::InitialSessionConfigOption>,
) -> Result<Vec<schema::InitialSessionConfigOption>, schema::Error> {
    entries
        .into_iter()
        .map(|entry| {
            let value = config_value(method, entry.value)?;
            Ok(schema::InitialSessionConfigOption::new(entry.config_id.0, value).meta(entry.meta))
        })
        .collect()
}

/// `session/set_config_option`.
pub(crate) fn set_config_option(
    req: t::SetSessionConfigOptionRequest,
) -> Result<schema::SetSessionConfigOptionRequest, schema::Error> {
    let value = config_value(methods::SESSION_SET_CONFIG_OPTION, req.value)?;
    Ok(
        schema::SetSessionConfigOptionRequest::new(req.session_id.0, req.config_id.0, value)
            .meta(req.meta),
    )
}

/// `session/prompt`, and its idempotency key.
pub(crate) fn prompt(
    req: t::PromptRequest,
) -> Result<(schema::PromptRequest, Option<String>), schema::Error> {
    let blocks = req
        .prompt
        .iter()
        .enumerate()
        .map(|(i, block)| {
            same_shape(block)
                .map_err(|e| invalid(methods::SESSION_PROMPT, &format!("prompt[{i}]"), e))
        })
        .collect::<Result<Vec<schema::ContentBlock>, _>>()?;
    let key = req.idempotency_key.map(|key| key.as_str().to_owned());
    Ok((
        schema::PromptRequest::new(req.session_id.0, blocks).meta(req.meta),
        key,
    ))
}

/// `auth/login`: v1's `authenticate`.
pub(crate) fn login(
    req: t::LoginAuthRequest,
) -> Result<schema::AuthenticateRequest, schema::Error> {
    Ok(schema::AuthenticateRequest::new(req.method_id.0).meta(req.meta))
}

/// `auth/logout`: v1's `logout`.
pub(crate) fn logout(req: t::LogoutAuthRequest) -> Result<schema::LogoutRequest, schema::Error> {
    Ok(schema::LogoutRequest::new().meta(req.meta))
}

/// `session/list`.
pub(crate) fn list_sessions(
    req: t::ListSessionsRequest,
) -> Result<schema::ListSessionsRequest, schema::Error> {
    let list = schema::ListSessionsRequest::new()
        .cwd(req.cwd.map(|cwd| cwd.0))
        .cursor(req.cursor.map(|cursor| cursor.0.to_string()))
        .meta(req.meta);
    // The same values in both versions.
    #[cfg(feature = "unstable-session-archive")]
    let list = list.archived(
        req.archived
            .map(|a| same_shape(&a))
            .transpose()
            .map_err(|e| invalid(methods::SESSION_LIST, "archived", e))?,
    );
    Ok(list)
}

/// `session/close`.
pub(crate) fn close_session(
    req: t::CloseSessionRequest,
) -> Result<schema::CloseSessionRequest, schema::Error> {
    Ok(schema::CloseSessionRequest::new(req.session_id.0).meta(req.meta))
}

/// `session/delete`.
pub(crate) fn delete_session(
    req: t::DeleteSessionRequest,
) -> Result<schema::DeleteSessionRequest, schema::Error> {
    Ok(schema::DeleteSessionRequest::new(req.session_id.0).meta(req.meta))
}
