//! The fake editor: how the test client answers the agent's requests (`fs/*`,
//! `session/request_permission`, `terminal/*`), from an in-memory file system, a scripted
//! permission policy and a terminal stub.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::protocol::methods;
use crate::schema::{self, PermissionOptionKind};
use crate::sync::lock;

/// How the test client answers `session/request_permission`. To answer each request by hand
/// instead, [hold](super::TestClientBuilder::hold) the method.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum PermissionPolicy {
    /// Pick the first option of kind `allow_once` (else `allow_always`).
    #[default]
    AllowOnce,
    /// Pick the first option of kind `allow_always`.
    AllowAlways,
    /// Pick the first option of kind `reject_once` (else `reject_always`).
    RejectOnce,
    /// Pick the first option of kind `reject_always`.
    RejectAlways,
    /// Answer with the `cancelled` outcome.
    Cancelled,
    /// Never answer (until the agent stops waiting, e.g. on cancel).
    Never,
    /// Answer each request with the next policy in the list; [`Never`](Self::Never) when empty.
    Script(Vec<PermissionPolicy>),
}

/// An in-memory file system served to the agent as the client's `fs/*` methods.
///
/// Clones share the same files, so a test keeps one to seed and inspect.
#[derive(Debug, Clone, Default)]
pub struct MemoryFs {
    files: Arc<Mutex<BTreeMap<PathBuf, String>>>,
}

impl MemoryFs {
    /// An empty file system.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces a file.
    #[must_use]
    pub fn with(self, path: impl Into<PathBuf>, content: impl Into<String>) -> Self {
        self.write(path, content);
        self
    }

    /// Adds or replaces a file.
    pub fn write(&self, path: impl Into<PathBuf>, content: impl Into<String>) {
        lock(&self.files).insert(path.into(), content.into());
    }

    /// A file's content, if it exists.
    pub fn read(&self, path: impl AsRef<Path>) -> Option<String> {
        lock(&self.files).get(path.as_ref()).cloned()
    }
}

/// On protocol v2 the agent's local file backend reads and writes the same files.
#[cfg(feature = "v2")]
impl crate::session::local::fs::Files for MemoryFs {
    fn read(&self, path: &Path) -> Option<String> {
        MemoryFs::read(self, path)
    }

    fn write(&self, path: &Path, content: &str) {
        MemoryFs::write(self, path, content);
    }
}

/// The terminal the test client pretends to run: every command "prints" `output` and exits
/// with `exit_code`, unless it is set to [`hang`](TerminalStub::hang) until killed or the
/// editor [`refuse`](TerminalStub::refuse)s to run it; a command given its own stub with
/// [`command`](TerminalStub::command) behaves as that one says: a stub for a program (`git`)
/// serves every command line of that program, a stub for a whole command line
/// (`git status`) only that one, and takes precedence.
///
/// ```
/// use acp_core::testing::TerminalStub;
///
/// let terminal = TerminalStub::new()
///     .output("command not found")
///     .exit_code(127)
///     .command("cargo", TerminalStub::new().output("test result: ok"))
///     .command("git", TerminalStub::new().output("ok"))
///     .command("git status", TerminalStub::new().output("nothing to commit"))
///     .command("git push", TerminalStub::new().refuse())
///     .command("sleep", TerminalStub::new().hang());
/// ```
#[derive(Debug, Clone, Default)]
pub struct TerminalStub {
    output: String,
    exit_code: u32,
    hang: bool,
    refuse: bool,
    commands: HashMap<String, TerminalStub>,
}

impl TerminalStub {
    /// A terminal whose commands print nothing and exit 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// What every command prints.
    #[must_use]
    pub fn output(mut self, output: impl Into<String>) -> Self {
        self.output = output.into();
        self
    }

    /// The exit code of every command.
    #[must_use]
    pub fn exit_code(mut self, code: u32) -> Self {
        self.exit_code = code;
        self
    }

    /// Commands never exit on their own: `wait_for_exit` waits until they are killed.
    #[must_use]
    pub fn hang(mut self) -> Self {
        self.hang = true;
        self
    }

