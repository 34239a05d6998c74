// A category the protocol does not define (and not custom, `_…`): an error at it, listing them.
#[derive(acp::ConfigOption, Default)]
#[config(category = "models")]
enum Model {
    #[default]
    Fast,
    Deep,
}

fn main() {}
