// Two values with one id: an error at the second id, naming the variant that has it first.
#[derive(acp::ConfigOption, Default)]
enum Model {
    #[default]
    Fast,
    #[config(id = "fast")]
    Quick,
}

fn main() {}