    /// The editor refuses to run the commands: `terminal/create` is answered with an error,
    /// although the client advertises the `terminal` capability. The error is the one acpx
    /// answers when terminal commands are not approved: `-32603 Internal error` with
    /// `{"details": "Permission denied for terminal/create"}` as its `data`. The agent sees [`Error::Refused`](crate::Error::Refused). For another
    /// error, [hold](super::TestClientBuilder::hold) `terminal/create` and answer it by hand.
    ///
    /// ```
    /// use acp_core::testing::TerminalStub;
    ///
    /// // Every command refused, as acpx does by default.
    /// let terminal = TerminalStub::new().refuse();
    /// ```
    #[must_use]
    pub fn refuse(mut self) -> Self {
        self.refuse = true;
        self
    }

    /// How `command` behaves, instead of this stub's default. `command` is either a program,
    /// as the agent names it in `terminal/create` (`"git"`: every command line of that
    /// program), or a whole command line, the program and its arguments separated by spaces
    /// (`"git status"`: that command line only, arguments compared exactly; `sh -c "git
    /// status"` is `"sh -c git status"`). A command line's stub is preferred to its
    /// program's.
    #[must_use]
    pub fn command(mut self, command: impl AsRef<str>, stub: TerminalStub) -> Self {
        self.commands.insert(words(command.as_ref()), stub);
        self
    }

    /// The stub `program` run with `args` runs with.
    fn for_command(&self, program: &str, args: &[String]) -> &TerminalStub {
        let line = words(
            &std::iter::once(program)
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
        );
        self.commands
            .get(&line)
            .or_else(|| self.commands.get(program))
            .unwrap_or(self)
    }
}

