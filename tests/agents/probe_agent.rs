//! The probe: an agent whose prompt commands each exercise one guarantee of the runtime. The
//! runtime tests drive it in process (`acp::testing::TestClient::connect`) and as the built
//! `probe` binary over real pipes (`TestClient::spawn`), with the same test bodies.
//!
//! Commands (the prompt's first word):
//! - `steps`: sends `step N`, then reads `a.txt` through the client, and again, until an
//!   error (a cancel) stops it; 100 steps at most;
//! - `stubborn`: sends `tick N` every 5 ms and ignores cancellation (10,000 ticks at most);
//! - `sleep`: sends `sleeping`, waits for the cancel, then returns an error anyway;
//! - `panic`: panics;
//! - `ask`: a tool call asking for permission, completed when allowed;
//! - `flood N`: sends N chunks as fast as it can, writing `sent N` to stderr every 1,000;
//! - `keep`: keeps this turn's session handle; `late` (a later turn) sends `late` through it
//!   and answers with what happened;
//! - anything else: echoed back as one chunk.

use std::sync::Mutex;
use std::time::Duration;

use acp::schema::{PermissionOption, PermissionOptionKind};
use acp::{Agent, Prompt, Session, StopReason, ToolKind};

/// See the module docs.
#[derive(Default)]
pub struct Probe {
    /// A session handle kept past its turn (`keep`).
    kept: Mutex<Option<Session>>,
}

impl Agent for Probe {
    fn info(&self) -> acp::schema::Implementation {
        acp::schema::Implementation::new("probe", "0.0.0")
    }

    async fn prompt(&self, cx: &Session, prompt: Prompt) -> acp::Result<StopReason> {
        let text = prompt.text();
        let (command, rest) = text.split_once(' ').unwrap_or((&text, ""));
        match command {
            "steps" => {
                for i in 0..100 {
                    cx.message(format!("step {i}")).await?;
                    cx.fs().read_text_file("a.txt").await?;
                }
            }
            "stubborn" => {
                for i in 0..10_000 {
                    let _ = cx.message(format!("tick {i}")).await;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            "sleep" => {
                cx.message("sleeping").await?;
                cx.cancelled().await;
                // Authors often surface a cancel as an error; the answer is still `cancelled`.
                return Err(acp::Error::msg("interrupted"));
            }
            "panic" => panic!("the probe panicked on purpose"),
            "ask" => {
                let call = cx
                    .tool_call("Risky")
                    .kind(ToolKind::Execute)
                    .start()
                    .await?;
                let options = vec![
                    PermissionOption::new("yes", "Yes", PermissionOptionKind::AllowOnce),
                    PermissionOption::new("no", "No", PermissionOptionKind::RejectOnce),
                ];
                call.request_permission(options).await?;
                call.complete(vec!["done".into()]).await?;
            }
            "flood" => {
                let n: usize = rest.trim().parse().unwrap_or(0);
                for i in 1..=n {
                    cx.message(format!("{i:08} flooding the client")).await?;
                    if i % 1000 == 0 {
                        eprintln!("sent {i}");
                    }
                }
            }
            "keep" => *self.kept.lock().unwrap() = Some(cx.clone()),
            "late" => {
                let kept = self.kept.lock().unwrap().take();
                let outcome = match kept {
                    Some(old) => match old.message("late").await {
                        Err(acp::Error::TurnEnded) => "refused: the turn has ended".to_owned(),
                        other => format!("sent: {other:?}"),
                    },
                    None => "nothing kept".to_owned(),
                };
                cx.message(outcome).await?;
            }
            _ => cx.message(text.clone()).await?,
        }
        Ok(StopReason::EndTurn)
    }
}
