//! Terminals (`cx.terminal()`): run a command in the editor (the client's `terminal/*`), or on
//! the agent's machine (see [`local`](super::local)), and embed its output in a tool call.

use std::sync::Arc;

use super::Session;
use super::local::{Backend, LocalTerminal};
use super::tool_call::Embed;
use crate::protocol::methods;
use crate::schema::{self, TerminalExitStatus, TerminalId, ToolCallContent};
use crate::{Error, Result};

/// Entry point to the client's terminals; see [`Session::terminal`].
///
/// A terminal created inside a tool body (`#[acp::tool]`, or
/// [`in_tool_call`](crate::in_tool_call)) is embedded in that tool call, so the user watches
/// its output live; it stays there when the tool returns: what the tool returns (text, a
/// diff, JSON) or the error it fails with is shown after the terminal, not instead of it.
///
/// Every method fails with [`Error::Unsupported`], without sending anything, when the client
/// did not advertise the `terminal` capability, and with [`Error::Refused`] when it did but
/// answers with an error (editors refuse terminals they advertised: match it to tell the user
/// instead of failing the turn).
///
/// **Locally.** With [`Server::local_fallback`](crate::Server::local_fallback) and a client
/// without the `terminal` capability, the command runs on the agent's machine instead: a
/// child process in a process group of its own (Unix), in the session's cwd unless the
/// request sets one, with stdin `/dev/null`. A command given without arguments is a command
/// line, run with `sh -c` (`cmd /C` on Windows), as editors run it; with arguments, the
/// program is run directly. Its stdout and stderr are captured together (never reaching the
/// agent's own stdout or stderr) and kept as the client keeps them: the last
/// `outputByteLimit` bytes (1 MiB when unset), cut at a character boundary, `truncated` set.
/// `kill` (which waits until the command is gone), `release`, dropping the handle and the
/// cancel of the turn it was created in kill the command's whole process group, whatever it
/// started in the background included. The client cannot show a terminal it did not create:
/// embedded in a tool call, a local terminal is shown as text (its command line and output
/// in a code block), brought up to date each time the tool call is updated, and when it
/// completes or fails.
///
/// ```no_run
/// # async fn demo(cx: &acp_core::Session) -> acp_core::Result<()> {
/// let term = cx.terminal().create("cargo", ["test"]).await?;
/// let status = term.wait_for_exit().await?;
/// let output = term.output().await?;
/// cx.message(format!("exit {:?}:\n{}", status.exit_code, output.output)).await?;
/// term.release().await?; // also released (and killed) when dropped
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Terminals<'a> {
    cx: &'a Session,
}

impl<'a> Terminals<'a> {
    pub(crate) fn new(cx: &'a Session) -> Self {
        Terminals { cx }
    }

    /// Whether commands can be run: the client advertised the `terminal` capability, or they
    /// run locally ([`Server::local_fallback`](crate::Server::local_fallback)).
    pub fn is_supported(&self) -> bool {
        self.is_local() || self.cx.client_capabilities().terminal
    }

    fn is_local(&self) -> bool {
        self.cx.connection().backends().terminal == Backend::Local
    }

    /// Starts `command` with `args` in the session's cwd (`terminal/create`).
    pub async fn create<I, S>(&self, command: impl Into<String>, args: I) -> Result<Terminal>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.create_with(command, |req| {
            req.args(args.into_iter().map(Into::into).collect())
        })
        .await
    }

    /// Starts `command`, letting `configure` set args, env, cwd or the output byte limit on
    /// the request first.
    pub async fn create_with(
        &self,
        command: impl Into<String>,
        configure: impl FnOnce(schema::CreateTerminalRequest) -> schema::CreateTerminalRequest,
    ) -> Result<Terminal> {
        if !self.is_supported() {
            return Err(Error::Unsupported("terminal"));
        }
        let req =
            schema::CreateTerminalRequest::new(self.cx.client_session().id().clone(), command)
                .cwd(self.cx.cwd().to_path_buf());
        if self.is_local() {
            return self.create_local(configure(req)).await;
        }
        let answer: schema::CreateTerminalResponse = self
            .cx
            .request(methods::TERMINAL_CREATE, &configure(req))
            .await?;
        let terminal = Terminal {
            cx: self.cx.clone(),
            id: answer.terminal_id,
            released: false,
            local: None,
        };
        // Created inside a tool body: show its live output in that tool call, for good.
        self.cx
            .embed_in_tool_call(Embed::Content(Box::new(terminal.content())))
            .await?;
        Ok(terminal)
    }

    /// Starts the command of `req` on the agent's machine.
    async fn create_local(&self, req: schema::CreateTerminalRequest) -> Result<Terminal> {
        self.cx.check_usable()?;
        let roots = &self.cx.state.roots;
        let cwd = req
            .cwd
            .as_deref()
            .map_or_else(|| roots.cwd.clone(), |cwd| roots.absolute(cwd));
        // A network client's commands run only in the directories granted to it.
        let grant = &self.cx.state.conn.grant();
        if grant.confined() {
            let resolved = crate::session::grant::resolve_existing(&cwd);
            if grant.anchor_of(&resolved).is_none() {
                return Err(Error::OutsideRoots {
                    path: cwd,
                    roots: format!("`{}`", roots.cwd.display()),
                });
            }
        }
        // Stopped with the turn it was created in; outside a turn, with the connection.
        let stop = match &self.cx.turn {
            Some(turn) => turn.cancel.clone(),
            None => self.cx.state.conn.peer().closed.clone(),
        };
        // Shown by the connection (v2), or in the running tool call by Zed's `_meta`
        // convention when the client asked for it; else as text.
        let by_meta = self
            .cx
            .state
            .conn
            .terminal_observer()
            .is_none()
            .then(|| self.cx.terminal_meta_observer())
            .flatten();
        let shown_by_meta = by_meta.is_some();
        let observer = self.cx.state.conn.terminal_observer().or(by_meta);
        let local = LocalTerminal::spawn(&req, cwd, grant, stop, observer)?;
        self.cx.state.add_local_terminal(&local);
        // A cancelled turn kills it: the turn's end waits (briefly) for it to be gone, so
        // that what the connection shows of its exit comes before the turn's end.
        if let Some(turn) = &self.cx.turn {
            turn.settle_before_end(Box::pin(local.gone()));
        }
        let terminal = Terminal {
            cx: self.cx.clone(),
            id: local.id.clone(),
            released: false,
            local: Some(local.clone()),
        };
        if shown_by_meta {
            self.cx.embed_quietly(Embed::Local(local));
        } else {
            self.cx.embed_in_tool_call(Embed::Local(local)).await?;
        }
        Ok(terminal)
    }
}

