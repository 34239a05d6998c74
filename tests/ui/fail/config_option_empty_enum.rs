// A select option needs values: an enum without variants is one error, at its name.
#[derive(acp::ConfigOption)]
enum Model {}

fn main() {}
