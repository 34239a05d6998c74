// Tools with zero and many parameters, every kind, `_` as the session pattern, and error
// types other than `acp::Error`.
use std::collections::HashMap;
use std::path::PathBuf;

use acp::{Agent, Diff, Json, Prompt, Session, StopReason, Terminal, ToolOutput};

struct Agent1;

#[acp::agent(prompt(image, audio, embedded_context))]
impl Agent1 {
    async fn prompt(&self, cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        self.zero(cx).await?;
        let _ = self.many(cx, 1, 2, "x".into(), None, vec![], HashMap::new(), PathBuf::new(), true).await?;
        let _: Diff = self.edit(cx, PathBuf::from("a")).await?;
        let _ = self.fallible(cx).await.map_err(|e| acp::Error::msg(e))?;
        Ok(StopReason::EndTurn)
    }

    #[acp::tool]
    async fn zero(&self, _: &Session) -> acp::Result<()> {
        Ok(())
    }

    #[acp::tool(kind = "search", title = "{a} {b} {c} {{literal}}")]
    #[allow(clippy::too_many_arguments)]
    async fn many(
        &self,
        _cx: &Session,
        a: u8,
        b: i64,
        c: String,
        d: Option<f32>,
        e: Vec<bool>,
        f: HashMap<String, String>,
        mut g: PathBuf,
        h: bool,
    ) -> acp::Result<Json<Vec<String>>> {
        g.push("x");
        Ok(Json(vec![format!("{a}{b}{c}{d:?}{e:?}{f:?}{g:?}{h}")]))
    }

    #[acp::tool(kind = "edit", permission)]
    async fn edit(&self, _cx: &Session, path: PathBuf) -> acp::Result<Diff> {
        Ok(Diff::new(path, "new"))
    }

    #[acp::tool(kind = "delete", permission = false)]
    async fn delete(&self, _cx: &Session, paths: Vec<PathBuf>) -> acp::Result<ToolOutput> {
        Ok(ToolOutput::text(format!("{}", paths.len())))
    }

    #[acp::tool(kind = "move")]
    async fn rename(&self, _cx: &Session, from: PathBuf, to: Option<PathBuf>) -> acp::Result<&'static str> {
        let _ = (from, to);
        Ok("moved")
    }

    #[acp::tool(kind = "execute")]
    async fn run(&self, cx: &Session, command: String) -> acp::Result<Terminal> {
        cx.terminal().create(command, Vec::<String>::new()).await
    }

    #[acp::tool(kind = "fetch")]
    async fn fetch(&self, _cx: &Session, url: String) -> acp::Result<serde_json::Value> {
        Ok(serde_json::json!({ "url": url }))
    }

    #[acp::tool(kind = "switch_mode")]
    async fn switch(&self, _cx: &Session) -> acp::Result<Option<String>> {
        Ok(None)
    }

    #[acp::tool(kind = "think")]
    async fn fallible(&self, _cx: &Session) -> anyhow::Result<String> {
        Ok(String::new())
    }

    #[acp::tool(kind = "other")]
    async fn other(&self, _cx: &Session) -> Result<(), acp::Error> {
        Ok(())
    }
}

fn main() {
    let tools = Agent1.tools();
    assert_eq!(tools.len(), 10);
    assert_eq!(tools[1].input_schema["properties"].as_object().unwrap().len(), 8);
    assert!(Agent1.capabilities().prompt_capabilities.audio);
}
