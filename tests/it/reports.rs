//! Plans, notices and compactions (`cx.plan`, `cx.markdown_plan`, `cx.update_plan`,
//! `cx.remove_plan`, `cx.notice`, `cx.compaction`): one call each, what every client is shown
//! on both sides of its capabilities and on both protocol versions, every frame read strictly
//! as the schema crate's type of its version, and what a session load replays.

use std::sync::Arc;

use acp::schema::{
    CompactionStatus, ContentBlock, Notice, NoticeSeverity, PlanEntry, PlanEntryPriority,
    PlanEntryStatus, PlanItems, PlanUpdateContent, SessionUpdate, StopReason,
};
use acp::store::MemoryStore;
use acp::testing::{Direction, Frame, TestClient, TestClientBuilder};
use acp::{Agent, Prompt, Result, Session};
use serde_json::Value;

/// Reports one of everything in each turn.
struct Reporter;

impl Agent for Reporter {
    async fn prompt(&self, cx: &Session, _: Prompt) -> Result<StopReason> {
        use PlanEntryStatus::{Completed, InProgress};
        cx.plan([PlanEntry::new(
            "Reproduce",
            PlanEntryPriority::High,
            InProgress,
        )])
        .await?;
        cx.markdown_plan(
            "# Plan\n\n- [x] Reproduce\n- [ ] Fix the parser\n",
            Some("PLAN.md".into()),
        )
        .await?;
        let side = PlanEntry::new("Tidy up", PlanEntryPriority::Low, Completed);
        cx.update_plan(PlanUpdateContent::Items(PlanItems::new("side", vec![side])))
            .await?;
        cx.remove_plan("side").await?;
        let shown = cx
            .notice(Notice::new(NoticeSeverity::Warning, "Rate limited").description("4 s"))
            .await?;
        cx.message(format!("notice shown: {shown}")).await?;
        let compaction = cx.compaction().await?;
        compaction
            .summary("Earlier: the user asked about the parser.")
            .await?;
        compaction.completed().await?;
        Ok(StopReason::EndTurn)
    }
}