/// A command running in the client's terminal (or locally, see [`Terminals`]). Released
/// (which also kills it) on drop.
#[derive(Debug)]
pub struct Terminal {
    cx: Session,
    id: TerminalId,
    released: bool,
    /// The command, when it runs on the agent's machine.
    local: Option<Arc<LocalTerminal>>,
}

impl Terminal {
    /// The terminal's id.
    pub fn id(&self) -> &TerminalId {
        &self.id
    }

    /// Tool-call content that embeds this terminal's live output in the client; for a local
    /// terminal, which the client cannot show, its command line and output so far as text.
    pub fn content(&self) -> ToolCallContent {
        match &self.local {
            Some(local) => Embed::Local(local.clone()).render(),
            None => ToolCallContent::Terminal(schema::Terminal::new(self.id.clone())),
        }
    }

    /// The output so far, and the exit status if the command has exited.
    pub async fn output(&self) -> Result<schema::TerminalOutputResponse> {
        if let Some(local) = &self.local {
            self.cx.check_usable()?;
            return Ok(local.output());
        }
        let req = schema::TerminalOutputRequest::new(
            self.cx.client_session().id().clone(),
            self.id.clone(),
        );
        self.cx.request(methods::TERMINAL_OUTPUT, &req).await
    }

    /// Waits for the command to exit. Fails with [`Error::Cancelled`] if the turn is
    /// cancelled first (the command keeps running until killed or released).
    pub async fn wait_for_exit(&self) -> Result<TerminalExitStatus> {
        if let Some(local) = &self.local {
            self.cx.check_usable()?;
            return tokio::select! {
                status = local.wait() => Ok(status),
                () = self.cx.cancelled() => Err(Error::Cancelled),
            };
        }
        let req = schema::WaitForTerminalExitRequest::new(
            self.cx.client_session().id().clone(),
            self.id.clone(),
        );
        let answer: schema::WaitForTerminalExitResponse = self
            .cx
            .request(methods::TERMINAL_WAIT_FOR_EXIT, &req)
            .await?;
        Ok(answer.exit_status)
    }

    /// Kills the command; the terminal stays valid for `output` until released. (A local
    /// command is gone, with its process group, when this returns.)
    pub async fn kill(&self) -> Result<()> {
        if let Some(local) = &self.local {
            local.kill();
            local.wait().await;
            return Ok(());
        }
        let req = schema::KillTerminalRequest::new(
            self.cx.client_session().id().clone(),
            self.id.clone(),
        );
        self.even_if_cancelled(methods::TERMINAL_KILL, &req).await
    }

    /// Kills the command if it still runs and frees the terminal in the client.
    pub async fn release(mut self) -> Result<()> {
        self.released = true;
        if let Some(local) = &self.local {
            local.release();
            return Ok(());
        }
        let req = schema::ReleaseTerminalRequest::new(
            self.cx.client_session().id().clone(),
            self.id.clone(),
        );
        self.even_if_cancelled(methods::TERMINAL_RELEASE, &req)
            .await
    }

    /// A request sent even when the turn is cancelled: that is when killing matters most.
    async fn even_if_cancelled(&self, method: &str, req: &impl serde::Serialize) -> Result<()> {
        let conn = &self.cx.state.conn;
        let session = Some(self.cx.client_session().id());
        let _: serde::de::IgnoredAny = conn.request(method, req, None, session).await?;
        Ok(())
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        if let Some(local) = &self.local {
            local.release();
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(terminal = %self.id, "terminal dropped outside a runtime; not released");
            return;
        };
        let conn = self.cx.state.conn.clone();
        let req = schema::ReleaseTerminalRequest::new(
            self.cx.client_session().id().clone(),
            self.id.clone(),
        );
        handle.spawn(async move {
            let session = Some(&req.session_id);
            let released: Result<serde::de::IgnoredAny> = conn
                .request(methods::TERMINAL_RELEASE, &req, None, session)
                .await;
            if let Err(e) = released {
                tracing::debug!("releasing a dropped terminal failed: {e}");
            }
        });
    }
}
