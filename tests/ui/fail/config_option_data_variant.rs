// The values of a select option are unit variants: a variant with data is one error, at it.
#[derive(acp::ConfigOption, Default)]
enum Model {
    #[default]
    Fast,
    Named(String),
}

fn main() {}
