// Unknown keys in #[config(…)], on the type and on a variant: both reported together, each
// listing the keys its place takes.
#[derive(acp::ConfigOption, Default)]
#[config(label = "Model")]
enum Model {
    #[default]
    Fast,
    #[config(description = "Careful answers")]
    Deep,
}

fn main() {}