/// The `sessionUpdate` kinds of a turn's updates, in order.
fn kinds(updates: &[SessionUpdate]) -> Vec<String> {
    updates
        .iter()
        .map(|u| {
            serde_json::to_value(u).unwrap()["sessionUpdate"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// Every `session/update` the agent wrote, read strictly as the schema crate's type of the
/// connection's version: it parses, and writing it back gives the same JSON (no field lost,
/// none misnamed).
fn assert_schema_frames(frames: &[Frame], protocol: u16) {
    let mut seen = 0;
    for frame in frames {
        let message = &frame.message;
        if frame.direction != Direction::FromAgent
            || frame.method() != Some(acp::schema::CLIENT_METHOD_NAMES.session_update)
        {
            continue;
        }
        let params = message["params"].clone();
        let back = match protocol {
            1 => serde_json::to_value(
                serde_json::from_value::<acp::schema::SessionNotification>(params.clone())
                    .unwrap_or_else(|e| panic!("not a v1 notification ({e}): {params}")),
            ),
            #[cfg(feature = "v2")]
            2 => serde_json::to_value(
                serde_json::from_value::<acp::schema::v2::UpdateSessionNotification>(
                    params.clone(),
                )
                .unwrap_or_else(|e| panic!("not a v2 notification ({e}): {params}")),
            ),
            other => panic!("protocol {other} is not built"),
        }
        .unwrap();
        assert_eq!(back, params, "the frame does not read back as itself");
        seen += 1;
    }
    assert!(seen > 0, "no session/update frames");
}

async fn client(builder: TestClientBuilder) -> TestClient {
    builder.connect(Reporter).await.unwrap()
}

#[tokio::test]
async fn a_v1_client_without_the_capabilities_gets_legacy_plans_and_no_notice_or_compaction() {
    let client = client(TestClient::builder()).await;
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("go").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert_eq!(
        kinds(turn.updates()),
        ["plan", "plan", "plan", "plan", "agent_message_chunk"]
    );
    assert_eq!(turn.text(), "notice shown: false");
    let plans: Vec<Vec<(String, PlanEntryStatus)>> = turn
        .plans()
        .into_iter()
        .map(|p| {
            p.entries
                .into_iter()
                .map(|e| (e.content, e.status))
                .collect()
        })
        .collect();
    use PlanEntryStatus::{Completed, InProgress, Pending};
    assert_eq!(
        plans,
        [
            vec![("Reproduce".to_owned(), InProgress)],
            vec![
                ("Reproduce".to_owned(), Completed),
                ("Fix the parser".to_owned(), Pending)
            ],
            vec![("Tidy up".to_owned(), Completed)],
            vec![],
        ]
    );
    assert_schema_frames(turn.frames(), 1);
}

/// What a client that takes plans, notices and compactions is shown: a v1 client that
/// advertised them, and any v2 client.
async fn a_capable_client_gets_plan_operations_a_notice_and_the_compaction(protocol: u16) {
    let builder = TestClient::builder().protocol(protocol);
    let builder = if protocol == 1 {
        builder.plan().notices().compaction()
    } else {
        builder
    };
    let client = client(builder).await;
    let session = client.new_session().await.unwrap();
    let turn = session.prompt("go").await.unwrap();
    assert_eq!(turn.stop_reason(), Some(StopReason::EndTurn));
    assert_eq!(
        kinds(turn.updates()),
        [
            "plan_update",
            "plan_update",
            "plan_update",
            "plan_removed",
            "notice",
            "agent_message_chunk",
            "compaction_update",
            "compaction_summary_chunk",
            "compaction_update"
        ]
    );
    assert_eq!(turn.text(), "notice shown: true");
    let operations: Vec<Value> = turn
        .plan_operations()
        .into_iter()
        .map(|u| serde_json::to_value(u).unwrap())
        .collect();
    assert_eq!(operations[0]["plan"]["planId"], acp::SESSION_PLAN);
    assert_eq!(operations[0]["plan"]["type"], "items");
    assert_eq!(operations[1]["plan"]["planId"], acp::SESSION_PLAN);
    assert_eq!(operations[1]["plan"]["type"], "markdown");
    assert_eq!(operations[1]["plan"]["path"], "/workspace/PLAN.md");
    assert!(
        operations[1]["plan"]["content"]
            .as_str()
            .unwrap()
            .contains("- [ ] Fix the parser")
    );
    assert_eq!(operations[2]["plan"]["planId"], "side");
    assert_eq!(operations[3]["planId"], "side");
    let notices = turn.notices();
    assert_eq!(notices.len(), 1);
    assert_eq!(
        (&notices[0].title, &notices[0].description),
        (&"Rate limited".to_owned(), &Some("4 s".to_owned()))
    );
    let compaction: Vec<_> = turn
        .updates()
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::CompactionUpdate(c) => Some((c.compaction_id.clone(), c.status.clone())),
            SessionUpdate::CompactionSummaryChunk(c) => match &c.content {
                ContentBlock::Text(t) => {
                    assert_eq!(t.text, "Earlier: the user asked about the parser.");
                    Some((c.compaction_id.clone(), CompactionStatus::InProgress))
                }
                other => panic!("{other:?}"),
            },
            _ => None,
        })
        .collect();
    assert_eq!(compaction.len(), 3);
    assert!(compaction.iter().all(|(id, _)| *id == compaction[0].0));
    assert_eq!(compaction[2].1, CompactionStatus::Completed);
    assert_schema_frames(turn.frames(), protocol);
}

acp::testing::on_both_versions!(a_capable_client_gets_plan_operations_a_notice_and_the_compaction);

/// The session's history keeps everything but the notice, whoever was shown what: a capable
/// client loading it sees the plan operations and the compaction again; a client without
/// the capabilities sees legacy plans and no compaction, though the first client had them.
#[tokio::test]
async fn a_load_replays_what_each_client_may_see_and_never_the_notice() {
    let store = Arc::new(MemoryStore::default());
    let serve = || acp::Server::new(Reporter).shared_store(store.clone());
    let first = TestClient::builder()
        .plan()
        .notices()
        .compaction()
        .serve(serve())
        .await
        .unwrap();
    let session = first.new_session().await.unwrap();
    session.prompt("go").await.unwrap();
    let id = session.id().clone();
    first.close().await.unwrap();

    let capable = TestClient::builder()
        .plan()
        .notices()
        .compaction()
        .serve(serve())
        .await
        .unwrap();
    let loaded = capable.load_session(&id).await.unwrap();
    assert_eq!(
        kinds(&loaded.replayed),
        [
            "user_message_chunk",
            "plan_update",
            "plan_update",
            "plan_update",
            "plan_removed",
            "agent_message_chunk",
            "compaction_update",
            "compaction_summary_chunk",
            "compaction_update"
        ]
    );
    capable.close().await.unwrap();

    let plain = TestClient::builder().serve(serve()).await.unwrap();
    let loaded = plain.load_session(&id).await.unwrap();
    assert_eq!(
        kinds(&loaded.replayed),
        [
            "user_message_chunk",
            "plan",
            "plan",
            "plan",
            "plan",
            "agent_message_chunk"
        ]
    );
    plain.close().await.unwrap();
}
