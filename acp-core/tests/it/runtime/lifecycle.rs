//! What is freed and when: a closed session's turn cancelled and its state dropped; the
//! agent and its sessions dropped once `serve` returns.

use super::*;

#[derive(Default)]
struct ClosedState;

static CLOSED_STATE_DROPS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Drop for ClosedState {
    fn drop(&mut self) {
        CLOSED_STATE_DROPS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

struct Closing;

impl Agent for Closing {
    async fn prompt(&self, cx: &Session, _prompt: Prompt) -> Result<StopReason> {
        let _ = cx.state::<ClosedState>();
        cx.message("waiting").await?;
        cx.cancelled().await;
        Ok(StopReason::Cancelled)
    }
}

/// `session/close` is advertised, cancels the running turn (which answers `cancelled`), frees
/// the session's memory, and the session is unknown afterwards.
#[tokio::test(start_paused = true)]
async fn closing_a_session_cancels_its_turn_and_frees_it() {
    within(async {
        let c = TestClient::builder().connect(Closing).await.unwrap();
        assert!(
            c.initialize_response()["agentCapabilities"]["sessionCapabilities"]["close"]
                .is_object(),
            "{}",
            c.initialize_response()
        );
        let s = c.new_session().await.unwrap();
        let turn = s.start_prompt("go");
        s.wait_for_update("waiting", |_| true).await.unwrap();
        assert_eq!(s.close().await.unwrap(), json!({}));
        let answer = c.wait_for_response(&turn).await.unwrap();
        assert_eq!(answer["result"]["stopReason"], "cancelled");
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(
            CLOSED_STATE_DROPS.load(std::sync::atomic::Ordering::SeqCst),
            1
        );
        let again = c
            .request(
                "session/prompt",
                json!({"sessionId": s.id(), "prompt": [{"type": "text", "text": "x"}]}),
            )
            .await
            .unwrap_err();
        assert!(matches!(again, Error::Rpc { code: -32002, .. }), "{again}");
        let twice = s.close().await.unwrap_err();
        assert!(matches!(twice, Error::Rpc { code: -32002, .. }), "{twice}");
        c.close().await.unwrap();
    })
    .await;
}

/// Counts its drops; keeps a session handle when asked, as an author might.
struct Dropped {
    drops: Arc<std::sync::atomic::AtomicUsize>,
    kept: Mutex<Option<Session>>,
}

impl Drop for Dropped {
    fn drop(&mut self) {
        self.drops.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Agent for Dropped {
    async fn prompt(&self, cx: &Session, _prompt: Prompt) -> Result<StopReason> {
        *self.kept.lock().unwrap() = Some(cx.clone());
        cx.message("kept").await?;
        Ok(StopReason::EndTurn)
    }
}

#[tokio::test(start_paused = true)]
async fn when_serve_returns_the_agent_and_its_sessions_are_dropped() {
    let drops = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let agent = Dropped {
        drops: drops.clone(),
        kept: Mutex::new(None),
    };
    let c = TestClient::builder().connect(agent).await.unwrap();
    for _ in 0..3 {
        let s = c.new_session().await.unwrap();
        // The agent keeps a handle of the session: agent → session → connection → agent.
        assert_eq!(s.prompt("keep").await.unwrap().text(), "kept");
    }
    assert_eq!(drops.load(std::sync::atomic::Ordering::SeqCst), 0);
    c.close().await.unwrap();
    assert_eq!(
        drops.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the agent outlived `serve`"
    );
}
