// A config option's values are fixed when it is declared: a generic type is one error, at its
// generics.
#[derive(acp::ConfigOption, Default)]
enum Model<const N: usize> {
    #[default]
    Fast,
    Deep,
}

fn main() {}
