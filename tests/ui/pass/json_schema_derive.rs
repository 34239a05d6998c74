// `#[derive(acp::JsonSchema)]` in a crate that depends on `acp` alone: the derive never looks
// for a `schemars` in the author's scope (this `mod schemars` would break it if it did).
use acp::{Agent, Prompt, Session, StopReason};

#[allow(dead_code)]
mod schemars {}

/// How to search.
#[derive(serde::Serialize, serde::Deserialize, acp::JsonSchema, Default)]
#[serde(default, rename_all = "camelCase")]
struct Options {
    /// Directories below the start, at most.
    max_depth: u32,
    /// Which way.
    order: Order,
}

#[derive(serde::Serialize, serde::Deserialize, acp::JsonSchema, Default)]
enum Order {
    #[default]
    Breadth,
    Depth,
}

/// The trait is reachable as `acp::JsonSchema` too.
fn schema_name<T: acp::JsonSchema>() -> String {
    T::schema_name().into_owned()
}

struct Finder;

#[acp::agent]
impl Finder {
    async fn prompt(&self, _cx: &Session, _prompt: Prompt) -> acp::Result<StopReason> {
        Ok(StopReason::EndTurn)
    }

    /// Finds files.
    #[acp::tool(kind = "search")]
    async fn find(&self, _cx: &Session, name: String, options: Options) -> acp::Result<String> {
        Ok(format!("{name} {} {}", options.max_depth, matches!(options.order, Order::Depth)))
    }
}

fn main() {
    assert_eq!(schema_name::<Options>(), "Options");
    let schema = &Finder.tools()[0].input_schema;
    let options = &schema["$defs"]["Options"];
    assert_eq!(options["description"], "How to search.");
    assert_eq!(options["properties"]["maxDepth"]["description"], "Directories below the start, at most.");
    assert_eq!(options["properties"]["maxDepth"]["default"], 0);
    assert!(schema["$defs"]["Order"].is_object());
}