/// `line` with its words separated by single spaces.
fn words(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[derive(Debug, Default)]
pub(super) struct TerminalLog {
    pub created: Vec<(String, Vec<String>)>,
    /// The command each terminal runs (program, args), by id.
    commands: HashMap<String, (String, Vec<String>)>,
    pub killed: Vec<String>,
    pub released: Vec<String>,
    exit_waiters: HashMap<String, Vec<oneshot::Sender<()>>>,
}

/// The editor's state: what it serves and what it saw.
#[derive(Debug)]
pub(super) struct Editor {
    pub fs: MemoryFs,
    pub terminal: TerminalStub,
    pub terminals: Mutex<TerminalLog>,
    pub permissions: Mutex<PermissionPolicy>,
}

impl Editor {
    /// Whether terminal `id` was killed, and the stub its command runs with.
    fn stub_of(&self, id: &str) -> (bool, TerminalStub) {
        let log = lock(&self.terminals);
        let stub = match log.commands.get(id) {
            Some((program, args)) => self.terminal.for_command(program, args),
            None => &self.terminal,
        };
        (log.killed.iter().any(|k| k == id), stub.clone())
    }

    pub fn new(fs: MemoryFs, terminal: TerminalStub, permissions: PermissionPolicy) -> Self {
        Editor {
            fs,
            terminal,
            terminals: Mutex::new(TerminalLog::default()),
            permissions: Mutex::new(permissions),
        }
    }

    fn next_permission(&self) -> PermissionPolicy {
        match &mut *lock(&self.permissions) {
            PermissionPolicy::Script(list) if list.is_empty() => PermissionPolicy::Never,
            PermissionPolicy::Script(list) => list.remove(0),
            policy => policy.clone(),
        }
    }

    /// Plays the editor's side of one agent request; `None` means "never answer".
    pub async fn answer(&self, method: &str, params: Value) -> Option<Answer> {
        let str_param = |key: &str| {
            params
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        Some(match method {
            methods::FS_READ_TEXT_FILE => match self.fs.read(str_param("path")) {
                Some(content) => {
                    let line = params.get("line").and_then(Value::as_u64);
                    let limit = params.get("limit").and_then(Value::as_u64);
                    let content = if line.is_some() || limit.is_some() {
                        let skip = line.map_or(0, |l| l.saturating_sub(1)) as usize;
                        let take = limit.map_or(usize::MAX, |l| l as usize);
                        content
                            .lines()
                            .skip(skip)
                            .take(take)
                            .map(|l| format!("{l}\n"))
                            .collect()
                    } else {
                        content
                    };
                    Ok(json!({"content": content}))
                }
                None => Err(json!({
                    "code": -32002,
                    "message": format!("Resource not found: {}", str_param("path")),
                })),
            },
            methods::FS_WRITE_TEXT_FILE => {
                self.fs.write(str_param("path"), str_param("content"));
                Ok(json!({}))
            }
            methods::REQUEST_PERMISSION => self.permission(&params)?,
            methods::TERMINAL_CREATE => {
                let program = str_param("command");
                let args: Vec<String> = params
                    .get("args")
                    .and_then(|a| serde_json::from_value(a.clone()).ok())
                    .unwrap_or_default();
                if self.terminal.for_command(&program, &args).refuse {
                    // What acpx answers: an exception thrown in a handler of the official
                    // TypeScript SDK, which answers it as `Internal error` with details.
                    return Some(Err(json!({
                        "code": -32603,
                        "message": "Internal error",
                        "data": {"details": "Permission denied for terminal/create"},
                    })));
                }
                let mut log = lock(&self.terminals);
                let id = format!("term_{}", log.created.len());
                log.commands
                    .insert(id.clone(), (program.clone(), args.clone()));
                log.created.push((program, args));
                Ok(json!({"terminalId": id}))
            }
            methods::TERMINAL_OUTPUT => {
                let id = str_param("terminalId");
                let (killed, stub) = self.stub_of(&id);
                let exit = if killed {
                    json!({"exitCode": null, "signal": "SIGKILL"})
                } else if stub.hang {
                    Value::Null
                } else {
                    json!({"exitCode": stub.exit_code})
                };
                Ok(json!({"output": stub.output, "truncated": false, "exitStatus": exit}))
            }
            methods::TERMINAL_WAIT_FOR_EXIT => {
                let id = str_param("terminalId");
                let (_, stub) = self.stub_of(&id);
                if stub.hang {
                    let rx = {
                        let mut log = lock(&self.terminals);
                        if log.killed.contains(&id) {
                            None
                        } else {
                            let (tx, rx) = oneshot::channel();
                            log.exit_waiters.entry(id).or_default().push(tx);
                            Some(rx)
                        }
                    };
                    if let Some(rx) = rx {
                        rx.await.ok()?;
                    }
                    Ok(json!({"exitCode": null, "signal": "SIGKILL"}))
                } else {
                    Ok(json!({"exitCode": stub.exit_code}))
                }
            }
            methods::TERMINAL_KILL | methods::TERMINAL_RELEASE => {
                let id = str_param("terminalId");
                let mut log = lock(&self.terminals);
                if let Some(waiters) = log.exit_waiters.remove(&id) {
                    for w in waiters {
                        let _ = w.send(());
                    }
                }
                if method == methods::TERMINAL_KILL {
                    log.killed.push(id);
                } else {
                    log.released.push(id);
                }
                Ok(json!({}))
            }
            other => Err(json!({"code": -32601, "message": format!("method not found: {other}")})),
        })
    }

    fn permission(&self, params: &Value) -> Option<Answer> {
        let options: Vec<schema::PermissionOption> =
            serde_json::from_value(params.get("options").cloned().unwrap_or_default())
                .unwrap_or_default();
        let pick = |kinds: &[PermissionOptionKind]| {
            kinds
                .iter()
                .find_map(|k| options.iter().find(|o| o.kind == *k))
                .map(|o| o.option_id.to_string())
        };
        use PermissionOptionKind as K;
        let chosen = match self.next_permission() {
            PermissionPolicy::AllowOnce => pick(&[K::AllowOnce, K::AllowAlways]),
            PermissionPolicy::AllowAlways => pick(&[K::AllowAlways]),
            PermissionPolicy::RejectOnce => pick(&[K::RejectOnce, K::RejectAlways]),
            PermissionPolicy::RejectAlways => pick(&[K::RejectAlways]),
            PermissionPolicy::Cancelled => None,
            PermissionPolicy::Never | PermissionPolicy::Script(_) => return None,
        };
        Some(Ok(match chosen {
            Some(id) => json!({"outcome": {"outcome": "selected", "optionId": id}}),
            None => json!({"outcome": {"outcome": "cancelled"}}),
        }))
    }
}

/// The editor's answer to one request: a result, or a JSON-RPC error object.
pub(super) type Answer = std::result::Result<Value, Value>;
