//! `$ACP_DATABASE_URL` picks the store of an agent that chose none, with no code: an agent
//! (`child_agent`, this test binary run again) serving stdio with the variable set records a
//! prompt turn where the URL says — PostgreSQL (feature `postgres`) or an SQLite file — and
//! refuses to serve with a URL it cannot open, saying why (never the URL's password).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use acp_core::schema::StopReason;
use acp_core::store::{SessionStore, SqliteStore};
use acp_core::{Agent, Prompt, Result, Session};
use serde_json::{Value, json};

use super::sid;

const CHILD_VAR: &str = "ACP_STORE_URL_TEST_CHILD";

/// Echoes the prompt.
struct Echo;

impl Agent for Echo {
    async fn prompt(&self, cx: &Session, prompt: Prompt) -> Result<StopReason> {
        cx.message(format!("echo: {}", prompt.text())).await?;
        Ok(StopReason::EndTurn)
    }
}

/// The agent the tests run: `serve_stdio` and nothing else, as any agent's `main`.
#[test]
#[ignore = "the agent process of the store_url tests"]
fn child_agent() {
    if std::env::var_os(CHILD_VAR).is_none() {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    if let Err(e) = runtime.block_on(acp_core::serve_stdio(Echo)) {
        eprintln!("the agent stopped: {e}");
        std::process::exit(3);
    }
}

fn agent(database_url: &str) -> Command {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "store::store_url::child_agent",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        // `--quiet`: the harness writes nothing on the test's line before it runs.
        .args(["--test-threads=1", "--quiet"])
        .env(CHILD_VAR, "1")
        .env("ACP_DATABASE_URL", database_url)
        // Were the URL ignored, the default store would land here, not in the user's files.
        .env(
            "ACP_DATA_DIR",
            std::env::temp_dir().join("acp-store-url-default"),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Runs one prompt turn on the agent with `database_url`: the session's id.
fn one_turn(database_url: &str, cwd: &Path) -> String {
    let mut child = agent(database_url).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    // The test harness's own lines come first; the agent's are JSON.
    let mut call = |id: u64, method: &str, params: Value| -> Value {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{request}").unwrap();
        loop {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "the agent exited");
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message["id"] == id {
                assert!(message.get("error").is_none(), "{message}");
                return message["result"].clone();
            }
        }
    };
    call(
        1,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let session = call(2, "session/new", json!({"cwd": cwd, "mcpServers": []}));
    let id = session["sessionId"].as_str().unwrap().to_owned();
    let prompt = [json!({"type": "text", "text": "hello, store"})];
    let answer = call(
        3,
        "session/prompt",
        json!({"sessionId": id, "prompt": prompt}),
    );
    assert_eq!(answer["stopReason"], "end_turn");
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    id
}

/// The turn's records, as text: the user's prompt and the agent's answer.
async fn recorded(store: &Arc<dyn SessionStore>, id: &str) -> String {
    let session = store.session(&sid(id)).await.unwrap().expect("recorded");
    assert!(session.cwd.is_absolute());
    let records = store.records(&sid(id), None).await.unwrap();
    serde_json::to_string(&records.iter().map(|(_, r)| r).collect::<Vec<_>>()).unwrap()
}

#[tokio::test]
async fn an_sqlite_url_records_in_that_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep/sessions.sqlite3");
    let id = one_turn(&format!("sqlite://{}", path.display()), dir.path());
    assert!(path.is_file(), "the file at the URL's path");
    let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&path).unwrap());
    let text = recorded(&store, &id).await;
    assert!(
        text.contains("hello, store") && text.contains("echo: hello, store"),
        "{text}"
    );
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn a_postgres_url_records_in_that_database() {
    let url = crate::pg_support::PgServer::shared().database().await;
    let dir = tempfile::tempdir().unwrap();
    let id = one_turn(&url, dir.path());
    let store: Arc<dyn SessionStore> =
        Arc::new(acp_core::store::PostgresStore::connect(&url).await.unwrap());
    let text = recorded(&store, &id).await;
    assert!(
        text.contains("hello, store") && text.contains("echo: hello, store"),
        "{text}"
    );
    // And `open_url` opens the same store.
    let opened = acp_core::store::open_url(&url).await.unwrap();
    assert_eq!(recorded(&opened, &id).await, text);
}

#[test]
fn a_url_the_agent_cannot_open_stops_it_saying_why() {
    let mut cases = vec![
        ("mysql://acp:hunter2secret@db/sessions", "`mysql://`"),
        ("sqlite://", "names no file"),
    ];
    if cfg!(not(feature = "postgres")) {
        cases.push((
            "postgres://acp:hunter2secret@db/sessions",
            "`postgres` feature",
        ));
    }
    for (url, says) in cases {
        let output = agent(url).stdin(Stdio::null()).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(3), "{url}: {stderr}");
        assert!(
            stderr.contains("$ACP_DATABASE_URL") && stderr.contains(says),
            "{stderr}"
        );
        assert!(!stderr.contains("hunter2secret"), "{stderr}");
    }
}
